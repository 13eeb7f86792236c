"""``logmem whatif --cuda-graph-max-bs``: which largest batch the launch would capture and how
its graph memory is priced (measured buckets, a slope, or SGLang's heuristic), with the notes
and assumptions that say so. A request pool that caps the new max bs at the size the launch
already captured changes nothing, and nothing is priced. ``measured_slope``: the slope of
``--slope-from A B``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from logmem.analysis.attribution import LaunchLedger
from logmem.analysis.capture_lever import capture_lever
from logmem.analysis.ledger import Cause
from logmem.compare import notes as cn
from logmem.compare import whatif_facts as wf
from logmem.compare.comparable import Aspect, mismatches
from logmem.compare.load import LaunchRef
from logmem.compare.points import GraphPoint, graph_points, main_point, request_pool
from logmem.compare.replay import Unfinished
from logmem.compare.slope import GraphSlope, heuristic_mib_per_bs, slope_from_fit
from logmem.compare.whatif_facts import (
    BucketSum,
    NoBucketReadings,
    SlopeAbove,
    WhatIfNote,
    bucket_change,
    fixed_lazy,
    main_buckets,
)
from logmem.compare.whatif_sizes import (
    AddedBuckets,
    FirstBucketShrinks,
    added_buckets,
    bars_slope,
    first_bucket_shrinks,
    measured_per_row,
)
from logmem.errors import NoSlopeError
from logmem.frozen import frozen
from logmem.model.captures import month
from logmem.model.records import Graph, Launch
from logmem.sglang.capture_lists import GpuFacts, ListContext, largest_at_max_bs
from logmem.sglang.decode_max_bs import clamped_to_requests
from logmem.sglang.deepep_v2_budget import V2_ENV, v2_refusal
from logmem.sglang.eras import static_logits_buffer
from logmem.units import MIB


@frozen
class MaxBsChange:
    new_bs: int
    slope: GraphSlope | None  # the slope the change is priced by (None: buckets, or no change)
    method: BucketSum | SlopeAbove | NoBucketReadings | None
    bucket_sum: BucketSum | None
    notes: tuple[cn.Note | WhatIfNote, ...]
    assumptions: tuple[cn.Note | WhatIfNote, ...]
    other_bs: int | None = None  # the smaller largest bs the log cannot rule out
    added: AddedBuckets | None = None  # the buckets a larger max bs adds below its top
    shrinks: FirstBucketShrinks | None = None  # a smaller max bs: the slope on the first bucket

    @property
    def extra_bytes(self) -> int:
        """What the added buckets or the first bucket's shrink change beyond the method."""
        return (self.added.bytes if self.added else 0) + (self.shrinks.bytes if self.shrinks else 0)

    @property
    def extra_error_bytes(self) -> int | None:
        """Their bound (None: the slope's error is not known)."""
        if self.shrinks is not None:
            return self.shrinks.error_bytes
        return self.added.error_bytes if self.added else 0


