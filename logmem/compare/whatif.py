"""``logmem whatif``: SGLang's KV rule replayed on one launch for another mem_fraction_static,
cuda_graph_max_bs or context length, and the feasible mem_fraction_static window.

The KV pool moves by the change of the rule's budget (logmem.compare.replay); graph memory by a
measured slope (logmem.compare.slope) or SGLang's heuristic; the headroom after capture is what
the tightest rank had left, less both. Its records live in logmem.compare.whatif_result."""

from __future__ import annotations

from dataclasses import replace

from logmem.analysis.attribution import build_ledger
from logmem.analysis.default_mfs import capacity_mib
from logmem.analysis.mamba_slots import mamba_slots_relation
from logmem.analysis.projection import rule_agrees
from logmem.compare import notes as cn
from logmem.compare import whatif_facts as wf
from logmem.compare.args import graph_max_bs
from logmem.compare.load import LaunchRef
from logmem.compare.points import main_point
from logmem.compare.replay import Replay, backsolved_mfs, unfinished, with_logged_mfs
from logmem.compare.slope import GraphSlope
from logmem.compare.whatif_facts import (
    BucketSum,
    GraphsDisabled,
    NoBucketReadings,
    PostCaptureSized,
    SlopeAbove,
    WhatIfNote,
    bucket_change,
    budget_pools,
    context_check,
    draft_pool,
    low_point_facts,
    main_buckets,
    top_unknown,
)
from logmem.compare.whatif_graph import max_bs_change
from logmem.compare.whatif_postcap import PostCaptureReplay
from logmem.compare.whatif_result import Prediction as Prediction
from logmem.compare.whatif_result import WhatIf as WhatIf
from logmem.compare.whatif_result import headrooms, reserve_tops
from logmem.errors import FitError
from logmem.model.records import Launch
from logmem.sglang import rules
from logmem.sglang.rules import MFS_GRID
from logmem.units import MIB


