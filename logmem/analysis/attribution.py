"""Attribution stage: a launch -> per-rank phases of free memory, each drop split into causes.

The chain of free-memory readings a rank printed (Load weight begin/end, Memory pool
end, Capture begin/end, the bars in between, the summary's available_gpu_mem) is cut
into phases between consecutive readings. Each phase's drop (before - after; negative
when free memory rose) is explained by the causes the log names (logged), figures
logmem derives from readings (derived) or from SGLang's rules (estimated), and an
explicit unattributed remainder. ``RankLedger.check()`` asserts both conservation laws.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from logmem.analysis.attribution_pools import (
    KVHint,
    is_draft,
    is_second,
    kv_hint,
    pool_causes,
    post_capture_causes,
)
from logmem.analysis.captures import captured_between, graph_kind, graph_phase, total_cost
from logmem.analysis.config_kv import ConfigKV, config_kv
from logmem.analysis.context import ContextVsPool, context_vs_pool
from logmem.analysis.default_mfs import launch_default_mfs
from logmem.analysis.device_total import DeviceTotals, PreStart, device_totals, pre_starts
from logmem.analysis.draft_release import name_draft_release
from logmem.analysis.findings import Finding, findings
from logmem.analysis.findings_order import rank_out_of_order, rank_shared_label, trusted
from logmem.analysis.findings_sizing import budget_sizing_cell
from logmem.analysis.ledger import (
    Bound,
    Cause,
    Facts,
    NoLedger,
    Phase,
    PhaseFacts,
    PhaseWhat,
    RankLedger,
    Reading,
    What,
    bound_remainders,
    remainder,
)
from logmem.analysis.platform import Platform, platform
from logmem.analysis.post_capture import committed_between
from logmem.analysis.released import later_release
from logmem.analysis.sizing import GraphReserve, Sizing, graph_reserve, sizing
from logmem.frozen import frozen
from logmem.model.records import Graph, Launch, Model, Rank
from logmem.parse import events as ev
from logmem.sglang import custom_ar, rules
from logmem.sglang.comm import Library
from logmem.sglang.default_mfs import DefaultMfs
from logmem.units import Mem

__all__ = [
    "Cause",
    "GraphReserve",
    "LaunchLedger",
    "Phase",
    "RankLedger",
    "Sizing",
    "build_ledger",
    "rank_ledger",
]


@frozen
class LaunchLedger:
    launch: Launch
    ranks: tuple[RankLedger, ...]
    sizing: Sizing | None
    reserve: GraphReserve | None
    binding_rank: str | None
    imbalance_bytes: int | None
    imbalance_tokens: int | None
    findings: tuple[Finding, ...]  # typed facts; logmem.report.sentences words them
    # What a pool step with no KV line takes its bytes per token from (attribution_pools).
    kv_hint: KVHint = KVHint()
    # The device kind and collective library the ledger's labels and sentences name.
    platform: Platform = Platform("unknown", Library.NCCL)
    # The context length against the KV pool (logmem.analysis.context); None: no token count.
    context: ContextVsPool | None = None
    # SGLang's list of device totals, and per rank what was in use before its first figure
    # (logmem.analysis.device_total); None / (): the log printed no device total.
    device_totals: DeviceTotals | None = None
    pre_start: tuple[PreStart, ...] = ()
    # Which SGLang rule gave mem_fraction_static (logmem.analysis.default_mfs, reference 12.3).
    default_mfs: DefaultMfs | None = None
    # The cell imbalance_tokens is priced at when it is SGLang's sizing cell, not the allocated
    # one (findings_sizing.PoolsVsBudget.sizing_cell_bytes); None: the allocated cell.
    imbalance_sizing_cell: float | None = None
    config: ConfigKV | None = None  # what --model-config gives (analysis.config_kv)

    def rank(self, label: str) -> RankLedger | None:
        return next((r for r in self.ranks if r.rank == label), None)

    @property
    def used(self) -> Launch:
        """The launch with the ranks its figures are taken from: those whose lines are in
        time order (findings_order.trusted)."""
        return trusted(self.launch)

    def pre_start_of(self, label: str) -> PreStart | None:
        return next((p for p in self.pre_start if p.rank == label), None)


# --- readings -> phases -------------------------------------------------------------------


def _readings(rank: Rank) -> tuple[list[Reading], dict[int, list[ev.Event]]]:
    """The rank's free-memory readings in print order, and the pool lines before each."""
    model_of: dict[int, Model] = {}
    # KV lines before the graphs for a pool backed after them (post-capture KV sizing): address
    # space, not memory, so no pool step takes them (Model.reserved_kv_pools).
    reserved: set[int] = set()
    for m in rank.models:
        for me in (m.weights_begin, m.weights_end, m.pool_end, m.post_capture):
            if me is not None:
                model_of[id(me)] = m
        reserved.update(id(p) for p in m.reserved_kv_pools)
    graph_of: dict[int, Graph] = {}
    for g in rank.graphs:
        for ge in (g.begin, g.end):
            if ge is not None:
                graph_of[id(ge)] = g
    # A capture that printed no begin reading (a sizes line or a fragment opened it) starts
    # where its first bar reading is.
    first_bar = {g.samples[0].source: g for g in rank.graphs if g.begin_bytes is None and g.samples}
    out: list[Reading] = []
    pending: dict[int, list[ev.Event]] = {}
    pools: list[ev.Event] = []
    for e in rank.events:
        if id(e) in reserved:
            continue
        if (
            isinstance(e, ev.PostCaptureKV)
            and e.avail is None
            and not pools
            and out
            and out[-1].kind == "post_capture_kv"
        ):
            # A draft's post-capture line (sglang 0.5.22 on) follows the target's reading but
            # was backed before it (kv_pool_runtime.py finalizes every pool, then logs).
            pending[len(out) - 1].append(e)
            continue
        if isinstance(e, ev.BarRender) and e.avail is not None and e.source in first_bar:
            g = first_bar.pop(e.source)
            pending[len(out)] = pools
            pools = []
            out.append(Reading("first_sample", e.avail.bytes, e.source.line_no, e, None, g))
            continue
        if isinstance(e, ev.PostCaptureKV) and e.avail is not None:
            pools.append(e)  # its own step's pool, and the reading that closes the step
        elif isinstance(
            e, (ev.KVPool, ev.MambaPool, ev.SWASummary, ev.DSv4Plan, ev.AllReduceConfig)
        ) or (
            isinstance(e, ev.InitEnd) and e is not rank.init_end  # a draft worker's own init
        ):
            pools.append(e)
            continue
        kind = None
        amount: Mem | None = None
        if isinstance(e, ev.WeightsBegin):
            kind, amount = "weights_begin", e.avail
        elif isinstance(e, ev.WeightsEnd):
            kind, amount = "weights_end", e.avail
        elif isinstance(e, ev.PoolEnd):
            kind, amount = "pool_end", e.avail
        elif isinstance(e, ev.CaptureBegin) and e.avail is not None:
            kind, amount = "capture_begin", e.avail
        elif isinstance(e, ev.CaptureEnd) and e.avail is not None:
            kind, amount = "capture_end", e.avail
        elif isinstance(e, ev.PostCaptureKV) and e.avail is not None:
            kind, amount = "post_capture_kv", e.avail
        elif isinstance(e, ev.Summary) and e.available is not None:
            kind, amount = "summary", e.available
        if kind is None or amount is None:
            continue
        pending[len(out)] = pools
        pools = []
        out.append(
            Reading(
                kind, amount.bytes, e.source.line_no, e, model_of.get(id(e)), graph_of.get(id(e))
            )
        )
    # An open capture (crash or truncated log): its last bucket sample closes the chain.
    if (
        out
        and out[-1].kind in ("capture_begin", "first_sample")
        and out[-1].graph
        and len(out[-1].graph.samples) > (out[-1].kind == "first_sample")
    ):
        g = out[-1].graph
        s = g.samples[-1]
        pending[len(out)] = pools
        out.append(Reading("last_sample", s.avail.bytes, s.source.line_no, out[-1].event, None, g))
    return out, pending


