"""The communication table joined with what a log measured, and the findings where they differ.

Joins (logmem.sglang.comm has the rules): ``Init torch distributed ends ... mem usage``
against the cells allocated in that step; ``All Reduce config`` against the v2 pointer table
(and the workspace when forced sizes fix it); the
DeepEP buffer, a process-wide singleton created at the first dispatch, against the largest
bucket of the launch's first capture, once; SGLang's DeepEP reserve against an explicit
``--mem-fraction-static``. Facts only: logmem.report.communication words them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from datetime import date
from typing import Any

from logmem.analysis.attribution import LaunchLedger
from logmem.analysis.comm_inputs import Env, EnvValue, echoed_env, log_evidence
from logmem.analysis.communication import Cell, Plan, derive
from logmem.analysis.findings_sizing import PoolsVsBudget
from logmem.analysis.ledger import Lazy
from logmem.frozen import frozen
from logmem.parse import events as ev
from logmem.sglang import comm, rules
from logmem.sglang import custom_ar as car
from logmem.sglang.comm import Mechanism, When
from logmem.units import MIB


@frozen
class RankInit:
    """One rank's ``Init torch distributed ends ... mem usage`` against the init cells."""

    rank: str
    usage_bytes: int
    line: int
    # The init cells with a size (custom all-reduce), the same on every rank; None when no
    # init cell has one (none exists, or its size is unknown: aiter's), not a sum of nothing.
    formula_bytes: int | None

    @property
    def rest_bytes(self) -> int:
        """What the communicators (and anything else in the step) took: no formula."""
        return self.usage_bytes - (self.formula_bytes or 0)


@frozen
class DeepEPJoin:
    """The launch's one DeepEP attribution: the first capture's largest bucket."""

    rank: str
    graph: str
    bucket: int | None  # its size (bs / num_tokens), None when the log does not say
    bucket_bytes: int  # the largest bucket's cost, or the whole capture's without bars
    whole_capture: bool  # no bar readings: the capture's total stands in
    lines: tuple[int, ...]
    deepep_bytes: int | None  # the formula, when it applies (low_latency with a config)
    finished: bool = True  # the capture printed its end line (else start-up stopped in it)
    # The other lazily allocated cells that land in the same bucket (the peer buffers of every
    # group at the first collective, a symmetric pool grown on use): the bucket's drop holds
    # them, the DeepEP buffer and the bucket's own graph together, which the log cannot split.
    shared: tuple[Cell, ...] = ()
    # The ledger's other lazy allocations there that are no cell (EP all-to-all, DP attention).
    also: tuple[Lazy, ...] = ()

    @property
    def exceeds(self) -> bool:
        return (
            self.deepep_bytes is not None
            and self.deepep_bytes > self.bucket_bytes + rules.DIFFERENCE_RESOLUTION_BYTES
        )


# --- findings (typed; worded in logmem.report.communication) --------------------------------


@frozen
class CustomAROff:
    """The flags allow custom all-reduce but the log says it did not set up."""

    line: int
    state: str  # "disabled" | "failed"
    text: str
    library: str = "NCCL"  # what the TP group all-reduces through instead (Plan.library)


@frozen
class InitBelowCells:
    """The init step took less than the init cells with a formula (beyond rounding)."""

    rank: str
    usage_bytes: int
    cells_bytes: int
    line: int


@frozen
class InitNothing:
    """Multi-rank init that took 0.00 GiB on every rank: the library allocates at first use."""

    ranks: int
    library: str


@frozen
class AllReduceDiffers:
    part: str  # "symmetric" (forced sizes) | "symmetric_cap" (above the cap) | "local"
    logged_bytes: int
    expected_bytes: int
    world: int
    line: int


@frozen
class DeepEPAttributed:
    join: DeepEPJoin