def whatif_launch(
    launch: Launch,
    ref: LaunchRef,
    mem_fraction_static: float | None = None,
    cuda_graph_max_bs: int | None = None,
    slope: GraphSlope | None = None,
    activation_reserve_bytes: int = 0,
    context_len: int | None = None,
    logged_mfs: float | None = None,
) -> WhatIf:
    """Predict KV tokens, graph memory and headroom at other settings (see the module docstring).

    `logged_mfs` stands in for the launch's mem_fraction_static when its log has no
    server_args line (trimmed pastes); it is said among the assumptions.
    """
    for flag, v in (
        ("--mem-fraction-static", mem_fraction_static),
        ("--logged-mem-fraction-static", logged_mfs),
    ):
        if v is not None and not 0 < v <= 1:
            raise FitError(f"{flag} {v:g} is outside (0, 1]")
    given_mfs = logged_mfs
    back = backsolved_mfs(launch) if logged_mfs is not None else None
    if logged_mfs is not None:
        launch = with_logged_mfs(launch, logged_mfs)
    led = build_ledger(launch)
    md = Replay(launch, led, context_len, mem_fraction_static)
    sz = md.sz
    notes: list[cn.Note | WhatIfNote] = []
    assumptions: list[cn.Note | WhatIfNote] = [
        cn.KVRuleReplayed(
            sz.after_weights_bytes,
            sz.pre_load_bytes,
            md.sizing_bpt,
            sz.pre_load_rank,
            sz.pre_load_coverage.printed if sz.pre_load_coverage else None,
            sz.pre_load_coverage.expected if sz.pre_load_coverage else None,
            md.share,
        ),
        cn.MfsMovesKVOnly(),
        cn.HeadroomDefinition(),
    ]
    if given_mfs is not None and not isinstance(launch.args.get("mem_fraction_static"), bool):
        assumptions.append(cn.LoggedMfsGiven(given_mfs))
    if md.share < 1:
        assumptions.append(cn.SharedBudget(md.share, md.share_of_rest))
    if md.page > 1:
        assumptions.append(cn.PageRounding(md.page))
    if md.max_total_tokens is not None:
        assumptions.append(cn.TokensCapped(md.max_total_tokens))
    _, draft_fact = draft_pool(sz, 1, 1)
    if draft_fact is not None:
        assumptions.append(draft_fact)
    elif any(r.draft for r in launch.ranks):
        assumptions.append(cn.DraftAsMeasured())
    disabled = (
        GraphsDisabled("disable_cuda_graph", cuda_graph_max_bs)
        if md.graphs_disabled and not md.has_capture
        else None
    )
    notes.extend(wf.broken_loads(launch))
    if disabled is not None:
        notes.append(disabled)
    elif not md.has_capture:
        notes.append(cn.NoCaptureMeasured(wf.captured_unmeasured(launch)))

    rule0 = md.tokens(md.m0)
    logged = sz.kv_tokens
    if md.sizing_gap is not None:
        notes.append(cn.SizedWithAnotherCell(md.sizing_gap, md.bpt))
    if sz.post_capture is not None:
        # The pool was sized after the graphs: not the rule's, and not held by graph changes.
        pc_note = PostCaptureSized(sz.post_capture.line, cuda_graph_max_bs is not None)
        notes.append(pc_note)
    elif logged and not rule_agrees(rule0, logged, md.bpt):
        if given_mfs is not None and back is not None and abs(back.mfs - given_mfs) > 0.002:
            notes.append(wf.LoggedMfsDisagrees(given_mfs, back.mfs))
        notes.append(cn.RuleDisagrees(rule0, logged, wf.more_tokens_gap(led)))
    # A prediction is the logged pool moved by the budget's change (Replay.pool_tokens).
    tokens = md.pool_tokens
    assumptions.append(
        cn.TokensFromLogged(md.sizing_bpt, md.page, md.share)
        if md.base is not None
        else cn.TokensByRule()
    )

    # Hybrid Mamba: where the log shows max_running_requests = slots // 3, the slots scale with
    # the Mamba state pool (which follows the full pool's tokens), and the requests with them.
    rel = mamba_slots_relation(launch)
    t_logged = tokens(md.m0)

    def mamba_requests(t: int) -> tuple[int, int] | None:
        """(slots, requests) at ``t`` full-pool tokens, where the relation holds."""
        if rel is None or not t_logged:
            return None
        slots = rel.slots * t // t_logged
        return slots, rel.requests_for(slots)

    mfs = mem_fraction_static if mem_fraction_static is not None else md.m0
    if rel is None and sz.mamba_bytes and md.fixed_requests is None:
        assumptions.append(wf.MambaRequestsHeld())

    ended = unfinished(launch)
    if ended is not None:
        notes.append(
            cn.StartupUnfinished(
                ended.headline,
                ended.in_capture,
                ended.shortfall_bytes if ended.memory else None,
            )
        )

    if md.ctx and md.logged_ctx and md.ctx != md.logged_ctx:
        assumptions.append(cn.ContextChange(md.logged_ctx, md.ctx))

    # Graph change for a new max bs.
    main = main_point(launch)
    cur_bs = (
        main.largest_size if main and main.largest_size is not None else graph_max_bs(launch.args)
    )
    if disabled is not None:
        cur_bs = None  # no graph was captured, whatever cuda_graph_max_bs says
    rows_per_bs = main.rows_per_bs if main and main.rows_per_bs else 1
    new_bs = cur_bs
    use: GraphSlope | None = slope
    method: BucketSum | SlopeAbove | NoBucketReadings | None = None
    bsum: BucketSum | None = None
    other_bs: int | None = None  # a smaller largest bs the log cannot rule out
    extra = 0  # added buckets, or the first bucket's shrink, at new_bs
    extra_err: int | None = 0
    priced = False  # a slope prices the change (not the measured buckets alone)
    change = None
    held = False  # other batch-sized graphs are held as measured while the main one moves
    if cuda_graph_max_bs is not None and cuda_graph_max_bs < 1:
        raise FitError("--cuda-graph-max-bs must be at least 1")
    if cuda_graph_max_bs is not None and disabled is None:
        if not md.has_capture or cur_bs is None:
            raise FitError(
                "this launch captured its graphs, memory not printed, so there is no measured "
                "bucket to grow or shrink"
                if wf.captured_unmeasured(launch)
                else "this launch captured no decode CUDA graph, so there is no bucket to grow or "
                "shrink"
            )
        at_mfs = mamba_requests(tokens(mfs))
        change = max_bs_change(
            launch,
            led,
            main,
            cur_bs,
            cuda_graph_max_bs,
            slope,
            rows_per_bs,
            at_mfs[1] if at_mfs and at_mfs[1] > 0 else None,
            ended,
        )
        new_bs, use, method, bsum = change.new_bs, change.slope, change.method, change.bucket_sum
        other_bs = change.other_bs
        extra, extra_err = change.extra_bytes, change.extra_error_bytes
        notes.extend(change.notes)
        priced = bsum is None or change.shrinks is not None  # a slope prices the change
        src = use.source if use is not None and priced else None
        if isinstance(src, cn.MeasuredSlope) and src.mismatches:
            notes.insert(0, cn.SlopeFromOtherLaunches(src.mismatches))
        assumptions.extend(change.assumptions)
        # Other batch-sized graphs held as measured (SGLang's draft runners capture the same bs
        # list): graphs at most when max bs falls (an underestimate when it rises: said only).
        held = any(isinstance(x, cn.OnlyMainGraph) and x.others for x in change.assumptions)
        if mem_fraction_static is None:
            d = led.default_mfs
            assumptions.append(wf.MfsHeld(md.m0, d.rule if d else None, d.matches if d else None))

    found = main_buckets(led, main.rank, main.graph) if main is not None else None

    def graph_delta(bs: int | None) -> int:
        if bsum is not None and bs == bsum.new_bs:
            return bsum.change_bytes + extra
        if bs is not None and cur_bs is not None and bs < cur_bs and found is not None:
            b = bucket_change(found[0], found[1], bs)  # a Mamba request count capping the list
            if b is not None:
                return b.change_bytes
        if bs is None or cur_bs is None or use is None or bs == cur_bs:
            return 0
        if use.per_bs:
            return round(use.mib_per_row * (bs - cur_bs) * MIB)
        d_rows = (bs - cur_bs) * rows_per_bs
        per_row = use.mib_per_row + (use.static_mib_per_row or 0.0)
        return round(per_row * d_rows * MIB) + (extra if bs == new_bs else 0)

    def graph_upper(bs: int | None) -> str | None:
        """Why graphs at a smaller ``bs`` are an upper bound (Prediction.graph_upper): priced from
        the measured buckets with the first-captured bucket's extra allocation whole (no slope
        shrinks its pool), or other batch-sized graphs held as measured; None: not a bound."""
        if bs is not None and cur_bs is not None and bs > cur_bs and use is not None:
            return "scaled top" if isinstance(use.source, cn.BarsSlope) else None
        if bs is None or cur_bs is None or bs >= cur_bs:
            return None
        if bsum is not None and bs == bsum.new_bs:
            whole = not bsum.shrunk
        else:
            whole = found is not None and bucket_change(found[0], found[1], bs) is not None
        return "first bucket" if whole else "other graphs" if held else None

    def graph_error(bs: int | None) -> int | None:
        """The bound on graph_delta(bs) a slope carries: 0 where no slope prices it (measured
        buckets, or no change), None where the slope's error is not known (given, heuristic)."""
        if bsum is not None and bs == bsum.new_bs:
            return extra_err
        if bs is None or cur_bs is None or use is None or bs == cur_bs or graph_delta(bs) == 0:
            return 0
        if bs < cur_bs and found is not None and bucket_change(found[0], found[1], bs) is not None:
            return 0
        err = use.mib_per_row_error
        if isinstance(use.source, cn.MeasuredSlope) and use.source.mismatches:
            return None  # measured on another model, GPU, TP or era: printing is not the error
        if use.per_bs or err is None:
            return None
        static = use.static_mib_per_row_error or 0.0 if use.static_mib_per_row is not None else 0.0
        added = extra_err if bs == new_bs and extra_err else 0
        return round((err + static) * abs(bs - cur_bs) * rows_per_bs * MIB) + added

    req0 = md.req_table(tokens(md.m0), md.logged_ctx)
    n0 = md.requests(tokens(md.m0), md.logged_ctx)
    s_line = launch.summary
    logged_n = s_line.get_int("max_running_requests") if s_line else None

    def n_requests(t: int, ctx: int | None) -> int | None:
        if (mr := mamba_requests(t)) is not None:
            return mr[1]
        n = md.requests(t, ctx)
        if n is None or n0 is None or logged_n is None:
            return n if logged_n is None else logged_n
        return logged_n + (n - n0)  # SGLang prints its own count (pool size, +1 in some eras)

    # Free memory after the last capture per rank, and the graph memory it measured; for a capture
    # that did not finish, upper bounds of the free memory (and so lower bounds of the graphs).
    after = dict(md.after)
    bounded = ended is not None and ended.in_capture
    if ended is not None and bounded and ended.memory and after:
        # The failed allocation lacked the shortfall: the rank that crashed would end at -shortfall
        # at best (or below zero, when the error prints no figures).
        cap = -(ended.shortfall_bytes or 0)
        crash_rank = ended.rank if ended.rank in after else min(after, key=lambda r: after[r][0])
        free_c, graph_c = after[crash_rank]
        if free_c > cap:
            after[crash_rank] = (cap, graph_c + free_c - cap)
    t0 = tokens(md.m0)
    draft0, _ = draft_pool(sz, t0, t0)
    post = sz.post_capture  # the pool was backed after the graphs (post-capture KV sizing)
    pc = PostCaptureReplay(
        md,
        t0,
        cur_bs,
        logged_n if logged_n is not None else md.fixed_requests,
        post is not None and post.eager_gap is not None,
        rules.pre_capture_activation_reserve_mib(launch.args, capacity_mib(launch)),
        launch.args,
    )
    # The least free reading from the pool step on, per rank: a later phase can give memory
    # back (036: the draft's pool step at 0.81 GiB, 2.74 at the end), and a larger pool has to
    # fit at that low point as well as at the end.
    # A low point at a capture the log does not sample is a lowest reading (``unsampled``).
    low, past, unsampled, binds = low_point_facts(led, after, main.graph if main else None)
    if binds is not None:
        assumptions.append(binds)

    heuristic = use is not None and isinstance(use.source, cn.HeuristicSlope)

    def predict(m: float, bs: int | None, ctx: int | None) -> Prediction:
        t = tokens(m)
        mr = mamba_requests(t)
        if mr is not None and bs is not None and 0 < mr[1] < bs:
            bs = mr[1]  # SGLang captures no batch above the request pool
        g_change = graph_delta(bs)
        if post is not None:
            t = pc.tokens(m, bs, g_change, t)
        pool_change = round((t - t0) * md.bpt / md.share)
        req_change = md.req_table(t, ctx) - req0 if req0 else 0
        draft, _ = draft_pool(sz, t, t0)
        d_change = draft.bytes - draft0.bytes if draft is not None and draft0 is not None else 0
        extra = pool_change + req_change + g_change + d_change
        worst, end_h, low_h = headrooms(after, low, past, extra - g_change, g_change)
        graph_bytes = None
        if worst is not None and md.has_capture and md.graphs_known:
            graph_bytes = after[worst[1]][1] + g_change
        crashed = same = False
        if ended is not None:
            same = m == md.m0 and bs == cur_bs and ctx == md.logged_ctx
            # More KV and no smaller graphs than the setting that ran out of memory: it does again.
            worse = (
                m >= md.m0
                and (bs is None or cur_bs is None or bs >= cur_bs)
                and (ctx or 0) >= (md.logged_ctx or 0)
            )
            crashed = bool(ended.memory and worse)
        return Prediction(
            m,
            bs,
            md.rest(m),
            t,
            # The pool's buffers hold #tokens + page_size slots (reference 4.1).
            (t + md.page) * md.bpt if t else 0,
            pool_change,
            req_change,
            graph_bytes,
            g_change,
            worst[0] if worst else None,
            worst[1] if worst else None,
            n_requests(t, ctx),
            headroom_exact=not (bounded or md.floored),
            graph_exact=not bounded,
            graph_known=md.graphs_known or not md.has_capture,
            crashed=crashed,
            as_launched=same,
            pools=budget_pools(sz, t, t0, md.bpt) + ((draft,) if draft is not None else ()),
            draft_change_bytes=d_change,
            low_point_unknown=(md.masked is not None or unsampled is not None) and extra > 0,
            headroom_upper=unsampled is not None,
            graph_error_bytes=graph_error(bs),
            graph_upper=graph_upper(bs) if not bounded else None,
            graph_estimate=heuristic and graph_error(bs) is None,
            end_headroom_bytes=end_h,
            low_headroom_bytes=low_h,
        )

    measured = predict(md.m0, cur_bs, md.logged_ctx)
    predicted = predict(mfs, new_bs, md.ctx)
    if other_bs is not None:
        alt = predict(mfs, other_bs, md.ctx).verdict(activation_reserve_bytes)
        if alt != predicted.verdict(activation_reserve_bytes):
            predicted = replace(predicted, bs_unsure=True)
        if not bounded and predicted.largest_bs is not None and predicted.largest_bs > other_bs:
            # Priced at the larger of the sizes the log allows: graphs at most, headroom at least.
            predicted = replace(predicted, graph_upper=predicted.graph_upper or "larger list")
    now, then = mamba_requests(t_logged), mamba_requests(predicted.kv_tokens)
    if rel is not None and now is not None and then is not None:
        capped = predicted.largest_bs if predicted.largest_bs != new_bs else None
        assumptions.append(
            wf.MambaRequestsFollow(
                rel.slots,
                rel.slots_line,
                rel.max_running_requests,
                rel.summary_line,
                then[0],
                then[1],
                mfs,
                capped,
            )
        )

    # The window on a 0.001 grid (users pass three decimals); both edges are monotone.
    grid = MFS_GRID
    lo_pos = next((m for m in grid if tokens(m) > 0), None)
    # With a capture that did not finish the headroom is an upper bound: `hi` bounds the top.
    at = {m: predict(m, new_bs, md.ctx) for m in grid}
    # A lower bound of the headroom (graphs an upper bound) rules nothing out: the top is then
    # at least the last value the bound settles.
    at_least = predicted.graph_upper is not None
    if post is not None:  # the pool backed after the graphs at each value (PostCaptureReplay)
        lo_pos = next((m for m in grid if at[m].kv_tokens > 0), None)
    ok = [m for m in grid if at[m].in_window(activation_reserve_bytes, at_least)]
    hi = ok[-1] if ok else None
    # The top with graphs at the top of the slope's error (None: no error, or not known).
    # ``hi`` counts a value whose headroom the error spans (its verdict is unknown): the top with
    # graphs at the low end of their error; the window's own top is the estimate's.
    err = predicted.graph_error_bytes
    hi_low = hi_high = None
    if err and hi is not None:
        r = activation_reserve_bytes
        mid = [m for m in ok if (at[m].against(r) or 0) >= r]
        sure = [m for m in mid if (at[m].against(r) or 0) - err >= r]
        hi_low, hi_high = (sure[-1] if sure else None), hi
        hi = mid[-1] if mid else None
    lo_ctx = md.smallest_mfs_for_context(md.ctx) if md.ctx else None
    if post is not None and md.ctx:
        lo_ctx = next((m for m in grid if at[m].kv_tokens >= md.ctx), None)
    if post is not None:
        notes[notes.index(pc_note)] = pc.note(pc_note, new_bs if cuda_graph_max_bs else None, mfs)
    top_bounded = bounded or md.floored
    unknown_top = None
    if md.masked is not None and md.masked.graph is not None and hi is not None:
        unknown_top = top_unknown(md.masked, md.m0, hi if hi < grid[-1] else None)
        hi = None
    if predicted.kv_tokens <= 0 and mem_fraction_static is not None:
        notes.insert(0, wf.NoKVAt(mfs, predicted.rest_bytes, lo_pos))
    context = context_check(
        md.ctx, lo_ctx, hi, top_bounded, tokens(1.0) * md.bpt, tokens(1.0), md.bpt, at_least
    )
    if unknown_top is not None and lo_ctx is not None and lo_ctx > md.m0:
        context = replace(context, fit=cn.ContextFit.BOUNDED, masked=True)
    c = led.context
    if (
        context.fit in (cn.ContextFit.BOUNDED, cn.ContextFit.FITS)
        and c is not None
        and c.fit_leaves_too_little
        and c.context_len == md.ctx
    ):
        # analyze's own fact: that setting leaves less outside the pool than the launch used.
        context = replace(
            context,
            fit=cn.ContextFit.TOO_LITTLE_OUTSIDE,
            outside_at_fit_bytes=c.outside_at_fit_bytes,
            used_outside_bytes=c.used_outside_bytes,
        )
    if c is not None and c.released is not None and c.context_len == md.ctx:
        context = replace(context, fact=c)  # memory released after sizing (analysis.released)
    assumptions.append(cn.ActivationReserve(activation_reserve_bytes, binds is not None))
    if use is not None and cuda_graph_max_bs is not None and priced and disabled is None:
        assumptions.append(cn.SlopeUsed(use.mib_per_row, use.per_bs, use.source))
    return WhatIf(
        ref,
        md.m0,
        sz.pre_load_bytes,
        sz.pre_load_rank,
        sz.after_weights_bytes,
        md.bpt,
        bool(sz.likely_bytes_per_token),
        md.share,
        logged,
        md.ctx,
        activation_reserve_bytes,
        measured,
        predicted,
        use,
        lo_pos,
        hi,
        lo_ctx,
        context,
        tuple(assumptions),
        tuple(notes),
        mem_fraction_static,
        cuda_graph_max_bs,
        ended,
        not top_bounded and unknown_top is None,
        md.floored,
        disabled,
        unknown_top,
        method,
        change.added if change else None,
        change.shrinks if change else None,
        hi_low,
        hi_high,
        at_least and hi is not None,
        reserve_tops(at, activation_reserve_bytes),
    )