def _role(m: Model | None) -> str:
    """The role part of a phase key."""
    return m.role if m is not None else "target"


def _owner(rank: Rank, event: ev.Event) -> Model | None:
    return next((m for m in rank.models if any(p is event for p in m.pools)), None)


def comms_facts(launch: Launch, plat: Platform) -> Facts:
    """The distributed-init step's facts: the platform's collective library, and whether the
    TP group can hold custom all-reduce buffers. It cannot on one rank, with
    --disable-custom-all-reduce, off CUDA/ROCm (``custom_ar.custom_ar_possible``), across
    nodes (``custom_ar.tp_spans_nodes``) or where the log says SGLang turned it off ("Custom allreduce is disabled because ...", any rank: every
    rank of the group decides alike). An unknown TP size leaves it possible."""
    tp = launch.args.get("tp_size")
    off = any(
        isinstance(e, ev.CustomAllReduce) and e.state in ("disabled", "failed")
        for e in launch.all_events()
    )
    possible = (
        not off
        and custom_ar.tp_spans_nodes(launch.args) is None
        and (
            not isinstance(tp, int)
            or isinstance(tp, bool)
            or custom_ar.custom_ar_possible(launch.args, tp)
        )
    )
    return Facts(library=plat.library, no_custom_ar=not possible)


