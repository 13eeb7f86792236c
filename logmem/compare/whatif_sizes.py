"""What a measured slope adds to whatif's measured-bucket pricing of a new max bs.

Raising max bs: SGLang's capture list at the new max bs holds buckets between the launch's top
and the new one (the list generated up to max bs since 0.5.3, or an old list extended in steps of
16, ``logmem.sglang.capture_tops``); each is captured after the largest and costs its own
increment, which a slope of the largest bucket does not price (pair-e7: 256 -> 512 adds 15
buckets, 0.30 GiB). They are priced at the average of the launch's own later buckets: their sum
is one difference of two readings (the reading after the first bucket minus the capture end),
so the average is known to 0.01 GiB / their count.

Raising max bs with no slope from elsewhere, on a log whose bars read every bucket
(``bars_slope``): SGLang captures the largest batch first into the graph memory pool every
runner shares (``graph_memory_pool``; cuda_graph_runner.py), so the first bucket's cost holds
the pool its activations need, its kept outputs and the first capture's lazy allocations, and
every later bucket only what it keeps beyond the pool. The new top is priced at that first cost
per row (and the static buffers, capture begin minus the first bar, per row of max bs), scaled to
its rows. Every part of the first cost that does not grow with rows (lazy allocations, fixed
workspaces) is scaled too, so the figure is an upper bound: pair-e2 80 -> 160 prices +0.88 GiB
where the 160 launch measured +0.41 (its largest bucket holds a fixed 0.40 GiB the 80 launch
alone cannot separate).

Lowering max bs with a measured or given slope: the first-captured bucket's extra allocation
holds the graph memory pool sized by the largest batch (SGLang's runners share one pool,
``graph_memory_pool``, which the first and largest capture sizes; cuda_graph_runner.py), so it
shrinks by slope x the change in rows; the rest of it (lazy allocations) stays.
"""

from __future__ import annotations

from collections.abc import Sequence

from logmem.analysis.ledger import Bound, Bucket, Cause
from logmem.compare import notes as cn
from logmem.compare.slope import GraphSlope
from logmem.frozen import frozen
from logmem.sglang.capture_lists import CaptureTop
from logmem.units import GIB, MIB

PRINT_ERROR_BYTES = GIB // 100  # a difference of two readings printed to 0.01 GB


@frozen
class AddedBuckets:
    """The buckets a larger max bs adds below its new top, priced at the measured average."""

    graph: str
    sizes: tuple[int, ...]  # ascending, between the launch's top and the new one
    per_bucket_bytes: int | None  # the average of the launch's later buckets (None: no readings)
    measured: int  # how many later buckets the average is over
    lines: tuple[int, int] | None
    error_bytes: int  # the average's printing bound x the added count
    # The launch's own top: captured after the new top, it becomes a later bucket too (its cost
    # as the first is in the largest bucket's slope).
    moved: int | None = None

    @property
    def count(self) -> int:
        return len(self.sizes) + (self.moved is not None)

    @property
    def bytes(self) -> int:
        return self.count * self.per_bucket_bytes if self.per_bucket_bytes else 0


@frozen
class FirstBucketShrinks:
    """A smaller max bs priced from the buckets, with the slope moving the first bucket's pool."""

    graph: str
    first_size: int  # the launch's first-captured bucket
    new_bs: int
    extra_bytes: int  # the first bucket's cost above the next bucket's, as measured
    pool_bytes: int  # what the slope takes off it (at most extra_bytes)
    static_bytes: int  # what the static slope takes off the static buffers (0: none given)
    capped: bool  # slope x rows exceeded the extra: the extra is taken off whole
    error_bytes: int | None  # the slope's printing bound x the change in rows (None: unknown)
    mib_per_row: float
    static_mib_per_row: float | None
    rows: int  # the change in rows

    @property
    def bytes(self) -> int:
        return -(self.pool_bytes + self.static_bytes)