@frozen
class Headroom:
    """What the cells allocated after KV sizing must fit in: P x (1 - mfs), the part of the
    free memory SGLang's rule leaves outside its KV budget, but no more than the free reading
    that ends a rank's pool step (the pools may take more than their budget, and the
    request-to-token table and small pools come out of it too)."""

    budget_bytes: int | None  # P x (1 - mfs); None without the sizing readings
    after_pools_bytes: int | None  # the least reading that ends a rank's pool step
    rank: str | None  # the rank of that reading
    line: int | None
    # How much the logged pools exceeded the rule's budget (the sizing finding's gap), if so.
    pool_excess_bytes: int | None = None

    @property
    def measured_binds(self) -> bool:
        """The reading after the pools is the smaller, beyond what print rounding explains."""
        a, b = self.after_pools_bytes, self.budget_bytes
        return a is not None and (b is None or a < b - rules.DIFFERENCE_RESOLUTION_BYTES)

    @property
    def bytes(self) -> int | None:
        return self.after_pools_bytes if self.measured_binds else self.budget_bytes


@frozen
class DeepEPNoReserve:
    """DeepEP with the decode graph, and a mem_fraction_static SGLang did not derive (or may not
    have), or an SGLang with no DeepEP reserve at all: nobody set the buffer's 2 GiB aside; it
    must fit in the 1 - mfs headroom."""

    explicit: bool | None  # True: the command line passed it; None: no command line in the log
    mfs: float
    headroom: Headroom | None
    deepep_bytes: int | None
    bucket_bytes: int | None
    line: int | None  # the command line
    # comm.deepep_reserve_exists at the log's date: False, SGLang of that date has no such
    # reserve (passed or derived alike); None, the log is undated
    reserve_exists: bool | None = True
    printed: date | None = None


@frozen
class DeepEPReserveShort:
    """SGLang derived mfs with its DeepEP reserve, smaller than the formula's buffer."""

    reserve_bytes: int
    deepep_bytes: int


@frozen
class LazyOverHeadroom:
    """The cells allocated after KV sizing (with a size) exceed the headroom (Headroom.bytes)."""

    lazy_bytes: int
    headroom: Headroom


CommFinding = (
    CustomAROff
    | InitBelowCells
    | InitNothing
    | AllReduceDiffers
    | DeepEPAttributed
    | DeepEPNoReserve
    | DeepEPReserveShort
    | LazyOverHeadroom
)


@frozen
class Communication:
    plan: Plan
    ranks: tuple[RankInit, ...]
    main_rank: str | None
    all_reduce: ev.AllReduceConfig | None
    deepep: DeepEPJoin | None
    headroom: Headroom | None
    findings: tuple[CommFinding, ...]

    @property
    def headroom_bytes(self) -> int | None:
        """P x (1 - mfs), as the JSON's headroom_gib has always given it."""
        return self.headroom.budget_bytes if self.headroom is not None else None

    def rank(self, label: str | None) -> RankInit | None:
        return next((r for r in self.ranks if r.rank == label), None)


def _first_capture(led: LaunchLedger, rank: str) -> DeepEPJoin | None:
    rl = led.rank(rank)
    if rl is None:
        return None
    # The first capture of the launch: SGLang captures the target's graphs before a draft's
    # (whose MTP/NextN layers are MoE too), so it is the first to dispatch (the ledger's
    # captures.lazy_note puts DeepEP there as well).
    p = next((p for p in rl.phases if p.graph is not None and p.key.startswith("capture")), None)
    if p is None:
        return None
    largest = p.part("largest")
    assert p.graph is not None
    done = p.graph.end is not None
    if largest is not None:
        size = max(p.graph.sizes) if p.graph.sizes else next((b.size for b in p.buckets), None)
        also = tuple(x for x in largest.facts.lazy if x in (Lazy.EP_ALL_TO_ALL, Lazy.DP_ATTENTION))
        return DeepEPJoin(
            rank, p.graph.name, size, largest.bytes, False, largest.lines, None, done, also=also
        )
    return DeepEPJoin(rank, p.graph.name, None, p.delta_bytes, True, p.lines, None, done)


def lazy_neighbours(plan: Plan) -> tuple[Cell, ...]:
    """The cells besides DeepEP's buffer that are allocated at first use on the device: they come
    with the launch's first capture too (its first collective)."""
    return tuple(
        c
        for c in plan.cells
        if c.when is When.FIRST_USE and c.memory == "device" and c.mechanism is not Mechanism.DEEPEP
    )


