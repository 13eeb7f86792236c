"""What ``logmem whatif`` says about pools, disabled graphs, max-bs methods and the window's
top, as typed facts (the English is logmem.report.compare.whatif_words), and the per-bucket rule for a
smaller max bs (``bucket_change``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from logmem.analysis.attribution import LaunchLedger
from logmem.analysis.capture_lever import CaptureLever
from logmem.analysis.captures import phase_cost
from logmem.analysis.findings_sizing import GapReason, PoolsVsBudget
from logmem.analysis.ledger import Bound, Bucket, Lazy, Phase
from logmem.analysis.sizing import Sizing
from logmem.analysis.weights_loaded import WeightsNotLoaded, weights_not_loaded
from logmem.compare import notes as cn
from logmem.compare.whatif_sizes import AddedBuckets, FirstBucketShrinks
from logmem.frozen import frozen
from logmem.model.records import Launch
from logmem.sglang.capture_lists import CaptureTop
from logmem.sglang.deepep_v2_budget import V2Refusal
from logmem.sglang.default_mfs import Rule


@frozen
class PoolSize:
    """One pool of a prediction: its label, bytes and tokens (None: a state pool in requests)."""

    label: str  # "KV", "full KV", "SWA KV", "Mamba state", "draft KV"
    bytes: int
    tokens: int | None
    in_budget: bool  # sized from the KV budget (rest); False: the draft's, from what was left


@frozen
class GraphsDisabled:
    """The launch ran with CUDA graphs off: no graph figure exists at any max bs."""

    flag: str  # the server_args key that disabled them
    requested_max_bs: int | None = None  # --cuda-graph-max-bs asked for, which does not apply


@frozen
class DraftFollows:
    """The draft's KV pool: sized outside the target's budget, for as many tokens as the target's
    pool, so it moves with the predicted tokens (``follows``) or, its tokens differing, is held."""

    bytes: int
    tokens: int
    follows: bool


@frozen
class BucketSum:
    """A smaller max bs priced from the bar's per-bucket readings."""

    graph: str
    new_bs: int
    kept: tuple[int, ...]  # sizes of the measured buckets that remain (capture order)
    dropped: tuple[int, ...]  # sizes that would no longer be captured
    first_size: int  # the bucket captured first
    first_bytes: int  # its measured cost
    next_bytes: int  # the next bucket's, which the first is taken to cost for its own graph
    stand_in: int | None  # new_bs is not a measured size: the measured bucket standing in for it
    change_bytes: int
    lines: tuple[int, int]
    shrunk: bool = False  # a slope moves the first bucket's extra (FirstBucketShrinks follows)


@frozen
class SlopeAbove:
    """A max bs above the largest measured one: extrapolated with a slope."""

    largest_bs: int
    new_bs: int


@frozen
class NoBucketReadings:
    """A smaller max bs without per-bucket readings of the graph: the slope is used instead."""

    graph: str
    new_bs: int


@frozen
class TopUnknown:
    """The window's top cannot be computed above the launch's own setting: a capture's logged
    usage is negative (a release masks its cost), so its low point of free memory is unknown."""

    graph: str
    line: int | None
    released_bytes: int | None  # the least that was released (minus the logged usage)
    has_begin: bool  # the capture-begin reading is in the log
    has_bars: bool  # per-bucket readings are
    at_least: float  # the mem_fraction_static the launch ran with: the top is no lower
    at_most: float | None = None  # where headroom after capture would fall below the reserve


# What whatif adds to the compare notes (logmem.compare.notes.Note).
@frozen
class CappedAtRequestPool:
    pool: int
    requested: int | None = None  # --cuda-graph-max-bs as asked
    unchanged: bool = False  # the cap is the largest size the launch captured: nothing changes
    line: int | None = None  # the summary line that prints max_running_requests


@frozen
class ListOverridesCap:
    """--cuda-graph-max-bs asked of a launch that passed (or may have passed) its own
    --cuda-graph-bs, which in its era sets the largest size (rules.capture_list_flags): the
    prediction is for the list without its sizes above the asked max bs."""

    lever: CaptureLever
    requested: int


@frozen
class MaxBsWasClamped:
    """The launch's decode max bs is SGLang's default lowered to --max-running-requests
    (logmem.sglang.decode_max_bs, 0.5.22 on): a larger --cuda-graph-max-bs is not lowered, but
    the runner still clamps the list to the request pool."""

    max_bs: int
    certain: bool  # False: the log's month holds releases without the clamp too


@frozen
class DeepEPv2Refuses:
    """--cuda-graph-max-bs that SGLang's DeepEP v2 budget check refuses at start-up
    (logmem.sglang.deepep_v2_budget)."""

    requested: int
    refusal: V2Refusal


