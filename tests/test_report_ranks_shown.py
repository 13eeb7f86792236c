"""The ranks a report shows in full are decided once (report.fold): HTML's plots draw the
ranks its Ledger section shows, also when --rank leaves the bar rank out."""

from __future__ import annotations

import re

import logmem
from conftest import FIXTURES
from logmem.api import select
from logmem.report.html import render
from logmem.report.model import analysis_report

TP4 = str(FIXTURES / "001-qwq32b-tp4-l4-docs.log")
UNBALANCED = str(FIXTURES / "imbalance-tp8-constructed.log")


def _page(path: str, ranks: list[str]) -> str:
    return render(select(logmem.read_log(path), ranks=ranks))


def test_picked_ranks_without_the_bar_rank_get_their_waterfall() -> None:
    # TP0 prints the bars; the other three print every phase reading. The old HTML drew
    # the main rank only, and said "no rank printed two free-memory readings".
    page = _page(TP4, ["TP1", "TP2", "TP3"])
    assert "Free memory phase by phase on TP1, TP2, TP3;" in page
    assert "No waterfall" not in page
    assert re.findall(r"Ledger of (TP\d) \(GiB\)", page) == ["TP1", "TP2", "TP3"]
    # The bars are on TP0, which is not shown: the note speaks of the ranks shown.
    assert "No bucket plot: the capture progress bars of the ranks shown print" in page


def test_leading_ranks_are_the_ledger_section_ranks() -> None:
    for path, ranks in ((TP4, []), (TP4, ["TP2", "TP3", "TP0"]), (UNBALANCED, ["TP5", "TP6"])):
        a = logmem.read_log(path)
        a = select(a, ranks=ranks) if ranks else a
        lr = analysis_report(a).launches[0]
        ledger = next(s for s in lr.sections if s.title == "Ledger")
        assert [t.title for t in ledger.tables] == [f"Ledger of {r} (GiB)" for r in lr.leading]


def test_no_waterfall_note_speaks_of_the_ranks_shown() -> None:
    # TP3, TP4 and TP6 die on the unbalanced-memory check with no reading; TP5 has one.
    page = _page(UNBALANCED, ["TP3", "TP4", "TP6"])
    assert "No waterfall: no rank shown printed two free-memory readings." in page
    assert "Free memory phase by phase on TP5" in _page(UNBALANCED, [])
