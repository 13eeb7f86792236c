"""SGLang's KV sizing rule replayed on one launch's readings, and how its start-up ended.

``Replay`` holds what logmem.compare.whatif moves: the KV budget of ``rules.kv_budget_bytes``
at any mem_fraction_static and the tokens it buys (logmem.analysis.projection), the default request pool and its
request-to-token table; everything else stays as the launch measured it.
"""

from __future__ import annotations

from logmem.analysis.attribution import LaunchLedger
from logmem.analysis.captures import phase_cost
from logmem.analysis.failures.effects import CapPerRow
from logmem.analysis.findings_sizing import PoolsVsBudget
from logmem.analysis.ledger import Bound, Phase
from logmem.analysis.mfs_inferred import BackSolvedMfs as BackSolvedMfs
from logmem.analysis.mfs_inferred import backsolved_mfs as backsolved_mfs
from logmem.analysis.mfs_inferred import with_logged_mfs as with_logged_mfs
from logmem.analysis.projection import PoolProjection
from logmem.analysis.projection import bytes_per_token as bytes_per_token
from logmem.analysis.sizing import Sizing
from logmem.errors import FitError
from logmem.frozen import frozen
from logmem.model.records import Launch
from logmem.parse.server_args import ELIDED_SERVER_ARGS
from logmem.sglang.rules import (
    at_floor,
    default_max_running_requests,
    graph_sized_in_tokens,
    kv_budget_bytes,
    req_to_token_bytes,
    smallest_mfs_with_pool,
)
from logmem.sglang.rules import (
    printed_sum_error_bytes as rules_error,
)
from logmem.units import format_gib


class Replay(PoolProjection):
    """SGLang's sizing rule with this launch's readings; everything else held as measured."""

    def __init__(
        self,
        launch: Launch,
        led: LaunchLedger,
        context_len: int | None,
        asked_mfs: float | None = None,
    ) -> None:
        sz = led.sizing
        if sz is None:
            raise FitError(
                "whatif needs mem_fraction_static in server_args and the Load weight begin/end "
                "readings; this launch lacks "
                + missing_sizing(launch)
                + (_logged_mfs_hint(launch) if _only_mfs_missing(launch) else "")
            )
        bpt = bytes_per_token(sz)
        if not bpt:
            ended = unfinished(launch)
            died = ended is not None and ended.kind == "not_enough_memory"
            raise FitError(
                (
                    "no prediction: start-up died sizing the KV cache (logmem analyze says "
                    "how), before the 'KV Cache is allocated' line that gives the bytes per token"
                    if died
                    else "whatif needs a 'KV Cache is allocated' line with #tokens to know the "
                    "bytes per token"
                )
                + ", so KV tokens, graphs and headroom are unknown"
                + _budget_only(sz, asked_mfs, ended)
            )
        # analyze's reading of a pool sized with a smaller cell than it allocates (003): the
        # token changes follow the sizing cell, the pool's GiB the allocated one.
        self.sizing_gap = sizing_cell_gap(led)
        cell = self.sizing_gap.sizing_cell_bytes if self.sizing_gap is not None else None
        super().__init__(sz, bpt, launch.args, cell)
        a = launch.args
        mrr = a.get("max_running_requests")
        self.fixed_requests = mrr if isinstance(mrr, int) and mrr > 0 else None
        s = launch.summary
        self.logged_ctx = (s.get_int("context_len") if s else None) or (
            a.get("context_length") if isinstance(a.get("context_length"), int) else None
        )
        self.ctx = context_len or self.logged_ctx
        # Free memory after the last capture per rank: what the new KV pool or graphs eat into.
        self.after: dict[str, tuple[int, int]] = {}  # rank -> (free after capture, graph bytes)
        # The graphs' memory is unknown when a capture's readings sit at the 0.00 floor or its
        # logged usage is negative (a release masks it); a final reading at the floor makes the
        # headroom an upper bound (the real one may be below zero).
        self.graphs_known = True
        # The first capture whose logged usage is negative (a release masks its cost): its low
        # point of free memory is unknown, so is any setting that asks more memory.
        self.masked: Phase | None = None
        for r in led.ranks:
            caps = [p for p in r.phases if p.key.startswith("capture:")]
            if caps:
                pcs = [phase_cost(p) for p in caps]
                if self.masked is None:
                    self.masked = next(
                        (p for p, c in zip(caps, pcs) if c.bound is Bound.MASKED), None
                    )
                costs = [c.bytes for c in pcs]
                self.graphs_known = self.graphs_known and all(c is not None for c in costs)
                self.after[r.rank] = (caps[-1].after_bytes, sum(c or 0 for c in costs))
            elif r.phases:
                self.after[r.rank] = (r.phases[-1].after_bytes, 0)
        self.graphs_disabled = launch.args.get("disable_cuda_graph") is True
        self.has_capture = any(p.key.startswith("capture:") for r in led.ranks for p in r.phases)
        self.floored = any(at_floor(free) for free, _ in self.after.values())

    def requests(self, tokens: int, ctx: int | None) -> int | None:
        """SGLang's default request-pool size unless --max-running-requests."""
        if self.fixed_requests is not None:
            return self.fixed_requests
        if not ctx:
            return None
        return default_max_running_requests(tokens, ctx)

    def req_table(self, tokens: int, ctx: int | None) -> int:
        n = self.requests(tokens, ctx)
        return req_to_token_bytes(n, ctx) if n is not None and ctx else 0


