"""Findings: what stands out in a launch's ledger, as typed facts (numbers in bytes, line numbers).

Each finding is one frozen record; logmem.report.sentences turns it into the sentence every
format prints, so a reporter can restyle the words without touching the facts. Most useful
first: weights, the KV budget against the pools, the pool step, workspaces, each capture,
what is left free, rank imbalance, the graph reserve, buffer reuse, ranks that differ.
The records of a kind live beside their rules (findings_captures, findings_sizing,
findings_left, findings_order, ...); this module orders them and names them all.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, ClassVar

from logmem.analysis.capture_lever import CaptureLever, capture_lever
from logmem.analysis.comm_inputs import launch_command
from logmem.analysis.context import ContextVsPool as ContextVsPool
from logmem.analysis.exhausted import Exhausted as Exhausted
from logmem.analysis.exhausted import exhausted
from logmem.analysis.failures.outcome import outcome
from logmem.analysis.findings_captures import (
    NOTABLE,
    TINY,
    capture_findings,
    rank_graph_spread,
    reuse_findings,
)
from logmem.analysis.findings_captures import BucketsRose as BucketsRose
from logmem.analysis.findings_captures import CaptureRose as CaptureRose
from logmem.analysis.findings_captures import CaptureUnmeasured as CaptureUnmeasured
from logmem.analysis.findings_captures import GraphsOff as GraphsOff
from logmem.analysis.findings_captures import GraphSparse as GraphSparse
from logmem.analysis.findings_captures import GraphSplit as GraphSplit
from logmem.analysis.findings_captures import LargestBucketNote as LargestBucketNote
from logmem.analysis.findings_captures import NegligibleCaptures as NegligibleCaptures
from logmem.analysis.findings_captures import NegligibleReason as NegligibleReason
from logmem.analysis.findings_captures import RankGraphSpread as RankGraphSpread
from logmem.analysis.findings_captures import Reuse as Reuse
from logmem.analysis.findings_captures import Reused as Reused
from logmem.analysis.findings_kinds import FindingKind as FindingKind
from logmem.analysis.findings_left import LeftFree as LeftFree
from logmem.analysis.findings_left import LeftWhen as LeftWhen
from logmem.analysis.findings_left import StartupEnd as StartupEnd
from logmem.analysis.findings_left import StoppedFirstBucket as StoppedFirstBucket
from logmem.analysis.findings_left import crashed_rank, left_free, served_line
from logmem.analysis.findings_order import ClockOffset as ClockOffset
from logmem.analysis.findings_order import LaunchStarted as LaunchStarted
from logmem.analysis.findings_order import OutOfOrder as OutOfOrder
from logmem.analysis.findings_order import RepeatedLines as RepeatedLines
from logmem.analysis.findings_order import SharedLabel as SharedLabel
from logmem.analysis.findings_order import order_findings

# The sizing records are part of this module's Finding union (and its public names).
from logmem.analysis.findings_sizing import BudgetNotPositive as BudgetNotPositive
from logmem.analysis.findings_sizing import DraftPool as DraftPool
from logmem.analysis.findings_sizing import GapReason as GapReason
from logmem.analysis.findings_sizing import KVBudget as KVBudget
from logmem.analysis.findings_sizing import KVLoggedAvailable as KVLoggedAvailable
from logmem.analysis.findings_sizing import KVSourcesDisagree as KVSourcesDisagree
from logmem.analysis.findings_sizing import LikelyCause as LikelyCause
from logmem.analysis.findings_sizing import NoRuleCheck as NoRuleCheck
from logmem.analysis.findings_sizing import PoolsVsBudget as PoolsVsBudget
from logmem.analysis.findings_sizing import PostCaptureKVBudget as PostCaptureKVBudget
from logmem.analysis.findings_sizing import RuleFit as RuleFit
from logmem.analysis.findings_sizing import TableBounds as TableBounds
from logmem.analysis.findings_sizing import Unexplained as Unexplained
from logmem.analysis.findings_sizing import (
    kv_sources_disagree,
    post_capture_budget,
    sizing_findings,
    unexplained,
)
from logmem.analysis.imbalance import Imbalance as Imbalance
from logmem.analysis.imbalance import ParitySplit as ParitySplit
from logmem.analysis.imbalance import imbalance_finding
from logmem.analysis.kv_logged import KVPoolsLogged as KVPoolsLogged
from logmem.analysis.kv_logged import kv_pools_logged
from logmem.analysis.ledger import Bound, Bucket, Cause, Phase, RankLedger, What
from logmem.analysis.mamba_slots import MambaSlotsLimit as MambaSlotsLimit
from logmem.analysis.mamba_slots import mamba_slots_limit
from logmem.analysis.mfs_inferred import backsolved_mfs
from logmem.analysis.released import LaterRelease, later_release
from logmem.analysis.request_table import RequestTableShare as RequestTableShare
from logmem.analysis.request_table import request_table, request_table_share
from logmem.analysis.weights_loaded import WeightsNotLoaded as WeightsNotLoaded
from logmem.analysis.weights_loaded import weights_not_loaded
from logmem.frozen import frozen
from logmem.model.records import Launch, Rank
from logmem.parse import events as ev
from logmem.parse.server_args import arg_number
from logmem.sglang import rules
from logmem.units import GIB

if TYPE_CHECKING:
    from logmem.analysis.attribution import LaunchLedger


@frozen
class Weights:
    kind: ClassVar[FindingKind] = FindingKind.WEIGHTS
    rank: str
    bytes: int
    model_type: str
    cpu_offload_gb: float | None
    line: int
    # Memory released after sizing on every rank (logmem.analysis.released): the weight step's
    # drop may hold a load-time temporary, so it is the step's, not the weights' own size.
    released: LaterRelease | None = None


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
class DraftReleased:
    """Free memory rose after the draft's pool step: the draft freed its own embedding / lm_head
    for the target's (logmem.analysis.draft_release, rules.draft_share)."""

    kind: ClassVar[FindingKind] = FindingKind.DRAFT_RELEASED
    rank: str
    bytes: int  # the rise, positive
    lines: tuple[int, int]
    head: bool  # the lm_head too (set_embed_and_head), not only the embedding (set_embed)