@frozen
class ListTopAt:
    """The largest batch --cuda-graph-max-bs gives by SGLang's capture list of the launch's era
    (logmem.sglang.capture_lists.largest_at_max_bs), clamped to the request pool."""

    requested: int
    top: CaptureTop
    cur_bs: int  # the largest size the launch captured
    pool_line: int | None  # the summary line printing max_running_requests (None: predicted)


@frozen
class WeightsOfABrokenLoad:
    """The launch's weights include parameters the checkpoint did not fill (analyze's finding,
    logmem.analysis.weights_loaded): the weights whatif holds as measured are that load's."""

    found: WeightsNotLoaded


@frozen
class MfsHeld:
    mfs: float
    # The default-mfs rule of the launch (logmem.sglang.default_mfs): PASSED, TP_TABLE, LARGE_GPU or
    # GPU_TIER say
    # SGLang's default would not move with max bs; None or another rule: it may.
    rule: Rule | None = None
    # Whether the rule's value is the dump's (DefaultMfs.matches; None: no value to compare):
    # RESERVE and True, SGLang derived it; RESERVE and False, it was passed.
    matches: bool | None = None


@frozen
class MambaRequestsFollow:
    """Hybrid Mamba: the log shows max_running_requests = max_mamba_cache_size // 3, so the
    request count follows the Mamba slots, which scale with the Mamba state pool."""

    slots: int  # logged max_mamba_cache_size
    slots_line: int
    requests: int  # logged max_running_requests
    summary_line: int
    new_slots: int  # at the predicted setting
    new_requests: int
    mfs: float
    graph_cap: int | None = None  # the decode graphs' largest bs the new request count caps


@frozen
class LoggedMfsDisagrees:
    """--logged-mem-fraction-static does not give back the logged pool, and SGLang's rule on the
    log's readings gives another value: the given value is the first suspect, not SGLang."""

    given: float
    backsolved: float


@frozen
class NoKVAt:
    """The asked mem_fraction_static leaves SGLang's KV budget at or below zero: start-up would
    stop sizing the KV cache (model_runner's 'Not enough memory' RuntimeError)."""

    mfs: float
    rest_bytes: int
    lo: float | None  # the smallest value with a positive pool


@frozen
class MambaRequestsHeld:
    """A hybrid Mamba model whose log does not show how its slots set max_running_requests:
    the count is held as logged."""


@frozen
class PostCaptureSized:
    """Post-capture KV sizing (sglang 0.5.17-0.5.23, kv_pool_runtime.py; logmem.analysis.
    post_capture): SGLang sized the pool after the graphs and kept P x (1 - mfs) free. A change of
    mfs moves the pool by P x the change, as the rule does; a change of graph memory moves the
    pool, not the headroom (compare.whatif_postcap replays it)."""

    line: int  # the post-capture KV line
    graphs_asked: bool  # --cuda-graph-max-bs was given
    # The predictions replay the sizing (compare.whatif_postcap): False where the headroom SGLang
    # would keep at the new max bs is not known (its activation reserve needs the GPU capacity).
    modelled: bool = True
    # The decode graph's max bs against max_running_requests changes the headroom SGLang keeps
    # (kv_pool_runtime.py eager_decode_gap): (new max bs, requests, the activation reserve in
    # bytes, True: now below, the reserve is kept; False: no longer below, P x (1 - mfs) is).
    gap: tuple[int, int, int, bool] | None = None
    headroom_bytes: int | None = None  # P x (1 - mfs) at the predicted value


WhatIfNote = (
    GraphsDisabled
    | PostCaptureSized
    | DraftFollows
    | BucketSum
    | FirstBucketShrinks
    | SlopeAbove
    | AddedBuckets
    | NoBucketReadings
    | TopUnknown
    | CappedAtRequestPool
    | ListTopAt
    | MaxBsWasClamped
    | ListOverridesCap
    | DeepEPv2Refuses
    | WeightsOfABrokenLoad
    | MfsHeld
    | MambaRequestsFollow
    | MambaRequestsHeld
    | LoggedMfsDisagrees
    | NoKVAt
)


def usable_buckets(p: Phase) -> tuple[Bucket, ...] | None:
    """The phase's per-bucket readings when every bucket has one with a known, exact cost and
    a size (at least two buckets, largest first, as SGLang captures them); else None."""
    b = p.buckets
    if p.graph is None or not p.graph.complete or len(b) < 2:
        return None
    sizes = [x.size for x in b]
    if any(s is None for s in sizes) or sizes != sorted(sizes, reverse=True):  # type: ignore[type-var]
        return None
    if len(set(sizes)) != len(sizes):
        return None
    if any(x.cost_bytes is None or x.covers != 1 or x.bound is not Bound.EXACT for x in b):
        return None
    if p.graph.sizes and len(p.graph.sizes) != len(b):
        return None
    return b