def max_bs_change(
    launch: Launch,
    led: LaunchLedger,
    main: GraphPoint | None,
    cur_bs: int,
    requested: int,
    slope: GraphSlope | None,
    rows_per_bs: int,
    pool_at_mfs: int | None = None,
    failed: Unfinished | None = None,
) -> MaxBsChange:
    """The largest captured batch at ``--cuda-graph-max-bs requested`` and how it is priced.
    ``pool_at_mfs``: the request pool at the predicted setting, when it moves with it (a hybrid
    Mamba model's slots // 3); else the summary's max_running_requests caps the list."""
    notes: list[cn.Note | WhatIfNote] = []
    assumptions: list[cn.Note | WhatIfNote] = []
    new_bs = requested
    pool, line = request_pool(launch)
    if pool_at_mfs is not None:
        pool, line = pool_at_mfs, None  # the predicted pool, not a line of the log
    top = list_top(launch, led, main, requested, pool, cur_bs)
    sizes = top.top.sizes if top is not None else ()
    clamp = clamped_to_requests(launch.args, _graph_month(_main_graph(launch, main)))
    if clamp is not None and requested > clamp.max_bs:
        notes.append(wf.MaxBsWasClamped(clamp.max_bs, clamp.certain))
    lever = capture_lever(launch)
    if lever is not None and not lever.cap_works:
        notes.append(wf.ListOverridesCap(lever, requested))
    refusal = v2_refusal(launch.args, requested, _v2_capacity(launch))
    if refusal is not None:
        notes.append(wf.DeepEPv2Refuses(requested, refusal))
    if top is not None and not (pool is not None and sizes == (pool,) and pool < requested):
        new_bs = sizes[-1]  # more than one: priced at the larger (the note says so)
        if sizes != (requested,):
            notes.append(top)
    elif pool is not None and new_bs > pool:
        new_bs = pool
        notes.append(wf.CappedAtRequestPool(pool, requested, new_bs == cur_bs, line))
    if new_bs == cur_bs:
        # The cap binds at the size the launch captured: no bucket is added or dropped.
        return MaxBsChange(new_bs, None, None, None, tuple(notes), ())
    method: BucketSum | SlopeAbove | NoBucketReadings | None = None
    bsum: BucketSum | None = None
    shrinks: FirstBucketShrinks | None = None
    use = slope
    found = main_buckets(led, main.rank, main.graph) if main is not None else None
    if new_bs < cur_bs and main is not None:
        bsum = bucket_change(found[0], found[1], new_bs) if found else None
        method = bsum or NoBucketReadings(found[0] if found else main.graph, new_bs)
        if bsum is not None and slope is not None and measured_per_row(slope):
            b = bsum
            shrinks = first_bucket_shrinks(
                b.graph, b.first_size, b.first_bytes, b.next_bytes, new_bs, rows_per_bs, slope
            )
            bsum = method = replace(b, shrunk=True)
    elif new_bs > cur_bs:
        method = SlopeAbove(cur_bs, new_bs)
    if bsum is None:
        if use is None and (from_fix := _failed_bucket_slope(failed, main, new_bs, cur_bs)):
            h, _terms = heuristic_mib_per_bs(launch.args, new_bs)
            use = from_fix
            assert isinstance(use.source, cn.FailedBucketSlope)
            notes.append(cn.SlopeFromFailedBucket(use.mib_per_row * rows_per_bs, use.source, h))
            use = replace(use, mib_per_row=use.mib_per_row / rows_per_bs)
        if use is None and new_bs > cur_bs and found is not None and main is not None:
            use = bars_slope(found[0], found[1], _static(led, main), rows_per_bs)
        if use is None:
            h, terms = heuristic_mib_per_bs(launch.args, new_bs)
            use = GraphSlope(h, None, cn.HeuristicSlope(terms), per_bs=True)
            notes.append(cn.NoMeasuredSlope(h, *_kept(launch, top, cur_bs, new_bs, rows_per_bs)))
    added = None
    if bsum is None and new_bs > cur_bs and measured_per_row(use) and main is not None:
        graph = found[0] if found else main.graph
        buckets = found[1] if found else None
        added = added_buckets(graph, top.top if top else None, cur_bs, new_bs, buckets)
    if bsum is None:
        assert use is not None
        assumptions.append(
            cn.LargestBecomes(
                new_bs,
                use.per_bs,
                rows_per_bs,
                use.static_mib_per_row is not None,
                added is not None,
            )
        )
    # Either way the first capture's lazy allocations stay: name what they hold.
    lazy = fixed_lazy(led, main.rank if main else None, main.graph if main else None)
    if lazy is not None:
        notes.append(lazy)
    if method is not None:
        assumptions.append(method)
    if added is not None:
        assumptions.append(added)
    if shrinks is not None:
        assumptions.append(shrinks)
    others = (
        tuple(
            dict.fromkeys(
                p.graph.split("#")[0]  # one name per family (draft extend steps: one)
                for p in graph_points(launch)
                if p.rank == main.rank and p.per_bs and p.graph.split("#")[0] != main.graph
            )
        )
        if main is not None
        else ()
    )
    if main is not None and others:
        assumptions.append(cn.OnlyMainGraph(main.graph, others, new_bs > cur_bs))
    other = sizes[0] if top is not None and len(sizes) > 1 else None
    return MaxBsChange(
        new_bs, use, method, bsum, tuple(notes), tuple(assumptions), other, added, shrinks
    )


def _kept(
    launch: Launch, top: wf.ListTopAt | None, cur_bs: int, new_bs: int, rows_per_bs: int
) -> tuple[bool, tuple[int, ...], int | None]:
    """Whether the buckets a larger max bs adds each keep their own logits (no static logits
    buffer in this version: rules.kept_logits_bytes), which sizes they are and their rows."""
    if new_bs <= cur_bs or static_logits_buffer(launch) is not False:
        return False, (), None
    between = added_buckets("", top.top, cur_bs, new_bs, None) if top is not None else None
    sizes = (between.sizes if between else ()) + (new_bs,)
    known = top is not None
    return True, sizes if known else (), sum(sizes) * rows_per_bs if known else None


def _static(led: LaunchLedger, main: GraphPoint) -> Cause | None:
    """The main graph's static buffers on its rank (capture begin minus the first bar)."""
    rl = led.rank(main.rank)
    p = next((p for p in rl.phases if p.graph and p.graph.name == main.graph), None) if rl else None
    return p.part("static") if p is not None else None


