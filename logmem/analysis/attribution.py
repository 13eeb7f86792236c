"""Attribution stage: a launch -> per-rank phases of free memory, each drop split into causes.

The chain of free-memory readings a rank printed (Load weight begin/end, Memory pool
end, Capture begin/end, the bars in between, the summary's available_gpu_mem) is cut
into phases between consecutive readings. Each phase's drop (before - after; negative
when free memory rose) is explained by the causes the log names (logged), figures
logmem derives from readings (derived) or from SGLang's rules (estimated), and an
explicit unattributed remainder. ``RankLedger.check()`` asserts both conservation laws.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from logmem.model.launch import Graph, Launch, Model, Rank
from logmem.parse import events as ev
from logmem.sglang import rules
from logmem.units import GIB, Mem, format_gib, gib

# Kept importable here for the modules that still import it from attribution.
ROUNDING_BYTES = rules.DIFFERENCE_RESOLUTION_BYTES


@dataclass(frozen=True)
class Cause:
    name: str
    bytes: int
    kind: str  # logged | derived | estimated | unattributed
    lines: tuple[int, ...] = ()
    note: str = ""
    # For graph captures, which part this is: static | largest | other | buckets | mixed | total.
    part: str = ""


@dataclass(frozen=True)
class Bucket:
    """One captured batch size: free memory at its start and what it kept."""

    size: int | None
    avail_bytes: int
    cost_bytes: int | None  # this reading minus the next one (or the end line)
    line: int
    covers: int = 1  # how many buckets lie between this reading and the next


@dataclass(frozen=True)
class Phase:
    key: str  # stable id, e.g. "init", "weights", "pools", "pre_capture:decode", "capture:decode"
    name: str  # what a person reads
    before_bytes: int
    after_bytes: int
    causes: tuple[Cause, ...]
    lines: tuple[int, int]
    graph: Graph | None = field(default=None, compare=False, repr=False)
    buckets: tuple[Bucket, ...] = ()

    @property
    def delta_bytes(self) -> int:
        """Drop in free memory over the phase (negative when free memory rose)."""
        return self.before_bytes - self.after_bytes

    def part(self, name: str) -> Cause | None:
        """A graph capture's cause by part: static, largest, other, buckets, mixed, total."""
        return next((c for c in self.causes if c.part == name), None)

    @property
    def unattributed_bytes(self) -> int:
        return sum(c.bytes for c in self.causes if c.kind == "unattributed")


@dataclass(frozen=True)
class RankLedger:
    rank: str
    phases: tuple[Phase, ...]
    note: str = ""

    @property
    def first_bytes(self) -> int | None:
        return self.phases[0].before_bytes if self.phases else None

    @property
    def last_bytes(self) -> int | None:
        return self.phases[-1].after_bytes if self.phases else None

    def phase(self, key: str) -> Phase | None:
        return next((p for p in self.phases if p.key == key), None)

    def check(self) -> None:
        """Conservation: phases chain and add up; causes add up to each phase's drop."""
        for a, b in zip(self.phases, self.phases[1:]):
            if a.after_bytes != b.before_bytes:
                raise AssertionError(
                    f"{self.rank}: phase {a.key} ends where {b.key} does not begin"
                )
        if self.phases:
            total = sum(p.delta_bytes for p in self.phases)
            assert self.first_bytes is not None and self.last_bytes is not None
            if total != self.first_bytes - self.last_bytes:
                raise AssertionError(f"{self.rank}: phase drops do not add up")
        for p in self.phases:
            if sum(c.bytes for c in p.causes) != p.delta_bytes:
                raise AssertionError(f"{self.rank}: causes of {p.key} do not add up to its drop")


@dataclass(frozen=True)
class Sizing:
    """SGLang's KV budget rule (reference 12.2) recomputed from the printed readings."""

    mem_fraction_static: float
    pre_load_bytes: int  # P: min over ranks of the free memory before weights load
    pre_load_rank: str
    after_weights_bytes: int  # min over ranks of the free memory after weights load
    rest_bytes: int  # after_weights - P x (1 - mfs)
    logged_pool_bytes: int | None  # KV (+ Mamba) pools of the target, as logged
    kv_bytes: int | None
    kv_tokens: int | None
    bytes_per_token: float | None  # pool bytes / #tokens from the printed (rounded) sizes

    @property
    def bytes_per_token_range(self) -> tuple[int, int] | None:
        """Bytes per token consistent with the printed pool sizes (each +-0.005 GiB)."""
        return rules.bytes_per_token_range(self.kv_bytes, self.kv_tokens, self.kv_parts)

    @property
    def likely_bytes_per_token(self) -> int | None:
        """The cell size in that range divisible by the largest power of two (cells are
        head_dim x heads x layers x dtype bytes, so a round number), when it is unique."""
        rng = self.bytes_per_token_range
        return _roundest(rng) if rng else None

    kv_parts: int = 1  # how many printed sizes make up kv_bytes (2 for K+V)
    pools: tuple[
        tuple[str, int, int | None], ...
    ] = ()  # (label, bytes, tokens) when several KV pools


@dataclass(frozen=True)
class GraphReserve:
    """The graph reserve SGLang's default mem_fraction_static set aside (reference 12.3)."""

    reserve_bytes: int
    terms: tuple[tuple[str, int], ...]
    measured_bytes: int | None


