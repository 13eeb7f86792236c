"""Short phrases of diff, fit and whatif: where a figure comes from (rows, slopes, SGLang's
heuristic terms), the names of the KV rule's terms, the one-full-context check, and how an
unfinished start-up is named. Whole sentences are in logmem.report.compare.notes."""

from __future__ import annotations

from logmem.compare import notes as cn
from logmem.compare.replay import Unfinished
from logmem.report.causes import on_gpu as _on
from logmem.report.released_words import released_verdict
from logmem.sglang.eras import EraGuess
from logmem.sglang.mfs_versions import FORMULA_FORMS
from logmem.sglang.rules import (
    DECODE_GRAPH_MIB_PER_BS,
    DP_ATTENTION_LARGE_BS,
    DP_ATTENTION_LARGE_BS_MIB,
    DP_ATTENTION_MIB_PER_BS_DP,
    kept_logits_bytes,
)
from logmem.units import GIB
from logmem.units import format_gib as _gs

# --- sources ---------------------------------------------------------------------------------


def rows_text(r: cn.RowsSource) -> str:
    b = cn.RowsBasis
    size = (
        "; largest size from server_args cuda_graph_max_bs (no bs list printed)"
        if r.size_from_args
        else ""
    )
    return {
        b.TOKENS: "num_tokens (this graph's sizes are tokens)",
        b.BEGIN_LINE: f"num_tokens_per_req={r.value} from the capture begin line",
        b.DRAFT_TOKENS: f"speculative_num_draft_tokens={r.value} from server_args (the target graph verifies)",
        b.DRAFT_ASSUMED: "1 per request assumed (the draft graph's tokens per request are not printed)",
        b.DECODE: "1 per request (decode)",
    }[r.basis] + size


def heuristic_terms_text(t: cn.HeuristicTerms) -> str:
    terms = [f"{DECODE_GRAPH_MIB_PER_BS:g} MB for the decode graph"]
    if t.dp_size is not None:
        terms.append(f"{DP_ATTENTION_MIB_PER_BS_DP:g} MB x dp_size {t.dp_size} (DP attention)")
        if t.large_bs:
            terms.append(
                f"{DP_ATTENTION_LARGE_BS_MIB:g} MB x dp_size {t.dp_size} (max bs > {DP_ATTENTION_LARGE_BS})"
            )
    return " + ".join(terms)


def growth_text(m: cn.MeasuredGrowth) -> str:
    if m.basis == "capture total" and not m.with_static:
        return "all graph memory: the capture end's mem usage"
    what = "largest bucket + static buffers" if m.with_static else m.basis
    if m.rows_per_bs != 1:
        what += f", x {m.rows_per_bs} rows per unit of bs"
    return what


def slope_source_text(s: cn.SlopeSource) -> str:
    if isinstance(s, cn.MeasuredSlope):
        err = (
            f" (+- {s.mib_per_row_error:.3f} MiB per row by printing)"
            if s.mib_per_row_error
            else ""
        )
        where = f"{s.graph} on {_on(s.rank)}"
        if s.launches:  # whatif --slope-from A B: measured there, not on the launch it prices
            where = f"on --slope-from {' and '.join(s.launches)}, {s.graph} on {_on(s.rank)} of {s.launches[0]}"
        return f"measured {where}, {s.basis}, rows {s.rows_first} -> {s.rows_last}{err}"
    if isinstance(s, cn.GivenSlope):
        static = (
            f", --static-mib-per-row {s.static_mib_per_row:g}"
            if s.static_mib_per_row is not None
            else ""
        )
        return f"given: --mib-per-row {s.mib_per_row:g}{static}"
    if isinstance(s, cn.FailedBucketSlope):
        basis = "its cost between two bar readings" if s.measured else "what it needed at the OOM"
        return (
            f"from the failed {s.graph} bucket at {s.largest} ({basis}), one shared pool assumed, "
            "as analyze's --cuda-graph-max-bs Fix"
        )
    if isinstance(s, cn.BarsSlope):
        return bars_slope_text(s)
    return f"SGLang's heuristic, not measured: {heuristic_terms_text(s.terms)}"


