"""The findings every format prints, as sentences: the typed findings worded
(logmem.report.sentences), then the graph sentences. When no rank's lines are in time order
(logmem.analysis.findings_order.unreliable_source) each sentence read off the ledgers says so.
"""

from __future__ import annotations

from logmem.analysis.attribution import LaunchLedger
from logmem.analysis.findings import (
    ClockOffset,
    Exhausted,
    LaunchStarted,
    OutOfOrder,
    RepeatedLines,
    WeightsNotLoaded,
)
from logmem.analysis.findings_order import SharedLabel, shared_label_ranks, unreliable_source
from logmem.report.graph_lines import graph_sentences
from logmem.report.sentences import finding_text

# Findings not read off a rank's ledger (the input's order, a printed line): said as they are.
_NOT_FROM_LEDGERS = (
    LaunchStarted,
    RepeatedLines,
    OutOfOrder,
    SharedLabel,
    ClockOffset,
    WeightsNotLoaded,
)
_HEDGE = " (Not reliable: read off ledgers whose lines are out of time order.)"
_HEDGE_SHARED = " (Not reliable: read off a ledger that mixes two processes' readings.)"


def finding_lines(led: LaunchLedger) -> tuple[str, ...]:
    """The launch's findings as sentences, hedged when read off out-of-order ledgers only."""
    unreliable = unreliable_source(led.launch)
    shared = set(shared_label_ranks(led.launch))
    hedge = "" if not unreliable else _HEDGE_SHARED if shared >= set(unreliable) else _HEDGE
    # Exhausted is said in the verdict (report.model.verdict_lines), with its fixes.
    return tuple(
        finding_text(f) + ("" if isinstance(f, _NOT_FROM_LEDGERS) else hedge)
        for f in led.findings
        if not isinstance(f, Exhausted)
    ) + tuple(t + hedge for t in graph_sentences(led.launch))
