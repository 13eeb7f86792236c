"""whatif on the corpus, review 26: a max bs above the era's capture list (#1), a low point
after the capture (#6), the --logged-mem-fraction-static offer (#7e), the token-count gap in
analyze's words (#7f) and weights not initialized from the checkpoint (#4)."""

from __future__ import annotations

import json

from click.testing import CliRunner

from conftest import corpus_log
from logmem.cli.main import cli


def _run(prefix: str, *args: str, code: int = 0) -> str:
    r = CliRunner().invoke(cli, ["whatif", str(corpus_log(f"{prefix}-")), *args])
    assert r.exit_code == code, r.output
    return r.output


def _text(prefix: str, *args: str, code: int = 0) -> str:
    return " ".join(_run(prefix, *args, code=code).split())


def _json(prefix: str, *args: str) -> dict:
    return json.loads(_run(prefix, *args, "-f", "json"))


def test_a_smaller_graph_frees_memory_at_a_low_point_after_its_capture() -> None:
    """036's low point is the draft's pool step (line 1473), after the decode capture ended
    (line 1261): the 0.05 GiB a max bs of 16 saves is free there too, so headroom is 0.86,
    not 0.81 (review26 #6). 019 likewise: 5.47 -> 5.52."""
    for prefix, bs, now, then in (("036", "16", "0.81", "0.86"), ("019", "24", "5.47", "5.52")):
        rows = [ln for ln in _run(prefix, "--cuda-graph-max-bs", bs).splitlines()]
        head = next(ln for ln in rows if ln.startswith("headroom, GiB"))
        assert head.split()[-2:] == [now, then], (prefix, head)
    assert "It comes after the decode graphs' capture ended" in _text("036")


def test_the_logged_mfs_flag_is_offered_only_when_mfs_is_the_one_input_missing() -> None:
    """037 lacks both mem_fraction_static and 'Load weight begin': passing the flag would fail
    on the missing reading, so it is not offered (review26 #7e)."""
    out = _text("037", "--mem-fraction-static", "0.8", code=1)
    assert "'Load weight begin. avail mem=...'" in out and "mem_fraction_static (" in out
    assert "--logged-mem-fraction-static" not in out