def rank_ledger(
    launch: Launch,
    rank: Rank,
    sz: Sizing | None = None,
    hint: KVHint | None = None,
    plat: Platform | None = None,
    lib: Facts | None = None,
) -> RankLedger:
    """The phases of one rank, in log order; conservation is checked before returning.
    ``lib`` is the launch's ``comms_facts`` (build_ledger computes it once)."""
    sz = sz if sz is not None else sizing(launch)
    hint = hint if hint is not None else kv_hint(launch, sz)
    plat = plat if plat is not None else platform(launch)
    lib = lib if lib is not None else comms_facts(launch, plat)
    readings, pending = _readings(rank)
    phases: list[Phase] = []
    # Distributed init: only its usage is printed; the reading before it is derived.
    first_wb = next((r for r in readings if r.kind == "weights_begin"), None)
    if rank.init_end is not None and first_wb is not None and readings and readings[0] is first_wb:
        usage = rank.init_end.usage.bytes
        causes = [Cause(What.COMMS, usage, "logged", (rank.init_end.source.line_no,), lib)]
        ar = next((e for e in rank.events if isinstance(e, ev.AllReduceConfig)), None)
        if ar is not None:
            causes = [
                Cause(
                    What.AR_SYMMETRIC,
                    ar.symmetric.bytes,
                    "logged",
                    (ar.source.line_no,),
                ),
                Cause(What.AR_LOCAL, ar.local.bytes, "logged", (ar.source.line_no,)),
                Cause(
                    What.OTHER_COMMS,
                    usage - ar.symmetric.bytes - ar.local.bytes,
                    "derived",
                    (rank.init_end.source.line_no,),
                    lib,
                ),
            ]
        phases.append(
            Phase(
                "init",
                PhaseWhat.INIT,
                first_wb.bytes + usage,
                first_wb.bytes,
                tuple(causes),
                (rank.init_end.source.line_no, first_wb.line),
            )
        )
    seen: dict[str, int] = {}
    for i in range(1, len(readings)):
        a, b = readings[i - 1], readings[i]
        delta = a.bytes - b.bytes
        lines = (a.line, b.line)
        pools = pending.get(i, [])
        captured = captured_between(a, b)
        if captured is not None:
            # Lazy buffers (the library's peer buffers, cuBLAS) come with the first capture of each kind; DeepEP's
            # one buffer per process with the very first capture.
            kind = graph_kind(captured.name)
            first_of_kind = not any(
                p.graph is not None and graph_kind(p.graph.name) == kind for p in phases
            )
            first = not any(p.graph is not None for p in phases)
            phases.append(
                graph_phase(captured, a, b, launch, rank, first_of_kind, first, plat.library)
            )
            continue
        logged_pools = [p for p in pools if isinstance(p, (ev.KVPool, ev.MambaPool))]
        pool_model = _owner(rank, logged_pools[0]) if logged_pools else b.model
        role = _role(pool_model)
        facts = PhaseFacts()
        # Post-capture KV sizing: the pool step before the graphs reserved the KV pool as
        # address space; it is backed in the step that ends at the post-capture line.
        deferred = pool_model is not None and pool_model.kv_deferred
        if b.kind == "post_capture_kv":
            key, what = f"{role}_kv_after_capture", PhaseWhat.KV_AFTER_CAPTURE
            facts = PhaseFacts(is_draft(pool_model), second=is_second(pool_model), from_kind=a.kind)
            cl = post_capture_causes(pools, pool_model, delta, lines)
        elif b.kind == "weights_end" and a.kind == "weights_begin":
            we = b.event
            assert isinstance(we, ev.WeightsEnd)
            draft = is_draft(b.model)
            weights = Facts(draft=draft, second=is_second(b.model))
            causes = (
                [Cause(What.WEIGHTS, we.usage.bytes, "logged", (b.line,), weights)]
                if we.usage
                else []
            )
            key, what, facts = (
                f"{_role(b.model)}_weights",
                PhaseWhat.WEIGHTS,
                PhaseFacts(draft, second=is_second(b.model)),
            )
            if not causes:
                causes = [Cause(What.WEIGHTS, delta, "derived", lines, weights)]
            cl = remainder(delta, causes, What.UNATTRIBUTED, lines)
        elif b.kind == "pool_end" and a.kind == "weights_begin":
            # No Load weight end: weights and pools are one step here.
            key, what = f"{role}_weights_and_pools", PhaseWhat.WEIGHTS_AND_POOLS
            facts = PhaseFacts(
                is_draft(pool_model),
                second=is_second(pool_model),
                kv_deferred=deferred,
                committed=pool_model is not None and pool_model.committed is not None,
            )
            cl = pool_causes(
                pools,
                pool_model,
                launch,
                delta,
                lines,
                sz,
                What.WEIGHTS_AND_POOLS,
                hint,
                deferred=deferred,
            )
        elif b.kind == "pool_end" or logged_pools:
            key, what = f"{role}_pools", PhaseWhat.POOLS
            rest = What.SMALL_POOLS
            facts = PhaseFacts(
                is_draft(pool_model), second=is_second(pool_model), kv_deferred=deferred
            )
            if b.kind != "pool_end":
                # No Memory pool end line: the pools and what followed them share one step.
                facts = PhaseFacts(
                    is_draft(pool_model),
                    second=is_second(pool_model),
                    to_kind=b.kind,
                    kv_deferred=deferred,
                )
                rest = What.SMALL_POOLS_AND_WORKSPACES
            cl = pool_causes(
                pools, pool_model, launch, delta, lines, sz, rest, hint, deferred=deferred
            )
        elif b.kind in ("capture_begin", "first_sample") and b.graph is not None:
            key, what = f"pre_capture:{b.graph.name}", PhaseWhat.PRE_CAPTURE
            why = (
                What.ATTENTION_WORKSPACES
                if a.kind in ("pool_end", "weights_end")
                else What.BETWEEN_CAPTURES
                if a.kind == "capture_end"
                else What.UNLOGGED
            )
            # No begin reading: the capture's own static buffers are in this step too.
            first_bar = b.kind == "first_sample"
            facts = PhaseFacts(graph=b.graph.label, first_bar=first_bar)
            cl = remainder(delta, [], why, lines, Facts(static_buffers=first_bar))
        elif b.kind == "weights_begin":
            key, what = f"pre_weights:{_role(b.model)}", PhaseWhat.PRE_WEIGHTS
            facts = PhaseFacts(is_draft(b.model), second=is_second(b.model))
            inits = [
                Cause(What.DRAFT_INIT, x.usage.bytes, "logged", (x.source.line_no,))
                for x in pools
                if isinstance(x, ev.InitEnd)
            ]
            cl = remainder(delta, inits, What.UNLOGGED, lines)
        elif b.kind == "summary":
            key = "post_capture"
            after = a.kind in ("capture_end", "post_capture_kv")
            what = PhaseWhat.WARMUP if after else PhaseWhat.TO_SUMMARY
            facts = PhaseFacts(from_kind=a.kind, committed=committed_between(rank, lines))
            cl = remainder(delta, [], What.UNLOGGED, lines)
        else:
            key, what = f"gap:{b.kind}", PhaseWhat.GAP
            facts = PhaseFacts(from_kind=a.kind, to_kind=b.kind)
            cl = remainder(delta, [], What.UNLOGGED, lines)
        cl = bound_remainders(list(cl), a.bytes, b.bytes)
        n = seen.get(key, 0)
        seen[key] = n + 1
        if n:
            key = f"{key}#{n + 1}"
        phases.append(Phase(key, what, a.bytes, b.bytes, tuple(cl), lines, facts=facts))
    empty = None
    if not phases:
        # Why this rank has no ledger: one reading (a ledger needs two), or none at all, which
        # mid-2025 SGLang (model-runner lines on TP0 only) explains on the other ranks.
        e3 = bool(
            rank.models and any(m.kv_pools for m in rank.models) and rank.tag("TP") not in (None, 0)
        )
        r0 = readings[0] if len(readings) == 1 else None
        empty = NoLedger((r0.kind, r0.bytes, r0.line) if r0 else None, e3)
    phases = name_draft_release(launch, phases)
    unordered, shared = rank_out_of_order(rank) is not None, rank_shared_label(rank) is not None
    led = RankLedger(rank.label, tuple(phases), empty, unordered, shared)
    led.check()
    return led


