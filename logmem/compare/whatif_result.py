"""What ``logmem whatif`` answers, as facts: a Prediction per setting (KV tokens, pools, graph
memory, headroom and its verdict) and the WhatIf that holds the measured and the predicted
setting, the feasible mem_fraction_static window and the notes (logmem.compare.whatif builds it).
"""

from __future__ import annotations

from collections.abc import Mapping

from logmem.compare import notes as cn
from logmem.compare.load import LaunchRef
from logmem.compare.replay import Unfinished
from logmem.compare.slope import GraphSlope
from logmem.compare.whatif_facts import (
    BucketSum,
    GraphsDisabled,
    NoBucketReadings,
    PoolSize,
    SlopeAbove,
    TopUnknown,
    WhatIfNote,
)
from logmem.compare.whatif_sizes import AddedBuckets, FirstBucketShrinks
from logmem.frozen import frozen


@frozen
class Prediction:
    mem_fraction_static: float
    largest_bs: int | None
    rest_bytes: int
    kv_tokens: int
    kv_bytes: int
    pool_change_bytes: int  # KV (and other pools sized from rest) vs the measured launch
    req_table_change_bytes: int
    graph_bytes: int | None
    graph_change_bytes: int
    headroom_bytes: int | None
    headroom_rank: str | None
    max_running_requests: int | None
    headroom_exact: bool = True  # False: an upper bound (a capture did not finish)
    graph_exact: bool = True  # False: a lower bound (what the capture took before it stopped)
    graph_known: bool = True  # False: the log does not show it (floored or masked readings)
    # This setting runs out of memory again (the launch did, and this one asks no less), and
    # whether it is the setting the launch ran with (its feasible cell is how start-up ended).
    crashed: bool = False
    as_launched: bool = False
    # Every pool inside the KV budget (the full KV pool first), then the draft's, outside it.
    pools: tuple[PoolSize, ...] = ()
    draft_change_bytes: int = 0  # the draft's KV pool vs the measured launch (it follows tokens)
    # A capture's low point of free memory is unknown (a release masks its cost) and this
    # setting asks more than the launch did: headroom after capture does not settle it.
    low_point_unknown: bool = False
    # The log cannot tell which largest bs the new max bs captures, and the smaller one's
    # verdict differs from this one's (priced at the larger): the verdict is unknown.
    bs_unsure: bool = False
    # The bound a slope's error puts on graph_change_bytes (and so on the headroom): 0 where no
    # slope prices the graphs, None where it does with an unknown error (given, heuristic).
    graph_error_bytes: int | None = 0
    # Graphs are an upper bound and the headroom a lower one, and why (None: not a bound):
    # "first bucket": a smaller max bs priced from the measured buckets, the first-captured
    # bucket's extra allocation (lazy allocations and the graph memory pool, which the largest
    # batch sizes) kept whole without a slope; "larger list": the log allows two largest sizes
    # (capture_lists.CaptureTop.sizes) and the larger is priced; "other graphs": other
    # batch-sized graphs (the draft's) held as measured under a smaller max bs; "scaled top": a
    # larger max bs priced from the bars with the first bucket's whole cost scaled by rows.
    graph_upper: str | None = None
    # The headroom rests on a lowest reading at a capture the log does not sample inside
    # (whatif_facts.unsampled_low): free memory may have gone lower there, so it is at most this.
    headroom_upper: bool = False
    # The graph change is priced by SGLang's graph-reserve heuristic (a budget inside its default
    # mem_fraction_static formula, not a measurement of this launch): its error is unbounded, so
    # only a verdict the graphs as measured already settle stands.
    graph_estimate: bool = False
    # The two limits behind headroom_bytes (their lower): free memory after capture (the last
    # reading) less the extra memory, and the same at a low point before the end (None: none).
    # --activation-reserve is kept after capture; the low point only has to stay >= 0 (no
    # prefill activation runs in the middle of start-up).
    end_headroom_bytes: int | None = None
    low_headroom_bytes: int | None = None

    def against(self, reserve_bytes: int) -> int | None:
        """The headroom to set against the reserve: after capture as is, at the low point with
        the reserve added back (it only has to stay >= 0 there); headroom_bytes at no reserve."""
        if self.end_headroom_bytes is None or self.low_headroom_bytes is None:
            return self.headroom_bytes
        return min(self.end_headroom_bytes, self.low_headroom_bytes + reserve_bytes)

    def verdict(self, reserve_bytes: int) -> bool | None:
        """Feasible: True, False, or None when the bounds cannot tell."""
        h = self.against(reserve_bytes)
        if self.bs_unsure:
            return None
        err = self.graph_error_bytes
        if err and h is not None and abs(h - reserve_bytes) <= err:
            return None  # the slope's error spans the reserve
        if self.crashed or self.kv_tokens <= 0:
            return False
        if h is None:
            return None
        if self.graph_estimate and self.graph_change_bytes:
            # Raising max bs costs at least nothing, lowering frees at most nothing more: the
            # headroom with the graphs as measured is the bound the estimate cannot move past.
            base = h + self.graph_change_bytes
            if self.graph_change_bytes > 0:
                return False if base < reserve_bytes else None
            if base < reserve_bytes:
                return None
        if (
            self.graph_upper == "scaled top"  # graphs at most as scaled, at least as measured
            and h + max(self.graph_change_bytes, 0) < reserve_bytes
        ):
            return False  # short even with the graphs as measured
        if h < reserve_bytes:
            # An upper bound below the reserve rules it out too; a lower bound does not.
            return None if self.graph_upper else False
        return True if self.headroom_exact and not self.low_point_unknown else None

    def in_window(self, reserve_bytes: int, at_least: bool) -> bool:
        """Whether this setting is inside the feasible mem_fraction_static window: not ruled
        out, and when the headroom is a lower bound (``at_least``) settled; with graphs by
        SGLang's heuristic the window is the estimate's (its verdict is uncertain)."""
        v, h = self.verdict(reserve_bytes), self.against(reserve_bytes)
        if h is None or v is False:
            return False
        if self.graph_estimate:
            return h >= reserve_bytes
        return v is True or not at_least

    def feasible(self, reserve_bytes: int) -> bool:
        return self.verdict(reserve_bytes) is True