@dataclass(frozen=True)
class LaunchLedger:
    launch: Launch
    ranks: tuple[RankLedger, ...]
    sizing: Sizing | None
    reserve: GraphReserve | None
    binding_rank: str | None
    imbalance_bytes: int | None
    imbalance_tokens: int | None
    findings: tuple[str, ...]

    def rank(self, label: str) -> RankLedger | None:
        return next((r for r in self.ranks if r.rank == label), None)


# --- readings -> phases -------------------------------------------------------------------


@dataclass
class _Reading:
    kind: str
    bytes: int
    line: int
    event: ev.Event
    model: Model | None = None
    graph: Graph | None = None


def _readings(rank: Rank) -> tuple[list[_Reading], dict[int, list[ev.Event]]]:
    """The rank's free-memory readings in print order, and the pool lines before each."""
    model_of: dict[int, Model] = {}
    for m in rank.models:
        for me in (m.weights_begin, m.weights_end, m.pool_end):
            if me is not None:
                model_of[id(me)] = m
    graph_of: dict[int, Graph] = {}
    for g in rank.graphs:
        for ge in (g.begin, g.end):
            if ge is not None:
                graph_of[id(ge)] = g
    out: list[_Reading] = []
    pending: dict[int, list[ev.Event]] = {}
    pools: list[ev.Event] = []
    for e in rank.events:
        if isinstance(
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
        elif isinstance(e, ev.Summary) and e.available is not None:
            kind, amount = "summary", e.available
        if kind is None or amount is None:
            continue
        pending[len(out)] = pools
        pools = []
        out.append(
            _Reading(
                kind, amount.bytes, e.source.line_no, e, model_of.get(id(e)), graph_of.get(id(e))
            )
        )
    # An open capture (crash or truncated log): its last bucket sample closes the chain.
    if out and out[-1].kind == "capture_begin" and out[-1].graph and out[-1].graph.samples:
        g = out[-1].graph
        s = g.samples[-1]
        pending[len(out)] = pools
        out.append(_Reading("last_sample", s.avail.bytes, s.source.line_no, out[-1].event, None, g))
    return out, pending


def _role(m: Model | None) -> str:
    return "draft " if m is not None and m.role == "draft" else ""


def _remainder(
    delta: int, causes: list[Cause], name: str, lines: tuple[int, ...], note: str = ""
) -> list[Cause]:
    rest = delta - sum(c.bytes for c in causes)
    if rest != 0 or not causes:
        if abs(rest) <= ROUNDING_BYTES and causes:
            name, note = "rounding of printed values", "within +-0.01 GiB"
        causes.append(Cause(name, rest, "unattributed", lines, note))
    return causes


def _pool_causes(
    pools: Sequence[ev.Event],
    model: Model | None,
    launch: Launch,
    delta: int,
    lines: tuple[int, int],
    sz: Sizing | None = None,
    rest: str = "unlogged (small pools, allocator)",
) -> list[Cause]:
    causes: list[Cause] = []
    summary_tokens = launch.summary.max_total_num_tokens if launch.summary else None
    kvs = [p for p in pools if isinstance(p, ev.KVPool)]
    swa = next((p for p in pools if isinstance(p, ev.SWASummary)), None)
    for i, kvp in enumerate(kvs):
        label = "KV pool"
        if (
            swa is not None
            and len(kvs) >= 2
            and model is not None
            and model.role == "target"
            and i < 2
        ):
            label = "SWA KV pool" if i == 0 else "full-attention KV pool"
        what = "KV" if kvp.kv is not None else "K+V"
        tok = f", {kvp.tokens:,} tokens" if kvp.tokens is not None else ""
        if kvp.tokens is None and summary_tokens is not None and len(kvs) == 1:
            tok = f"; {summary_tokens:,} tokens per summary"
        causes.append(
            Cause(
                f"{_role(model)}{label} ({what}{tok})",
                kvp.total_bytes,
                "logged",
                (kvp.source.line_no,),
            )
        )
    for p in pools:
        if isinstance(p, ev.MambaPool):
            causes.append(
                Cause(
                    f"{_role(model)}Mamba state ({p.max_size} slots)",
                    p.total_bytes,
                    "logged",
                    (p.source.line_no,),
                )
            )
    target = model is None or model.role == "target"
    if (
        target
        and not kvs
        and not any(isinstance(p, ev.MambaPool) for p in pools)
        and sz is not None
        and sz.rest_bytes > 0
        and sz.rest_bytes <= delta
    ):
        # SGLang before Feb 2025 logs no KV line: its own rule says what the pool took.
        causes.append(
            Cause(
                "KV pool (SGLang's rule; no KV line)",
                sz.rest_bytes,
                "estimated",
                (),
                f"{_g(sz.after_weights_bytes)} - {_g(sz.pre_load_bytes)} x "
                f"(1 - {sz.mem_fraction_static:g})",
            )
        )
    if target:
        req = _req_to_token_bytes(launch)
        if req is not None:
            n_req, ctx, amount = req
            causes.append(
                Cause(
                    "request-to-token table",
                    amount,
                    "estimated",
                    (),
                    f"({n_req} + 1) x {ctx} x 4 B",
                )
            )
    return _remainder(delta, causes, rest, lines)


def _req_to_token_bytes(launch: Launch) -> tuple[int, int, int] | None:
    s = launch.summary
    n_req = s.get_int("max_running_requests") if s else None
    ctx = s.get_int("context_len") if s else None
    args = launch.args
    if n_req is None and isinstance(args.get("max_running_requests"), int):
        n_req = args["max_running_requests"]
    if ctx is None and isinstance(args.get("context_length"), int):
        ctx = args["context_length"]
    if n_req is None or ctx is None:
        return None
    return n_req, ctx, rules.req_to_token_bytes(n_req, ctx)


def _lazy_note(launch: Launch) -> str:
    a = launch.args
    why = []
    if a.get("moe_a2a_backend") == "deepep" or a.get("enable_deepep_moe"):
        why.append("DeepEP buffers (moe_a2a_backend='deepep')")
    ep = a.get("ep_size")
    if isinstance(ep, int) and ep > 1:
        why.append(f"expert-parallel (ep_size={ep}) all-to-all buffers")
    if a.get("enable_dp_attention"):
        why.append("DP-attention gather buffers")
    if not why:
        return ""
    return "includes lazy allocations made on the first capture: " + ", ".join(why)


def _graph_kind(name: str) -> str:
    """Prefill-type graphs (piecewise, prefill) and decode-type graphs allocate different lazy buffers."""
    return "prefill" if rules.graph_sized_in_tokens(name) else "decode"


def _bucket_indices(g: Graph) -> tuple[list[int], int | None, bool]:
    """Each sample's 0-based bucket in capture order, the number of buckets, and whether
    the indices were read (tqdm's n/total or the sizes list) rather than assumed."""
    order = sorted(g.sizes, reverse=True) if g.sizes else None  # SGLang captures largest first
    n = len(order) if order else g.bar_total
    out: list[int] = []
    known = True
    for i in range(len(g.samples)):
        b = g.sample_bucket(i)
        if b is None:
            b, known = i, False
        out.append(b)
    return out, n, known


def _size_name(g: Graph, size: int | None) -> str:
    if size is None:
        return "?"
    return f"num_tokens {size}" if _graph_kind(g.name) == "prefill" else f"bs {size}"


def _span(g: Graph, lo: int, hi: int) -> str:
    """Buckets lo..hi-1 (capture order) in words."""
    order = sorted(g.sizes, reverse=True) if g.sizes else None
    count = hi - lo
    if order is None or not 0 <= lo < hi <= len(order):
        # Counts that do not fit the sizes list (two logs interleaved, a cut bar): say less.
        return f"{count} bucket{'s' if count != 1 else ''}" if count > 0 else "buckets"
    if count == 1:
        return f"bucket {_size_name(g, order[lo])}"
    return f"{count} buckets, {_size_name(g, order[lo])} to {order[hi - 1]}"


def _graph_phase(
    g: Graph, before: _Reading, after: _Reading, launch: Launch, rank: Rank, first_of_kind: bool
) -> Phase:
    delta = before.bytes - after.bytes
    lines = (before.line, after.line)
    causes: list[Cause] = []
    buckets: list[Bucket] = []
    s = g.samples
    open_capture = after.kind == "last_sample"
    if s:
        idx, n, known = _bucket_indices(g)
        ends: list[int | None] = [*idx[1:], n if n is not None and not open_capture else None]
        for i, smp in enumerate(s):
            nxt = (
                s[i + 1].avail.bytes if i + 1 < len(s) else (None if open_capture else after.bytes)
            )
            cost = smp.avail.bytes - nxt if nxt is not None else None
            hi = ends[i]
            covers = (hi - idx[i]) if hi is not None and hi > idx[i] else 1
            buckets.append(Bucket(smp.size, smp.avail.bytes, cost, smp.source.line_no, covers))
        consecutive = idx == list(range(len(s)))
        lazy = _lazy_note(launch) if first_of_kind else ""
        assumed = "" if known else "bar renders carry no bucket count: assumed consecutive"
        head = (before.line, s[0].source.line_no)
        if idx[0] == 0:
            causes.append(
                Cause(
                    "static buffers (before the first bucket)",
                    before.bytes - s[0].avail.bytes,
                    "derived",
                    head,
                    assumed,
                    part="static",
                )
            )
        else:
            first_n = f"first {idx[0]} bucket{'s' if idx[0] != 1 else ''}"
            causes.append(
                Cause(
                    f"static buffers + {first_n} (one reading)",
                    before.bytes - s[0].avail.bytes,
                    "derived",
                    head,
                    lazy,
                    part="mixed",
                )
            )
            lazy = ""
        if open_capture:
            if len(s) > 1:
                causes.append(
                    Cause(
                        f"{_span(g, idx[0], idx[-1])}, before the stop",
                        s[0].avail.bytes - s[-1].avail.bytes,
                        "derived",
                        (s[0].source.line_no, s[-1].source.line_no),
                        lazy,
                        part="buckets",
                    )
                )
        elif len(s) >= 2 and consecutive and idx[0] == 0:
            causes.append(
                Cause(
                    f"largest bucket ({_size_name(g, s[0].size) if s[0].size else 'first bucket'})",
                    s[0].avail.bytes - s[1].avail.bytes,
                    "derived",
                    (s[0].source.line_no, s[1].source.line_no),
                    lazy,
                    part="largest",
                )
            )
            n_other = (n - 1) if n is not None else (len(s) - 1)
            causes.append(
                Cause(
                    f"other {n_other} buckets",
                    s[1].avail.bytes - after.bytes,
                    "derived",
                    (s[1].source.line_no, after.line),
                    part="other",
                )
            )
        else:
            # Sparse readings (only some renders reached the log): one cause per stretch.
            for i, smp in enumerate(s):
                nxt_b = s[i + 1].avail.bytes if i + 1 < len(s) else after.bytes
                nxt_line = s[i + 1].source.line_no if i + 1 < len(s) else after.line
                end_i = ends[i]
                hi = end_i if end_i is not None else idx[i] + 1
                what = _span(g, idx[i], hi) if n is not None else "the remaining buckets"
                causes.append(
                    Cause(
                        what,
                        smp.avail.bytes - nxt_b,
                        "derived",
                        (smp.source.line_no, nxt_line),
                        lazy if i == 0 else "",
                        part="buckets",
                    )
                )
    elif g.end is not None and g.end.usage is not None:
        note = (
            ""
            if rank.prints_bars
            else "no bucket readings on this rank (only the bar-printing rank has them)"
        )
        causes.append(
            Cause(
                "graph capture (total)",
                g.end.usage.bytes,
                "logged",
                (after.line,),
                note,
                part="total",
            )
        )
    causes = _remainder(delta, causes, "unattributed", lines)
    suffix = " (stopped)" if open_capture else ""
    return Phase(
        f"capture:{g.name}",
        f"capture {g.label}{suffix}",
        before.bytes,
        after.bytes,
        tuple(causes),
        lines,
        g,
        tuple(buckets),
    )


def _owner(rank: Rank, event: ev.Event) -> Model | None:
    return next((m for m in rank.models if any(p is event for p in m.pools)), None)


def rank_ledger(launch: Launch, rank: Rank, sz: Sizing | None = None) -> RankLedger:
    """The phases of one rank, in log order; conservation is checked before returning."""
    sz = sz if sz is not None else sizing(launch)
    readings, pending = _readings(rank)
    phases: list[Phase] = []
    # Distributed init: only its usage is printed; the reading before it is derived.
    first_wb = next((r for r in readings if r.kind == "weights_begin"), None)
    if rank.init_end is not None and first_wb is not None and readings and readings[0] is first_wb:
        usage = rank.init_end.usage.bytes
        causes = [
            Cause(
                "NCCL / gloo / custom all-reduce", usage, "logged", (rank.init_end.source.line_no,)
            )
        ]
        ar = next((e for e in rank.events if isinstance(e, ev.AllReduceConfig)), None)
        if ar is not None:
            causes = [
                Cause(
                    "all-reduce symmetric memory",
                    ar.symmetric.bytes,
                    "logged",
                    (ar.source.line_no,),
                ),
                Cause("all-reduce local buffer", ar.local.bytes, "logged", (ar.source.line_no,)),
                Cause(
                    "NCCL / gloo / other communicators",
                    usage - ar.symmetric.bytes - ar.local.bytes,
                    "derived",
                    (rank.init_end.source.line_no,),
                ),
            ]
        phases.append(
            Phase(
                "init",
                "distributed init",
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
        if b.kind in ("capture_end", "last_sample") and b.graph is not None and a.graph is b.graph:
            # Lazy buffers (DeepEP, NCCL, cuBLAS) come with the first capture of each kind.
            kind = _graph_kind(b.graph.name)
            first_of_kind = not any(
                p.graph is not None and _graph_kind(p.graph.name) == kind for p in phases
            )
            phases.append(_graph_phase(b.graph, a, b, launch, rank, first_of_kind))
            continue
        logged_pools = [p for p in pools if isinstance(p, (ev.KVPool, ev.MambaPool))]
        pool_model = _owner(rank, logged_pools[0]) if logged_pools else b.model
        role = _role(pool_model).strip() or "target"
        if b.kind == "weights_end" and a.kind == "weights_begin":
            we = b.event
            assert isinstance(we, ev.WeightsEnd)
            causes = (
                [Cause(f"{_role(b.model)}weights", we.usage.bytes, "logged", (b.line,))]
                if we.usage
                else []
            )
            key, name = f"{_role(b.model).strip() or 'target'}_weights", f"{_role(b.model)}weights"
            if not causes:
                causes = [Cause(f"{_role(b.model)}weights", delta, "derived", lines)]
            cl = _remainder(delta, causes, "unattributed", lines)
        elif b.kind == "pool_end" and a.kind == "weights_begin":
            # No Load weight end: weights and pools are one step here.
            key, name = (
                f"{role}_weights_and_pools",
                f"{_role(pool_model)}weights and pools (no Load weight end)",
            )
            cl = _pool_causes(
                pools, pool_model, launch, delta, lines, sz, rest="weights + unlogged pools"
            )
        elif b.kind == "pool_end" or logged_pools:
            key, name = f"{role}_pools", f"{_role(pool_model)}KV and other pools"
            rest = "unlogged (small pools, allocator)"
            if b.kind != "pool_end":
                # No Memory pool end line: the pools and what followed them share one step.
                name += f" (no pool end line; to {b.kind.replace('_', ' ')})"
                rest = "unlogged: small pools + workspaces"
            cl = _pool_causes(pools, pool_model, launch, delta, lines, sz, rest=rest)
        elif b.kind == "capture_begin" and b.graph is not None:
            key, name = f"pre_capture:{b.graph.name}", f"before capture {b.graph.label}"
            why = (
                "attention workspaces, sampling (unlogged)"
                if a.kind in ("pool_end", "weights_end")
                else "between captures (unlogged)"
                if a.kind == "capture_end"
                else "unlogged"
            )
            cl = _remainder(delta, [], why, lines)
        elif b.kind == "weights_begin":
            key, name = (
                f"pre_weights:{_role(b.model).strip() or 'target'}",
                f"before {_role(b.model)}weights",
            )
            inits = [
                Cause(
                    "the draft worker's distributed init",
                    x.usage.bytes,
                    "logged",
                    (x.source.line_no,),
                )
                for x in pools
                if isinstance(x, ev.InitEnd)
            ]
            cl = _remainder(delta, inits, "unlogged", lines)
        elif b.kind == "summary":
            key = "post_capture"
            name = (
                "after capture (warm-up)"
                if a.kind == "capture_end"
                else "until the scheduler summary"
            )
            cl = _remainder(delta, [], "unlogged", lines)
        else:
            key, name = f"gap:{b.kind}", f"{a.kind.replace('_', ' ')} -> {b.kind.replace('_', ' ')}"
            cl = _remainder(delta, [], "unlogged", lines)
        n = seen.get(key, 0)
        seen[key] = n + 1
        if n:
            key = f"{key}#{n + 1}"
        phases.append(Phase(key, name, a.bytes, b.bytes, tuple(cl), lines))
    note = ""
    if not phases:
        if len(readings) == 1:
            r0 = readings[0]
            note = (
                f"this rank printed one free-memory reading ({r0.kind.replace('_', ' ')} "
                f"{_g(r0.bytes)} GiB, line {r0.line}); a ledger needs two"
            )
        else:
            e3 = (
                rank.models
                and any(m.kv_pools for m in rank.models)
                and rank.tag("TP") not in (None, 0)
            )
            note = "this rank printed no free-memory readings" + (
                " (mid-2025 SGLang printed model-runner lines on TP0 only)" if e3 else ""
            )
    led = RankLedger(rank.label, tuple(phases), note)
    led.check()
    return led


# --- launch-level checks --------------------------------------------------------------------


def arg_number(args: dict[str, Any], key: str, lo: float, hi: float) -> float | None:
    """A numeric server_args value in a sane range (logs are untrusted: no bools, inf or 1e999)."""
    v = args.get(key)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    try:
        f = float(v)
    except OverflowError:
        return None
    return f if math.isfinite(f) and lo <= f <= hi else None


def sizing(launch: Launch) -> Sizing | None:
    mfs = arg_number(launch.args, "mem_fraction_static", 1e-6, 1.0)
    readings = rules.budget_readings(launch)
    pre_bytes, pre_rank = readings.pre_load_bytes, readings.pre_load_rank
    post_bytes = readings.after_weights_bytes
    if mfs is None or pre_bytes is None or pre_rank is None or post_bytes is None:
        return None
    rest = rules.kv_budget_bytes(post_bytes, pre_bytes, mfs)
    first_rank = next((r for r in launch.ranks if r.target and r.target.kv_pools), None)
    kv = first_rank.target.kv_pools if first_rank and first_rank.target else ()
    mamba = first_rank.target.mamba_pools if first_rank and first_rank.target else ()
    logged = sum(p.total_bytes for p in kv) + sum(p.total_bytes for p in mamba) if kv else None
    # With a sliding-window model the first KV line is the SWA pool and the second the full
    # pool (reference 4.3): max_total_num_tokens and the per-token cost are the full pool's.
    swa = (
        first_rank is not None
        and first_rank.target is not None
        and any(isinstance(p, ev.SWASummary) for p in first_rank.target.pools)
    )
    main = kv[1] if swa and len(kv) >= 2 else (kv[0] if kv else None)
    tokens = main.tokens if main else None
    if tokens is None and launch.summary is not None and len(kv) == 1:
        tokens = launch.summary.max_total_num_tokens  # Jan 2025 KV lines print no #tokens
    bpt = main.total_bytes / tokens if main and tokens else None
    parts = 1 if main is not None and main.kv is not None else 2
    labels = ("SWA", "full") if swa and len(kv) >= 2 else ()
    per_pool = (
        tuple(
            (labels[i] if i < len(labels) else f"pool {i + 1}", p.total_bytes, p.tokens)
            for i, p in enumerate(kv)
        )
        if len(kv) > 1
        else ()
    )
    return Sizing(
        float(mfs),
        pre_bytes,
        pre_rank,
        post_bytes,
        rest,
        logged,
        main.total_bytes if main else None,
        tokens,
        bpt,
        parts,
        per_pool,
    )


def _roundest(rng: tuple[int, int]) -> int | None:
    lo, hi = rng
    if hi < lo or hi <= 0:
        return None
    step = 1 << max(hi.bit_length(), 1)
    while step >= 64:
        first = -(-lo // step) * step
        if first <= hi:
            return first if first + step > hi else None
        step //= 2
    return None


def graph_reserve(launch: Launch, measured: int | None) -> GraphReserve | None:
    """SGLang's reserve_for_graph_mb() and friends, from the resolved server_args."""
    terms = rules.graph_reserve(launch.args)
    if terms is None:
        return None
    return GraphReserve(
        sum(t.bytes for t in terms), tuple((_reserve_label(t), t.bytes) for t in terms), measured
    )


def _reserve_label(t: rules.Reserve) -> str:
    if t.term is rules.ReserveTerm.DECODE:
        return f"decode graph: max_bs {t.max_bs} x {rules.DECODE_GRAPH_MIB_PER_BS:g} MB"
    if t.term is rules.ReserveTerm.DP_ATTENTION:
        return (
            f"DP attention: {t.max_bs} x dp {t.dp_size} x {rules.DP_ATTENTION_MIB_PER_BS_DP:g} MB"
        )
    if t.term is rules.ReserveTerm.DP_ATTENTION_LARGE_BS:
        return (
            f"DP attention, max_bs > {rules.DP_ATTENTION_LARGE_BS}: {t.max_bs} x {t.dp_size} x "
            f"{rules.DP_ATTENTION_LARGE_BS_MIB:g} MB"
        )
    if t.term is rules.ReserveTerm.PIECEWISE:
        return f"piecewise graph: {t.sizes} sizes x {rules.PIECEWISE_MIB_PER_SIZE} MB"
    return f"DeepEP all-to-all: {rules.DEEPEP_A2A_RESERVE_MIB} MB"


def build_ledger(launch: Launch) -> LaunchLedger:
    sz = sizing(launch)
    ranks = tuple(rank_ledger(launch, r, sz) for r in launch.ranks)
    pre = [
        (r.target.weights_begin.avail.bytes, r.label)
        for r in launch.ranks
        if r.target and r.target.weights_begin
    ]
    binding = min(pre)[1] if pre else None
    imbalance = (max(pre)[0] - min(pre)[0]) if len(pre) > 1 else None
    imb_tokens = None
    cell = (sz.likely_bytes_per_token or sz.bytes_per_token) if sz is not None else None
    if imbalance is not None and sz is not None and cell:
        # The KV rule takes P and the after-weights reading as minimums over ranks, so a rank
        # with g GiB less of both lowers everyone's budget by mfs x g.
        imb_tokens = int(
            rules.imbalance_budget_loss_bytes(imbalance, sz.mem_fraction_static) // cell
        )
    measured = None
    bar_rank = launch.main_rank
    if bar_rank is not None:
        us = [g.end.usage.bytes for g in bar_rank.graphs if g.end and g.end.usage]
        measured = sum(us) if us else None
    reserve = graph_reserve(launch, measured)
    led = LaunchLedger(launch, ranks, sz, reserve, binding, imbalance, imb_tokens, ())
    return LaunchLedger(
        launch, ranks, sz, reserve, binding, imbalance, imb_tokens, tuple(findings(led))
    )


# --- findings ----------------------------------------------------------------------------------


def _g(n: int | None) -> str:
    return format_gib(n)


def findings(led: LaunchLedger) -> list[str]:
    """Plain sentences with numbers, most useful first."""
    out: list[str] = []
    L = led.launch
    main = L.main_rank
    if main is None:
        return out
    rl = led.rank(main.label)
    where = main.label or "the GPU"
    t = main.target
    if t and t.weights_end and t.weights_end.usage:
        offload = arg_number(L.args, "cpu_offload_gb", 1e-9, 1e9)
        held = (
            f"; cpu_offload_gb={offload:g} keeps that much of them in CPU memory" if offload else ""
        )
        out.append(
            f"Weights take {_g(t.weights_end.usage.bytes)} GiB per rank on {where}"
            f" ({t.weights_end.model_type}{held})."
        )
    sz = led.sizing
    if sz is not None:
        tok = f" for {sz.kv_tokens:,} tokens" if sz.kv_tokens else ""
        bpt = ""
        if sz.likely_bytes_per_token:
            bpt = f" ({sz.likely_bytes_per_token:,} bytes per token)"
        elif sz.bytes_per_token:
            bpt = f" (about {sz.bytes_per_token:,.0f} bytes per token)"
        logged = (
            f"; the pools logged {_g(sz.logged_pool_bytes)} GiB{tok}{bpt}"
            if sz.logged_pool_bytes
            else ""
        )
        if sz.pools and sz.logged_pool_bytes:
            each = ", ".join(
                f"{lab} {_g(b)} GiB" + (f" for {tk:,} tokens" if tk else "")
                for lab, b, tk in sz.pools
            )
            cell = sz.likely_bytes_per_token or (
                round(sz.bytes_per_token) if sz.bytes_per_token else None
            )
            per = f"; {cell:,} bytes per token in the {sz.pools[-1][0]} pool" if cell else ""
            logged = f"; the pools logged {_g(sz.logged_pool_bytes)} GiB ({each}{per})"
        out.append(
            f"KV budget by SGLang's rule: {_g(sz.after_weights_bytes)} - {_g(sz.pre_load_bytes)} x "
            f"(1 - {sz.mem_fraction_static:g}) = {_g(sz.rest_bytes)} GiB{logged}."
        )
        for m in main.models:
            for kva in (p for p in m.pools if isinstance(p, ev.KVAvailable)):
                if m.role == "target":
                    out.append(
                        f"SGLang logged {kva.avail.gib:.2f} GiB available for the KV cache (line "
                        f"{kva.source.line_no}); the rule above gives {_g(sz.rest_bytes)}."
                    )
                elif kva.avail.bytes < 0:
                    out.append(
                        f"The draft model's KV budget is negative ({kva.avail.gib:.2f} GiB, line "
                        f"{kva.source.line_no}): the draft was sized from what the target left, so "
                        "its pools ate into memory the target had reserved."
                    )
        if sz.rest_bytes <= 0:
            out.append(
                "The KV budget is not positive: raise --mem-fraction-static or put fewer weights on each GPU."
            )
        elif sz.logged_pool_bytes is not None:
            gap = sz.logged_pool_bytes - sz.rest_bytes
            if abs(gap) > 5 * ROUNDING_BYTES and abs(gap) > 0.02 * sz.rest_bytes:
                why = (
                    "the allocated cells are bigger than the cell size the sizing assumed "
                    "(e.g. FP8 scales, an indexer, draft layers)"
                    if gap > 0
                    else "a cap held the pool below the budget (max_total_tokens, page rounding, "
                    "a hybrid/SWA split, or a draft share)"
                )
                cap = arg_number(L.args, "max_total_tokens", 1, 1e15)
                if (
                    gap < 0
                    and cap is not None
                    and sz.kv_tokens is not None
                    and 0 <= cap - sz.kv_tokens < 4096
                ):
                    why = f"--max-total-tokens {int(cap):,} capped the pool"
                out.append(
                    f"The pools logged {_g(abs(gap))} GiB {'more' if gap > 0 else 'less'} than that "
                    f"budget: {why}."
                )
    if rl is not None:
        pools = rl.phase("target_pools")
        if pools is not None:
            parts = ", ".join(
                f"{c.name} {_g(c.bytes)}" for c in pools.causes if abs(c.bytes) >= ROUNDING_BYTES
            )
            out.append(f"The pool step drops {_g(pools.delta_bytes)} GiB on {where}: {parts}.")
        pre = next((p for p in rl.phases if p.key.startswith("pre_capture:")), None)
        if (
            pre is not None
            and pre.delta_bytes > ROUNDING_BYTES
            and pre.causes[0].name.startswith("attention")
        ):
            out.append(
                f"{_g(pre.delta_bytes)} GiB went to unlogged attention-backend workspaces between "
                f"Memory pool end and the first capture on {where}."
            )
        negligible: list[str] = []
        earlier = False  # a capture already took memory before this one
        for p in rl.phases:
            g = p.graph
            if g is None:
                continue
            static, largest, other = p.part("static"), p.part("largest"), p.part("other")
            zero = abs(p.delta_bytes) <= ROUNDING_BYTES and all(
                abs(c.bytes) <= ROUNDING_BYTES for c in p.causes
            )
            if zero and g.complete:
                negligible.append(g.label)
            elif static and largest and other:
                tail = ""
                if largest.bytes > 0 and other.bytes < 0.2 * largest.bytes:
                    tail = "; the number of buckets hardly matters, the largest bucket does"
                out.append(
                    f"CUDA graphs ({g.label}) take {_g(p.delta_bytes)} GiB on {where}: static {_g(static.bytes)}, "
                    f"{largest.name} {_g(largest.bytes)}, the {other.name} {_g(other.bytes)} in all{tail}."
                )
                if largest.note:
                    out.append(f"The largest {g.label} bucket {largest.note}.")
            elif g.samples and g.complete and not largest:
                parts = "; ".join(
                    f"{c.name} {_g(c.bytes)}" for c in p.causes if c.kind == "derived"
                )
                out.append(
                    f"CUDA graphs ({g.label}) take {_g(p.delta_bytes)} GiB on {where}, but the log kept "
                    f"bar readings for only some buckets, so the largest bucket cannot be told apart: "
                    f"{parts}."
                )
            if p.delta_bytes < -ROUNDING_BYTES:
                out.append(
                    f"Free memory rose by {_g(-p.delta_bytes)} GiB during capture {g.label} on {where}: "
                    "memory was released (temporaries freed, or another process on the GPU), "
                    "so later readings are higher than the pools left."
                )
            rising = [
                b
                for b in p.buckets
                if b.cost_bytes is not None and b.cost_bytes < -5 * ROUNDING_BYTES
            ]
            if rising:
                worst = min(b.cost_bytes for b in rising if b.cost_bytes is not None)
                out.append(
                    f"During capture {g.label} on {where} free memory rose between {len(rising)} bucket "
                    f"reading(s) (by up to {_g(-worst)} GiB): readings are not monotonic here (freed "
                    "temporaries, another process, or a unified-memory device such as GB10, where "
                    "avail mem is system RAM)."
                )
            earlier = earlier or p.delta_bytes > ROUNDING_BYTES
        if negligible:
            bottomed = rl.last_bytes is not None and rl.last_bytes <= ROUNDING_BYTES
            why = (
                "free memory was already at 0.00 GiB, so nothing more could be measured"
                if bottomed
                else "they reuse the buffers and memory pool of the earlier captures"
                if earlier
                else "nothing measurable was allocated"
            )
            out.append(
                f"{_join(negligible)} took no measurable memory on {where} (within print rounding): {why}."
            )
        if rl.last_bytes is not None:
            last = rl.phases[-1]
            when = (
                "after capture"
                if any(p.graph is not None for p in rl.phases)
                else f"at the end of {last.name}"
            )
            if last.key == "post_capture" and not any(p.graph is not None for p in rl.phases):
                when = "at the scheduler summary"
            if (
                last.key.startswith("capture:")
                and last.graph is not None
                and not last.graph.complete
            ):
                when = f"when the log stops (in capture {last.graph.label})"
            tight = (
                " — very little: the first requests may run out of memory"
                if rl.last_bytes < 0.5 * GIB
                else ""
            )
            out.append(f"{_g(rl.last_bytes)} GiB is left free on {where} {when}{tight}.")
        low = min(((p.after_bytes, p) for p in rl.phases), key=lambda t: t[0], default=None)
        if (
            low is not None
            and rl.last_bytes is not None
            and low[0] < rl.last_bytes - 10 * ROUNDING_BYTES
        ):
            out.append(
                f"Free memory bottomed out at {_g(low[0])} GiB (line {low[1].lines[1]}, {low[1].name}) "
                f"before rising to {_g(rl.last_bytes)} GiB: the lowest point is what an extra "
                "allocation there would have to fit in."
            )
    if led.imbalance_bytes is not None and led.imbalance_bytes > ROUNDING_BYTES * 5:
        cost = (
            f", which costs about {led.imbalance_tokens:,} KV tokens per rank (mem_fraction_static x the gap)"
            if led.imbalance_tokens
            else ""
        )
        out.append(
            f"Ranks differ by {_g(led.imbalance_bytes)} GiB of free memory before loading; SGLang sizes "
            f"every rank from the smallest ({led.binding_rank}){cost}."
        )
    # The reserve heuristic dates from late 2025 (when the piecewise-graph flags appeared).
    modern = rules.reserve_heuristic_applies(led.launch.args)
    if (
        led.reserve is not None
        and led.reserve.measured_bytes is not None
        and led.reserve.measured_bytes > 0
        and modern
    ):
        out.append(
            f"SGLang's default-mem_fraction_static heuristic (late 2025 on) would reserve "
            f"{_g(led.reserve.reserve_bytes)} GiB for these graphs; the captures used "
            f"{_g(led.reserve.measured_bytes)} GiB on {where}."
        )
    out.extend(_reuse(rl, L))
    out.extend(_rank_graph_spread(led, main))
    return out


def _join(names: list[str]) -> str:
    counts: dict[str, int] = {}
    for n in names:
        counts[n] = counts.get(n, 0) + 1
    parts = [n if c == 1 else f"{n} (x{c})" for n, c in counts.items()]
    text = ", ".join(parts[:-1]) + (" and " if len(parts) > 1 else "") + parts[-1]
    return ("Captures " if len(names) > 1 else "Capture ") + text


def _reuse(rl: RankLedger | None, launch: Launch) -> list[str]:
    """A later family whose largest bucket is small reuses the lazily allocated buffers."""
    if rl is None:
        return []
    first: dict[str, tuple[str, int]] = {}
    small: list[tuple[str, int, str, int]] = []
    for p in rl.phases:
        c = p.part("largest")
        if c is None or p.graph is None:
            continue
        kind = _graph_kind(p.graph.name)
        if kind not in first:
            first[kind] = (p.graph.label, c.bytes)
            continue
        ref_name, ref = first[kind]
        if ref > 10 * ROUNDING_BYTES and ROUNDING_BYTES < c.bytes < 0.25 * ref:
            small.append((p.graph.label, c.bytes, ref_name, ref))
    if not small:
        return []
    lazy = " (DeepEP, NCCL, cuBLAS workspaces)" if _lazy_note(launch) else ""
    parts = ", ".join(
        f"{name} {_g(b)} GiB against {_g(ref)} for {ref_name}" for name, b, ref_name, ref in small
    )
    return [
        f"Later captures have small largest buckets ({parts}): the buffers allocated lazily on the "
        f"first capture{lazy} are reused."
    ]


def _rank_graph_spread(led: LaunchLedger, main: Rank) -> list[str]:
    out = []
    ref = {g.name: g.end.usage.bytes for g in main.graphs if g.end and g.end.usage}
    for r in led.launch.ranks:
        if r is main:
            continue
        for g in r.graphs:
            if g.end and g.end.usage and g.name in ref and ref[g.name] > 0:
                diff = g.end.usage.bytes - ref[g.name]
                if abs(diff) > 0.1 * ref[g.name] and abs(diff) > ROUNDING_BYTES:
                    out.append(
                        f"{r.label} used {_g(g.end.usage.bytes)} GiB for capture {g.name}, "
                        f"{abs(diff) / ref[g.name]:.0%} {'more' if diff > 0 else 'less'} than "
                        f"{main.label or 'the main rank'}."
                    )
    return out


def launch_findings(launch: Launch) -> list[str]:
    return list(build_ledger(launch).findings)


def ledger_rows(led: RankLedger) -> list[dict[str, Any]]:
    """Flat rows {phase, cause, gib, bytes, kind, lines} for JSON and DataFrames."""
    rows = []
    for p in led.phases:
        for c in p.causes:
            rows.append(
                {
                    "phase": p.key,
                    "phase_name": p.name,
                    "cause": c.name,
                    "gib": gib(c.bytes),
                    "bytes": c.bytes,
                    "kind": c.kind,
                    "lines": list(c.lines),
                    "note": c.note,
                }
            )
    return rows
