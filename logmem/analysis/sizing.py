"""KV sizing and the graph reserve: SGLang's rules (logmem.sglang.rules) applied to a launch."""

from __future__ import annotations

import math
from dataclasses import replace

from logmem.analysis.ledger import Bound
from logmem.analysis.post_capture import PostCapture, post_capture, reservation_cell_range
from logmem.frozen import frozen
from logmem.model.records import Launch, Model, full_kv
from logmem.parse import events as ev
from logmem.sglang import rules
from logmem.sglang.devices import ranks_in_log
from logmem.sglang.dtypes import kv_element_bytes
from logmem.sglang.eras import printed_on
from logmem.units import GIB


@frozen
class MfsScaling:
    """SGLang's own scaling of --mem-fraction-static before the KV rule (rules.mfs_adjustments,
    by era and model): the one path from the flag a user passes to the value the rule runs
    with, and back. Every figure priced in mfs (sizing, fixes, diff, whatif) goes through it."""

    adjustments: tuple[rules.MfsAdjustment, ...] = ()

    @property
    def factor(self) -> float:
        """The product of the adjustments' factors (1: none applies)."""
        return math.prod(a.factor for a in self.adjustments)

    def rule_mfs_for(self, flag: float) -> float:
        """The mem_fraction_static the KV rule runs with when the flag is ``flag``."""
        return flag * self.factor

    def flag_mfs_for(self, rule_mfs: float) -> float:
        """The inverse of ``rule_mfs_for``: the --mem-fraction-static a user passes for the KV
        rule to run with ``rule_mfs`` (unrounded: the caller rounds toward its own safe side).
        Also turns a change of the rule's value into the change of the flag (it is linear)."""
        return rule_mfs / self.factor


@frozen
class RankCoverage:
    """How many ranks printed the reading a minimum over ranks is taken of: SGLang's all-reduce
    MIN spans every rank, but the log may hold only some (E3's rank-0 filter, a truncated or
    filtered paste)."""

    printed: int  # ranks whose reading the minimum is taken over
    expected: int | None  # ranks this log should hold by server_args (devices.ranks_in_log)
    rank: str | None = None  # the one rank's label when only one printed it ("" untagged)

    @property
    def partial(self) -> bool:
        """Fewer ranks printed it than the log should hold: the true minimum may be lower."""
        return self.expected is not None and self.printed < self.expected


def coverage(launch: Launch, printed: int, rank: str | None) -> RankCoverage:
    """The coverage of a minimum over ``printed`` ranks of ``launch`` (``rank``: the binding
    one, named when it is the only one)."""
    return RankCoverage(printed, ranks_in_log(launch.args), rank if printed == 1 else None)