def _budget_only(sz: Sizing, asked: float | None, failed: Unfinished | None) -> str:
    """What SGLang's rule still gives without a cell size (a launch that died sizing its KV
    pool): the budget in GiB at the asked and the logged mem_fraction_static, and the smallest
    value with a positive budget (review27a #10e)."""
    a, p, m0 = sz.after_weights_bytes, sz.pre_load_bytes, sz.mem_fraction_static
    lowest = smallest_mfs_with_pool(a, p)

    def at(m: float) -> str:
        rule = sz.rule_mfs_for(m)
        rest = format_gib(kv_budget_bytes(a, p, rule))
        return f"{format_gib(a)} - {format_gib(p)} x (1 - {rule:.4g}) = {rest} GiB at {m:g}"

    said = [at(asked)] if asked is not None and asked != m0 else []
    said.append(at(m0) + " (as logged)")
    low = (
        f"; it is positive above mem_fraction_static {sz.flag_mfs_for(lowest):.4f} "
        f"(1 - {format_gib(a)} / {format_gib(p)}): raise it at least that far for any KV pool, "
        "and further for a useful one (the log does not say how many tokens a GiB holds)"
        if lowest is not None and m0 < lowest < 1
        else f"; it is positive above mem_fraction_static {sz.flag_mfs_for(lowest):.4f} "
        f"(1 - {format_gib(a)} / {format_gib(p)})"
        if lowest is not None and lowest < 1
        else ""
    )
    odd = ""
    if (
        failed is not None
        and failed.kind == "not_enough_memory"
        and kv_budget_bytes(a, p, sz.rule_mfs_for(m0)) > rules_error(2)
    ):
        odd = (
            f"; SGLang found no room at the logged {m0:g} although the rule gives a positive "
            "budget there: the rule does not explain that failure (see logmem analyze)"
        )
    return f". SGLang's KV budget (rest) without it: {'; '.join(said)}{low}{odd}"


def sizing_cell_gap(led: LaunchLedger) -> PoolsVsBudget | None:
    """analyze's finding that SGLang sized the pool with a smaller cell than the pools allocate
    (PoolsVsBudget.sizing_cell_bytes): whatif counts tokens with that cell, and cites it."""
    return next(
        (f for f in led.findings if isinstance(f, PoolsVsBudget) and f.sizing_cell_bytes),
        None,
    )


def _weights_readings(launch: Launch) -> bool:
    """Both Load weight readings are in the log (on some rank)."""
    return any(r.target and r.target.weights_begin for r in launch.ranks) and any(
        r.target and r.target.weights_end for r in launch.ranks
    )


def _only_mfs_missing(launch: Launch) -> bool:
    """mem_fraction_static is the one input missing: only then does passing
    --logged-mem-fraction-static help (review26 #7e: 037 lacks Load weight begin too)."""
    return not isinstance(launch.args.get("mem_fraction_static"), (int, float)) and (
        _weights_readings(launch)
    )


