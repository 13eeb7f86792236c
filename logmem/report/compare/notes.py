"""The sentences of diff, fit and whatif: every note and assumption of logmem.compare.notes in
English (their short phrases: logmem.report.compare.words)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from logmem.analysis.ledger import Lazy
from logmem.compare import notes as cn
from logmem.errors import FitError, NoSlopeError
from logmem.report.causes import on_gpu as _on
from logmem.report.compare import comparable as cmpw
from logmem.report.compare import slope_notes as slope_notes  # registers its notes
from logmem.report.compare.causes import (
    attention_tp_text,
    first_bucket_text,
    mfs_not_all_derived_text,
    mfs_set_aside_text,
    no_reserve_text,
    no_term_split_text,
    ranks_matched_text,
    sizing_modes_text,
    uninitialized_text,
)
from logmem.report.compare.graph_words import largest_becomes_text
from logmem.report.compare.note_base import note_text as note_text
from logmem.report.compare.note_base import texts as texts
from logmem.report.compare.words import (
    era_text,
    failed_bucket_slope_text,
    heuristic_reserve_text,
    no_measured_slope_text,
    slope_used_text,
)
from logmem.sglang.rules import (
    DIFFERENCE_RESOLUTION_GIB,
    PRINT_RESOLUTION_GIB,
)
from logmem.units import format_gib as _gs

# Every bucket cost or static size is a difference of two printed readings.
_E = DIFFERENCE_RESOLUTION_GIB


# --- notes -----------------------------------------------------------------------------------


@note_text.register
def _(n: cn.NotInEveryLaunch) -> str:
    return f"{n.graph} on {_on(n.rank)} is not captured in every launch: no slope"


@note_text.register
def _(n: cn.SameLargestSize) -> str:
    if n.size is None:
        return f"{n.graph} on {_on(n.rank)}: the same largest size in every launch, no slope"
    what = "batch size" if n.per_bs else "size (tokens)"
    who = "both launches capture" if n.launches == 2 else "every launch captures"
    return (
        f"{n.graph} on {_on(n.rank)}: {who} the same largest {what} {n.size}; a slope needs "
        "two different sizes"
    )


@note_text.register
def _(n: cn.AllowDiffUnused) -> str:
    return f"--allow-diff {n.key}: the launches do not differ in {n.key}"


@note_text.register
def _(n: cn.WeightsDiffer) -> str:
    return "The weights phase differs between the launches: check that they load the same model."


@note_text.register
def _(n: cn.DifferentModels) -> str:
    same = (
        f" Both are {n.same_architecture}: if it is one checkpoint under two paths, ignore this."
        if n.same_architecture
        else ""
    )
    return (
        f"Different models: A loads {n.a or '?'}, B loads {n.b or '?'}. Weights, KV "
        f"cells and graphs follow the model, so most changes below are the model's, not the settings'.{same}"
    )


@note_text.register
def _(n: cn.DifferentWording) -> str:
    return (
        f"Different SGLang wording: A reads as {era_text(n.era_a)}, B as {era_text(n.era_b)} (see 'SGLang "
        "wording'), so they come from different versions: part of any change may be the version."
    )


@note_text.register
def _(n: cn.BucketsNotCompared) -> str:
    sizes = ", ".join(f"{s} (first in {w})" for s, w in n.sizes)
    launch = (
        f" Only {n.launch_first} captured this graph first in its launch, where lazy allocations land."
        if n.launch_first
        else ""
    )
    return (
        f"No change for size {sizes}: the first bucket a capture takes holds the graph memory "
        "pool's first allocation and, in a launch's first capture, lazy allocations (NCCL / "
        "DeepEP buffers, workspaces); a bucket captured later costs only its increment, so the "
        f"two are not like with like.{launch}"
    )


@note_text.register
def _(n: cn.CaptureOrderDiffers) -> str:
    parts = [f"{g} buckets {a} in A, {b} in B" for g, a, b in n.buckets]
    if n.graphs is not None:
        parts.append(f"graphs {' then '.join(n.graphs[0])} in A, {' then '.join(n.graphs[1])} in B")
    return (
        f"The launches captured in another order on {_on(n.rank)}: {'; '.join(parts)}. What a "
        "bucket or graph keeps depends on what was captured before it in the same launch."
    )


@note_text.register
def _(n: cn.NoCaptureMeasured) -> str:
    if n.captured_unmeasured:
        return (
            "This launch captured graphs, memory not printed (this SGLang version prints no "
            "readings for its captures): their cost is unknown, and headroom is free memory at "
            "its last reading."
        )
    return "This launch captured no CUDA graph: headroom is free memory at its last reading."


@note_text.register
def _(n: cn.RuleDisagrees) -> str:
    if n.beyond is not None:
        from logmem.report.budget_words import more_tokens

        return (
            f"The pool holds {n.logged_tokens:,} tokens, more than SGLang's KV rule gives at the "
            f"logged setting: {more_tokens(n.beyond)}. Predictions apply the rule's changes to "
            "the measured pool."
        )
    return (
        f"SGLang's rule gives {n.rule_tokens:,} tokens at the logged setting but the pool holds "
        f"{n.logged_tokens:,}: this version sizes KV differently (post-capture sizing, spec "
        "decoding, a fork); predictions apply the rule's changes to the measured pool."
    )


@note_text.register
def _(n: cn.SizedWithAnotherCell) -> str:
    from logmem.report.budget_words import cells_bigger

    f = n.finding
    return (
        f"As analyze reads this launch, {cells_bigger(f)}. Predicted tokens move by the budget's "
        f"change / {f.sizing_cell_bytes or 0:,.0f} B (the sizing cell), the pool's GiB by tokens x "
        f"{n.allocated_cell_bytes:,} B (the allocated cell)."
    )


@note_text.register
def _(n: cn.StartupUnfinished) -> str:
    if not n.in_capture:
        return f"{n.headline} The memory figures are complete; the crash is judged by `logmem analyze`."
    lacked = (
        f" minus the {_gs(n.shortfall_bytes)} GiB the failed allocation lacked"
        if n.shortfall_bytes
        else ""
    )
    return (
        f"{n.headline} Graph memory is at least what the capture took before it stopped, and the "
        f"headroom after capture at most the free memory then{lacked}: '>=' and '<=' mark these "
        "bounds."
    )


@note_text.register
def _(n: cn.LazyInLargest) -> str:
    lib = n.library.value if n.library is not None else "NCCL"
    names = {Lazy.DEEPEP: "DeepEP's buffer", Lazy.PEER_BUFFERS: f"the {lib} peer buffers"}
    what = " and ".join(names[x] for x in n.lazy)
    return (
        f"The largest {n.graph} bucket's {_gs(n.bucket_bytes)} GiB also holds {what}, "
        "allocated on the first capture whatever the max bs: the prediction moves only the "
        "graph's share, and that part of the bucket stays."
    )


# --- assumptions -----------------------------------------------------------------------------


@note_text.register
def _(n: cn.GBIsGiB) -> str:
    return (
        f"SGLang's 'GB' is GiB (bytes / 2^30); every reading is printed to "
        f"+-{PRINT_RESOLUTION_GIB:g} GiB."
    )


@note_text.register
def _(n: cn.PhasesMatchedByKey) -> str:
    return "Phases are matched by key per rank label; a phase only one launch has shows '-' on the other."


@note_text.register
def _(n: cn.PhaseValueIsDrop) -> str:
    return "A phase value is the drop in free memory over the phase (negative: free memory rose)."


@note_text.register
def _(n: cn.RowsDefinition) -> str:
    return "rows = largest captured batch size x tokens per request (each slope says its source)."


@note_text.register
def _(n: cn.BucketDefinition) -> str:
    return (
        "The largest bucket is the first bar reading minus the second (SGLang captures the largest "
        "size first); static buffers are the capture begin reading minus the first bar reading."
    )


@note_text.register
def _(n: cn.DifferenceError) -> str:
    e = _E
    return (
        f"Each bucket cost or static size is a difference of two readings: +-{e:g} GiB. Slope error = "
        f"({e:g} + {e:g}) GiB / |rows_B - rows_A|; intercept error = {e:g} GiB x (rows_A + rows_B) / "
        "|rows_B - rows_A| (worst case, in general the least-squares bounds in docs/compare.md)."
    )


@note_text.register
def _(n: cn.FitErrors) -> str:
    return (
        f"Errors are worst-case bounds from printing (each point +-{_E:g} GiB); with three or more "
        "launches the standard error from the residuals is shown too."
    )


@note_text.register
def _(n: cn.CaptureTotalSlopes) -> str:
    return (
        "'capture total' slopes (no bucket readings) use the capture end's mem usage, which also "
        "grows with the number of buckets."
    )


@note_text.register
def _(n: cn.HeuristicReserve) -> str:
    return heuristic_reserve_text()


@note_text.register
def _(n: cn.KVRuleReplayed) -> str:
    share = f"{n.share:.1%} of rest" if n.share < 1 else "rest"
    if n.ranks_printed == 1 and (n.ranks_expected or 1) > 1:
        # One rank prints (the rank filter): SGLang's own minimum may be lower.
        k = (n.ranks_expected or 1) - 1
        others = "the other rank prints" if k == 1 else f"the other {k} ranks print"
        who = (
            f"P and after-weights are {_on(n.pre_load_rank)}'s readings ({others} none; "
            "SGLang's minimum may be lower)"
        )
    elif n.ranks_printed == 1:
        who = f"P and after-weights are {_on(n.pre_load_rank)}'s readings"
    else:
        who = f"P and after-weights are minimums over ranks (P on {_on(n.pre_load_rank)})"
    return (
        f"SGLang's KV rule: rest = after-weights free {_gs(n.after_weights_bytes)} GiB - P "
        f"{_gs(n.pre_load_bytes)} GiB x (1 - mem_fraction_static); tokens = {share} // "
        f"{n.bytes_per_token:,.0f} B per token. {who}."
    )


@note_text.register
def _(n: cn.MfsMovesKVOnly) -> str:
    return (
        "Changing mem_fraction_static moves the KV pool only: weights, the pre-capture workspace and "
        "the graphs stay as measured."
    )


@note_text.register
def _(n: cn.LowPointBinds) -> str:
    return (
        f"Free memory on {_on(n.rank)} fell to {_gs(n.low_bytes)} GiB (line {n.line}) after the KV pool, "
        f"below the {_gs(n.final_bytes)} GiB it ended with: a larger pool must fit at that low "
        "point too, so headroom is the lower of the two, less the extra memory."
        + (
            " It comes after the decode graphs' capture ended, so a change of their memory "
            "(either way) holds there too."
            if n.after_capture
            else ""
        )
        + (
            f" It is the lowest reading, not the lowest point: the log has no readings inside "
            f"the {n.unsampled} capture there, where free memory may have gone lower, so the "
            "headroom figures (and where the headroom runs out) are upper bounds."
            if n.unsampled
            else ""
        )
    )


@note_text.register
def _(n: cn.HeadroomDefinition) -> str:
    return (
        "Headroom = the least free memory from the KV pool on (as measured, on the tightest rank; "
        "usually the last reading, after capture) minus the extra KV pool, request table and graph "
        "memory. The KV change is the rule at both values, so printing errors cancel."
    )


@note_text.register
def _(n: cn.LoggedMfsGiven) -> str:
    return (
        f"The launch ran with mem_fraction_static {n.mfs:g} (--logged-mem-fraction-static; "
        "its log does not print it): every prediction rests on it."
    )


@note_text.register
def _(n: cn.SharedBudget) -> str:
    return (
        "Several pools share the budget (hybrid/SWA): the first KV pool keeps "
        + (
            f"the share of rest its logged tokens take, {n.share:.1%} (so it is empty where rest is)"
            if n.of_rest
            else f"its share of the logged pools, {n.share:.1%} (its tokens x cell against the "
            "others' printed sizes)"
        )
        + "; the other pools scale with it."
    )


@note_text.register
def _(n: cn.PageRounding) -> str:
    return f"Tokens are rounded down to page_size {n.page}."


@note_text.register
def _(n: cn.TokensCapped) -> str:
    return f"--max-total-tokens {n.max_total_tokens:,} caps the pool."


@note_text.register
def _(n: cn.DraftAsMeasured) -> str:
    return "The draft model's pools and graphs are held as measured."


@note_text.register
def _(n: cn.TokensFromLogged) -> str:
    pages = f", in whole pages of {n.page}" if n.page > 1 else ""
    share = f"{n.share:.1%} x " if n.share < 1 else ""
    return (
        f"Predicted KV tokens = the logged pool + {share}(rest at the new setting - rest as "
        f"logged) // {n.bytes_per_token:,.0f} B per token{pages}: the pool does not depend on max "
        "bs, and an unchanged mem_fraction_static gives the logged pool."
    )


@note_text.register
def _(n: cn.TokensByRule) -> str:
    return "Predicted KV tokens are SGLang's rule (no logged pool to start from, or --max-total-tokens held it)."


@note_text.register
def _(n: cn.ContextChange) -> str:
    return (
        f"context length {n.logged:,} -> {n.new:,} changes only the request-to-token table "
        "(request rows x (context + 4) x 4 B) and the one-full-context check."
    )


@note_text.register
def _(n: cn.OnlyMainGraph) -> str:
    who = f" ({', '.join(n.others)})" if n.others else ""
    way = (
        ""
        if n.raised is None
        else ": SGLang captures them up to the same max bs, so graph memory is too low by their growth"
        if n.raised
        else ": SGLang captures them up to the same max bs, so graph memory is at most this"
    )
    return f"Only the {n.graph} graph is rescaled; the other batch-sized graphs{who} stay as measured{way}."


@note_text.register
def _(n: cn.ActivationReserve) -> str:
    if n.bytes == 0:
        return (
            "No activation reserve: the window's top only keeps headroom >= 0 after capture. Prefill "
            "activations need more at run time; pass --activation-reserve GIB."
        )
    low = (
        "; the low point before the end only has to stay >= 0 (no prefill runs in the middle of "
        "start-up), so the top is the lower of the two limits"
        if n.low_point
        else ""
    )
    return (
        f"The window's top keeps {_gs(n.bytes)} GiB free after capture (--activation-reserve){low}."
    )


def no_slope_text(e: NoSlopeError) -> str:
    """The message of a NoSlopeError: its lead and, in words, why."""
    why = texts(e.reasons)
    if e.joined:
        return e.lead + (f" ({'; '.join(why)})" if why else "")
    return f"{e.lead}: " + (
        "; ".join(w.removeprefix("none: ") for w in why) or "no batch-size graph"
    )


@contextmanager
def slope_in_words() -> Iterator[None]:
    """The compare stage says why there is no slope in typed notes (NoSlopeError); the API
    raises it as a FitError whose message is in words."""
    try:
        yield
    except NoSlopeError as e:
        raise FitError(no_slope_text(e)) from None


# The diff's sentences on what else changed (ranks paired, first bucket, attention TP).
note_text.register(cn.RanksMatched)(ranks_matched_text)
note_text.register(cn.FirstBucketShared)(first_bucket_text)
note_text.register(cn.AttentionTPChanged)(attention_tp_text)
note_text.register(cn.NoReserveComparison)(no_reserve_text)
note_text.register(cn.WeightsUninitializedIn)(uninitialized_text)
note_text.register(cn.MfsNotAllDerived)(mfs_not_all_derived_text)
note_text.register(cn.MfsSetAside)(mfs_set_aside_text)
note_text.register(cn.NoTermSplit)(no_term_split_text)
note_text.register(cn.SizingModesDiffer)(sizing_modes_text)
note_text.register(cn.NoMeasuredSlope)(no_measured_slope_text)
note_text.register(cn.SlopeFromFailedBucket)(failed_bucket_slope_text)
note_text.register(cn.SlopeUsed)(slope_used_text)
cmpw.register(note_text)  # the comparability notes (logmem.report.compare.comparable)
note_text.register(cn.LargestBecomes)(largest_becomes_text)
