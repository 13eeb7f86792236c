"""Words for the KV-sizing facts: how many ranks a minimum is over, and which SGLang rule gave
mem_fraction_static (logmem.sglang.default_mfs, reference 12.3), named by release."""

from __future__ import annotations

from logmem.analysis.attribution import LaunchLedger
from logmem.analysis.ledger import Bound
from logmem.analysis.sizing import RankCoverage
from logmem.report.causes import bounded
from logmem.sglang.default_mfs import (
    ERA_A_LAST_RELEASE,
    ERA_B_FIRST_RELEASE,
    DefaultMfs,
    MfsEra,
    NoPrediction,
    Rule,
    mfs_era_of,
)

# The rules' names as a user knows them: by release, not by logmem's era labels.
TP_TABLE_RULE = f"the tp_size table of sglang up to {ERA_A_LAST_RELEASE}"
FORMULA_RULE = f"the reserve formula of sglang {ERA_B_FIRST_RELEASE} on"


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
    NoPrediction.NO_TP: "no tp_size in server_args",
    NoPrediction.NO_CAPACITY: "the log prints no device capacity",
    NoPrediction.INPUTS: "chunked_prefill_size or the decode graph's max bs missing from server_args",
    NoPrediction.MLA_UNKNOWN: (
        "no KV pool line tells whether the model is MLA, which sets the prefill-graph term"
    ),
    NoPrediction.UNMODELLED: "VLM, PD disaggregation or symmetric memory: not modelled",
}


def _windows(w: tuple[tuple[int, int], ...]) -> str:
    parts = [f"{a:,}-{b:,}" if a != b else f"{a:,}" for a, b in w]
    return (", ".join(parts[:-1]) + " or " + parts[-1] if len(parts) > 1 else parts[0]) + " MiB"


def _fits_on(d: DefaultMfs, w: tuple[tuple[int, int], ...] | None, rule: str) -> str:
    """What server_args' value needs of the unprinted capacity under a rule ('' without a window)."""
    if not w or d.dumped is None:
        return ""
    return f"; {rule} gives the {d.dumped:g} server_args prints only on a GPU of {_windows(w)} (unconfirmed)"


def _match(d: DefaultMfs) -> str:
    if d.matches is None:
        return f"value unknown ({_WHY[d.no_prediction]})" if d.no_prediction else "value unknown"
    verdict = (
        "matches server_args" if d.matches else f"server_args prints {d.dumped:g}: not this rule"
    )
    return f"{d.predicted:g}, {verdict}"


TIER_RULE = "the GPU-tier reserve rule of sglang 0.4.8-0.5.2 (Jun-Oct 2025)"


def _tier_text(d: DefaultMfs, when: str) -> str:
    world = (d.tp_size or 0) * (d.pp_size or 1)
    older = (
        f"; {when}, so an image older than the log"
        if d.printed_on and mfs_era_of(d.printed_on) in (MfsEra.B, MfsEra.C)
        else f" ({when})"
    )
    assert d.capacity_mib is not None and d.tier_reserved_mib is not None
    return (
        f"matches {TIER_RULE}{older}: {gpu_mem(d)}, tp x pp {world}: "
        f"reserve {d.tier_reserved_mib:,.0f} MiB gives {d.predicted:g}, the value server_args prints"
    )


def gpu_mem(d: DefaultMfs) -> str:
    """gpu_mem as the rule took it, saying where a figure no line prints came from."""
    text = f"gpu_mem {d.capacity_mib:,.0f} MiB"
    if d.capacity_named is not None:
        name, line = d.capacity_named
        text += f" (no line prints it: nvidia-smi's total for {name}, the GPU line {line} names)"
    return text


