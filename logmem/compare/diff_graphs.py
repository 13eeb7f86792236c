"""``logmem diff``, the CUDA graphs: each graph family per rank in A and B, the buckets both
captured and whether their costs are like with like (the first bucket of a capture holds more),
and notes for captures taken in another order. Part of logmem.compare.diff's Diff.
"""

from __future__ import annotations

from dataclasses import replace

from logmem.compare import notes as cn
from logmem.compare.points import GraphPoint, graph_points, rank_map
from logmem.frozen import frozen
from logmem.model.records import Launch
from logmem.sglang.eras import family_key


@frozen
class BucketChange:
    """One size both launches captured in a graph, with what each bucket kept.

    The first bucket a capture takes (the largest size, SGLang capturing in descending order)
    also holds the graph memory pool's first allocation, and in the first capture of a launch
    the lazy allocations (NCCL / DeepEP buffers, workspaces); a bucket captured later costs
    only its increment. Unless both launches began the graph with it, at the same place in
    their capture order, the two costs are not like with like, and there is no change."""

    size: int
    a_bytes: int
    b_bytes: int
    first_in: str | None = None  # "A", "B" or "both": whose capture of the graph began with it
    comparable: bool = True

    @property
    def change_bytes(self) -> int | None:
        return self.b_bytes - self.a_bytes if self.comparable else None


@frozen
class GraphChange:
    rank: str
    graph: str
    a: GraphPoint | None
    b: GraphPoint | None
    buckets: tuple[BucketChange, ...]  # the sizes both captured, in A's capture order
    rank_b: str | None = None
    # Where this graph came in its launch's captures on the rank (0: first; None: absent).
    place: tuple[int | None, int | None] = (None, None)
    not_compared: cn.BucketsNotCompared | None = None  # why some sizes have no change

    @property
    def first_of_launch(self) -> tuple[bool | None, bool | None]:
        pa, pb = self.place
        return (None if pa is None else pa == 0, None if pb is None else pb == 0)


def _places(points: list[GraphPoint]) -> dict[tuple[str, str], int]:
    """(rank, family) -> its place among the rank's captures (0: the launch's first)."""
    out: dict[tuple[str, str], int] = {}
    for p in points:
        out[(p.rank, family_key(p.graph))] = sum(k[0] == p.rank for k in out)
    return out


def _bucket_changes(
    ga: GraphPoint, gb: GraphPoint, place: tuple[int | None, int | None]
) -> tuple[BucketChange, ...]:
    cb = {s: c for s, c in gb.buckets if s is not None and c is not None}
    head_a, head_b = ga.first_size, gb.first_size
    out = []
    for s, c in ga.buckets:
        if s is None or c is None or s not in cb:
            continue
        first = {(True, True): "both", (True, False): "A", (False, True): "B"}.get(
            (s == head_a, s == head_b)
        )
        # Both began the graph with it: like with like unless only one was the launch's first.
        ok = first is None or (first == "both" and (place[0] == 0) == (place[1] == 0))
        out.append(BucketChange(s, c, cb[s], first, ok))
    return tuple(out)


def graph_changes(a: Launch, b: Launch) -> list[GraphChange]:
    """Each graph family per rank (B's ranks matched to A's), with the buckets both captured."""
    m = rank_map([r.label for r in a.ranks], [r.label for r in b.ranks])
    back = {v: k for k, v in m.items()}
    pts_a, pts_b = graph_points(a), graph_points(b)
    pa = {(p.rank, family_key(p.graph)): p for p in pts_a}
    pb = {(back.get(p.rank, p.rank), family_key(p.graph)): p for p in pts_b}
    fa = _places(pts_a)
    fb = {(back.get(k[0], k[0]), k[1]): v for k, v in _places(pts_b).items()}
    keys = list(pa) + [k for k in pb if k not in pa]
    out = []
    for k in keys:
        ga, gb = pa.get(k), pb.get(k)
        place = (fa.get(k), fb.get(k))
        buckets = _bucket_changes(ga, gb, place) if ga and gb else ()
        other = gb.rank if gb is not None and gb.rank != k[0] else None
        name = ga.graph if ga else gb.graph if gb else k[1]
        g = GraphChange(k[0], name, ga, gb, buckets, other, place)
        out.append(replace(g, not_compared=_not_compared(g)))
    return out


def _bucket_order(p: GraphPoint) -> str | None:
    sizes = [s for s, _ in p.buckets if s is not None]
    if len(sizes) < 2:
        return None
    if all(x > y for x, y in zip(sizes, sizes[1:])):
        return "descending"
    if all(x < y for x, y in zip(sizes, sizes[1:])):
        return "ascending"
    return "mixed"


def like_with_like(graphs: list[GraphChange]) -> list[cn.Note]:
    """Notes for bucket rows without a change, and for captures taken in another order."""
    out: list[cn.Note] = []
    by_rank: dict[str, list[GraphChange]] = {}
    for g in graphs:
        by_rank.setdefault(g.rank, []).append(g)
    for rank, gs in by_rank.items():
        orders = []
        for g in gs:
            oa = _bucket_order(g.a) if g.a else None
            ob = _bucket_order(g.b) if g.b else None
            if oa and ob and oa != ob:
                orders.append((g.graph, oa, ob))
        both = [g for g in gs if g.a and g.b]
        seq_a = tuple(g.graph for g in sorted(both, key=lambda g: g.place[0] or 0))
        seq_b = tuple(g.graph for g in sorted(both, key=lambda g: g.place[1] or 0))
        first_a = next((g.graph for g in gs if g.first_of_launch[0]), None)
        first_b = next((g.graph for g in gs if g.first_of_launch[1]), None)
        order = (seq_a, seq_b) if len(both) > 1 and (seq_a != seq_b or first_a != first_b) else None
        if orders or order:
            out.append(cn.CaptureOrderDiffers(rank, tuple(orders), order))
    return out


def _not_compared(g: GraphChange) -> cn.BucketsNotCompared | None:
    odd = tuple((x.size, x.first_in or "") for x in g.buckets if not x.comparable)
    if not odd:
        return None
    fa, fb = g.first_of_launch
    launch_first = "A" if fa and not fb else "B" if fb and not fa else None
    return cn.BucketsNotCompared(g.rank, g.graph, odd, launch_first)
