"""View model of ``logmem whatif``: the measured and predicted columns, the rule's inputs, how
start-up ended, and the mem_fraction_static window (see report.compare.view)."""

from __future__ import annotations

from typing import Any

from logmem.compare import notes as cn
from logmem.compare import whatif_facts as wf
from logmem.compare.replay import Unfinished
from logmem.compare.whatif import Prediction, WhatIf
from logmem.frozen import frozen
from logmem.report.compare.notes import texts
from logmem.report.compare.view import LaunchView, launch_view, rounded
from logmem.report.compare.whatif_words import flag, pool_label, top_unknown_text
from logmem.report.compare.words import (
    context_text,
    slope_source_text,
    unfinished_at,
    unfinished_cause,
    unfinished_label,
)
from logmem.report.input_notes import ref_notes
from logmem.units import GIB, gib

WHATIF_SCHEMA = "logmem.whatif/1"


@frozen
class PoolView:
    label: str  # the table row
    name: str  # "KV", "full KV", "SWA KV", "Mamba state", "draft KV"
    gib: float | None
    tokens: int | None
    in_budget: bool


@frozen
class PredictionView:
    mem_fraction_static: float
    largest_bs: int | None
    rest_gib: float | None
    kv_tokens: int
    kv_gib: float | None
    pool_change_gib: float | None
    req_table_change_gib: float | None
    max_running_requests: int | None
    graph_gib: float | None
    graph_change_gib: float | None
    headroom_gib: float | None
    headroom_rank: str | None
    # "exact" | "at least" | "at most" (a smaller max bs from the buckets, the first one's extra
    # whole) | "unknown" (floored or masked readings) | "estimated" (priced by a slope: +-
    # graph_error_gib where its error is known) | "estimated at least" (a capture that did not
    # finish, less a slope's estimate)
    graph_bound: str
    headroom_bound: str  # "exact" | "at most" | "at least" | "estimated" | "estimated at most"
    crashed: str | None
    feasible: bool | None
    feasible_label: str | None
    pools: tuple[PoolView, ...] = ()
    draft_pool_change_gib: float | None = None
    graph_error_gib: float | None = None  # the slope's bound on graphs and headroom (+-)


def _bounds(p: Prediction) -> tuple[str, str]:
    graph = "unknown" if not p.graph_known else "exact" if p.graph_exact else "at least"
    head = "exact" if p.headroom_exact and not p.headroom_upper else "at most"
    if p.graph_upper and graph == "exact":  # graphs at most, so the headroom at least
        graph, head = "at most", "at least" if head == "exact" else head
    if p.graph_error_bytes != 0:  # a slope prices the graphs
        # An estimate; on a bound (a capture that did not finish) an estimated bound.
        graph = {"exact": "estimated", "at least": "estimated at least"}.get(graph, graph)
        graph = "estimated at most" if graph == "at most" else graph
        head = {"exact": "estimated", "at most": "estimated at most"}.get(head, head)
        head = "estimated at least" if head == "at least" else head
    return graph, head


def _prediction(p: Prediction, reserve: int, u: Unfinished | None) -> PredictionView:
    crashed = f"crashed {unfinished_at(u)}" if p.crashed and u is not None else None
    label = None
    if u is not None:
        label = unfinished_label(u) if p.as_launched else (f"NO ({crashed})" if crashed else None)
    if label is None and p.graph_estimate and p.verdict(reserve) is None:
        label = "uncertain"  # graphs priced by SGLang's reserve heuristic, not measured
    return PredictionView(
        p.mem_fraction_static,
        p.largest_bs,
        gib(p.rest_bytes),
        p.kv_tokens,
        gib(p.kv_bytes),
        gib(p.pool_change_bytes),
        gib(p.req_table_change_bytes),
        p.max_running_requests,
        gib(p.graph_bytes),
        gib(p.graph_change_bytes),
        gib(p.headroom_bytes),
        p.headroom_rank,
        *_bounds(p),
        crashed,
        p.verdict(reserve),
        label,
        tuple(
            PoolView(pool_label(x), x.label, gib(x.bytes), x.tokens, x.in_budget) for x in p.pools
        ),
        gib(p.draft_change_bytes) if any(not x.in_budget for x in p.pools) else None,
        gib(p.graph_error_bytes) if p.graph_error_bytes else None,
    )


@frozen
class SlopeInputView:
    mib_per_row: float | None
    mib_per_bs: float | None  # SGLang's heuristic is per unit of bs, not per row
    static_mib_per_row: float | None
    source: str
    measured: bool


@frozen
class WhatIfInputs:
    mem_fraction_static: float | None
    cuda_graph_max_bs: int | None
    activation_reserve_gib: float | None
    context_length: int | None
    slope: SlopeInputView | None


@frozen
class RuleView:
    pre_load_gib: float | None
    pre_load_rank: str
    after_weights_gib: float | None
    bytes_per_token: int
    bytes_per_token_source: str
    kv_share: float | None
    logged_tokens: int | None


@frozen
class UnfinishedView:
    status: str
    headline: str
    phase: str | None
    graph: str | None
    size: int | None
    unit: str
    memory_related: bool | None
    cause: str
    shortfall_gib: float | None
    in_capture: bool
    at: str
    rank: str | None
    label: str


def _unfinished(u: Unfinished | None) -> UnfinishedView | None:
    if u is None:
        return None
    return UnfinishedView(
        u.status,
        u.headline,
        u.phase,
        u.graph,
        u.size,
        u.unit,
        u.memory,
        unfinished_cause(u),
        gib(u.shortfall_bytes),
        u.in_capture,
        unfinished_at(u),
        u.rank,
        unfinished_label(u),
    )


