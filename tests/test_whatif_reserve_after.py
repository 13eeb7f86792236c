"""--activation-reserve is kept after capture (the end of start-up), as its help says; a low
point before the end only has to stay >= 0 (no prefill activation runs there). The window's top
is the lower of the two limits and the report names which one sets it (review E #2)."""

from __future__ import annotations

import json

from click.testing import CliRunner

from conftest import corpus_log
from logmem.cli.main import cli


def _run(*args: str) -> str:
    r = CliRunner().invoke(cli, ["whatif", *args])
    assert r.exit_code == 0, r.output
    return " ".join(r.output.split())


def test_019_top_is_set_by_the_low_point_not_the_reserve() -> None:
    """019: 5.47 GiB at line 1370 (the draft pool's step) must stay >= 0 -> 0.798; 6.83 after
    capture less 1 GiB -> 0.804. The reserve at the low point gave 0.782."""
    out = _run(str(corpus_log("019-")), "--activation-reserve", "1")
    assert "[0.477, 0.798]" in out
    assert "0.782" not in out
    assert "free memory stays >= 0 at the low point (DP0 TP0 EP0, line 1370)" in out
    assert (
        "The low point sets the top; the 1.00 GiB reserve after capture would allow 0.804." in out
    )
    assert "the low point before the end only has to stay >= 0" in out


def test_019_a_larger_reserve_sets_the_top_and_says_so() -> None:
    out = _run(str(corpus_log("019-")), "--activation-reserve", "1.5")
    assert "[0.477, 0.796]" in out
    assert (
        "The 1.50 GiB reserve after capture sets the top; the low point alone would allow 0.798."
        in out
    )


def test_019_json_carries_both_tops() -> None:
    r = CliRunner().invoke(
        cli, ["whatif", str(corpus_log("019-")), "--activation-reserve", "1", "-f", "json"]
    )
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    assert d["window_top_by_low_point"] == 0.798
    assert d["window_top_by_reserve"] == 0.804


def test_041_reserve_does_not_give_a_no_with_6_gib_free_after_capture() -> None:
    """041 at 0.95: 1.90 at the capture begin (line 14) less 1.14 GiB of pool is <= 0.76, an
    upper bound (no readings inside the capture); after capture about 7.20 - 1.14 = 6.06 GiB
    stays free, far above the 1 GiB asked. Not a NO from the reserve."""
    args = ["--mem-fraction-static", "0.95", "--context-length", "32768"]
    out = _run(str(corpus_log("041-")), *args, "--activation-reserve", "1")
    assert "feasible yes not ruled out" in out
    assert "feasible yes NO" not in out
    assert "headroom, GiB (TP0) <= 1.90 <= 0.76" in out
