"""``device_traces`` replayed: reserved and allocated bytes per pool over time.

A trace is the allocator's recent history, oldest first, ending when the snapshot was taken
(``max_entries`` may have dropped the oldest). So the levels at the end are the snapshot's
own segments, and the level after entry i is the end level minus every change after i: the
series is exact back to the first entry kept, without knowing what came before it.

Which pool an entry belongs to: its ``pool_id`` when the build writes one; else the segment
that holds its address. Segments are known from the snapshot (those still held) and from the
trace's own ``segment_alloc`` / ``segment_map`` entries; an address in neither is "unknown".

The capture window is the span from the first to the last entry touching a CUDA-graph pool.
The trace *covers* a pool's growth when the pool held nothing at the first entry kept: then
the growth over the trace is the pool's whole size, measured rather than assumed.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence

from logmem.frozen import frozen
from logmem.torch_snapshot.model import PoolId, Segment, Snapshot, TraceEntry
from logmem.torch_snapshot.summary import DeviceSummary, SiteTotal, site

_GROW = {"segment_alloc": 1, "segment_map": 1, "segment_free": -1, "segment_unmap": -1}
_USE = {"alloc": 1, "free_completed": -1}
MAX_POINTS = 400  # a plotted series is thinned to about this many points


@frozen
class PoolTrace:
    pool_id: PoolId | None  # None: entries whose pool could not be told
    kind: str
    reserved_start: int  # at the first entry kept (end level minus every change)
    reserved_end: int
    allocated_change: int  # alloc - free_completed over the trace
    points: tuple[tuple[int, int, int], ...]  # (entry index or time_us, reserved, allocated)
    covers_from_empty: bool
    reserved_peak: int | None = None  # the highest level over the trace (before thinning)

    @property
    def reserved_growth(self) -> int:
        return self.reserved_end - self.reserved_start


@frozen
class OomEntry:
    """An "oom" entry of the trace: the allocation that failed and the device's free memory
    as the entry records them (None where it lacks the key), and what PyTorch's allocator
    held at that point by replaying the trace back from the snapshot (reserved: segments;
    allocated: active_allocated blocks)."""

    entry: int  # 0-based index among the device's entries
    time_us: int | None
    size_bytes: int | None
    device_free_bytes: int | None
    reserved_bytes: int
    allocated_bytes: int


@frozen
class DeviceTrace:
    device: int
    entries: int
    actions: tuple[tuple[str, int], ...]  # counts per action
    time_us: tuple[int, int] | None  # first and last stamp, when the build writes them
    x_unit: str  # what the points' first figure counts: "time_us" | "entry"
    pools: tuple[PoolTrace, ...]
    window: tuple[int, int] | None  # entry indexes of the capture window
    window_sites: tuple[SiteTotal, ...]  # bytes allocated in the window, by site
    ooms: int
    oom_entries: tuple[OomEntry, ...] = ()


class _Ranges:
    """Live segment ranges -> pool, for address lookups while replaying."""

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.spans: list[tuple[int, PoolId | None]] = []  # (end, pool) per start

    def add(self, addr: int, size: int, pool: PoolId | None) -> None:
        i = bisect.bisect_left(self.starts, addr)
        if i < len(self.starts) and self.starts[i] == addr:
            self.spans[i] = (addr + size, pool)
            return
        self.starts.insert(i, addr)
        self.spans.insert(i, (addr + size, pool))

    def find(self, addr: int) -> tuple[int, int, PoolId | None] | None:
        i = bisect.bisect_right(self.starts, addr) - 1
        if i >= 0 and addr < self.spans[i][0]:
            return self.starts[i], self.spans[i][0], self.spans[i][1]
        return None

    def remove(self, addr: int, size: int) -> None:
        hit = self.find(addr)
        if hit is None:
            return
        start, end, pool = hit
        i = self.starts.index(start)
        del self.starts[i], self.spans[i]
        # An unmap of part of an expandable segment leaves the rest mapped.
        if start < addr:
            self.add(start, addr - start, pool)
        if addr + size < end:
            self.add(addr + size, end - addr - size, pool)


def _pool_of(e: TraceEntry, ranges: _Ranges, final: _Ranges) -> PoolId | None | str:
    if e.pool_id is not None:
        return e.pool_id
    if e.addr is None:
        return "unknown"
    hit = ranges.find(e.addr) or final.find(e.addr)
    if hit is None and e.action == "segment_map":
        # An expandable segment grows by mapping pages right after the ones it has.
        hit = ranges.find(e.addr - 1)
    return hit[2] if hit is not None else "unknown"


def _thin(points: list[tuple[int, int, int]]) -> tuple[tuple[int, int, int], ...]:
    if len(points) <= MAX_POINTS:
        return tuple(points)
    step = len(points) / MAX_POINTS
    keep = sorted({int(i * step) for i in range(MAX_POINTS)} | {len(points) - 1})
    return tuple(points[i] for i in keep)


def _ooms(
    entries: Sequence[TraceEntry], deltas: Sequence[tuple[int, int]], segs: Sequence[Segment]
) -> tuple[OomEntry, ...]:
    """The "oom" entries, with the allocator's levels there: the snapshot's end levels minus
    every change recorded after the entry."""
    reserved = sum(s.total_size for s in segs)
    allocated = sum(b.size for s in segs for b in s.blocks if b.allocated)
    out: list[OomEntry] = []
    later_g = later_u = 0
    for i in range(len(entries) - 1, -1, -1):
        e = entries[i]
        if e.action == "oom":
            out.append(
                OomEntry(
                    i, e.time_us, e.size, e.device_free, reserved - later_g, allocated - later_u
                )
            )
        later_g += deltas[i][0]
        later_u += deltas[i][1]
    return tuple(reversed(out))


def replay(
    snap: Snapshot, summaries: Sequence[DeviceSummary], depth: int = 1, top: int = 10
) -> tuple[DeviceTrace, ...]:
    out: list[DeviceTrace] = []
    for dev, entries in snap.traces:
        if not entries:
            continue
        summary = next((s for s in summaries if s.device == dev), None)
        kinds = {p.pool_id: p.kind for p in summary.pools} if summary else {}
        segs = [s for s in snap.segments if s.device == dev]
        final = _Ranges()
        for s in segs:
            if s.address is not None:
                final.add(s.address, s.total_size, s.pool_id)
        ranges = _Ranges()
        allocated_here = {e.addr for e in entries if e.action in ("segment_alloc", "segment_map")}
        for s in segs:  # segments held since before the first entry kept
            if s.address is not None and s.address not in allocated_here:
                ranges.add(s.address, s.total_size, s.pool_id)
        pools: list[PoolId | None | str] = []
        deltas: list[tuple[int, int]] = []
        for e in entries:
            pool = _pool_of(e, ranges, final)
            size = e.size or 0
            grow = _GROW.get(e.action, 0) * size
            use = _USE.get(e.action, 0) * size
            if e.addr is not None and e.action in ("segment_alloc", "segment_map"):
                ranges.add(e.addr, size, pool if not isinstance(pool, str) else None)
            elif e.addr is not None and e.action in ("segment_free", "segment_unmap"):
                ranges.remove(e.addr, size)
            pools.append(pool)
            deltas.append((grow, use))
        out.append(_device_trace(dev, entries, pools, deltas, segs, kinds, depth, top))
    return tuple(out)


def _device_trace(
    dev: int,
    entries: Sequence[TraceEntry],
    pools: Sequence[PoolId | None | str],
    deltas: Sequence[tuple[int, int]],
    segs: Sequence[Segment],
    kinds: dict[PoolId | None, str],
    depth: int,
    top: int,
) -> DeviceTrace:
    ends: dict[PoolId | None | str, int] = {}
    for s in segs:
        ends[s.pool_id] = ends.get(s.pool_id, 0) + s.total_size
    seen = list(dict.fromkeys(list(ends) + list(pools)))
    stamped = all(e.time_us is not None for e in entries)
    result: list[PoolTrace] = []
    for pool in seen:
        growth = sum(g for p, (g, _) in zip(pools, deltas) if p == pool)
        alloc = sum(u for p, (_, u) in zip(pools, deltas) if p == pool)
        if growth == 0 and alloc == 0 and (pool not in pools or isinstance(pool, str)):
            continue  # a pool the trace never changed: nothing over time to show
        end = ends.get(pool, 0)
        level, used = end - growth, 0
        points: list[tuple[int, int, int]] = []
        for i, (p, (g, u)) in enumerate(zip(pools, deltas)):
            if p != pool:
                continue
            level += g
            used += u
            x = entries[i].time_us if stamped else i
            points.append((x if x is not None else i, level, used))
        key = None if isinstance(pool, str) else pool
        result.append(
            PoolTrace(
                pool_id=key,
                kind="unknown" if isinstance(pool, str) else kinds.get(key, "unknown"),
                reserved_start=end - growth,
                reserved_end=end,
                allocated_change=alloc,
                points=_thin(points),
                covers_from_empty=end - growth == 0 and not isinstance(pool, str),
                reserved_peak=max([end - growth, *(pt[1] for pt in points)]),
            )
        )
    graph = {p.pool_id for p in result if p.kind == "cuda_graph"}
    touched = [i for i, p in enumerate(pools) if not isinstance(p, str) and p in graph]
    window = (touched[0], touched[-1]) if touched else None
    counts: dict[str, int] = {}
    for e in entries:
        counts[e.action] = counts.get(e.action, 0) + 1
    sites: dict[str, list[int]] = {}
    if window is not None:
        for e in entries[window[0] : window[1] + 1]:
            if e.action == "alloc" and e.size:
                t = sites.setdefault(site(e.frames, depth), [0, 0])
                t[0] += e.size
                t[1] += 1
    ranked = sorted(sites.items(), key=lambda kv: (-kv[1][0], kv[0]))[:top]
    stamps = [e.time_us for e in entries if e.time_us is not None]
    return DeviceTrace(
        oom_entries=_ooms(entries, deltas, segs),
        device=dev,
        entries=len(entries),
        actions=tuple(sorted(counts.items())),
        time_us=(stamps[0], stamps[-1]) if stamps else None,
        x_unit="time_us" if stamped else "entry",
        pools=tuple(result),
        window=window,
        window_sites=tuple(SiteTotal(s, n, k) for s, (n, k) in ranked),
        ooms=counts.get("oom", 0),
    )