@frozen
class Sizing:
    """SGLang's KV budget rule (rules.kv_budget_bytes) recomputed from the printed readings."""

    mem_fraction_static: float  # as the server_args dump printed it (the flag's value)
    pre_load_bytes: int  # P: min over ranks of the free memory before weights load
    pre_load_rank: str
    after_weights_bytes: int  # A: min over ranks of rules.after_weights_reading
    rest_bytes: int  # rules.kv_budget_bytes(A, P, rule_mfs)
    logged_pool_bytes: int | None  # KV (+ Mamba) pools of the target, as logged
    kv_bytes: int | None
    kv_tokens: int | None
    bytes_per_token: float | None  # pool bytes / #tokens from the printed (rounded) sizes

    @property
    def bytes_per_token_range(self) -> tuple[int, int] | None:
        """Bytes per token consistent with the printed pool sizes (each +-0.005 GiB), or with
        the rule and max_total_num_tokens when no KV line is printed (rule_tokens)."""
        if self.exact_cell is not None:
            return self.exact_cell[0], self.exact_cell[0]
        if self.kv_bytes is None and self.rule_tokens:
            return rules.rule_bytes_per_token_range(
                self.rest_bytes, self.rule_tokens, self.rule_mfs
            )
        if self.post_capture is not None:
            # The backed KV size is rounded up to whole pages per buffer; the reservation's
            # tensors span exactly its tokens' cells.
            # Without the reservation's line the cell is not known to print rounding.
            return reservation_cell_range(self.post_capture, self.page_size)
        return rules.bytes_per_token_range(
            self.kv_bytes, self.kv_tokens, self.kv_parts, self.page_size
        )

    @property
    def likely_bytes_per_token(self) -> int | None:
        """The cell size in that range divisible by the largest power of two (cells are
        head_dim x heads x layers x dtype bytes, so a round number), when it is unique."""
        rng = self.bytes_per_token_range
        return roundest_cell(rng) if rng else None

    kv_parts: int = 1  # how many printed sizes make up kv_bytes (2 for K+V)
    pools: tuple[
        tuple[str, int, int | None], ...
    ] = ()  # (label, bytes, tokens) when several KV pools
    # SGLang's own scaling of mem_fraction_static before the rule (rules.MFS_ADJUSTMENTS).
    adjustments: tuple[rules.MfsAdjustment, ...] = ()
    # Adjustments the launch qualifies for whatever its date (a disagreeing pool may fit one).
    candidates: tuple[rules.MfsAdjustment, ...] = ()
    draft_pools: tuple[tuple[int, int], ...] = ()  # (bytes, tokens) of the draft's KV pools
    printed_parts: int = 1  # how many printed sizes make up logged_pool_bytes
    # No KV line: max_total_num_tokens, when the pool step holds the rule's whole budget (the
    # KV cache is then rest // cell, which bounds the cell).
    rule_tokens: int | None = None

    # The target's KV dtype: its KV line's own (E7), else "Using KV cache dtype" (kv_dtype_line).
    kv_dtype: str | None = None
    kv_dtype_line: ev.Event | None = None
    # How many ranks printed P's and A's readings, of how many the log should hold.
    pre_load_coverage: RankCoverage | None = None
    after_weights_coverage: RankCoverage | None = None
    # The Mamba / linear-attention state pools of the target, as logged (inside logged_pool_bytes).
    mamba_bytes: int | None = None
    page_size: int = 1  # the pools hold #tokens + page_size slots (rules.bytes_per_token_range)
    # Post-capture KV sizing (logmem.analysis.post_capture): the pool above is the one backed
    # after the graphs, and the rule's rest sized only the reservation before them.
    post_capture: PostCapture | None = None
    # A cell the log prints exactly (a unified pool's full sub-pool entry_bytes) and its line.
    exact_cell: tuple[int, int] | None = None
    # The echoed command line's lines (first, last) mem_fraction_static was read from, when the
    # launch printed no server_args (Launch.args_from "command"); None: its server_args.
    mfs_lines: tuple[int, int] | None = None

    @property
    def scaling(self) -> MfsScaling:
        return MfsScaling(self.adjustments)

    def rule_mfs_for(self, mfs: float) -> float:
        """The mem_fraction_static the KV rule runs with when the flag is ``mfs``."""
        return self.scaling.rule_mfs_for(mfs)

    def flag_mfs_for(self, rule_mfs: float) -> float:
        """The flag that makes the KV rule run with ``rule_mfs`` (MfsScaling.flag_mfs_for)."""
        return self.scaling.flag_mfs_for(rule_mfs)

    @property
    def kv_element_bytes(self) -> float | None:
        """Bytes per KV element of ``kv_dtype`` (1 for fp8, 2 for bf16); None when unknown."""
        return kv_element_bytes(self.kv_dtype) if self.kv_dtype else None

    @property
    def likely_elements_per_token(self) -> float | None:
        """The round cell in KV elements (layers x heads x head_dims of K and V, per rank)."""
        cell, size = self.likely_bytes_per_token, self.kv_element_bytes
        return cell / size if cell and size else None

    @property
    def rule_mfs(self) -> float:
        return self.rule_mfs_for(self.mem_fraction_static)

    @property
    def full_cell_bytes(self) -> float | None:
        """The full pool's bytes per token: the round cell when the printed sizes allow one."""
        return self.likely_bytes_per_token or self.bytes_per_token

    @property
    def budget_bytes_per_token(self) -> float | None:
        """What one token of max_total_num_tokens costs of the KV budget: the full pool's cell
        plus, per full-pool token, the SWA pool and the Mamba state the same budget is split
        into (their sizes follow the full pool's; reference 12.2)."""
        cell = self.full_cell_bytes
        if cell is None or not self.kv_tokens:
            return None
        others = (self.logged_pool_bytes or 0) - (self.kv_bytes or 0)
        return cell + max(others, 0) / self.kv_tokens

    @property
    def all_pools_bytes_per_token(self) -> float | None:
        """What one token of capacity occupies in every pool: ``budget_bytes_per_token`` plus
        the draft model's KV cell (its pool holds as many tokens, sized from the memory the
        target left; reference 4.8). The price of headroom in KV tokens."""
        base = self.budget_bytes_per_token
        if base is None:
            return None
        return base + sum(b / t for b, t in self.draft_pools if t)