@frozen
class WhatIfView:
    launch: LaunchView
    inputs: WhatIfInputs
    rule: RuleView
    measured: PredictionView
    predicted: PredictionView
    feasible: bool | None
    unfinished: UnfinishedView | None
    window: tuple[float | None, float | None]  # [lo, hi] of mem_fraction_static
    window_top_exact: bool
    window_empty: bool
    lo_full_context: float | None
    full_context: str
    notes: tuple[str, ...]
    assumptions: tuple[str, ...]
    schema: str = WHATIF_SCHEMA
    # Free memory after capture reads 0.00 GiB, the driver's zero: the top is an upper bound.
    window_top_floored: bool = False
    graphs_disabled_by: str | None = None  # the flag that turned CUDA graphs off
    max_bs_method: str | None = None  # "buckets" | "slope above" | "slope, no bucket readings"
    window_top_unknown: str | None = None  # why the top is '?' (what reading is missing)
    window_top_at_least: float | None = None
    # Post-capture KV sizing: the rule's rest sized only the address-space reservation.
    reservation_only: bool = False
    added_buckets: dict[str, Any] | None = None  # the buckets a larger max bs adds below its top
    first_bucket_shrink: dict[str, Any] | None = None  # a smaller one: the slope on the pool
    window_top_low: float | None = None  # the top with graphs at the high end of their error
    window_top_high: float | None = None  # and at the low end
    window_top_at_least_bound: bool = False  # the top is only a lower bound (graphs at most)
    # Why graphs are at most: "first bucket" | "larger list" (Prediction.graph_upper)
    graph_upper: str | None = None
    # With a reserve and a low point before the end: the top the low point >= 0 allows and the
    # top the reserve after capture allows (the window's top is the lower), and where the low
    # point is ("DP0 TP0 EP0, line 1370").
    window_top_by_low_point: float | None = None
    window_top_by_reserve: float | None = None
    low_point_at: str | None = None


def _low_point_at(w: WhatIf) -> str | None:
    b = next((n for n in w.assumptions if isinstance(n, cn.LowPointBinds)), None)
    return f"{b.rank or 'the GPU'}, line {b.line}" if b is not None else None


def _added(w: WhatIf) -> dict[str, Any] | None:
    a = w.added
    if a is None:
        return None
    return {
        "sizes": list(a.sizes),
        "per_bucket_gib": rounded(a.per_bucket_bytes / GIB, 4) if a.per_bucket_bytes else None,
        "measured_buckets": a.measured,
        "gib": gib(a.bytes) if a.per_bucket_bytes else None,
        "error_gib": rounded(a.error_bytes / GIB, 4),
    }


def _shrink(w: WhatIf) -> dict[str, Any] | None:
    f = w.shrinks
    if f is None:
        return None
    return {
        "extra_gib": gib(f.extra_bytes),
        "pool_gib": gib(f.pool_bytes),
        "static_gib": gib(f.static_bytes),
        "capped": f.capped,
        "error_gib": gib(f.error_bytes) if f.error_bytes is not None else None,
    }


def whatif_view(w: WhatIf) -> WhatIfView:
    slope = None
    if w.slope is not None:
        per_bs = w.slope.per_bs
        slope = SlopeInputView(
            rounded(w.slope.mib_per_row) if not per_bs else None,
            rounded(w.slope.mib_per_row) if per_bs else None,
            rounded(w.slope.static_mib_per_row),
            slope_source_text(w.slope.source),
            not per_bs,
        )
    return WhatIfView(
        launch_view(w.launch),
        WhatIfInputs(
            w.requested_mfs, w.requested_max_bs, gib(w.reserve_bytes), w.context_len, slope
        ),
        RuleView(
            gib(w.pre_load_bytes),
            w.pre_load_rank,
            gib(w.after_weights_bytes),
            w.bytes_per_token,
            "cell size from the KV line (the round value its printed sizes allow)"
            if w.bytes_per_token_likely
            else "KV bytes / #tokens from the KV line",
            rounded(w.kv_share, 4),
            w.logged_tokens,
        ),
        _prediction(w.measured, w.reserve_bytes, w.unfinished),
        _prediction(w.predicted, w.reserve_bytes, w.unfinished),
        w.verdict,
        _unfinished(w.unfinished),
        (w.lo_positive, w.hi),
        w.hi_exact,
        w.window_empty,
        w.lo_context,
        context_text(w.context),
        ref_notes((w.launch,)) + texts(w.notes),
        texts(w.assumptions),
        window_top_floored=w.floored,
        graphs_disabled_by=flag(w.graphs_disabled.flag) if w.graphs_disabled else None,
        max_bs_method=_METHODS.get(type(w.graph_method)) if w.graph_method else None,
        window_top_unknown=top_unknown_text(w.top_unknown) if w.top_unknown else None,
        window_top_at_least=w.top_unknown.at_least if w.top_unknown else None,
        reservation_only=any(isinstance(n, wf.PostCaptureSized) for n in w.notes),
        added_buckets=_added(w),
        first_bucket_shrink=_shrink(w),
        window_top_low=w.hi_low,
        window_top_high=w.hi_high,
        window_top_at_least_bound=w.hi_at_least,
        graph_upper=w.predicted.graph_upper,
        window_top_by_low_point=w.tops[0] if w.tops else None,
        window_top_by_reserve=w.tops[1] if w.tops else None,
        low_point_at=_low_point_at(w) if w.tops else None,
    )


_METHODS: dict[type, str] = {
    wf.BucketSum: "buckets",
    wf.SlopeAbove: "slope above",
    wf.NoBucketReadings: "slope, no bucket readings",
}
