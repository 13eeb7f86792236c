"""Findings from a rank whose lines are out of time order (round 25, task 2a).

An out-of-order rank's ledger pairs readings in the wrong order, so the figures taken across
ranks (KV sizing, imbalance) and the findings (weights, pool step, captures) use the ranks in
order; with none in order, each finding read off the ledgers says it is not reliable.

Inputs: fixtures/reordered-001-tp1-constructed.log (fixtures/make_joins.py) and variants made
here from fixture 001 the same way (a rank's prefixed lines reversed among their positions).
"""

from __future__ import annotations

import json
import re

from conftest import FIXTURES, read_text_log
from logmem.analysis.findings import OutOfOrder, WeightsNotLoaded
from logmem.analysis.findings_order import ClockOffset, LaunchStarted, RepeatedLines
from logmem.api import read_log
from logmem.report.fold import main_rank
from logmem.report.jsonout import launch_json
from logmem.report.model import analysis_report
from logmem.units import GIB

REORDERED = FIXTURES / "reordered-001-tp1-constructed.log"


def _reversed(text: str, ranks: tuple[int, ...]) -> str:
    """Each rank's prefixed lines in reverse order among their own positions (as make_joins)."""
    lines = text.split("\n")
    for k in ranks:
        tag = re.compile(rf"^\[[0-9-]+ [0-9:]+ TP{k}\] ")
        at = [i for i, line in enumerate(lines) if tag.match(line)]
        for i, line in zip(at, [lines[i] for i in reversed(at)]):
            lines[i] = line
    return "\n".join(lines)


def test_the_verdict_says_the_out_of_order_ranks_figures_are_not_used() -> None:
    a = read_log(str(REORDERED))
    L = a.launches[0]
    report = analysis_report(a).launches[0]
    said = [v for v in report.verdict if "out of time order" in v]
    assert said == [
        "TP1: its lines are out of time order (see Findings), so its figures are not used; "
        "the sizing and the findings below use TP0, TP2, TP3."
    ]
    led = a.ledger(L)
    # The KV rule's after-weights minimum is taken over the three ranks in order.
    assert led.sizing is not None and led.sizing.after_weights_coverage is not None
    assert led.sizing.after_weights_coverage.printed == 3
    out = [f for f in led.findings if isinstance(f, OutOfOrder)]
    assert len(out) == 1 and out[0].set_aside
    assert "its figures are not used below" in report.findings[0]
    assert json.loads(json.dumps(launch_json(L, led)))["ranks_set_aside"] == ["TP1"]


def test_a_reading_of_the_out_of_order_rank_does_not_set_the_kv_budget() -> None:
    """TP1's `Load weight end` (line 27, avail 6.09 GB) lowered to 5.00: read in reverse, the
    line may belong to any of TP1's steps, so the budget keeps the other ranks' 6.09 GiB."""
    lines = REORDERED.read_text().split("\n")
    assert "TP1] Load weight end" in lines[26] and "avail mem=6.09 GB" in lines[26]
    lines[26] = lines[26].replace("avail mem=6.09 GB", "avail mem=5.00 GB")
    a = read_text_log("\n".join(lines))
    led = a.ledger(a.launches[0])
    assert led.sizing is not None
    assert round(led.sizing.after_weights_bytes / GIB, 2) == 6.09
    text = " ".join(analysis_report(a).launches[0].findings)
    assert "6.09 - 21.63 x (1 - 0.85)" in text and "5.00" not in text


def test_an_out_of_order_bar_printer_is_not_the_rank_the_report_leads_with() -> None:
    a = read_text_log(_reversed((FIXTURES / "001-qwq32b-tp4-l4-docs.log").read_text(), (0,)))
    L = a.launches[0]
    main = main_rank(L)
    assert main is not None and main.label != "TP0"
    report = analysis_report(a).launches[0]
    assert report.sections[0].tables[0].title.startswith(f"Ledger of {main.label} ")
    assert not any(" on TP0" in f for f in report.findings)


def test_with_no_rank_in_order_every_finding_read_off_a_ledger_says_so() -> None:
    a = read_text_log(
        _reversed((FIXTURES / "001-qwq32b-tp4-l4-docs.log").read_text(), (0, 1, 2, 3))
    )
    L = a.launches[0]
    led = a.ledger(L)
    report = analysis_report(a).launches[0]
    assert any("no rank's are in order" in v and "not reliable" in v for v in report.verdict)
    order = (LaunchStarted, RepeatedLines, OutOfOrder, ClockOffset, WeightsNotLoaded)
    assert len(report.findings) >= len(led.findings) > 4
    for f, text in zip(led.findings, report.findings):
        hedged = text.endswith(
            "(Not reliable: read off ledgers whose lines are out of time order.)"
        )
        assert hedged != isinstance(f, order), text
    assert all(not f.set_aside for f in led.findings if isinstance(f, OutOfOrder))
    assert launch_json(L, led)["findings"] == list(report.findings)
