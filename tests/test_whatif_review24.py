"""whatif on the corpus, review 24: a window top with no activation room, a max bs the
request pool caps, an elided server_args line, hybrid Mamba request counts."""

from __future__ import annotations

from click.testing import CliRunner

from conftest import corpus_log
from logmem.cli.main import cli


def _text(prefix: str, *args: str, code: int = 0) -> str:
    r = CliRunner().invoke(cli, ["whatif", str(corpus_log(f"{prefix}-")), *args])
    assert r.exit_code == code, r.output
    return " ".join(r.output.split())


def test_a_top_with_no_activation_room_is_not_offered_as_a_setting() -> None:
    """006 (graphs off): 0.993 leaves nothing for 2048-token prefill activations (review24 #10);
    with a reserve the top is a setting again and the sentence goes."""
    out = _text("006")
    assert "up to 0.993 the headroom stays >= 0.00 GiB" in out
    assert "0.993 is an upper bound, not a usable setting" in out
    assert "no room for prefill activations" in out
    assert "not a usable setting" not in _text("006", "--activation-reserve", "1")
