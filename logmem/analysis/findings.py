"""Findings: what stands out in a launch's ledger, as typed facts (numbers in bytes, line numbers).

Each finding is one frozen record; logmem.report.sentences turns it into the sentence every
format prints, so a reporter can restyle the words without touching the facts. Most useful
first: weights, the KV budget against the pools, the pool step, workspaces, each capture,
what is left free, rank imbalance, the graph reserve, buffer reuse, ranks that differ.
"""

from __future__ import annotations

from dataclasses import replace
from enum import Enum
from typing import TYPE_CHECKING, ClassVar

from logmem.analysis.captures import graph_kind, lazy_allocs, phase_cost
from logmem.analysis.context import ContextVsPool as ContextVsPool
from logmem.analysis.failures.outcome import outcome
from logmem.analysis.findings_kinds import FindingKind as FindingKind
from logmem.analysis.findings_left import LeftFree as LeftFree
from logmem.analysis.findings_left import LeftWhen as LeftWhen
from logmem.analysis.findings_left import StartupEnd as StartupEnd
from logmem.analysis.findings_left import StoppedFirstBucket as StoppedFirstBucket
from logmem.analysis.findings_left import left_free, served_line
from logmem.analysis.findings_order import ClockOffset as ClockOffset
from logmem.analysis.findings_order import LaunchStarted as LaunchStarted
from logmem.analysis.findings_order import OutOfOrder as OutOfOrder
from logmem.analysis.findings_order import RepeatedLines as RepeatedLines
from logmem.analysis.findings_order import order_findings

# The sizing records are part of this module's Finding union (and its public names).
from logmem.analysis.findings_sizing import BudgetNotPositive as BudgetNotPositive
from logmem.analysis.findings_sizing import DraftKVNegative as DraftKVNegative
from logmem.analysis.findings_sizing import GapReason as GapReason
from logmem.analysis.findings_sizing import KVBudget as KVBudget
from logmem.analysis.findings_sizing import KVLoggedAvailable as KVLoggedAvailable
from logmem.analysis.findings_sizing import KVSourcesDisagree as KVSourcesDisagree
from logmem.analysis.findings_sizing import LikelyCause as LikelyCause
from logmem.analysis.findings_sizing import PoolsVsBudget as PoolsVsBudget
from logmem.analysis.findings_sizing import RuleFit as RuleFit
from logmem.analysis.findings_sizing import TableBounds as TableBounds
from logmem.analysis.findings_sizing import Unexplained as Unexplained
from logmem.analysis.findings_sizing import kv_sources_disagree, sizing_findings, unexplained
from logmem.analysis.imbalance import Imbalance as Imbalance
from logmem.analysis.imbalance import imbalance_finding
from logmem.analysis.ledger import Bound, Cause, Lazy, Phase, RankLedger, What
from logmem.analysis.mamba_slots import MambaSlotsLimit as MambaSlotsLimit
from logmem.analysis.mamba_slots import mamba_slots_limit
from logmem.analysis.sizing import arg_number
from logmem.analysis.weights_loaded import WeightsNotLoaded as WeightsNotLoaded
from logmem.analysis.weights_loaded import weights_not_loaded
from logmem.frozen import frozen
from logmem.model.records import Launch, Rank
from logmem.parse import events as ev
from logmem.sglang import rules
from logmem.sglang.comm import Library
from logmem.units import GIB

if TYPE_CHECKING:
    from logmem.analysis.attribution import LaunchLedger

# Thresholds, in multiples of what two printed readings can differ by alone (+-0.01 GiB).
_TINY = rules.DIFFERENCE_RESOLUTION_BYTES
_NOTABLE = 5 * _TINY  # a gap worth a sentence


@frozen
class Weights:
    kind: ClassVar[FindingKind] = FindingKind.WEIGHTS
    rank: str
    bytes: int
    model_type: str
    cpu_offload_gb: float | None
    line: int


@frozen
class PoolStep:
    kind: ClassVar[FindingKind] = FindingKind.POOL_STEP
    rank: str
    drop_bytes: int
    causes: tuple[Cause, ...]  # the ones above print rounding
    lines: tuple[int, int]
    bound: Bound = Bound.EXACT  # the drop's: it ends at the 0.00 floor
    draft: PoolStep | None = None  # the draft model's own pool step (its KV pool), if any


