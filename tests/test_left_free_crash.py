"""The last-free finding of a crashed start-up names the rank that crashed when the report's
rank is another: TP0's reading after a step TP1 died in is not where the failure stood."""

from __future__ import annotations

import pytest

from conftest import FIXTURES
from logmem.analysis.attribution import LaunchLedger, build_ledger
from logmem.analysis.findings import findings
from logmem.analysis.findings_left import LeftFree, crashed_rank
from logmem.api import read_log
from logmem.report.sentences import finding_text


def _ledger(name: str) -> LaunchLedger:
    return build_ledger(read_log(str(FIXTURES / name)).launches[0])


def _left(name: str) -> LeftFree:
    found = [f for f in findings(_ledger(name)) if isinstance(f, LeftFree)]
    assert len(found) == 1
    return found[0]


@pytest.mark.parametrize(
    ("name", "rank", "crashed"),
    [
        # TP1 died backing its KV pages after capture; its last reading is the capture end.
        ("postcap-resize-oom-0523-constructed.log", "TP0", ("TP1", 68.45, 20)),
        # TP2 died loading weights; its last reading is Load weight begin.
        ("oom-load-weights-constructed.log", "TP0", ("TP2", 78.65, 29)),
    ],
)
def test_crash_on_another_rank_is_named(
    name: str, rank: str, crashed: tuple[str, float, int]
) -> None:
    f = _left(name)
    assert f.rank == rank and f.crashed is not None
    label, left, line = f.crashed
    assert (label, round(left / 2**30, 2), line) == crashed
    text = finding_text(f)
    assert f"before {label} crashed" in text and f"(line {line})" in text


def test_crash_on_the_report_rank_keeps_its_reading() -> None:
    """The capture OOM is on the rank the report reads: nothing to name."""
    f = _left("capture-oom-no-server-args-constructed.log")
    assert f.crashed is None
    assert "crashed (" not in finding_text(f)


def test_crashed_rank_needs_another_failing_rank() -> None:
    led = _ledger("postcap-resize-oom-0523-constructed.log")
    tp0 = led.rank("TP0")
    assert tp0 is not None
    assert crashed_rank(tp0, (), led.ranks) is None
    assert crashed_rank(tp0, ("TP0",), led.ranks) is None
    assert crashed_rank(tp0, ("TP9",), led.ranks) is None
