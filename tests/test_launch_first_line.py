"""Where a launch that follows another in one file begins (round 25, task 2b).

The reader drops lines without a keyword, so the launch's first keyword line can be later
than its first line (joined-023-014: 014's first log line is line 60, an "Ignore import
error" warning; its first start-up step, TP0's Init torch distributed begin, is line 68).
The builder records the last line read before it (LaunchStart.after, Launch.next_after): with
unread lines between, the sentences say "at or before line N" and name them.
"""

from __future__ import annotations

from conftest import FIXTURES, read_text_log
from logmem.analysis.findings import LaunchStarted
from logmem.api import read_log
from logmem.model.analysis import Analysis
from logmem.report.model import analysis_report

JOINED = FIXTURES / "joined-023-014-constructed.log"
RESTART = FIXTURES / "two-launches-restart-constructed.log"


def _started(a: Analysis, i: int) -> str:
    report = analysis_report(a).launches[i]
    led = a.ledger(a.launches[i])
    at = [n for n, f in enumerate(led.findings) if isinstance(f, LaunchStarted)]
    assert len(at) == 1
    return report.findings[at[0]]


def test_unread_lines_before_the_first_step_make_it_at_or_before() -> None:
    lines = JOINED.read_bytes().decode().split("\n")
    # Line 59: 023's last line (a bar render, read); 60-67: 014's first lines, no keyword.
    assert "Capturing batches (bs=1 avail_mem=5.89 GB)" in lines[58]
    assert "Ignore import error" in lines[59] and "TP0] Init torch distributed begin" in lines[67]
    a = read_log(str(JOINED))
    first, second = a.launches
    assert second.start is not None and second.start.line.line_no == 68
    assert second.start.after == 59 and first.next_after == 59
    text = _started(a, 1)
    assert text.startswith("This launch begins at or before line 68 (2026-04-14 16:08:43; lines ")
    assert "lines 60-67 before it carry no start-up step and are not read" in text
    verdict = " ".join(analysis_report(a).launches[0].verdict)
    assert "The next launch begins at or before line 68 (lines 60-67 before it" in verdict


def test_a_first_step_right_after_the_launch_before_begins_at_its_line() -> None:
    """two-launches-restart: lines 88-89 (a resource_tracker warning) lie between the first
    launch's sigquit (line 87) and server_args (line 90); without them server_args is line 88,
    right after the last line read, and the launch begins exactly there."""
    lines = RESTART.read_bytes().decode().split("\n")
    assert "Received sigquit" in lines[86] and "resource_tracker" in lines[87]
    assert "server_args=ServerArgs(" in lines[89]
    a = read_log(str(RESTART))
    assert "at or before line 90 (2026-06-03 08:32:59; lines 88-89 before it" in _started(a, 1)
    b = read_text_log("\n".join(lines[:87] + lines[89:]))
    text = _started(b, 1)
    assert text.startswith("This launch begins at line 88 (2026-06-03 08:32:59): server_args")
    assert b.launches[1].start is not None and b.launches[1].start.after == 87