@frozen
class Workspaces:
    kind: ClassVar[FindingKind] = FindingKind.WORKSPACES
    rank: str
    bytes: int
    lines: tuple[int, int]


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
class BottomedOut:
    kind: ClassVar[FindingKind] = FindingKind.BOTTOMED_OUT
    bytes: int
    line: int
    phase: Phase
    last_bytes: int


@frozen
class Reserve:
    kind: ClassVar[FindingKind] = FindingKind.RESERVE
    rank: str
    reserve_bytes: int
    measured_bytes: int


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
class UnifiedMemory:
    """SGLang fell back from nvidia-smi to torch for the device total, on a platform with
    unified-memory parts (GB10): its free-memory readings are then the system's available RAM
    (get_available_gpu_memory reads psutil there, reference 12.1), so every 'free' figure of
    the report moves with the OS, its page cache and other processes."""

    kind: ClassVar[FindingKind] = FindingKind.UNIFIED_MEMORY
    line: int  # the "Failed to get GPU memory capacity from nvidia-smi" line


Finding = (
    LaunchStarted
    | RepeatedLines
    | OutOfOrder
    | ClockOffset
    | UnifiedMemory
    | Weights
    | WeightsNotLoaded
    | KVBudget
    | KVLoggedAvailable
    | DraftKVNegative
    | BudgetNotPositive
    | PoolsVsBudget
    | PoolStep
    | KVSourcesDisagree
    | Workspaces
    | GraphSplit
    | LargestBucketNote
    | GraphSparse
    | StoppedFirstBucket
    | CaptureRose
    | CaptureUnmeasured
    | BucketsRose
    | NegligibleCaptures
    | LeftFree
    | BottomedOut
    | Imbalance
    | Unexplained
    | Reserve
    | Reuse
    | RankGraphSpread
    | ContextVsPool
    | MambaSlotsLimit
)


def findings(led: LaunchLedger) -> list[Finding]:
    """The launch's findings, most useful first."""
    L = led.launch
    # First: where it begins in its file, and whether its ranks' lines are in time order.
    out: list[Finding] = list(order_findings(L))
    main = L.main_rank
    if main is None:
        return out
    # First: it changes what every free-memory figure below means.
    smi = next((e for e in L.events if isinstance(e, ev.DeviceTotal) and e.nvidia_smi_failed), None)
    if smi is not None and led.platform.unified_possible:
        out.append(UnifiedMemory(smi.source.line_no))
    t = main.target
    if t and t.weights_end and t.weights_end.usage:
        offload = arg_number(L.args, "cpu_offload_gb", 1e-9, 1e9)
        out.append(
            Weights(
                main.label,
                t.weights_end.usage.bytes,
                t.weights_end.model_type,
                offload,
                t.weights_end.source.line_no,
            )
        )
    # Right after the weights: the server runs with the weights this line lists uninitialised.
    out.extend(weights_not_loaded(L))
    rl = led.rank(main.label)
    if led.sizing is not None:
        out.extend(sizing_findings(led.sizing, main, L, rl))
    # Right after the KV budget: whether that pool holds the context the server advertises.
    if led.context is not None and led.context.applies:
        out.append(led.context)
    slots = mamba_slots_limit(L)
    if slots is not None:
        out.append(slots)
    disagree = kv_sources_disagree(led.kv_hint, main, L, rl)
    if disagree is not None:
        out.append(disagree)
    device = led.platform.device
    if rl is not None:
        unmeasured = any(g.captured_without_memory for g in main.graphs)
        end = StartupEnd(outcome(L).status)
        out.extend(_rank(rl, end, device, served_line(L), unmeasured, main))
        out.extend(unexplained(rl, L, device))
    imbalance = imbalance_finding(led, _NOTABLE)
    if imbalance is not None:
        out.append(imbalance)
    if (
        led.reserve is not None
        and led.reserve.measured_bytes is not None
        and led.reserve.measured_bytes > 0
        and rules.reserve_heuristic_applies(L.args)
    ):
        out.append(Reserve(main.label, led.reserve.reserve_bytes, led.reserve.measured_bytes))
    out.extend(_reuse(rl, L, led.platform.library))
    out.extend(_rank_graph_spread(L, main))
    return out


