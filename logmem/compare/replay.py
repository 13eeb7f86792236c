"""SGLang's KV sizing rule replayed on one launch's readings, and how its start-up ended.

``Replay`` holds what logmem.compare.whatif moves: the KV budget of ``rules.kv_budget_bytes``
at any mem_fraction_static, the tokens it buys, the default request pool and its
request-to-token table; everything else stays as the launch measured it.
"""

from __future__ import annotations

from logmem.analysis.attribution import LaunchLedger, Sizing
from logmem.errors import FitError
from logmem.frozen import frozen
from logmem.model.records import Launch
from logmem.sglang.rules import (
    default_max_running_requests,
    graph_sized_in_tokens,
    kv_budget_bytes,
    req_to_token_bytes,
    smallest_mfs_holding,
)


def bytes_per_token(sz: Sizing) -> int | None:
    """The cell size from the KV line: the round value the printed sizes allow, else the ratio."""
    if sz.likely_bytes_per_token:
        return sz.likely_bytes_per_token
    return round(sz.bytes_per_token) if sz.bytes_per_token else None


class Replay:
    """SGLang's sizing rule with this launch's readings; everything else held as measured."""

    def __init__(self, launch: Launch, led: LaunchLedger, context_len: int | None) -> None:
        sz = led.sizing
        if sz is None:
            raise FitError(
                "whatif needs mem_fraction_static in server_args and the Load weight begin/end "
                "readings; this launch lacks "
                + missing_sizing(launch)
                + (
                    " (if you know the value it ran with, pass --logged-mem-fraction-static X)"
                    if not isinstance(launch.args.get("mem_fraction_static"), (int, float))
                    else ""
                )
            )
        bpt = bytes_per_token(sz)
        if not bpt:
            raise FitError(
                "whatif needs a 'KV Cache is allocated' line with #tokens to know the bytes per token"
            )
        self.sz = sz
        self.bpt = bpt
        self.share = 1.0
        if sz.logged_pool_bytes and sz.kv_bytes and sz.logged_pool_bytes > sz.kv_bytes:
            self.share = sz.kv_bytes / sz.logged_pool_bytes
        a = launch.args
        page = a.get("page_size")
        self.page = page if isinstance(page, int) and page > 0 else 1
        mtt = a.get("max_total_tokens")
        self.max_total_tokens = mtt if isinstance(mtt, int) and mtt > 0 else None
        mrr = a.get("max_running_requests")
        self.fixed_requests = mrr if isinstance(mrr, int) and mrr > 0 else None
        s = launch.summary
        self.logged_ctx = (s.get_int("context_len") if s else None) or (
            a.get("context_length") if isinstance(a.get("context_length"), int) else None
        )
        self.ctx = context_len or self.logged_ctx
        self.m0 = sz.mem_fraction_static
        # Free memory after the last capture per rank: what the new KV pool or graphs eat into.
        self.after: dict[str, tuple[int, int]] = {}  # rank -> (free after capture, graph bytes)
        for r in led.ranks:
            caps = [p for p in r.phases if p.key.startswith("capture:")]
            if caps:
                self.after[r.rank] = (caps[-1].after_bytes, sum(p.delta_bytes for p in caps))
            elif r.phases:
                self.after[r.rank] = (r.phases[-1].after_bytes, 0)
        self.has_capture = any(p.key.startswith("capture:") for r in led.ranks for p in r.phases)
        # The pool does not depend on max bs: a projection is the logged pool plus the change of
        # the rule's budget, in tokens of one cell size, so an unchanged mfs gives exactly the
        # logged pool. When --max-total-tokens held the logged pool, the rule's own count is the
        # base instead.
        logged = sz.kv_tokens
        capped = (
            self.max_total_tokens is not None
            and logged is not None
            and logged >= self.max_total_tokens
        )
        self.base: int | None = logged if logged and not capped else None
        self._kv0 = int(self.rest(self.m0) * self.share)

    def rest(self, m: float) -> int:
        # SGLang's own scaling of the flag's value (multimodal, aiter) applies at any value.
        m = self.sz.rule_mfs_for(m)
        return kv_budget_bytes(self.sz.after_weights_bytes, self.sz.pre_load_bytes, m)

    def tokens(self, m: float) -> int:
        kv = int(self.rest(m) * self.share)
        if kv <= 0:
            return 0
        t = kv // self.bpt
        if self.max_total_tokens is not None:
            t = min(t, self.max_total_tokens)
        return t // self.page * self.page

    def pool_tokens(self, m: float) -> int:
        """The KV tokens at mem_fraction_static ``m``: the logged pool moved by the change of the
        budget (``tokens`` when there is no logged base)."""
        kv = int(self.rest(m) * self.share)
        if kv <= 0:
            return 0
        if self.base is None:
            return self.tokens(m)
        t = self.base + (kv - self._kv0) // self.bpt // self.page * self.page
        if self.max_total_tokens is not None:
            t = min(t, self.max_total_tokens)
        return max(t, 0)

    def smallest_mfs_for_context(self, context_len: int) -> float | None:
        """From which mem_fraction_static the pool holds one full context (None: not even 1.0)."""
        return smallest_mfs_holding(self.pool_tokens, context_len)

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


def missing_sizing(launch: Launch) -> str:
    miss = []
    if not isinstance(launch.args.get("mem_fraction_static"), (int, float)):
        miss.append("mem_fraction_static (no server_args line?)")
    if not any(r.target and r.target.weights_begin for r in launch.ranks):
        miss.append("'Load weight begin. avail mem=...'")
    if not any(r.target and r.target.weights_end for r in launch.ranks):
        miss.append("'Load weight end. ... avail mem=...'")
    return ", ".join(miss) or "them"


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
    )