def bucket_change(graph: str, buckets: Sequence[Bucket], new_bs: int) -> BucketSum | None:
    """The graph's change at a smaller max bs ``new_bs`` from measured per-bucket costs: the
    buckets above it go, the first-captured bucket's extra allocation (its cost above the next
    bucket's: what the first capture allocates lazily lands there whatever its size) stays, and
    a ``new_bs`` that is not a measured size costs what the next larger measured bucket did.
    None when ``new_bs`` is not below the largest measured bucket."""
    sizes = [int(b.size or 0) for b in buckets]
    costs = [int(b.cost_bytes or 0) for b in buckets]
    if new_bs >= sizes[0]:
        return None
    dropped = [i for i in range(1, len(sizes)) if sizes[i] > new_bs]
    kept = [i for i in range(1, len(sizes)) if sizes[i] <= new_bs]
    change = -costs[1] - sum(costs[i] for i in dropped)
    stand_in = None
    if new_bs not in sizes:
        j = dropped[-1] if dropped else 1
        stand_in = sizes[j]
        change += costs[j]
    return BucketSum(
        graph,
        new_bs,
        tuple(sizes[i] for i in kept),
        (sizes[0], *(sizes[i] for i in dropped)),
        sizes[0],
        costs[0],
        costs[1],
        stand_in,
        change,
        (buckets[0].line, buckets[-1].line),
    )


def _scaled(n: int, t: int, t0: int | None) -> int:
    return round(n * t / t0) if t0 else n


def budget_pools(sz: Sizing, t: int, t0: int | None, bpt: int) -> tuple[PoolSize, ...]:
    """Every pool inside the KV budget at ``t`` full-pool tokens: the full KV pool (``t`` cells),
    then the SWA pool and the Mamba / linear-attention state, which the same budget splits off
    and which follow the full pool's tokens (logged x t / t0)."""
    several = len(sz.pools) > 1
    # The buffers hold #tokens + page_size slots (reference 4.1), so t cells plus one page.
    out = [PoolSize("full KV" if several else "KV", (t + sz.page_size) * bpt if t else 0, t, True)]
    for label, b, tok in sz.pools:
        if label != "full" and (tok != sz.kv_tokens or b != sz.kv_bytes):
            name = f"{label} KV" if label == "SWA" else label
            out.append(
                PoolSize(name, _scaled(b, t, t0), _scaled(tok, t, t0) if tok else None, True)
            )
    if sz.mamba_bytes:
        out.append(PoolSize("Mamba state", _scaled(sz.mamba_bytes, t, t0), None, True))
    return tuple(out)


def draft_pool(sz: Sizing, t: int, t0: int | None) -> tuple[PoolSize | None, DraftFollows | None]:
    """The draft model's KV pool at ``t`` target tokens, and the fact of how it was moved: it
    is sized after the target's, outside the budget, for the target's token count (reference
    4.8), so it follows ``t`` when its logged tokens are the target's, else is held."""
    if not sz.draft_pools:
        return None, None
    b = sum(x for x, _ in sz.draft_pools)
    tok = sz.draft_pools[0][1]
    follows = bool(t0) and all(n == sz.kv_tokens for _, n in sz.draft_pools)
    now = _scaled(b, t, t0) if follows else b
    return PoolSize("draft KV", now, t if follows else tok, False), DraftFollows(b, tok, follows)


def fixed_lazy(led: LaunchLedger, rank: str | None, graph: str | None) -> cn.LazyInLargest | None:
    """The resized graph's largest bucket, when it holds DeepEP's buffer or peer buffers."""
    rl = led.rank(rank) if rank is not None else None
    p = (
        next((p for p in rl.phases if p.graph is not None and p.graph.name == graph), None)
        if rl is not None
        else None
    )
    c = p.part("largest") if p is not None else None
    if c is None or p is None or p.graph is None:
        return None
    fixed = tuple(x for x in c.facts.lazy if x in (Lazy.DEEPEP, Lazy.PEER_BUFFERS))
    if not fixed:
        return None
    return cn.LazyInLargest(p.graph.label, c.bytes, fixed, c.facts.library)


def main_buckets(led: LaunchLedger, rank: str, graph: str) -> tuple[str, tuple[Bucket, ...]] | None:
    """The resized graph's label and per-bucket readings on its rank, when every bucket has one."""
    rl = led.rank(rank)
    p = (
        next((p for p in rl.phases if p.graph is not None and p.graph.name == graph), None)
        if rl
        else None
    )
    b = usable_buckets(p) if p is not None else None
    return (p.graph.label, b) if b and p is not None and p.graph is not None else None


def top_unknown(p: Phase, m0: float, at_most: float | None) -> TopUnknown:
    pc = phase_cost(p)
    g = p.graph
    assert g is not None
    cost = pc.graph
    return TopUnknown(
        g.label,
        cost.line if cost is not None else p.lines[1],
        cost.released_bytes if cost is not None else None,
        g.begin_bytes is not None,
        bool(g.samples),
        m0,
        at_most,
    )


