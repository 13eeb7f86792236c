"""The context length against the KV pool: how many full contexts the pool holds, whether
the request slots can ever fill it, and from which mem_fraction_static one full context fits.

The rule (a request of the full context needs that many KV slots at once) is SGLang's and
lives in logmem.sglang.rules; the mem_fraction_static figure comes from the projection
``logmem whatif`` uses (logmem.analysis.projection), so analyze and whatif say the same.
Every figure is one the log printed (scheduler summary, KV line, server_args) or that rule
applied to them; a figure the log lacks stays None, except the context length a caller's
--model-config gives where server_args printed context_length=None (context_source "config").
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from logmem.analysis.config_kv import ConfigKV
from logmem.analysis.findings_kinds import FindingKind
from logmem.analysis.projection import PoolProjection
from logmem.analysis.released import LaterRelease
from logmem.analysis.request_table import RequestTable, request_table
from logmem.analysis.sizing import full_pool, line_cell
from logmem.frozen import frozen
from logmem.model.records import Launch
from logmem.parse.server_args import arg_number
from logmem.sglang import rules
from logmem.sglang.rules import after_weights_reading

if TYPE_CHECKING:
    from logmem.analysis.sizing import Sizing


def _int(v: object) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else None


@frozen
class PoolCeiling:
    """The most KV tokens the pool can hold at any mem_fraction_static: the least free reading
    after the weights (rules.after_weights_reading, the budget's first term) over the full pool's
    cell from its KV line (a Mamba or SWA share of the budget only lowers it)."""

    tokens: int
    after_weights_bytes: int
    line: int  # the Load weight end line of that reading
    cell_bytes: int


@frozen
class ContextVsPool:
    """One launch's context length, KV token capacity and request slots, as logged."""

    kind: ClassVar[FindingKind] = FindingKind.CONTEXT_VS_POOL
    kv_tokens: int
    kv_tokens_source: str  # "summary" (max_total_num_tokens) | "kv_line" (#tokens)
    context_len: int | None
    # "summary" (context_len) | "server_args" (context_length) | "command" (its echoed command)
    # | "config" (a caller's --model-config, where server_args printed context_length=None)
    context_source: str | None
    max_running_requests: int | None
    requests_source: str | None  # "summary" | "server_args" | "command"
    requests_passed: bool  # --max-running-requests was given (server_args is not None)
    # The projection of the pool (logmem.analysis.projection); None without the readings.
    projected: bool
    fits_from_mfs: float | None  # smallest mem_fraction_static holding one full context
    tokens_at_full_mfs: int | None  # the pool at mem_fraction_static 1.0
    mem_fraction_static: float | None  # the launch's own, when sized
    max_total_tokens: int | None  # --max-total-tokens, when given
    radix_cache: bool | None  # False: disable_radix_cache=True; None: no server_args
    line: int | None  # the line the KV token count is read from
    # P x (1 - mfs) at fits_from_mfs and at the launch's own mfs: what a pool holding one full
    # context would leave for the request table, workspaces, graphs and activations.
    outside_at_fit_bytes: int | None = None
    outside_now_bytes: int | None = None
    # What this launch used outside the pool once it was sized: P x (1 - mfs) minus the least
    # free memory the binding rank read after its pool step (request table, workspaces, graphs).
    used_outside_bytes: int | None = None
    # The pool's ceiling whatever P and mfs are: SGLang's budget after - P x (1 - mfs) is at most
    # the free memory after the weights, so the pool holds at most that over its cell (None when
    # the projection above exists, or the reading or the cell is missing).
    ceiling: PoolCeiling | None = None
    # A hybrid SWA model's SWA pool tokens: from sglang 0.5.9 the request cap takes the smaller
    # of the two pools (rules.max_request_len), so below the cap it makes the cap era-dependent.
    swa_tokens: int | None = None
    # Memory released after sizing on every rank (logmem.analysis.released): the readings the
    # verdict is priced from held it, so "on this GPU" is not what they show.
    released: LaterRelease | None = None
    # The pool at the launch's own mem_fraction_static had that memory been free before sizing,
    # by SGLang's rule: (another process held it, so P and A were both that much higher; this
    # launch's load held it, so A alone). None without the projection.
    tokens_if_released: tuple[int, int] | None = None

    @property
    def released_holds_context(self) -> bool | None:
        """Whether, with the release free before sizing, the launch's own setting would hold one
        full context in both cases (None: not computed)."""
        t, ctx = self.tokens_if_released, self.context_len
        if t is None or ctx is None:
            return None
        return all(rules.context_fits(x, ctx) for x in t)

    # The request-to-token table, and what it becomes at --context-length kv_tokens: lowering
    # the context also frees memory outside the KV budget (analysis.request_table).
    table: RequestTable | None = None
    # server_args printed context_length=None: SGLang serves the model config's own length
    # (max_position_embeddings), which the log does not print; and the weights it offloads to
    # the CPU (cpu_offload_gb, GB as SGLang means it): what a pool larger than the one request
    # can reach could keep on the GPU instead.
    context_unset: bool = False
    cpu_offload_gb: float | None = None
    # The config key the "config" context came from, and whether rope_scaling's factor scaled it.
    context_key: str | None = None
    context_scaled: bool = False

    @property
    def ceiling_too_small(self) -> bool:
        """Even all the free memory after the weights holds less than one full context: no
        mem_fraction_static can help, whatever P is."""
        c, ctx = self.ceiling, self.context_len
        return c is not None and ctx is not None and not rules.context_fits(c.tokens, ctx)

    @property
    def fit_leaves_too_little(self) -> bool:
        """The setting that holds one full context leaves less outside the pool than this launch
        used there: not a setting to offer (the server would fail in capture or at run time)."""
        at, used = self.outside_at_fit_bytes, self.used_outside_bytes
        return at is not None and used is not None and at < used

    @property
    def one_context_fits(self) -> bool | None:
        if self.context_len is None:
            return None
        return rules.context_fits(self.kv_tokens, self.context_len)

    @property
    def max_req_len(self) -> int | None:
        """SGLang's cap on one request, prompt plus output (rules.max_request_len): below
        context_len - 1 when the pool is shorter than the context; None: context unknown."""
        if self.context_len is None:
            return None
        n = rules.max_request_len(self.context_len, self.kv_tokens)
        if self.swa_tokens is not None and self.swa_tokens - 1 < n:
            return None  # the full pool's cap up to 0.5.3, the SWA pool's from 0.5.9: unknown
        return n

    @property
    def prompt_rejected_from(self) -> int | None:
        """The prompt length from which SGLang rejects a request (max_req_input_len)."""
        n = self.max_req_len
        return None if n is None else n - rules.REQUEST_INPUT_MARGIN

    @property
    def full_contexts(self) -> float | None:
        if self.context_len is None:
            return None
        return rules.full_contexts(self.kv_tokens, self.context_len)

    @property
    def slots_tokens(self) -> int | None:
        """What the request slots can hold at most: max_running_requests full contexts."""
        if self.context_len is None or self.max_running_requests is None:
            return None
        return rules.slots_tokens(self.max_running_requests, self.context_len)

    @property
    def slots_exceed_pool(self) -> bool | None:
        s = self.slots_tokens
        return None if s is None else s > self.kv_tokens

    @property
    def unused_by_slots_tokens(self) -> int | None:
        """KV tokens no set of running requests can ever hold (0 when the slots can fill it)."""
        s = self.slots_tokens
        return None if s is None else max(self.kv_tokens - s, 0)

    @property
    def too_long(self) -> bool:
        """One request of the full context cannot be held."""
        return self.one_context_fits is False

    @property
    def slots_short(self) -> bool:
        """The pool is larger than the request slots can ever fill with full contexts."""
        return bool(self.unused_by_slots_tokens) and not self.too_long

    @property
    def slots_unknown(self) -> bool:
        """--max-running-requests 1 given, context length not logged: one request must be as
        long as the whole pool to fill it, and whether the context allows that is unknown.
        (With more slots the pool is filled by shorter requests: 2048 slots of a 400k pool need
        196 tokens each, nothing worth a sentence; no threshold is invented in between.)"""
        return self.context_len is None and self.requests_passed and self.max_running_requests == 1

    @property
    def applies(self) -> bool:
        """Worth a sentence: a full context does not fit, the slots cannot fill the pool, or the
        single slot the user set cannot be judged against the unlogged context."""
        return self.too_long or self.slots_short or self.slots_unknown


def context_vs_pool(
    launch: Launch,
    sz: Sizing | None,
    least_free_after_pools: int | None = None,
    released: LaterRelease | None = None,
    config: ConfigKV | None = None,
) -> ContextVsPool | None:
    """The launch's fact, or None when the log prints no KV token count.
    ``least_free_after_pools``: the binding rank's least free reading after its pool step;
    ``released``: memory released after sizing on every rank (logmem.analysis.released);
    ``config``: a caller's --model-config, whose context length stands in (source "config")
    only where server_args printed context_length=None and nothing else printed one."""
    s = launch.summary
    args = launch.args
    kv, kv_src, line = (s.max_total_num_tokens, "summary", s.source.line_no) if s else (0, "", 0)
    if not kv:
        pool = _single_pool(launch)
        if pool is None:
            return None
        kv, kv_src, line = pool
    ctx, ctx_src = (s.get_int("context_len"), "summary") if s else (None, None)
    if ctx is None and _int(args.get("context_length")) is not None:
        ctx, ctx_src = _int(args.get("context_length")), launch.args_from
    if ctx is None and config is not None and config.context_len is not None:
        ctx, ctx_src = config.context_len, "config"
    if ctx is None:
        ctx_src = None
    passed = _int(args.get("max_running_requests"))
    mrr, mrr_src = (s.get_int("max_running_requests"), "summary") if s else (None, None)
    if mrr is None and passed is not None:
        mrr, mrr_src = passed, launch.args_from
    if mrr is None:
        mrr_src = None
    proj = PoolProjection.of(sz, args)
    lo = proj.smallest_mfs_for_context(ctx) if proj is not None and ctx else None
    radix = args.get("disable_radix_cache")
    now = proj.outside(proj.m0) if proj is not None and proj.m0 is not None else None
    return ContextVsPool(
        kv,
        kv_src,
        ctx,
        ctx_src,
        mrr,
        mrr_src,
        passed is not None,
        proj is not None,
        lo,
        proj.pool_tokens(1.0) if proj is not None else None,
        sz.mem_fraction_static if sz is not None else None,
        _int(args.get("max_total_tokens")),
        (not radix) if isinstance(radix, bool) else None,
        line,
        proj.outside(lo) if proj is not None and lo is not None else None,
        now,
        now - least_free_after_pools
        if now is not None and least_free_after_pools is not None
        else None,
        _ceiling(launch) if proj is None else None,
        _swa_tokens(launch),
        released,
        _if_released(proj, released),
        request_table(launch, kv),
        context_unset=launch.server_args is not None
        and "context_length" in args
        and args["context_length"] is None,
        cpu_offload_gb=arg_number(args, "cpu_offload_gb", 1e-9, 1e9),
        context_key=config.context_key if ctx_src == "config" and config is not None else None,
        context_scaled=ctx_src == "config" and config is not None and config.rope_factor_applied,
    )


def _if_released(
    proj: PoolProjection | None, released: LaterRelease | None
) -> tuple[int, int] | None:
    """The pool at the launch's mfs with the release free before sizing: another process (P and
    A both higher by what every rank released) and a temporary of the load (A alone)."""
    if proj is None or released is None or proj.m0 is None:
        return None
    r = released.least_bytes
    return proj.pool_tokens_with(proj.m0, r, r), proj.pool_tokens_with(proj.m0, r)


def _swa_tokens(launch: Launch) -> int | None:
    """The main rank's SWA pool tokens (its KV line labelled 'SWA'), None without one."""
    main = launch.main_rank
    t = main.target if main is not None else None
    pools = [p for p in t.kv_pools if p.label == "SWA" and p.tokens] if t is not None else []
    return pools[0].tokens if pools else None


def _ceiling(launch: Launch) -> PoolCeiling | None:
    """The pool's ceiling (PoolCeiling) from the least after-weights reading over ranks and the
    first rank's full KV pool line (its round cell when print rounding allows one)."""
    ends = [
        (e.avail.bytes, e.source.line_no) for r in launch.ranks if (e := after_weights_reading(r))
    ]
    rank = next((r for r in launch.ranks if r.target is not None and r.target.kv_pools), None)
    pool = full_pool(rank.target) if rank is not None and rank.target is not None else None
    if not ends or pool is None:
        return None
    tokens = pool.tokens
    if tokens is None and launch.summary is not None:
        tokens = launch.summary.max_total_num_tokens
    got = line_cell(pool, tokens, rules.page_size(launch.args))
    if got is None or got[0] <= 0:
        return None
    after, line = min(ends)
    cell, page = round(got[0]), rules.page_size(launch.args)
    return PoolCeiling(max(after, 0) // cell // page * page, after, line, cell)


def _single_pool(launch: Launch) -> tuple[int, str, int] | None:
    """The main rank's KV token count from its one KV line (no summary line): a launch with
    several KV pools (SWA, hybrids) has no single capacity to compare with."""
    main = launch.main_rank
    t = main.target if main is not None else None
    if t is None:
        return None
    pools = [p for p in t.kv_pools if p.tokens]
    if len(pools) != 1 or len(t.pools) != 1:
        return None
    p = pools[0]
    assert p.tokens is not None
    return p.tokens, "kv_line", p.source.line_no