@frozen
class GraphReserve:
    """The graph reserve SGLang's default mem_fraction_static set aside (reference 12.3)."""

    reserve_bytes: int
    terms: tuple[rules.Reserve, ...]
    measured_bytes: int | None  # what the captures used on the rank that prints bars
    # Bound.FLOOR / MASKED: the captures' logged usage is not a cost (measured_bytes None).
    measured_bound: Bound = Bound.EXACT


def sizing(launch: Launch) -> Sizing | None:
    mfs = rules.rule_mfs(launch.args)
    readings = rules.budget_readings(launch)
    pre_bytes, pre_rank = readings.pre_load_bytes, readings.pre_load_rank
    post_bytes = readings.after_weights_bytes
    if mfs is None or pre_bytes is None or pre_rank is None or post_bytes is None:
        return None
    arch, backend, ctx = _adjustment_inputs(launch)
    scaling = mfs_scaling(launch)
    adjustments = scaling.adjustments
    rest = rules.kv_budget_bytes(post_bytes, pre_bytes, scaling.rule_mfs_for(mfs))
    first_rank = next((r for r in launch.ranks if r.target and r.target.kv_pools), None)
    kv = first_rank.target.kv_pools if first_rank and first_rank.target else ()
    mamba = first_rank.target.mamba_pools if first_rank and first_rank.target else ()
    logged = sum(p.total_bytes for p in kv) + sum(p.total_bytes for p in mamba) if kv else None
    # With a sliding-window model the first KV line is the SWA pool and the second the full
    # pool (reference 4.3): max_total_num_tokens and the per-token cost are the full pool's.
    swa = first_rank is not None and first_rank.target is not None and _has_swa(first_rank.target)
    main = full_pool(first_rank.target) if first_rank is not None and first_rank.target else None
    tokens = main.tokens if main else None
    if tokens is None and launch.summary is not None and len(kv) == 1:
        tokens = launch.summary.max_total_num_tokens  # Jan 2025 KV lines print no #tokens
    page = rules.page_size(launch.args)
    bpt = main.total_bytes / (tokens + page) if main and tokens else None
    parts = 1 if main is not None and main.kv is not None else 2
    labels = ("SWA", "full") if swa and len(kv) >= 2 else ()
    per_pool = (
        tuple(
            (
                _pool_label(p.label) or (labels[i] if i < len(labels) else f"pool {i + 1}"),
                p.total_bytes,
                p.tokens,
            )
            for i, p in enumerate(kv)
        )
        if len(kv) > 1
        else ()
    )
    dtype, dtype_line = (
        first_rank.target.pool_dtype(main)
        if main is not None and first_rank is not None and first_rank.target is not None
        else (None, None)
    )
    draft = first_rank.draft if first_rank is not None else None
    draft_pools = tuple(
        (p.total_bytes, p.tokens) for p in (draft.kv_pools if draft else ()) if p.tokens
    )
    sz = Sizing(
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
        adjustments,
        tuple(a for a in rules.adjustment_candidates(arch, backend, ctx) if a not in adjustments),
        draft_pools,
        sum(1 if p.kv is not None else 2 for p in kv) + 2 * len(mamba),
        None if kv else _rule_tokens(launch, rest),
        dtype,
        dtype_line,
        coverage(launch, readings.ranks_seen, pre_rank),
        coverage(launch, readings.after_weights_ranks_seen, readings.after_weights_rank),
        sum(p.total_bytes for p in mamba) if mamba else None,
        page,
        post_capture(launch, pre_bytes, scaling.rule_mfs_for(mfs)),
        mfs_lines=_command_lines(launch),
    )
    if isinstance(main, ev.UnifiedAllocated) and first_rank is not None:
        return _unified_split(sz, first_rank.target, launch)
    return _swa_split(sz)


def _command_lines(launch: Launch) -> tuple[int, int] | None:
    """The command line's lines when the launch's args come from it (no server_args)."""
    flags = launch.command_flags
    if launch.args_from != "command" or flags is None:
        return None
    return flags.line, flags.last_line


