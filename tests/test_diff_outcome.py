"""diff says how each launch ended (analyze's verdict), keeps an unfinished start-up's missing
lines out of the wording table, gives no change for a capture one launch stopped in, and shows
where each start-up ended (review E, findings 1 and 5)."""

from __future__ import annotations

from pathlib import Path

from conftest import corpus_log
from logmem.api import read_log
from logmem.compare.diff import Diff, diff_launches
from logmem.compare.load import LaunchRef
from logmem.report.compare.jsonout import to_json
from logmem.report.compare.render import render_text

FIX = Path(__file__).resolve().parent.parent / "fixtures"
RESTART = FIX / "two-launches-restart-constructed.log"


def _diff(a: Path, ia: int, b: Path, ib: int) -> Diff:
    la, lb = read_log(str(a)).launches[ia], read_log(str(b)).launches[ib]
    return diff_launches(la, LaunchRef("A", (str(a),), ia), lb, LaunchRef("B", (str(b),), ib))


def test_a_crashed_launch_is_said_first_and_its_stopped_capture_not_compared() -> None:
    d = _diff(RESTART, 0, RESTART, 1)
    text = render_text(d)
    head = text.split("Settings that differ")[0]
    assert "A: Crashed: CUDA out of memory" in head and "Error at line 54." in head
    assert "B: Ready: start-up finished on 1 rank." in head
    # The missing capture end line is the crash's, not a wording difference.
    assert "no end line" not in text
    assert "Not compared: capture end fields (A)" in text
    row = next(x for x in text.splitlines() if "capture decode (stopped)" in x)
    assert row.endswith("n/c") and "+0.19" not in text
    assert "A stopped in its first bucket (bs 48)" in text
    j = to_json(d)
    assert j["a"]["outcome"]["status"] == "crashed"
    assert j["a"]["outcome"]["failure"]["kind"] == "oom"
    assert j["a"]["outcome"]["failure"]["line"] == 54
    assert j["b"]["outcome"] == {
        "status": "ready",
        "verdict": "Ready: start-up finished on 1 rank.",
        "failure": None,
    }
    assert [w["marker"] for w in j["wording"]].count("capture end fields") == 0
    assert j["wording_not_compared"].startswith("Not compared: capture end fields (A)")
    cap = next(p for p in j["phases"] if p["key"] == "capture:decode")
    assert cap["change_gib"] is None and cap["not_comparable"]
    # Where each ended: a crash has no free memory after start-up; B's is its summary's.
    assert j["a"]["end_state"]["free_after_startup_gib"] is None
    assert j["b"]["end_state"]["free_after_startup_gib"] == 1.6
    assert j["b"]["end_state"]["free_line"] == 137
    assert j["b"]["end_state"]["max_running_requests"] == 64


def test_a_log_cut_mid_capture_is_incomplete_beside_a_ready_one() -> None:
    d = _diff(corpus_log("023-"), 0, corpus_log("014-"), 0)
    text = render_text(d)
    assert text.split("Different models")[0].count("A: Incomplete: the log stops") == 1
    assert "Not compared: capture end fields (A)" in text
    assert "+0.25" not in next(x for x in text.splitlines() if "capture decode (stopped)" in x)
    assert to_json(d)["a"]["outcome"]["status"] == "incomplete"


def test_end_state_rows_carry_free_memory_and_the_request_cap() -> None:
    a, b = (
        FIX / "pair-e7-maxbs256-constructed.log",
        FIX / "pair-e7-maxbs256-mfs-differs-constructed.log",
    )
    text = render_text(_diff(a, 0, b, 0))
    assert "free after start-up (GiB)   8.10   9.69   +1.59" in text
    assert "max_running_requests       3,199  3,071    -128" in text
