"""Findings about graph captures: how each capture's memory splits (static buffers, largest
bucket, the others), captures the log cannot measure or that cost nothing, free memory rising
over a capture, later captures reusing lazily allocated buffers, and ranks whose captures
differ from the main rank's. Part of logmem.analysis.findings (its Finding union and names)."""

from __future__ import annotations

from enum import Enum
from typing import ClassVar

from logmem.analysis.capture_lever import CaptureLever
from logmem.analysis.captures import graph_kind, lazy_allocs, phase_cost
from logmem.analysis.findings_kinds import FindingKind
from logmem.analysis.findings_left import StoppedFirstBucket
from logmem.analysis.ledger import Bound, Cause, Lazy, RankLedger, What
from logmem.frozen import frozen
from logmem.model.records import Launch, Rank
from logmem.sglang import rules
from logmem.sglang.comm import Library
from logmem.units import GIB

# Thresholds (logmem.analysis.findings uses them too), in multiples of what two printed readings can differ by alone (+-0.01 GiB).
TINY = rules.DIFFERENCE_RESOLUTION_BYTES
NOTABLE = 5 * TINY  # a gap worth a sentence


@frozen
class GraphSplit:
    """A capture split into static buffers, its largest bucket and the other buckets."""

    kind: ClassVar[FindingKind] = FindingKind.GRAPH_SPLIT
    rank: str
    graph: str
    drop_bytes: int
    static: Cause
    largest: Cause
    other: Cause
    largest_dominates: bool  # the other buckets cost < 20% of the largest
    lines: tuple[int, int]
    backend: str = "cuda graph"  # as printed ("npu graph", "hip graph"): the sentence names it
    # drop_bytes is the end line's logged mem usage when it prints one (from unrounded readings),
    # else the begin - end difference; bound: that figure's (a capture ending at the floor).
    logged: bool = False
    bound: Bound = Bound.EXACT
    # The phase's readings (begin - end) when they print otherwise than the logged figure.
    readings_bytes: int | None = None
    lever: CaptureLever | None = None  # which flag shrinks its list (batch-size graphs)


@frozen
class LargestBucketNote:
    kind: ClassVar[FindingKind] = FindingKind.LARGEST_BUCKET_NOTE
    graph: str
    cause: Cause  # the largest bucket, whose facts name the lazy allocations


@frozen
class GraphSparse:
    """A capture whose bar readings cover only some buckets."""

    kind: ClassVar[FindingKind] = FindingKind.GRAPH_SPARSE
    rank: str
    graph: str
    drop_bytes: int
    parts: tuple[Cause, ...]
    lines: tuple[int, int]
    backend: str = "cuda graph"
    logged: bool = False  # as GraphSplit
    bound: Bound = Bound.EXACT
    readings_bytes: int | None = None


@frozen
class CaptureRose:
    kind: ClassVar[FindingKind] = FindingKind.CAPTURE_ROSE
    rank: str
    graph: str
    bytes: int
    lines: tuple[int, int]


@frozen
class BucketsRose:
    kind: ClassVar[FindingKind] = FindingKind.BUCKETS_ROSE
    rank: str
    graph: str
    count: int
    worst_bytes: int
    device: str = "unknown"  # the platform kind (analysis.platform): may it be unified memory?


class NegligibleReason(Enum):
    BOTTOMED = "bottomed"  # free memory was already at 0.00
    REUSED = "reused"  # an earlier capture allocated what they share
    NOTHING = "nothing"


@frozen
class CaptureUnmeasured:
    """A capture whose memory the log does not show: free memory was already at the 0.00 floor
    (Bound.FLOOR), or the end line's usage is negative (Bound.MASKED: the net of the graphs'
    cost and a release of at least ``released_bytes``)."""

    kind: ClassVar[FindingKind] = FindingKind.CAPTURE_UNMEASURED
    rank: str
    graph: str
    bound: Bound
    line: int
    released_bytes: int | None = None
    rose_bytes: int | None = None  # free memory rose over the capture by this much


@frozen
class NegligibleCaptures:
    kind: ClassVar[FindingKind] = FindingKind.NEGLIGIBLE_CAPTURES
    rank: str
    graphs: tuple[str, ...]
    reason: NegligibleReason


@frozen
class Reused:
    graph: str
    largest_bytes: int
    first_graph: str
    first_largest_bytes: int


@frozen
class Reuse:
    kind: ClassVar[FindingKind] = FindingKind.REUSE
    graphs: tuple[Reused, ...]
    # What the launch allocates lazily on its first capture (DeepEP, peer buffers, EP and
    # DP-attention buffers) and the collective library of the peer buffers.
    lazy: tuple[Lazy, ...] = ()
    library: Library | None = None


@frozen
class RankGraphSpread:
    kind: ClassVar[FindingKind] = FindingKind.RANK_GRAPH_SPREAD
    rank: str
    graph: str
    bytes: int
    share: float  # |difference| / the main rank's
    more: bool
    main_rank: str


@frozen
class GraphsOff:
    """server_args turned CUDA graphs off (rules.graphs_off) and no rank logged a capture: the
    launch has no capture phase and no graph memory, not a capture the log missed."""

    kind: ClassVar[FindingKind] = FindingKind.GRAPHS_OFF
    flag: str  # the server_args key, as dumped, or the command line's flag
    line: int  # the server_args line, or the command line's
    command: bool = False  # told by the echoed command line (no server_args dump)