@frozen
class BottomedOut:
    kind: ClassVar[FindingKind] = FindingKind.BOTTOMED_OUT
    bytes: int
    line: int
    phase: Phase
    last_bytes: int
    bucket: Bucket | None = None  # a capture's bucket reading, below the phase's own ends
    # The capture the reading begins, ends or lies in, when the log does not sample it (at most
    # one bar reading, RankLedger.unsampled_capture_at): the lowest reading, not the low point.
    unsampled: Phase | None = None
    # The UnifiedMemory line when the readings are the system's available RAM (GB10): the low
    # point then moves with the OS and other processes, it is no limit an allocation must fit.
    unified_line: int | None = None


@frozen
class Reserve:
    kind: ClassVar[FindingKind] = FindingKind.RESERVE
    rank: str
    reserve_bytes: int
    measured_bytes: int


@frozen
class WeightsCommittedLate:
    """--startup-weight-load-mode overlap (sglang 0.5.18-0.5.23): the weights' real values were
    committed after the capture into storage allocated before the pools (startup_weight_load.py
    StartupWeightLoadManager.finalize; loader.py initialize_model_for_startup). The load prints
    no 'Load weight end' reading, so the storage shares its step with the pools."""

    kind: ClassVar[FindingKind] = FindingKind.WEIGHTS_COMMITTED
    rank: str
    line: int  # the commit line
    commit_s: float
    step_bytes: int | None  # the drop of the step that holds the storage (weights and pools)
    step_lines: tuple[int, int] | None


@frozen
class UnifiedMemory:
    """SGLang fell back from nvidia-smi to torch for the device total, on a platform with
    unified-memory parts (GB10): its free-memory readings are then the system's available RAM
    (get_available_gpu_memory reads psutil there, reference 12.1), so every 'free' figure of
    the report moves with the OS, its page cache and other processes."""

    kind: ClassVar[FindingKind] = FindingKind.UNIFIED_MEMORY
    line: int  # the "Failed to get GPU memory capacity from nvidia-smi" line


@frozen
class CustomAllReduceOff:
    """The log says custom all-reduce did not set up ("Setup Custom allreduce failed ...", "Custom
    allreduce is disabled because ..."), in a launch with no server_args dump and so no
    communication table to say it in: the TP group all-reduces through the collective library
    alone, and no custom all-reduce buffers are in the ledger."""

    kind: ClassVar[FindingKind] = FindingKind.CUSTOM_AR_OFF
    state: str  # "failed" | "disabled"
    text: str  # the first such line's message, as printed
    lines: tuple[int, ...]  # every such line
    ranks: tuple[str, ...]  # the ranks that printed one
    library: str  # what the group all-reduces through instead (Platform.library)


