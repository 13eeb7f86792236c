"""What a snapshot holds, per device and per pool, and which code allocated it.

Definitions (the ones torch/cuda/_memory_viz.py uses):

* reserved: the sum of the segments' ``total_size`` (what the allocator took from the driver);
* allocated: the sum of the sizes of ``active_allocated`` blocks;
* active: allocated plus ``active_pending_free`` blocks (freed, waiting on a stream);
* requested: what callers asked for, before the allocator's rounding, of allocated blocks;
* reserved but unallocated: reserved - allocated (fragmentation and cached free blocks),
  the figure PyTorch's OOM message prints under the same name.

A block's *site* is the first frame, innermost first, outside PyTorch's own Python files and
outside C++ frames (``RegisterCUDA.cpp``, ``??``, line 0): the line of the caller's code that
asked for the memory. Paths are shown from after ``site-packages/`` (or ``dist-packages/``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from logmem.frozen import frozen
from logmem.torch_snapshot.model import (
    Block,
    Frame,
    PoolId,
    Segment,
    Snapshot,
    is_internal,
    short_path,
)

NO_STACK = "(no stack recorded)"
ONLY_TORCH = "(PyTorch or C++ frames only)"


def frame_text(f: Frame) -> str:
    return f"{short_path(f.filename)}:{f.line}:{f.name}"


def site(frames: Sequence[Frame], depth: int = 1) -> str:
    """The allocation site: the first non-internal frame, with `depth - 1` callers after it."""
    if not frames:
        return NO_STACK
    for i, f in enumerate(frames):
        if not is_internal(f):
            outer = [g for g in frames[i:] if not is_internal(g)][: max(depth, 1)]
            return " < ".join(frame_text(g) for g in outer)
    return ONLY_TORCH


def pool_kind(pool: PoolId | None, captured_from: str | None = None) -> tuple[str, str]:
    """(kind, why). (0, 0) is the default pool; (N, 0) a graph's own private pool; (0, N)
    comes from graph_pool_handle() (what SGLang's graph runners share) or a MemPool, which
    the id alone cannot tell apart: a capture file in the blocks' stacks decides."""
    if pool is None:
        return "unknown", "the snapshot gives no pool id"
    if pool == (0, 0):
        return "default", "pool id (0, 0)"
    if pool[1] == 0:
        return "cuda_graph", f"pool id {pool}: a graph's own private pool"
    if captured_from:
        return "cuda_graph", f"pool id {pool}, allocated during a capture ({captured_from})"
    return "private", f"pool id {pool}: graph_pool_handle() or a MemPool (not told apart)"


@frozen
class SiteTotal:
    site: str
    bytes: int
    blocks: int


@frozen
class PoolSummary:
    pool_id: PoolId | None
    kind: str
    kind_reason: str
    reserved_bytes: int
    allocated_bytes: int
    segments: int
    blocks: int
    top_sites: tuple[SiteTotal, ...]


@frozen
class BigBlock:
    size: int
    requested_size: int | None
    state: str
    pool_id: PoolId | None
    site: str


@frozen
class DeviceSummary:
    device: int
    reserved_bytes: int
    allocated_bytes: int
    active_bytes: int
    requested_bytes: int | None  # None when some allocated block lacks it
    segments: int
    expandable_segments: int
    pools: tuple[PoolSummary, ...]
    top_sites: tuple[SiteTotal, ...]
    largest_blocks: tuple[BigBlock, ...]
    mismatched_segments: int  # segments whose own allocated_size differs from their blocks

    @property
    def reserved_unallocated_bytes(self) -> int:
        return self.reserved_bytes - self.allocated_bytes


def top_sites(
    blocks: Iterable[Block], depth: int = 1, top: int = 10, cache: dict[int, str] | None = None
) -> tuple[SiteTotal, ...]:
    totals: dict[str, list[int]] = {}
    cache = {} if cache is None else cache
    for b in blocks:
        if not b.allocated:
            continue
        key = id(b.frames)  # frames tuples are shared: one site computation per stack
        s = cache.get(key)
        if s is None:
            s = cache[key] = site(b.frames, depth)
        t = totals.setdefault(s, [0, 0])
        t[0] += b.size
        t[1] += 1
    ranked = sorted(totals.items(), key=lambda kv: (-kv[1][0], kv[0]))
    return tuple(SiteTotal(s, n, k) for s, (n, k) in ranked[:top])


def _pool(
    pool: PoolId | None, segs: Sequence[Segment], depth: int, top: int, cache: dict[int, str]
) -> PoolSummary:
    blocks = [b for s in segs for b in s.blocks]
    captured = sum(b.size for b in blocks if b.allocated and b.in_capture)
    kind, why = pool_kind(pool, f"{captured:,} bytes from capture stacks" if captured else None)
    return PoolSummary(
        pool_id=pool,
        kind=kind,
        kind_reason=why,
        reserved_bytes=sum(s.total_size for s in segs),
        allocated_bytes=sum(b.size for b in blocks if b.allocated),
        segments=len(segs),
        blocks=len(blocks),
        top_sites=top_sites(blocks, depth, top, cache),
    )


def _pool_order(p: PoolId | None) -> tuple[int, int, int]:
    return (1, 0, 0) if p is None else (0, *p)


def summarize(snap: Snapshot, depth: int = 1, top: int = 10) -> tuple[DeviceSummary, ...]:
    out: list[DeviceSummary] = []
    cache: dict[int, str] = {}
    for dev in snap.devices:
        segs = [s for s in snap.segments if s.device == dev]
        blocks = [b for s in segs for b in s.blocks]
        allocated = [b for b in blocks if b.allocated]
        by_pool: dict[PoolId | None, list[Segment]] = {}
        for s in segs:
            by_pool.setdefault(s.pool_id, []).append(s)
        pools = tuple(
            _pool(p, by_pool[p], depth, top, cache) for p in sorted(by_pool, key=_pool_order)
        )
        big = sorted(
            ((b, s.pool_id) for s in segs for b in s.blocks if b.allocated),
            key=lambda bp: -bp[0].size,
        )[:top]
        requested = (
            sum(b.requested_size for b in allocated if b.requested_size is not None)
            if all(b.requested_size is not None for b in allocated)
            else None
        )
        out.append(
            DeviceSummary(
                device=dev,
                reserved_bytes=sum(s.total_size for s in segs),
                allocated_bytes=sum(b.size for b in allocated),
                active_bytes=sum(b.size for b in blocks if b.active),
                requested_bytes=requested,
                segments=len(segs),
                expandable_segments=sum(1 for s in segs if s.is_expandable),
                pools=pools,
                top_sites=top_sites(blocks, depth, top, cache),
                largest_blocks=tuple(
                    BigBlock(b.size, b.requested_size, b.state, p, site(b.frames, depth))
                    for b, p in big
                ),
                mismatched_segments=sum(
                    1
                    for s in segs
                    if s.stated_allocated is not None
                    and s.stated_allocated != sum(b.size for b in s.blocks if b.allocated)
                ),
            )
        )
    return tuple(out)