def context_check(
    ctx: int | None,
    lo_ctx: float | None,
    hi: float | None,
    bounded: bool,
    full_bytes: int,
    full_tokens: int,
    bpt: int,
    top_at_least: bool = False,
) -> cn.ContextCheck:
    """Whether one full context fits, and from which mem_fraction_static (``top_at_least``:
    ``hi`` is only a lower bound of the window's top, so above it nothing is ruled out)."""
    f = cn.ContextFit
    if not ctx:
        return cn.ContextCheck(f.UNKNOWN)
    above = hi is not None and lo_ctx is not None and lo_ctx > hi
    if lo_ctx is None:
        fit = f.IMPOSSIBLE
    elif above and not top_at_least:
        fit = f.ABOVE_TOP
    else:
        fit = f.BOUNDED if bounded or above else f.FITS
    check = cn.ContextCheck(fit, ctx, bpt, lo_ctx, hi, full_bytes, full_tokens)
    return replace(check, top_at_least=True) if above and top_at_least else check


def low_points(
    led: LaunchLedger, after: Mapping[str, tuple[int, int]]
) -> dict[str, tuple[int, int, str]]:
    """Per rank of ``after``: (the least free reading from its pool step on, its line, rank)."""
    out: dict[str, tuple[int, int, str]] = {}
    for rl in led.ranks:
        low = rl.least_free_from_pools() if rl.rank in after else None
        if low is not None:
            out[rl.rank] = (low[0], low[1], rl.rank)
    return out


def unsampled_low(
    led: LaunchLedger,
    low: Mapping[str, tuple[int, int, str]],
    after: Mapping[str, tuple[int, int]],
) -> str | None:
    """The label of a capture with no readings inside it (RankLedger.unsampled_capture_at) where
    a rank's low point, below its end, sits: that is then the lowest reading, free memory inside
    the capture may have gone lower, and headroom built on it is an upper bound. None: none."""
    for rank, (b, line, _r) in low.items():
        rl = led.rank(rank)
        u = rl.unsampled_capture_at(line) if rl is not None and b < after[rank][0] else None
        if u is not None:
            return u.graph.label if u.graph is not None else "graph"
    return None


def low_point_facts(
    led: LaunchLedger, after: Mapping[str, tuple[int, int]], graph: str | None
) -> tuple[dict[str, tuple[int, int, str]], frozenset[str], str | None, cn.LowPointBinds | None]:
    """(low_points, lows_after_capture, unsampled_low, the note for the binding low point below
    its rank's end, or None)."""
    low = low_points(led, after)
    past = lows_after_capture(led, low, graph)
    unsampled = unsampled_low(led, low, after)
    b = min((v for v in low.values() if v[0] < after[v[2]][0]), default=None)
    note = (
        cn.LowPointBinds(b[2], b[0], b[1], after[b[2]][0], b[2] in past, unsampled)
        if b is not None
        else None
    )
    return low, past, unsampled, note


def lows_after_capture(
    led: LaunchLedger, low: Mapping[str, tuple[int, int, str]], graph: str | None
) -> frozenset[str]:
    """The ranks of ``low`` whose low point comes after their own capture of ``graph`` ended:
    memory a smaller graph does not take is free there too (036: the draft's pool step after
    the decode capture). Before it, or without that capture on the rank, a smaller graph has
    freed nothing yet."""
    out = set()
    for rank, (_b, line, _r) in low.items():
        rl = led.rank(rank) if graph is not None else None
        ends = [
            p.lines[1]
            for p in (rl.phases if rl is not None else ())
            if p.graph is not None and p.graph.name == graph
        ]
        if ends and line > ends[0]:
            out.add(rank)
    return frozenset(out)


def captured_unmeasured(launch: Launch) -> bool:
    """Graphs were captured but the log prints no memory for them (not: no capture at all)."""
    return any(g.captured_without_memory for r in launch.ranks for g in r.graphs)


def broken_loads(launch: Launch) -> tuple[WeightsOfABrokenLoad, ...]:
    """One note per model whose weights the checkpoint did not all fill (review26 #4)."""
    return tuple(WeightsOfABrokenLoad(f) for f in weights_not_loaded(launch))


def more_tokens_gap(led: LaunchLedger) -> PoolsVsBudget | None:
    """analyze's finding that SGLang allocated more tokens than its budget holds at the round
    cell (review26 #7f: whatif cites its figure, not a second token count)."""
    return next(
        (
            f
            for f in led.findings
            if isinstance(f, PoolsVsBudget)
            and f.reason is GapReason.MORE_TOKENS
            and f.fits is None
            and (f.extra_tokens or 0) > 0
        ),
        None,
    )