CaptureFinding = (
    GraphsOff
    | GraphSplit
    | LargestBucketNote
    | GraphSparse
    | StoppedFirstBucket
    | CaptureRose
    | CaptureUnmeasured
    | BucketsRose
    | NegligibleCaptures
)


def capture_findings(
    rl: RankLedger, device: str = "unknown", lever: CaptureLever | None = None
) -> list[CaptureFinding]:
    """Each capture of the rank's ledger: how its memory splits, or why it cannot."""
    out: list[CaptureFinding] = []
    negligible: list[str] = []
    earlier = False  # a capture already took memory before this one
    for p in rl.phases:
        g = p.graph
        if g is None:
            continue
        static, largest, other = p.part("static"), p.part("largest"), p.part("other")
        zero = abs(p.delta_bytes) <= TINY and all(abs(c.bytes) <= TINY for c in p.causes)
        pc = phase_cost(p)
        cost = pc.graph
        drop, logged, bound = (
            (pc.bytes, pc.logged, pc.bound)
            if pc.bytes is not None
            else (p.delta_bytes, False, p.bound)
        )
        readings = None
        if logged and round(drop / GIB, 2) != round(p.delta_bytes / GIB, 2):
            readings = p.delta_bytes  # e.g. 0.26 logged, 0.25 from the rounded readings
        unmeasured = (cost is not None and not cost.bound.known) or not p.bound.known
        if unmeasured and g.complete:
            # Free memory at the floor, or a negative usage: not "nothing", not a cost.
            why = cost.bound if cost is not None and not cost.bound.known else p.bound
            released = cost.released_bytes if cost is not None else None
            line = cost.line if cost is not None and cost.line is not None else p.lines[1]
            rose = -p.delta_bytes if p.delta_bytes < -TINY else None
            out.append(CaptureUnmeasured(rl.rank, g.label, why, line, released, rose))
            earlier = earlier or p.delta_bytes > TINY
            continue
        if zero and g.complete:
            negligible.append(g.label)
        elif static and largest and other:
            dominates = largest.bytes > 0 and other.bytes < 0.2 * largest.bytes
            out.append(
                GraphSplit(
                    rl.rank,
                    g.label,
                    drop,
                    static,
                    largest,
                    other,
                    dominates,
                    p.lines,
                    g.backend,
                    logged,
                    bound,
                    readings,
                    None if rules.graph_sized_in_tokens(g.name) else lever,
                )
            )
            if largest.facts.lazy:
                out.append(LargestBucketNote(g.label, largest))
        elif largest and not g.complete:
            after = next((c for c in p.causes if c.what is What.BEFORE_STOP), None)
            out.append(StoppedFirstBucket(rl.rank, g.label, largest, after, g.backend))
        elif g.samples and g.complete and not largest:
            parts = tuple(c for c in p.causes if c.kind == "derived")
            out.append(
                GraphSparse(
                    rl.rank, g.label, drop, parts, p.lines, g.backend, logged, bound, readings
                )
            )
        if p.delta_bytes < -TINY:
            out.append(CaptureRose(rl.rank, g.label, -p.delta_bytes, p.lines))
        # A rise to the end line is the cache its reading released, not a bucket's (to_end).
        rising = [b.bucket_cost_bytes for b in p.buckets if b.bucket_cost_bytes is not None]
        rising = [c for c in rising if c < -NOTABLE]
        if rising:
            out.append(BucketsRose(rl.rank, g.label, len(rising), -min(rising), device))
        earlier = earlier or p.delta_bytes > TINY
    if negligible:
        bottomed = rl.last_bytes is not None and rl.last_bytes <= TINY
        reason = (
            NegligibleReason.BOTTOMED
            if bottomed
            else NegligibleReason.REUSED
            if earlier
            else NegligibleReason.NOTHING
        )
        out.append(NegligibleCaptures(rl.rank, tuple(negligible), reason))
    return out


def reuse_findings(rl: RankLedger | None, launch: Launch, library: Library) -> list[Reuse]:
    """A later family whose largest bucket is small reuses the lazily allocated buffers."""
    if rl is None:
        return []
    first: dict[str, tuple[str, int]] = {}
    small: list[Reused] = []
    for p in rl.phases:
        c = p.part("largest")
        if c is None or p.graph is None:
            continue
        kind = graph_kind(p.graph.name)
        if kind not in first:
            first[kind] = (p.graph.label, c.bytes)
            continue
        ref_name, ref = first[kind]
        if ref > 10 * TINY and TINY < c.bytes < 0.25 * ref:
            small.append(Reused(p.graph.label, c.bytes, ref_name, ref))
    if not small:
        return []
    return [Reuse(tuple(small), lazy_allocs(launch, True, library)[0], library)]


def rank_graph_spread(L: Launch, main: Rank) -> list[RankGraphSpread]:
    """Ranks whose captures cost more than 10% off the main rank's."""
    out: list[RankGraphSpread] = []
    ref = {g.name: g.end.usage.bytes for g in main.graphs if g.end and g.end.usage}
    for r in L.ranks:
        if r is main:
            continue
        for g in r.graphs:
            if g.end and g.end.usage and g.name in ref and ref[g.name] > 0:
                diff = g.end.usage.bytes - ref[g.name]
                if abs(diff) > 0.1 * ref[g.name] and abs(diff) > TINY:
                    out.append(
                        RankGraphSpread(
                            r.label,
                            g.name,
                            g.end.usage.bytes,
                            abs(diff) / ref[g.name],
                            diff > 0,
                            main.label,
                        )
                    )
    return out