def _failed_bucket_slope(
    failed: Unfinished | None, main: GraphPoint | None, new_bs: int, cur_bs: int
) -> GraphSlope | None:
    """analyze's per-row figure for a capture that failed in its largest bucket (per unit of
    the bucket's size), when whatif lowers that graph's max bs: one source for both."""
    if failed is None or failed.cap_per_row is None or main is None or new_bs >= cur_bs:
        return None
    c = failed.cap_per_row
    if failed.cap_graph != main.graph or c.largest != cur_bs:
        return None
    src = cn.FailedBucketSlope(main.graph, c.largest, c.second_bytes is not None)
    return GraphSlope(c.per_row_bytes / MIB, None, src)


def _v2_capacity(launch: Launch) -> int | None:
    """SGLANG_DEEPEP_V2_NUM_MAX_DISPATCH_TOKENS_PER_RANK as the launcher echoed it, if it did."""
    from logmem.analysis.comm_inputs import log_env
    from logmem.sglang.comm_env import env_int

    line = launch.server_args.source.line_no if launch.server_args else None
    env = {v.key: v.value for v in log_env(launch.events, line)}
    return env_int(env, V2_ENV, 1, 1 << 30)


def _main_graph(launch: Launch, main: GraphPoint | None) -> Graph | None:
    return next(
        (
            x
            for r in launch.ranks
            if main is not None and r.label == main.rank
            for x in r.graphs
            if x.name == main.graph.split("#")[0]
        ),
        None,
    )


def _graph_month(g: Graph | None) -> tuple[int, int] | None:
    at = g.opening or g.end if g is not None else None
    return month(at) if at is not None else None


def list_top(
    launch: Launch,
    led: LaunchLedger,
    main: GraphPoint | None,
    requested: int,
    pool: int | None,
    cur_bs: int,
) -> wf.ListTopAt | None:
    """The largest batch SGLang's capture list for this launch's era, variant and GPU gives at
    max bs ``requested`` (logmem.sglang.capture_lists, the rule analyze infers bucket counts
    with), clamped to the request pool as SGLang does; None when no rule applies, or when the
    rule does not give back the largest size this launch captured at its own setting (the
    request pool alone caps it then)."""
    g = _main_graph(launch, main)
    ctx = replace(
        ListContext.from_args(launch.args, pool),
        month=_graph_month(g),
        draft_loaded=any(r.draft for r in launch.ranks),
        verify_graph=main is not None and "draft" not in main.graph,
        logged=g.sizes or () if g is not None else (),
    )
    totals = led.device_totals
    sz = led.sizing
    dp = launch.args.get("dp_size")
    gpu = GpuFacts(
        totals.used_bytes // MIB if totals is not None and totals.used_bytes else None,
        sz.pre_load_bytes // MIB if sz is not None and sz.pre_load_bytes else None,
        led.platform.device == "rocm",
        dp if isinstance(dp, int) and not isinstance(dp, bool) else 1,
    )
    own = ctx.max_bs
    if own is not None:
        logged_pool, _ = request_pool(launch)
        back = largest_at_max_bs(own, replace(ctx, request_pool=logged_pool), gpu)
        if back is None or cur_bs not in back.sizes:
            return None
    top = largest_at_max_bs(requested, ctx, gpu)
    if top is None:
        return None
    line = launch.summary.source.line_no if launch.summary and pool == ctx.request_pool else None
    return wf.ListTopAt(requested, top, cur_bs, line)


def measured_slope(
    launch: Launch, a: Launch, ref_a: LaunchRef, b: Launch, ref_b: LaunchRef, allow: Sequence[str]
) -> GraphSlope:
    """The slope `launch`'s main graph grows by, measured from two launches A and B that differ
    in max bs (``--slope-from A B``); an error saying why when they give none."""
    from logmem.compare.diff import diff_launches

    differs = mismatches(a, launch)
    model = next((m for m in differs if m.aspect is Aspect.MODEL), None)
    if model is not None and "model_path" not in allow:
        raise NoSlopeError(
            f"--slope-from {ref_a.name} {ref_b.name} gave no slope for LOG",
            (cn.SlopeAcrossModels(("--slope-from A", "LOG"), model),),
            joined=False,
        )
    d = diff_launches(a, ref_a, b, ref_b, allow)
    main = main_point(launch)
    slope = slope_from_fit(d.slopes, main.graph if main else None, ("A", "B"), differs)
    if slope is None:
        raise NoSlopeError(
            f"--slope-from {ref_a.name} {ref_b.name} gave no slope",
            (d.slope_note,) if d.slope_note is not None else (),
            joined=False,
        )
    return slope