def missing_sizing(launch: Launch) -> str:
    miss = []
    if not isinstance(launch.args.get("mem_fraction_static"), (int, float)):
        sa = launch.server_args
        if sa is None:
            why = "no server_args line?"
        elif sa.error is not None and sa.error.startswith(ELIDED_SERVER_ARGS):
            why = f"server_args elided: line {sa.source.line_no} leaves it out with '...'"
        elif sa.error is not None:
            why = f"the server_args line {sa.source.line_no} is cut or malformed"
        else:
            why = f"not in the server_args line {sa.source.line_no}"
        miss.append(f"mem_fraction_static ({why})")
    if not any(r.target and r.target.weights_begin for r in launch.ranks):
        miss.append("'Load weight begin. avail mem=...'")
    if not any(r.target and r.target.weights_end for r in launch.ranks):
        miss.append("'Load weight end. ... avail mem=...'")
    return ", ".join(miss) or "them"


def _logged_mfs_hint(launch: Launch) -> str:
    b = backsolved_mfs(launch)
    if b is None:
        return " (if you know the value it ran with, pass --logged-mem-fraction-static X)"
    return (
        f". Back-solved from SGLang's KV rule on this log's readings, 1 - (after-weights free "
        f"{format_gib(b.after_weights_bytes)} - KV pools {format_gib(b.pools_bytes)} GiB) / P "
        f"{format_gib(b.pre_load_bytes)} GiB = {b.mfs:.3f}: an estimate (readings printed to "
        "0.01 GB, the pools floored to whole cells), not the logged value. If it ran with that, "
        f"pass --logged-mem-fraction-static {b.mfs:.3f}"
    )


@frozen
class Unfinished:
    """A launch whose start-up did not finish (crashed, or the log stops), as whatif needs it."""

    status: str  # "crashed" | "incomplete"
    headline: str  # the verdict's first line (logmem.analysis.failures)
    phase: str | None
    graph: str | None  # the capture that did not finish
    size: int | None  # its last bucket (bs or num_tokens)
    unit: str  # "bs" | "num_tokens"
    memory: bool | None  # ran out of memory: True; another error: False; cannot tell: None
    kind: str  # the failure's kind (logmem.analysis.failures): "oom", "stopped", ...
    exc_type: str | None  # the exception raised, when one was
    shortfall_bytes: int | None  # what the failed allocation lacked, when printed
    in_capture: bool  # a capture did not finish: graph memory and headroom are bounds
    rank: str | None = None  # the rank whose error the verdict quotes
    # analyze's capture-OOM Fix "--cuda-graph-max-bs N" priced per row (effects.CapPerRow):
    # whatif prices a lower max bs by the same figure when none is measured or given.
    cap_per_row: CapPerRow | None = None
    cap_graph: str | None = None


def unfinished(launch: Launch) -> Unfinished | None:
    """How start-up ended when it did not finish (logmem.analysis.failures.outcome), for whatif."""
    from logmem.analysis.failures import outcome

    oc = outcome(launch)
    f = oc.failure
    if oc.status == "ready" or f is None:
        return None
    in_capture = (f.phase or "").startswith("capture ") or any(
        not g.complete for r in launch.ranks for g in r.graphs
    )
    graph = f.graph
    if graph is None and in_capture:
        graph = next((g.name for r in launch.ranks for g in r.graphs if not g.complete), None)
    unit = "num_tokens" if graph is not None and graph_sized_in_tokens(graph) else "bs"
    raised = next((e.rank for e in f.errors if f.line is not None and e.source == f.line), None)
    cap = next((x.effect for x in f.fixes if isinstance(x.effect, CapPerRow)), None)
    return Unfinished(
        oc.status,
        f.headline,
        f.phase,
        graph,
        f.size if in_capture else None,
        unit,
        True if f.memory_related else f.memory_related,
        f.kind,
        f.exc_type,
        f.shortfall_bytes if f.memory_related else None,
        in_capture,
        raised,
        cap,
        graph if cap is not None else None,
    )