def bars_slope_text(s: cn.BarsSlope) -> str:
    """The model a larger max bs is priced by from this launch's own bars, with its inputs."""
    a, b = s.largest_lines
    static = (
        f"; static buffers {_gs(s.static_bytes)} GiB (capture begin minus that bar, "
        f"lines {', '.join(map(str, s.static_lines)) or 'not named'}) per row alike"
        if s.static_bytes is not None
        else "; static buffers stay as measured (not read)"
    )
    return (
        f"from this launch's bars: the largest bucket (bs {s.largest}, {s.rows:,} rows) cost "
        f"{_gs(s.largest_bytes)} GiB ({f'first bar minus second, line {a}' if a == b else f'bar at line {a} minus bar at line {b}'}), per row "
        f"{s.largest_bytes / s.rows / 2**20:.3f} MiB{static}; each figure +- 0.01 GiB by "
        "printing. SGLang captures the largest batch first into the one graph memory pool every "
        "bucket shares (cuda_graph_runner.py graph_memory_pool), so the new top needs that cost "
        "per row at its rows; the first bucket's cost also holds what does not grow with rows "
        "(lazy allocations, fixed workspaces), scaled here too, so the figure is an upper bound "
        "(one launch cannot separate them; --slope-from A B measures the slope)"
    )


def term_text(t: cn.TermKind) -> str:
    return {
        cn.TermKind.PRE_LOAD: "free memory before weights (P, min over the ranks that printed it) x mfs",
        cn.TermKind.MFS: "mem_fraction_static x P",
        cn.TermKind.WEIGHTS: "weights (P - free after weights)",
        cn.TermKind.OTHER: "other (printing, page rounding, --max-total-tokens, pool split)",
    }[t]


_LOWER = "lower --context-length"


def context_text(c: cn.ContextCheck) -> str:
    """Whether one full context fits, and from which mem_fraction_static."""
    f = cn.ContextFit
    if c.fit is f.UNKNOWN:
        return "context length unknown (the log prints no context_len); pass --context-length"
    if c.fit is f.IMPOSSIBLE:
        if c.fact is not None:
            return (
                f"at the readings SGLang sized the pool from, it needs "
                f"{_gs((c.context or 0) * c.bytes_per_token)} GiB of KV, and even "
                f"mem_fraction_static 1.0 gives {_gs(c.full_bytes)} GiB ({c.full_tokens:,} "
                f"tokens).{released_verdict(c.fact, _LOWER)}"
            )
        return (
            f"impossible: it needs {_gs((c.context or 0) * c.bytes_per_token)} GiB of KV, and even "
            f"mem_fraction_static 1.0 gives {_gs(c.full_bytes)} GiB ({c.full_tokens:,} tokens) on "
            "this machine"
        )
    if c.fit is f.ABOVE_TOP:
        return (
            f"needs mem_fraction_static >= {c.lo:.3f}, above the window's top {c.hi:.3f}: it would not "
            "leave the headroom after capture"
        )
    if c.fit is f.TOO_LITTLE_OUTSIDE:
        short = (
            f"the KV pool holds it only from mem_fraction_static {c.lo:.3f}, which leaves "
            f"{_gs(max(c.outside_at_fit_bytes or 0, 0))} GiB outside the pool, less than this "
            f"launch used there after sizing (at least {_gs(c.used_outside_bytes or 0)} GiB)"
        )
        if c.fact is not None:
            return f"at the readings SGLang sized the pool from, {short}.{released_verdict(c.fact, _LOWER)}"
        return f"{short}: not a usable setting; lower --context-length"
    if c.fit is f.BOUNDED:
        return (
            f"the KV pool holds it from mem_fraction_static {c.lo:.3f}; whether the graphs then "
            "fit is unknown ("
            + (
                f"the window's top, at least {c.hi:.3f}, is a lower bound: graphs at the new max "
                "bs are an upper bound"
                if c.top_at_least and c.hi is not None
                else "the capture's low point of free memory is unknown"
                if c.masked
                else "the capture did not finish"
            )
            + ")"
        )
    return f"fits from mem_fraction_static {c.lo:.3f}"


# --- how an unfinished start-up is named in whatif ---------------------------------------------

_CAUSES = {
    "oom": "out of memory",
    "not_enough_memory": "not enough memory for the KV cache",
    "imbalance": "unbalanced GPU memory",
    "capture_failed": "the capture failed",
    "stopped": "the log stops",
}


def unfinished_cause(u: Unfinished) -> str:
    """Short: "out of memory", "TypeError", "the log stops"."""
    return _CAUSES.get(u.kind, u.exc_type or "an error")


def unfinished_at(u: Unfinished) -> str:
    """Where it stopped, short: 'at bs 256', 'in the piecewise capture', 'after the pools'."""
    if u.in_capture:
        if u.size is not None:
            return f"at {u.unit} {u.size}"
        return f"in the {u.graph} capture" if u.graph else "in a graph capture"
    phase = u.phase or "start-up"
    if phase == "serving":
        return "in warm-up"
    return phase if phase.startswith(("after ", "before ")) else f"in {phase}"