def build_ledger(
    launch: Launch, peers: Sequence[Launch] = (), model_config: Mapping[str, Any] | None = None
) -> LaunchLedger:
    """The launch's ledger. ``peers`` (every launch of the input, ``Analysis.ledger`` passes
    them) and ``model_config`` (a parsed config.json) give the bytes per token of a pool step
    that printed no KV line when no rank of the launch printed one."""
    # Figures taken across ranks come from the ranks whose lines are in time order.
    used = trusted(launch)
    sz = sizing(used)
    cfg = config_kv(used, model_config)  # None without --model-config
    hint = kv_hint(used, sz, peers, cfg)
    plat = platform(launch)
    lib = comms_facts(launch, plat)
    ranks = tuple(rank_ledger(launch, r, sz, hint, plat, lib) for r in launch.ranks)
    pre = [(e.avail.bytes, r.label) for r in used.ranks if (e := rules.pre_load_reading(r))]
    binding = min(pre)[1] if pre else None
    imbalance = (max(pre)[0] - min(pre)[0]) if len(pre) > 1 else None
    imb_tokens = None
    # A token of the budget costs the full pool's cell plus the SWA / Mamba share the same
    # budget gives with it (the draft's pool is sized from what the target left, not from it);
    # where the pools show SGLang sized with another cell than it allocates, that one (the
    # tokens SGLang would have added are budget // its cell).
    sizing_cell = budget_sizing_cell(used, sz, ranks)
    cell = sizing_cell or (sz.budget_bytes_per_token if sz is not None else None)
    if imbalance is not None and sz is not None and cell:
        # The KV rule takes P and the after-weights reading as minimums over ranks, so a rank
        # with g GiB less of both lowers everyone's budget by mfs x g.
        imb_tokens = int(rules.imbalance_budget_loss_bytes(imbalance, sz.rule_mfs) // cell)
    measured, measured_bound = None, Bound.EXACT
    bar_rank = used.main_rank
    if bar_rank is not None:
        total = total_cost(bar_rank.graphs)
        measured, measured_bound = total.bytes, total.bound
    dmfs = launch_default_mfs(launch)
    # SGLang set a graph reserve aside only where its reserve formula derived the default.
    reserve = (
        graph_reserve(dmfs.reserve_terms, measured, measured_bound)
        if dmfs and dmfs.reserve_applies
        else None
    )
    totals = device_totals(launch)
    led = LaunchLedger(
        launch,
        ranks,
        sz,
        reserve,
        binding,
        imbalance,
        imb_tokens,
        (),
        hint,
        platform=plat,
        context=context_vs_pool(used, sz, _least_free(ranks, binding), later_release(ranks), cfg),
        device_totals=totals,
        pre_start=tuple(pre_starts(launch, ranks, totals).values()),
        default_mfs=dmfs,
        imbalance_sizing_cell=sizing_cell if imb_tokens is not None else None,
        config=cfg,
    )
    return replace(led, findings=tuple(findings(led)))


def _least_free(ranks: Sequence[RankLedger], binding: str | None) -> int | None:
    """The binding rank's least free reading from its pool step on (RankLedger)."""
    led = next((r for r in ranks if r.rank == binding), None)
    low = led.least_free_from_pools() if led is not None else None
    return low[0] if low is not None else None