@frozen
class WhatIf:
    launch: LaunchRef
    mem_fraction_static: float
    pre_load_bytes: int
    pre_load_rank: str
    after_weights_bytes: int
    bytes_per_token: int
    bytes_per_token_likely: bool  # the round cell size the KV line's printed sizes allow
    kv_share: float
    logged_tokens: int | None
    context_len: int | None
    reserve_bytes: int
    measured: Prediction
    predicted: Prediction
    slope: GraphSlope | None
    lo_positive: float | None  # smallest mem_fraction_static with a positive KV pool
    hi: float | None  # largest that leaves the activation reserve after capture
    lo_context: float | None  # smallest that fits one full context
    context: cn.ContextCheck
    assumptions: tuple[cn.Note | WhatIfNote, ...]
    notes: tuple[cn.Note | WhatIfNote, ...]
    requested_mfs: float | None = None  # as passed; None: the launch's own
    requested_max_bs: int | None = None
    unfinished: Unfinished | None = None  # start-up did not finish
    hi_exact: bool = True  # False: `hi` is only an upper bound on the window's top
    floored: bool = False  # free memory after capture reads 0.00: headroom is an upper bound
    graphs_disabled: GraphsDisabled | None = None  # CUDA graphs off: no graph figure at all
    top_unknown: TopUnknown | None = None  # the window's top cannot be computed (hi is None)
    # How the graph for --cuda-graph-max-bs was priced: the measured buckets, or a slope.
    graph_method: BucketSum | SlopeAbove | NoBucketReadings | None = None
    # What a slope adds to it: the buckets a larger list adds, or the first bucket's shrink.
    added: AddedBuckets | None = None
    shrinks: FirstBucketShrinks | None = None
    # The window's top with graphs at the high end of the slope's printing error (None: the
    # graphs carry no such error, or no value leaves the reserve then).
    hi_low: float | None = None
    hi_high: float | None = None  # and at the low end of it
    # `hi` is only a lower bound on the window's top: the headroom is a lower bound
    # (Prediction.graph_upper), so values above it are not ruled out.
    hi_at_least: bool = False
    # With a reserve and a low point before the end: the top each limit allows alone (the low
    # point >= 0, the reserve after capture), `hi` being the lower (whatif_result.reserve_tops).
    tops: tuple[float | None, float | None] | None = None

    @property
    def feasible(self) -> bool:
        return self.predicted.feasible(self.reserve_bytes)

    @property
    def verdict(self) -> bool | None:
        return self.predicted.verdict(self.reserve_bytes)

    @property
    def window_empty(self) -> bool:
        """No mem_fraction_static works (an unknown top is not an empty window)."""
        return self.window is None and not (self.top_unknown and self.lo_positive is not None)

    @property
    def window(self) -> tuple[float, float] | None:
        """[lo, hi], or None when it is empty."""
        lo, hi = self.lo_positive, self.hi
        return (lo, hi) if lo is not None and hi is not None and lo <= hi else None


def headrooms(
    after: Mapping[str, tuple[int, int]],
    low: Mapping[str, tuple[int, int, str]],
    past: frozenset[str],
    pools_change: int,
    graph_change: int,
) -> tuple[tuple[int, str] | None, int | None, int | None]:
    """(the least headroom and its rank, the least after capture, the least at a low point
    before the end or None) over the ranks, less the extra pools and graph memory."""
    worst: tuple[int, str] | None = None
    ends: list[int] = []
    lows: list[int] = []
    for rank, (free, _g) in after.items():
        h = free - pools_change - graph_change
        ends.append(h)
        if rank in low and low[rank][0] < free:  # a low point before the end
            # Before the capture ended a smaller graph has freed nothing yet; after it, the
            # graph's change holds there with its sign.
            g_low = graph_change if rank in past else max(graph_change, 0)
            lows.append(low[rank][0] - (pools_change + g_low))
            h = min(h, lows[-1])
        if worst is None or h < worst[0]:
            worst = (h, rank)
    return worst, min(ends, default=None), min(lows, default=None)


def reserve_tops(
    at: Mapping[float, Prediction], reserve_bytes: int
) -> tuple[float | None, float | None] | None:
    """With a reserve and a low point before the end: (the top the low point >= 0 allows, the
    top the reserve after capture allows); the window's top is the lower. None otherwise."""
    if not reserve_bytes or not any(p.low_headroom_bytes is not None for p in at.values()):
        return None
    by_low = [
        m for m, p in at.items() if (p.low_headroom_bytes or 0) >= 0 and p.verdict(0) is not False
    ]
    by_end = [
        m
        for m, p in at.items()
        if p.end_headroom_bytes is not None and p.end_headroom_bytes >= reserve_bytes
    ]
    return (by_low[-1] if by_low else None), (by_end[-1] if by_end else None)