def unfinished_label(u: Unfinished) -> str:
    """The measured column's feasible cell."""
    if u.memory:
        return f"NO (crashed {unfinished_at(u)})"
    if u.status == "incomplete":
        return "unknown (log stops)"
    return f"unknown ({unfinished_cause(u)})"


def era_text(g: EraGuess) -> str:
    """The era a launch's wording suggests; 'approximate' said once when its date does not
    confirm it (undated, or dated outside the wording's window)."""
    e, d = g.era, g.printed_on
    if e is None:
        return "unknown" + (f" (dated {d.isoformat()})" if d else "")
    if g.fits_date:
        return f"{e.name} ({e.window}; dated {d.isoformat() if d else ''})"
    if d is None:
        return f"{e.name}, approximate ({e.window} wording; its lines carry no date)"
    why = "after it: an older SGLang run later, or a fork" if g.after_window else "before it"
    return f"{e.name} wording, approximate ({e.window}, but dated {d.isoformat()}, {why})"


# whatif's slope notes (registered in logmem.report.compare.notes).


def no_measured_slope_text(n: cn.NoMeasuredSlope) -> str:
    h = n.mib_per_bs if n.mib_per_bs is not None else DECODE_GRAPH_MIB_PER_BS
    text = (
        "No measured slope: graph memory for the new max bs is priced by SGLang's graph-reserve "
        f"heuristic, {h:g} MiB per unit of max bs (its terms are under Assumptions). That is a "
        "reserve inside SGLang's default mem_fraction_static formula, not a measurement of this "
        "launch: the graphs and headroom are an estimate whose error is not known, so only what "
        "the graphs as measured settle is a verdict."
    )
    if n.kept_logits:
        if n.added and n.rows is not None:
            per_entry = kept_logits_bytes(n.rows, 1)
            span = f"bs {n.added[0]}" if len(n.added) == 1 else f"bs {n.added[0]}-{n.added[-1]}"
            which = (
                f"the {len(n.added)} bucket(s) it adds ({span}) hold {n.rows:,} rows, "
                f"{per_entry:,} B per vocabulary entry ("
                f"{kept_logits_bytes(n.rows, 100_000) / GIB:.2f} GiB per 100,000 entries; the log "
                "does not give the vocabulary)"
            )
        else:
            which = "the log does not tell which buckets the new list adds"
        text += (
            " In this SGLang (before the static logits buffer) every captured bucket keeps its "
            "own float32 logits in the shared graph pool (bs x vocab x 4 B, after the TP "
            f"all-gather; cuda_graph_runner.py output_buffers), so each added bucket costs at "
            f"least that: {which}; the larger bucket's activations come on top."
        )
    return (
        text + " Measure it with --slope-from A B (two launches that differ only in "
        "--cuda-graph-max-bs) or give --mib-per-row."
    )


def failed_bucket_slope_text(n: cn.SlopeFromFailedBucket) -> str:
    return (
        f"No measured slope: graph memory for the new max bs is priced at {n.mib_per_row:.2f} MiB "
        f"per unit of bs, {slope_source_text(n.source)}, so the two agree. SGLang's graph-reserve "
        f"heuristic ({n.heuristic_mib_per_bs:g} MiB per unit of max bs) is a budget, not a "
        "measurement of this GPU. Measure the slope with --slope-from A B or give --mib-per-row."
    )


def slope_used_text(n: cn.SlopeUsed) -> str:
    unit = "MiB per unit of bs" if n.per_bs else "MiB per row"
    return f"Graph slope {n.mib_per_row:.3f} {unit}: {slope_source_text(n.source)}."


def heuristic_reserve_text() -> str:
    """The assumption beside a slope of launches that may run SGLang's reserve formula."""
    return (
        f"SGLang's default mem_fraction_static (its reserve formula, sglang {FORMULA_FORMS[0].form.first}"
        f" on) reserves {DECODE_GRAPH_MIB_PER_BS:g} MB (MiB) per unit of cuda_graph_max_bs (+"
        f" {DP_ATTENTION_MIB_PER_BS_DP:g} MB x dp_size with DP attention), meant to cover all graph"
        " memory; the ratio compares it with the growth of the capture total (the capture end's mem"
        " usage) per unit of max bs. It is set beside a slope where every launch may run that"
        " formula and not every one is known to have passed its value: it is what SGLang's default"
        " would reserve, not a finding that these launches' values came from it (a launch's"
        " 'default mfs rule' row in analyze says what its log shows)."
    )
