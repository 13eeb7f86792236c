"""Words for the KV-sizing facts: how many ranks a minimum is over, and which SGLang rule gave
mem_fraction_static (logmem.sglang.default_mfs, reference 12.3)."""

from __future__ import annotations

from logmem.analysis.attribution import LaunchLedger
from logmem.analysis.ledger import Bound
from logmem.analysis.sizing import RankCoverage
from logmem.report.causes import bounded
from logmem.sglang.default_mfs import DefaultMfs, Era, NoPrediction, Rule


def coverage_text(c: RankCoverage | None) -> str:
    """ "TP0 only", "min over 3 of 4 ranks", "min over 4 ranks", "min over the 3 ranks that
    printed it"."""
    if c is None:
        return "min over the ranks that printed it"
    if c.printed == 1:
        if c.expected == 1:
            return "single rank"
        who = c.rank if c.rank else "the untagged rank"
        return f"{who} only" + (f", of {c.expected} ranks" if c.expected and c.expected > 1 else "")
    if c.expected is not None and c.printed < c.expected:
        return f"min over {c.printed} of {c.expected} ranks"
    if c.expected == c.printed:
        return f"min over {c.printed} ranks"
    return f"min over the {c.printed} ranks that printed it"


_WHY = {
    NoPrediction.NO_TP: "no tp_size in the dump",
    NoPrediction.NO_CAPACITY: "the log prints no device capacity",
    NoPrediction.INPUTS: "chunked_prefill_size or cuda_graph_max_bs missing from the dump",
    NoPrediction.UNMODELLED: "VLM, PD disaggregation or symmetric memory: not modelled",
}


def _match(d: DefaultMfs) -> str:
    if d.matches is None:
        return f"value unknown ({_WHY[d.no_prediction]})" if d.no_prediction else "value unknown"
    verdict = "matches the dump" if d.matches else f"the dump has {d.dumped:g}: not this rule"
    return f"{d.predicted:g}, {verdict}"


def default_mfs_text(d: DefaultMfs) -> tuple[str, str]:
    """(value, source) of the sizing table's default-mfs row."""
    when = f"printed {d.printed_on.isoformat()}" if d.printed_on else "undated"
    if d.rule is Rule.PASSED:
        return "passed", "mem_fraction_static passed on the command line, no default rule"
    if d.rule is Rule.TP_TABLE:
        how = "the dump fits it" if d.era_from == "dump" else when
        return "tp table", f"era a ({how}): default for tp {d.tp_size}: {_match(d)}"
    if d.rule is Rule.RESERVE:
        how = "the dump fits it" if d.era_from == "dump" else when
        cap = f", gpu_mem {d.capacity_mib:,.0f} MiB" if d.capacity_mib else ""
        res = f", reserve {d.reserved_mib:,.0f} MiB" if d.reserved_mib is not None else ""
        if d.matches is True:
            return "reserve", f"era {d.era.value} ({how}){cap}{res}: {_match(d)}"
        # Unconfirmed or contradicted: a derived value and a passed one look the same here.
        tail = (
            "passed, or a case the formula does not model; no reserve assumed"
            if d.matches is False
            else "derived or passed cannot be told; no reserve assumed"
        )
        return (
            "unknown",
            f"era {d.era.value} ({how}) reserve formula{cap}{res}: {_match(d)}; {tail}",
        )
    if d.era is Era.UNKNOWN:
        return "unknown", "era unknown (no date): no default rule assumed"
    table = (
        f"; the era-a table for tp {d.tp_size} gives {d.table_mfs:g}, the dump {d.dumped:g}"
        if d.table_mfs is not None and d.dumped is not None
        else ""
    )
    return "unknown", f"era a or b ({when}): neither rule shown to apply{table}"


def measured_text(led: LaunchLedger) -> str:
    """What the captures measured, beside the reserve: unknown (and why) when the log's usage
    is not a cost."""
    assert led.reserve is not None
    b = led.reserve.measured_bound
    if not b.known:
        why = (
            "free memory at the 0.00 GiB floor"
            if b is Bound.FLOOR
            else "masked by a release during capture"
        )
        return f"measured: unknown ({why})"
    return f"measured {bounded(led.reserve.measured_bytes, b)}"