def launch_plan(
    led: LaunchLedger,
    config: Mapping[str, Any] | None = None,
    user_env: Iterable[EnvValue] = (),
    overrides: Mapping[str, Any] | None = None,
) -> Plan:
    """The table of a logged launch: its server_args (``overrides`` on top, server_args names),
    the environment it echoed with the user's on top, and the log's evidence. ``logmem
    estimate LOG`` and ``logmem analyze`` both come here, so they cannot disagree."""
    L = led.launch
    sz = led.sizing
    bpt = (sz.likely_bytes_per_token or None) if sz is not None else None
    env = echoed_env(L).merged(user_env)
    args = {**L.args, **(overrides or {})}
    return derive(args, env, config, log_evidence(L, bpt))


def deployment_plan(
    launch: Any | None,
    model_config: Any,
    env: Iterable[tuple[str, str, str]],
    settings: Mapping[str, Any],
) -> Plan:
    """``api.communication_table``: a launch's table with ``settings`` (server_args names) on
    top, or, without a launch, the table of the settings alone. ``model_config`` is a path or
    a parsed config.json (None: no DeepEP size)."""
    from logmem.analysis.attribution import build_ledger
    from logmem.estimate import load_model_config

    config = (
        None
        if model_config is None
        else dict(model_config)
        if isinstance(model_config, Mapping)
        else load_model_config(model_config)
    )
    given = {k: v for k, v in settings.items() if v is not None}
    user = [EnvValue(k, v, o) for k, v, o in env]
    if launch is not None:
        return launch_plan(build_ledger(launch), config, user, given)
    return derive(given, Env(tuple(user)), config)


def communication(
    led: LaunchLedger,
    config: Mapping[str, Any] | None = None,
    user_env: Iterable[EnvValue] = (),
) -> Communication | None:
    """The table of a launch with server_args, joined with its readings; None without them."""
    L = led.launch
    if L.server_args is None or not L.args:
        return None
    plan = launch_plan(led, config, user_env)
    evd = plan.evidence
    sized = [
        c.bytes
        for c in plan.cells
        if c.when is When.INIT and c.bytes is not None and c.memory == "device"
    ]
    formula_init = sum(sized) if sized else None
    inits = tuple(
        RankInit(r.label, r.init_end.usage.bytes, r.init_end.source.line_no, formula_init)
        for r in L.ranks
        if r.init_end is not None
    )
    main = L.main_rank.label if L.main_rank is not None else None
    headroom = _headroom(led)
    found: list[CommFinding] = []
    off = next((v for k, v in plan.notes if k == "custom_ar_off"), None)
    if isinstance(off, ev.CustomAllReduce):
        found.append(CustomAROff(off.source.line_no, off.state, off.text, plan.library))
    found.extend(_init_findings(plan, inits))
    found.extend(_all_reduce_findings(plan, evd.all_reduce))
    join = None
    dcell = plan.cell(Mechanism.DEEPEP)
    if dcell is not None and main is not None:
        join = _first_capture(led, main)
        if join is not None:
            join = replace(
                join,
                deepep_bytes=dcell.bytes
                if dcell.bytes is not None
                else dcell.fact("low_latency_bytes"),
                shared=lazy_neighbours(plan),
            )
            found.append(DeepEPAttributed(join))
    found.extend(_reserve_findings(L.args, plan, headroom, join))
    lazy = sum(
        c.bytes
        for c in plan.cells
        if not c.when.before_kv_sizing and c.bytes is not None and c.memory == "device"
    )
    room = headroom.bytes if headroom is not None else None
    if headroom is not None and room is not None and lazy > room:
        found.append(LazyOverHeadroom(lazy, headroom))
    return Communication(plan, inits, main, evd.all_reduce, join, headroom, tuple(found))