def _rank(
    rl: RankLedger,
    end: StartupEnd,
    device: str = "unknown",
    served: int | None = None,
    unmeasured_after: bool = False,
    rank: Rank | None = None,
) -> list[Finding]:
    out: list[Finding] = []
    pools = rl.phase("target_pools")
    if pools is not None:
        draft = rl.phase("draft_pools")
        step = _pool_step(rl.rank, pools)
        out.append(replace(step, draft=_pool_step(rl.rank, draft)) if draft else step)
    pre = next((p for p in rl.phases if p.key.startswith("pre_capture:")), None)
    if (
        pre is not None
        and pre.delta_bytes > _TINY
        and pre.causes[0].what is What.ATTENTION_WORKSPACES
    ):
        out.append(Workspaces(rl.rank, pre.delta_bytes, pre.lines))
    out.extend(_captures(rl, device))
    if rl.last_bytes is not None:
        out.append(left_free(rl, rl.last_bytes, end, served, unmeasured_after, rank))
        low = min(((p.after_bytes, p) for p in rl.phases), key=lambda x: x[0], default=None)
        if low is not None and low[0] < rl.last_bytes - 10 * _TINY:
            out.append(BottomedOut(low[0], low[1].lines[1], low[1], rl.last_bytes))
    return out


def _pool_step(rank: str, p: Phase) -> PoolStep:
    """A pool step's drop and its causes above print rounding."""
    parts = tuple(c for c in p.causes if abs(c.bytes) >= _TINY)
    return PoolStep(rank, p.delta_bytes, parts, p.lines, p.bound)


def _captures(rl: RankLedger, device: str = "unknown") -> list[Finding]:
    out: list[Finding] = []
    negligible: list[str] = []
    earlier = False  # a capture already took memory before this one
    for p in rl.phases:
        g = p.graph
        if g is None:
            continue
        static, largest, other = p.part("static"), p.part("largest"), p.part("other")
        zero = abs(p.delta_bytes) <= _TINY and all(abs(c.bytes) <= _TINY for c in p.causes)
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
            rose = -p.delta_bytes if p.delta_bytes < -_TINY else None
            out.append(CaptureUnmeasured(rl.rank, g.label, why, line, released, rose))
            earlier = earlier or p.delta_bytes > _TINY
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
        if p.delta_bytes < -_TINY:
            out.append(CaptureRose(rl.rank, g.label, -p.delta_bytes, p.lines))
        rising = [b.cost_bytes for b in p.buckets if b.cost_bytes is not None]
        rising = [c for c in rising if c < -_NOTABLE]
        if rising:
            out.append(BucketsRose(rl.rank, g.label, len(rising), -min(rising), device))
        earlier = earlier or p.delta_bytes > _TINY
    if negligible:
        bottomed = rl.last_bytes is not None and rl.last_bytes <= _TINY
        reason = (
            NegligibleReason.BOTTOMED
            if bottomed
            else NegligibleReason.REUSED
            if earlier
            else NegligibleReason.NOTHING
        )
        out.append(NegligibleCaptures(rl.rank, tuple(negligible), reason))
    return out


def _reuse(rl: RankLedger | None, launch: Launch, library: Library) -> list[Finding]:
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
        if ref > 10 * _TINY and _TINY < c.bytes < 0.25 * ref:
            small.append(Reused(p.graph.label, c.bytes, ref_name, ref))
    if not small:
        return []
    return [Reuse(tuple(small), lazy_allocs(launch, True, library)[0], library)]


def _rank_graph_spread(L: Launch, main: Rank) -> list[Finding]:
    out: list[Finding] = []
    ref = {g.name: g.end.usage.bytes for g in main.graphs if g.end and g.end.usage}
    for r in L.ranks:
        if r is main:
            continue
        for g in r.graphs:
            if g.end and g.end.usage and g.name in ref and ref[g.name] > 0:
                diff = g.end.usage.bytes - ref[g.name]
                if abs(diff) > 0.1 * ref[g.name] and abs(diff) > _TINY:
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