def _unified_split(sz: Sizing, m: Model | None, launch: Launch) -> Sizing:
    """A unified pool allocated before the graphs (--enable-unified-memory) prints one exact
    byte count for its sub-pools: the full pool's share is its tokens (the sliding-window
    split's, else max_total_num_tokens) times the full sub-pool's entry_bytes, also the exact
    cell; the rest is the SWA or Mamba sub-pool's (unified_memory_pool.py)."""
    if m is None or sz.logged_pool_bytes is None:
        return sz
    subs = {p.name: p for p in m.unified_sub_pools}
    full, plan = subs.get("full"), m.swa_plan
    tokens = plan.full_tokens if plan is not None else None
    tokens = tokens or (launch.summary.max_total_num_tokens if launch.summary else None)
    if full is None or not tokens:
        return replace(sz, kv_tokens=tokens or sz.kv_tokens)
    total, full_bytes = sz.logged_pool_bytes - (sz.mamba_bytes or 0), tokens * full.entry_bytes
    other = next((n for n in subs if n != "full"), None)
    label = {"swa": "SWA", "mamba": "Mamba state"}.get(other or "", other or "other")
    rest_tokens = plan.swa_tokens if plan is not None and other == "swa" else None
    # The other sub-pool first, the full pool last, as SGLang prints an SWA model's pools.
    pools = ((label, total - full_bytes, rest_tokens), ("full", full_bytes, tokens))
    cell = (full.entry_bytes, full.source.line_no)
    out = replace(sz, kv_bytes=full_bytes, kv_tokens=tokens, exact_cell=cell)
    return replace(out, bytes_per_token=float(cell[0]), pools=pools if other is not None else ())


def _swa_split(sz: Sizing) -> Sizing:
    """Post-capture KV sizing of a sliding-window model prints one KV size for both pools
    (kv_pool_runtime.py): split it by the cells of the reservations before the graphs (the
    'Full' and 'SWA' spans per (tokens + page) cells, or the unified buffer's full entry and
    its rest), so kv_bytes is the full pool's, as in the pre-capture sizing (reference 4.3)."""
    pc = sz.post_capture
    if pc is None or not pc.swa_tokens or pc.tokens is None or pc.reserved_swa is None:
        return sz
    f_tok, s_tok, (s_bytes, s_res, _) = pc.tokens, pc.swa_tokens, pc.reserved_swa
    if pc.reserved_bytes is None or not pc.reserved_tokens or not s_res:
        return sz
    if pc.unified:
        if pc.full_entry is None:
            return sz
        full_cell: float = pc.full_entry[0]
        swa_cell = (pc.reserved_bytes - pc.reserved_tokens * full_cell) / s_res
    else:
        full_cell = pc.reserved_bytes / (pc.reserved_tokens + sz.page_size)
        swa_cell = s_bytes / (s_res + sz.page_size)
    total = pc.kv_bytes
    full = round(total * f_tok * full_cell / (f_tok * full_cell + s_tok * swa_cell))
    return replace(
        sz,
        logged_pool_bytes=total + (sz.mamba_bytes or 0),
        kv_bytes=full,
        pools=(("full", full, f_tok), ("SWA", total - full, s_tok)),
    )


def _pool_label(label: str | None) -> str | None:
    """A KV line's own allocation_label as the per-pool label ('Full' -> 'full')."""
    return {"Full": "full", "SWA": "SWA"}.get(label, label) if label else None


def _has_swa(m: Model) -> bool:
    return any(isinstance(p, ev.SWASummary) for p in m.pools)


def full_pool(m: Model) -> ev.KVPool | None:
    """The model's full KV pool (records.full_kv): the 'Full' line of a labelled pair, else
    with a sliding-window model the second KV line (the first is the SWA pool, reference 4.3),
    else the first."""
    return full_kv(m.kv_pools, _has_swa(m))


def printed_kv_dtype(launch: Launch) -> str | None:
    """The target's KV dtype as the log printed it (its full pool's KV line, else "Using KV
    cache dtype"): what the pools really hold, whatever --kv-cache-dtype resolved to."""
    for r in launch.ranks:
        main = full_pool(r.target) if r.target is not None else None
        if main is not None and r.target is not None:
            dtype = r.target.pool_dtype(main)[0]
            if dtype is not None:
                return dtype
    return None


# A KV cache derived from a pool step's drop (no KV line) also holds the small unlogged pools.
RULE_STEP_SLACK = GIB // 2


def rule_fits_step(rest: int, drop: int, table: int | None) -> bool:
    """Whether a pool step with no KV line holds the rule's budget: its drop minus the
    request-to-token table within RULE_STEP_SLACK of it (or, the table unknown, at least it)."""
    if rest <= 0:
        return False
    if table is None:
        return rest <= drop
    return abs(drop - table - rest) <= RULE_STEP_SLACK