def measured_per_row(slope: GraphSlope | None) -> bool:
    """A slope of the largest bucket per row (measured or given), not SGLang's heuristic nor a
    capture-total slope (which already holds every bucket)."""
    if slope is None or slope.per_bs:
        return False
    src = slope.source
    if isinstance(src, cn.MeasuredSlope):
        return src.basis == "largest bucket"
    return isinstance(src, (cn.GivenSlope, cn.BarsSlope))


def added_buckets(
    graph: str,
    top: CaptureTop | None,
    cur_bs: int,
    new_bs: int,
    buckets: Sequence[Bucket] | None,
) -> AddedBuckets | None:
    """The buckets SGLang's list at ``new_bs`` adds between ``cur_bs`` and ``new_bs`` (the list
    with the most, where the rules disagree: priced at the larger, as the top is); None when no
    list is known or none is added."""
    if top is None:
        return None
    fits = [x for x in top.lists if x and x[-1] == new_bs and cur_bs in x]
    if not fits:
        return None
    sizes = max((tuple(s for s in x if cur_bs < s < new_bs) for x in fits), key=len)
    later = list(buckets[1:]) if buckets else []
    if not later:
        return AddedBuckets(graph, sizes, None, 0, None, 0, cur_bs) if sizes else None
    total = sum(int(b.cost_bytes or 0) for b in later)
    per = round(total / len(later))
    err = round(PRINT_ERROR_BYTES * (len(sizes) + 1) / len(later))
    return AddedBuckets(graph, sizes, per, len(later), (later[0].line, later[-1].line), err, cur_bs)


def bars_slope(
    graph: str, buckets: Sequence[Bucket], static: Cause | None, rows_per_bs: int
) -> GraphSlope | None:
    """The per-row slope of a larger max bs from this launch's bar readings (module docstring):
    the first bucket's cost / its rows, the static buffers' / the rows of max bs; each known to
    one printed difference of two readings (0.01 GiB) / the rows. None: the first bucket has no
    cost of its own (it runs to the end line) or no rows."""
    first = buckets[0]
    cost = first.bucket_cost_bytes
    rows = int(first.size or 0) * rows_per_bs
    if cost is None or rows <= 0 or len(buckets) < 2:
        return None
    st = static.bytes if static is not None and static.bound is Bound.EXACT else None
    src = cn.BarsSlope(
        graph,
        int(first.size or 0),
        rows,
        cost,
        (first.line, buckets[1].line),
        st,
        static.lines if static is not None and st is not None else (),
    )
    err = PRINT_ERROR_BYTES / rows / MIB
    return GraphSlope(
        cost / rows / MIB,
        max(st, 0) / rows / MIB if st is not None else None,
        src,
        mib_per_row_error=err,
        static_mib_per_row_error=err if st is not None else None,
    )


def first_bucket_shrinks(
    graph: str,
    first_size: int,
    first_bytes: int,
    next_bytes: int,
    new_bs: int,
    rows_per_bs: int,
    slope: GraphSlope,
) -> FirstBucketShrinks:
    """The first bucket's extra allocation at ``new_bs`` by the slope (largest bucket and static
    buffers), the extra floored at 0."""
    d_rows = (first_size - new_bs) * rows_per_bs
    extra = max(first_bytes - next_bytes, 0)
    want = round(slope.mib_per_row * d_rows * MIB)
    pool = min(max(want, 0), extra)
    static = round((slope.static_mib_per_row or 0.0) * d_rows * MIB)
    err = None
    if slope.mib_per_row_error is not None:
        e = slope.mib_per_row_error
        if slope.static_mib_per_row is not None:
            e += slope.static_mib_per_row_error or 0.0
        err = round(e * d_rows * MIB)
    return FirstBucketShrinks(
        graph,
        first_size,
        new_bs,
        extra,
        pool,
        max(static, 0),
        want > extra,
        err,
        slope.mib_per_row,
        slope.static_mib_per_row,
        d_rows,
    )