def custom_ar_off(L: Launch, library: str) -> CustomAllReduceOff | None:
    """The finding for a launch without server_args whose ranks say custom all-reduce is off."""
    if L.server_args is not None:
        return None  # the communication table says it (comm_join.CustomAROff)
    offs = [
        e
        for e in L.all_events()
        if isinstance(e, ev.CustomAllReduce) and e.state in ("disabled", "failed")
    ]
    if not offs:
        return None
    ranks = tuple(dict.fromkeys(e.rank for e in offs if e.rank))
    lines = tuple(e.source.line_no for e in offs)
    return CustomAllReduceOff(offs[0].state, offs[0].text, lines, ranks, library)


Finding = (
    LaunchStarted
    | RepeatedLines
    | OutOfOrder
    | SharedLabel
    | ClockOffset
    | UnifiedMemory
    | CustomAllReduceOff
    | Weights
    | WeightsCommittedLate
    | WeightsNotLoaded
    | KVBudget
    | NoRuleCheck
    | PostCaptureKVBudget
    | KVLoggedAvailable
    | DraftPool
    | BudgetNotPositive
    | PoolsVsBudget
    | PoolStep
    | KVPoolsLogged
    | KVSourcesDisagree
    | Workspaces
    | GraphsOff
    | GraphSplit
    | LargestBucketNote
    | GraphSparse
    | StoppedFirstBucket
    | CaptureRose
    | CaptureUnmeasured
    | BucketsRose
    | NegligibleCaptures
    | LeftFree
    | Exhausted
    | DraftReleased
    | BottomedOut
    | Imbalance
    | Unexplained
    | Reserve
    | Reuse
    | RankGraphSpread
    | ContextVsPool
    | MambaSlotsLimit
    | RequestTableShare
)


def findings(led: LaunchLedger) -> list[Finding]:
    """The launch's findings, most useful first."""
    L = led.launch
    # First: where it begins in its file, and whether its ranks' lines are in time order.
    out: list[Finding] = list(order_findings(L))
    # The figures below come from the ranks whose lines are in time order (U, trusted): an
    # out-of-order rank's ledger pairs readings in the wrong order.
    U = led.used
    main = U.main_rank
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
                later_release(led.ranks),
            )
        )
    if t and t.committed and not t.weights_end:
        rl0 = led.rank(main.label)
        step = rl0.phase("target_weights_and_pools") if rl0 is not None else None
        out.append(
            WeightsCommittedLate(
                main.label,
                t.committed.source.line_no,
                t.committed.commit_s,
                step.delta_bytes if step is not None else None,
                step.lines if step is not None else None,
            )
        )
    # Right after the weights: the server runs with the weights this line lists uninitialised.
    out.extend(weights_not_loaded(L))
    rl = led.rank(main.label)
    if led.sizing is not None:
        out.extend(sizing_findings(led.sizing, main, U, rl))
    else:
        # Post-capture KV sizing needs only P and mfs (an overlap load has no A reading).
        post = post_capture_budget(U, None)
        if post is not None:
            out.append(post)
        elif rl is not None and any(p.key.endswith("pools") for p in rl.phases):
            # A pool step the rule cannot be checked against: say which input is missing.
            # The inputs of the ranks the sizing reads (U); none missing there: nothing to say.
            missing = rules.rule_inputs_missing(U)
            args = L.server_args.source.line_no if L.server_args is not None else None
            if missing or args is None:
                elided = L.server_args is not None and L.server_args.elided
                solved = backsolved_mfs(L) if missing == ("mem_fraction_static",) else None
                out.append(NoRuleCheck(missing, args, elided, solved))
    # An excerpt's KV lines with no pool step on the main rank to show them in, nor a KV budget
    # that states the pools logged: said as printed.
    stated = led.sizing is not None and led.sizing.logged_pool_bytes is not None
    if not stated and (rl is None or not any(p.key.endswith("pools") for p in rl.phases)):
        logged = kv_pools_logged(L, main.label)
        if logged is not None:
            out.append(logged)
    # Right after the KV budget: whether that pool holds the context the server advertises.
    if led.context is not None and led.context.applies:
        out.append(led.context)
    slots = mamba_slots_limit(U)
    if slots is not None:
        out.append(slots)
    disagree = kv_sources_disagree(led.kv_hint, main, U, rl)
    if disagree is not None:
        out.append(disagree)
    device = led.platform.device
    if rl is not None:
        unmeasured = any(g.captured_without_memory for g in main.graphs)
        o = outcome(L)
        end = StartupEnd(o.status)
        failing = o.failure.ranks if o.failure is not None and end is StartupEnd.CRASHED else ()
        crashed = crashed_rank(rl, failing, led.ranks)
        off = _graphs_off(L)
        lever = capture_lever(L)
        ranked = _rank(rl, end, device, served_line(L), unmeasured, main, crashed, off, lever)
        if smi is not None and led.platform.unified_possible:
            at = smi.source.line_no
            ranked = [
                replace(f, unified_line=at) if isinstance(f, BottomedOut) else f for f in ranked
            ]
        out.extend(ranked)
        # Right after what is left free: the request table, when it is a lever on that.
        left = next((f for f in ranked if isinstance(f, LeftFree)), None)
        table = led.context.table if led.context is not None else request_table(L, None)
        share = request_table_share(table, left)
        if share is not None:
            out.append(share)
        if end is StartupEnd.UP:
            unified = (
                smi.source.line_no if smi is not None and led.platform.unified_possible else None
            )
            ex = exhausted(rl, L, led.sizing, unified)
            if ex is not None:
                out.append(ex)
        out.extend(unexplained(rl, U, device))
    imbalance = imbalance_finding(led, NOTABLE)
    if imbalance is not None:
        out.append(imbalance)
    if (
        led.reserve is not None
        and led.reserve.measured_bytes is not None
        and led.reserve.measured_bytes > 0
        and rules.reserve_heuristic_applies(L.args)
    ):
        out.append(Reserve(main.label, led.reserve.reserve_bytes, led.reserve.measured_bytes))
    out.extend(reuse_findings(rl, L, led.platform.library))
    ar = custom_ar_off(L, led.platform.library.value)
    if ar is not None:
        out.append(ar)
    out.extend(rank_graph_spread(U, main))
    return out