def _headroom(led: LaunchLedger) -> Headroom | None:
    """P x (1 - mfs) beside the least free reading that ends a rank's pool step (None when
    neither is known)."""
    sz = led.sizing
    budget = rules.outside_budget_bytes(sz.pre_load_bytes, sz.rule_mfs) if sz else None
    ends = [(got[0], r.rank, got[1]) for r in led.ranks if (got := r.free_after_pools())]
    if budget is None and not ends:
        return None
    low, rank, line = min(ends) if ends else (None, None, None)
    excess = next(
        (f.gap_bytes for f in led.findings if isinstance(f, PoolsVsBudget) and f.gap_bytes > 0),
        None,
    )
    return Headroom(budget, low, rank, line, excess)


def _init_findings(plan: Plan, inits: tuple[RankInit, ...]) -> list[CommFinding]:
    out: list[CommFinding] = []
    if len(inits) > 1 and all(r.usage_bytes <= rules.DIFFERENCE_RESOLUTION_BYTES for r in inits):
        if any(c.mechanism is Mechanism.COMMUNICATORS for c in plan.cells):
            out.append(InitNothing(len(inits), plan.library))
        return out
    low = [
        (r, r.formula_bytes)
        for r in inits
        if r.formula_bytes is not None
        and r.formula_bytes > r.usage_bytes + rules.DIFFERENCE_RESOLUTION_BYTES
    ]
    if low:
        r, formula = min(low, key=lambda x: x[0].usage_bytes)
        out.append(InitBelowCells(r.rank, r.usage_bytes, formula, r.line))
    return out


def _all_reduce_findings(plan: Plan, ar: ev.AllReduceConfig | None) -> list[CommFinding]:
    """``All Reduce config`` against what has a formula: the pointer table always; the
    workspace only when the environment forces both its sizes, else against its cap (its sizes
    come from SGLang's per-GPU tuned table, which the log does not show: below the cap the line
    is the size)."""
    out: list[CommFinding] = []
    if ar is None:
        return out
    w = plan.layout.tp
    sizes = car.v2_sizes(plan.env.mapping)
    parts: list[tuple[str, int, int]] = [("local", ar.local.bytes, car.v2_pointer_table_bytes(w))]
    if sizes.exact:
        exact = car.v2_workspace_bytes(w, sizes.push or 0, sizes.pull or 0)
        parts.insert(0, ("symmetric", ar.symmetric.bytes, exact))
    elif ar.symmetric.bytes > sizes.workspace_at_most(w) + car.V2_SMALL_EXTRA_BYTES:
        # Above every tuned size the cap allows: a raised cap, forced sizes, or a push plane a
        # consumer grew (0.5.23 reserve_push_capacity) that the environment given does not show.
        out.append(
            AllReduceDiffers(
                "symmetric_cap",
                ar.symmetric.bytes,
                sizes.workspace_at_most(w),
                w,
                ar.source.line_no,
            )
        )
    for part, logged, expected in parts:
        gap = logged - expected
        if not -car.ALL_REDUCE_PRINT_RESOLUTION_BYTES <= gap <= car.V2_SMALL_EXTRA_BYTES:
            out.append(AllReduceDiffers(part, logged, expected, w, ar.source.line_no))
    return out


def _reserve_findings(
    args: Mapping[str, Any], plan: Plan, headroom: Headroom | None, join: DeepEPJoin | None
) -> list[CommFinding]:
    if not comm.deepep_reserve_applies(args) or plan.mfs is None:
        return []
    dcell = plan.cell(Mechanism.DEEPEP)
    deepep = None
    if dcell is not None:
        deepep = dcell.bytes if dcell.bytes is not None else dcell.fact("low_latency_bytes")
    reserve = rules.DEEPEP_A2A_RESERVE_MIB * MIB
    printed = plan.evidence.printed
    exists = comm.deepep_reserve_exists(printed)
    if plan.mfs_explicit is False and exists is not False:
        if deepep is not None and deepep > reserve and rules.reserve_heuristic_applies(args):
            return [DeepEPReserveShort(reserve, deepep)]
        return []
    cmd_line = plan.command_line if plan.mfs_explicit is True else None
    return [
        DeepEPNoReserve(
            plan.mfs_explicit,
            plan.mfs,
            headroom,
            deepep,
            join.bucket_bytes if join is not None and join.finished else None,
            cmd_line,
            exists,
            printed,
        )
    ]