def _rule_tokens(launch: Launch, rest: int) -> int | None:
    """max_total_num_tokens when it is the rule's: printed, not capped by --max-total-tokens,
    and a rank's pool step (no KV line) holds the budget."""
    s = launch.summary
    if s is None or not s.max_total_num_tokens or launch.args.get("max_total_tokens") is not None:
        return None
    req = req_to_token(launch)
    for r in launch.ranks:
        m = r.target
        if m is None or m.pools or m.weights_end is None or m.pool_end is None:
            continue
        drop = m.weights_end.avail.bytes - m.pool_end.avail.bytes
        if rule_fits_step(rest, drop, req[2] if req else None):
            return s.max_total_num_tokens
    return None


def mfs_scaling(launch: Launch) -> MfsScaling:
    """SGLang's scaling of this launch's --mem-fraction-static (by its date, architecture,
    attention backend and context): known without the server_args dump."""
    arch, backend, ctx = _adjustment_inputs(launch)
    return MfsScaling(rules.mfs_adjustments(printed_on(launch), arch, backend, ctx))


def _adjustment_inputs(launch: Launch) -> tuple[str | None, str | None, int | None]:
    """(architecture, attention backend, context length) that decide rules.mfs_adjustments."""
    ends = [r.target.weights_end for r in launch.ranks if r.target and r.target.weights_end]
    arch = ends[0].model_type if ends and ends[0].model_type else None
    backend = launch.args.get("attention_backend")
    s = launch.summary
    ctx = s.get_int("context_len") if s else None
    if ctx is None and isinstance(launch.args.get("context_length"), int):
        ctx = launch.args["context_length"]
    return arch, backend if isinstance(backend, str) else None, ctx


def line_cell(
    kv: ev.KVPool, tokens: int | None, page_size: int = 1
) -> tuple[float, tuple[int, int] | None] | None:
    """A KV line's bytes per token for ``tokens`` (its #tokens, or the summary's when the line
    prints none): the round cell when print rounding allows a unique one, else the printed
    sizes over the slots; with the whole bytes per token print rounding allows."""
    if not tokens:
        return None
    parts = 1 if kv.kv is not None else 2
    rng = rules.bytes_per_token_range(kv.total_bytes, tokens, parts, page_size)
    roundest = roundest_cell(rng) if rng else None
    return (roundest or kv.total_bytes / (tokens + page_size)), rng


def roundest_cell(rng: tuple[int, int]) -> int | None:
    """The whole number of bytes in ``rng`` divisible by the largest power of two (>= 64),
    when it is unique: a KV cell is head_dim x heads x layers x dtype bytes, a round number."""
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


def common_range(a: tuple[int, int] | None, b: tuple[int, int] | None) -> tuple[int, int] | None:
    """The bytes per token two launches' printed sizes both allow (``Sizing.bytes_per_token_range``
    of each), or None when either is unknown or they do not overlap."""
    if a is None or b is None:
        return None
    lo, hi = max(a[0], b[0]), min(a[1], b[1])
    return (lo, hi) if lo <= hi else None


def range_gap(a: tuple[int, int], b: tuple[int, int]) -> int:
    """How many bytes per token at least separate two ranges (0: they overlap)."""
    return max(0, b[0] - a[1], a[0] - b[1])


def graph_reserve(
    terms: tuple[rules.Reserve, ...] | None,
    measured: int | None,
    measured_bound: Bound = Bound.EXACT,
) -> GraphReserve | None:
    """SGLang's reserve_for_graph_mb() and friends: the terms the default-mfs rule used
    (logmem.sglang.default_mfs ``reserve_terms``); None when there are none."""
    if not terms:
        return None
    return GraphReserve(sum(t.bytes for t in terms), terms, measured, measured_bound)


def req_to_token(launch: Launch) -> tuple[int, int, int] | None:
    """(requests, context, bytes) of the request-to-token table, from the summary or server_args;
    the rows are ``requests + 1`` where the launch's release adds a padding row
    (``rules.req_to_token_padding_row``, ``req_to_token_padded``)."""
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
    return n_req, ctx, rules.req_to_token_bytes(n_req, ctx, req_to_token_padded(launch))


def req_to_token_padded(launch: Launch) -> bool:
    """Whether the launch's request-to-token table has a row beyond the printed requests."""
    passed = isinstance(launch.args.get("max_running_requests"), int)
    return rules.req_to_token_padding_row(printed_on(launch), passed)