def _rank(
    rl: RankLedger,
    end: StartupEnd,
    device: str = "unknown",
    served: int | None = None,
    unmeasured_after: bool = False,
    rank: Rank | None = None,
    crashed: tuple[str, int, int] | None = None,
    off: GraphsOff | None = None,
    lever: CaptureLever | None = None,
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
        and pre.delta_bytes > TINY
        and pre.causes[0].what is What.ATTENTION_WORKSPACES
    ):
        out.append(Workspaces(rl.rank, pre.delta_bytes, pre.lines))
    if off is not None:
        out.append(off)  # where the captures' findings would be
    out.extend(capture_findings(rl, device, lever))
    released = next(
        (
            (p, c)
            for p in rl.phases
            for c in p.causes
            if c.what in (What.DRAFT_EMBED_HEAD, What.DRAFT_EMBED)
        ),
        None,
    )
    if released is not None:
        p, c = released
        out.append(DraftReleased(rl.rank, -c.bytes, p.lines, c.what is What.DRAFT_EMBED_HEAD))
    if rl.last_bytes is not None:
        out.append(left_free(rl, rl.last_bytes, end, served, unmeasured_after, rank, crashed))
        low = rl.lowest_reading()
        if low is not None and low[0] < rl.last_bytes - 10 * TINY:
            unsampled = rl.unsampled_capture_at(low[1])
            out.append(BottomedOut(low[0], low[1], low[2], rl.last_bytes, low[3], unsampled))
    return out


def _graphs_off(L: Launch) -> GraphsOff | None:
    """CUDA graphs off by server_args, else by the echoed command line (a launch with no dump,
    corpus 018), when no rank logged a capture."""
    if any(r.graphs for r in L.ranks):
        return None
    if L.server_args is not None:
        off = rules.graphs_off(L.args)
        return GraphsOff("disable_cuda_graph", L.server_args.source.line_no) if off else None
    cmd = launch_command(L)
    if cmd is not None and "--disable-cuda-graph" in cmd.argv.replace("=", " ").split():
        return GraphsOff("--disable-cuda-graph", cmd.source.line_no, command=True)
    return None


def _pool_step(rank: str, p: Phase) -> PoolStep:
    """A pool step's drop and the causes that print as more than 0.00 GiB, as the ledger table
    lists them: a rounding row of -0.01 stays, so the parts add up to the drop as printed
    (036's draft step: 0.13 = draft KV pool 0.14 + rounding -0.01)."""
    parts = tuple(c for c in p.causes if round(abs(c.bytes) / GIB, 2) > 0)
    return PoolStep(rank, p.delta_bytes, parts, p.lines, p.bound)