def default_mfs_text(d: DefaultMfs) -> tuple[str, str]:
    """(value, source) of the sizing table's default-mfs row."""
    when = f"printed {d.printed_on.isoformat()}" if d.printed_on else "undated"
    if d.rule is Rule.PASSED:
        return "passed", "mem_fraction_static passed on the command line, no default rule"
    if d.rule is Rule.GPU_TIER:
        return "GPU-tier reserve", _tier_text(d, when)
    form = f"sglang {d.form}" if d.form else ""
    if d.rule is Rule.TP_TABLE:
        how = "server_args' value fits it" if d.era_from == "dump" else when
        # A table the dump contradicts: the value was passed (the cell names the rule's value).
        value = f"passed (the tp table gives {d.predicted:g})" if d.matches is False else "tp table"
        return (
            value,
            f"tp_size table ({how}; {form}'s form): default for tp {d.tp_size}: {_match(d)}",
        )
    if d.rule is Rule.LARGE_GPU:
        how = "server_args' value fits it" if d.era_from == "dump" else when
        cap = f"{gpu_mem(d)}" if d.capacity_mib else "a GPU"
        value = (
            f"passed (the large-GPU rule gives {d.predicted:.3f})"
            if d.matches is False
            else "large-GPU rule"
        )
        # The rule's value is unrounded (0.4.6 - 0.4.7): four places show what the dump prints.
        tail = (
            _match(d)
            if d.predicted is None
            else _match(d).replace(f"{d.predicted:g}", f"{d.predicted:.4f}", 1)
        )
        head = f"large-GPU rule ({how}; {form}'s form)"
        return value, f"{head}: {cap} above 81,920 MiB leaves the tp table: {tail}"
    if d.rule is Rule.POST_CAPTURE:
        return _post_capture_text(d, when, form)
    if d.rule is Rule.RESERVE:
        how = "server_args' value fits it" if d.era_from == "dump" else when
        cap = f", {gpu_mem(d)}" if d.capacity_mib else ""
        res = f", reserve {d.reserved_mib:,.0f} MiB" if d.reserved_mib is not None else ""
        how += f"; {form}'s form" if form else ""
        if d.matches is True:
            return "reserve", f"reserve formula ({how}){cap}{res}: {_match(d)}"
        # Unconfirmed or contradicted: a derived value and a passed one look the same here.
        tail = (
            "passed, or a case the formula does not model; no reserve assumed"
            if d.matches is False
            else "derived or passed cannot be told; no reserve assumed"
        )
        tail = (
            _fits_on(d, d.formula_windows, "the formula").removeprefix("; ")
            + ("; " if d.formula_windows else "")
            + tail
        )
        value = f"passed (the formula gives {d.predicted:g})" if d.matches is False else "unknown"
        if d.formula_excluded:
            assert d.free_mib is not None and d.dumped is not None
            none = (
                f"no GPU of at least the {d.free_mib / 1024:.2f} GiB free before loading gives "
                f"the {d.dumped:g} server_args prints by the formula"
            )
            if d.excluded:
                value = "passed (no GPU size gives it)"
                tail = f"{none}: passed, or a case the formula does not model; no reserve assumed"
            else:
                older = _fits_on(d, d.tier_windows, f"{TIER_RULE}, in an image older than the log,")
                tail = f"{none}{older}; no reserve assumed"
        return (
            value,
            f"reserve formula ({how}){cap}{res}: {_match(d)}; {tail}",
        )
    if d.era is MfsEra.UNKNOWN:
        return "unknown", "the log carries no date, so no default rule is assumed"
    table = (
        f"; {TP_TABLE_RULE} gives {d.table_mfs:g} for tp {d.tp_size}"
        if d.table_mfs is not None
        else ""
    )
    tier = (
        f"; the GPU-tier rule of sglang 0.4.8-0.5.2 gives {d.tier_mfs:g}"
        if d.tier_mfs is not None
        else ""
    )
    dump = f", server_args prints {d.dumped:g}" if d.dumped is not None and (table or tier) else ""
    fits = _fits_on(d, d.tier_windows, TIER_RULE) + _fits_on(d, d.formula_windows, FORMULA_RULE)
    cap = " (the log prints no device capacity)" if fits else ""
    between = f"between sglang {ERA_A_LAST_RELEASE} and {ERA_B_FIRST_RELEASE}"
    return "unknown", f"{between} ({when}): no rule shown to apply{cap}{table}{tier}{dump}{fits}"


def _post_capture_text(d: DefaultMfs, when: str, form: str) -> tuple[str, str]:
    """The post-capture reserve (sglang.default_mfs._post_capture): no graph reserve."""
    base = (
        d.reserved_mib - (d.tp_size or 0) * (d.pp_size or 1) / 8 * 1024 if d.reserved_mib else None
    )
    res = (
        f"reserve {base:,.0f} + tp x pp / 8 x 1024 = {d.reserved_mib:,.0f} MiB"
        if base is not None and d.reserved_mib is not None
        else "reserve unknown"
    )
    head = f"post-capture KV sizing ({when}; {form}'s form): {res}, no graph reserve"
    cap = f", {gpu_mem(d)}" if d.capacity_mib else ""
    if d.matches is True:
        return "post-capture reserve", f"{head}{cap}: {_match(d)}"
    if d.matches is False:
        return f"passed (the rule gives {d.predicted:g})", f"{head}{cap}: {_match(d)}"
    fits = _fits_on(d, d.formula_windows, "a post-capture form").removeprefix("; ")
    tail = f"; {fits}" if fits else ""
    return "unknown", f"{head}: {_match(d)}{tail}; derived or passed cannot be told"


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
