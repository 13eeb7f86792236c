"""Hybrid Mamba / linear-attention models: when the Mamba state pool, not the KV pool, sets how
many requests run at once (a finding), and what each lever on it costs."""

from __future__ import annotations

from typing import ClassVar

from logmem.analysis.findings_kinds import FindingKind
from logmem.frozen import frozen
from logmem.model.records import Launch
from logmem.sglang import rules
from logmem.sglang.eras import printed_on
from logmem.sglang.spec_draft import speculative_algorithm

# The ratios SGLang can use with the radix cache on (rules.mamba_request_ratio): tried in this
# order when the server_args that choose one are not in the log (014 starts after them).
_RADIX_RATIOS = (
    rules.MAMBA_REQUEST_RATIO,
    rules.MAMBA_REQUEST_RATIO + 1,
    rules.MAMBA_REQUEST_RATIO + 2,
)


@frozen
class MambaSlotsLimit:
    kind: ClassVar[FindingKind] = FindingKind.MAMBA_SLOTS
    slots: int  # max_mamba_cache_size of the Mamba Cache line
    slots_line: int
    max_running_requests: int  # the scheduler summary's
    summary_line: int
    kv_tokens: int  # the KV pool the requests share
    context_len: int | None
    ratio: int = rules.MAMBA_REQUEST_RATIO  # Mamba slots per running request (radix cache on)
    ratio_from_args: bool = False  # the server_args give it; else the printed figures show it
    slot_bytes: int | None = None  # one Mamba slot's share of its line (taken from the KV pool)
    # --disable-radix-cache: SGLang's own request count then (the default pool size, capped by
    # the slots) and the request-to-token table's growth to it (None: context unknown).
    requests_without_radix: int | None = None
    table_growth_bytes: int | None = None


@frozen
class MambaSlotsRelation:
    """The log shows max_running_requests = max_mamba_cache_size // ratio (the radix cache's
    ratio, rules.mamba_request_ratio): the Mamba pool's slots set the request count (and so
    move with the pool, e.g. in ``logmem whatif``)."""

    slots: int
    slots_line: int
    max_running_requests: int
    summary_line: int
    ratio: int = rules.MAMBA_REQUEST_RATIO
    ratio_from_args: bool = False

    def requests_for(self, slots: int) -> int:
        """The request count this relation gives for ``slots`` Mamba slots."""
        return slots // self.ratio


def _ratio(L: Launch) -> int | None:
    """The ratio the server_args give (None: not printed, or a setting missing)."""
    if L.server_args is None:
        return None
    args = L.args
    radix = args.get("disable_radix_cache")
    strategy = args.get("mamba_scheduler_strategy")
    spec = speculative_algorithm(args)
    return rules.mamba_request_ratio(
        (not radix) if isinstance(radix, bool) else None,
        strategy == "extra_buffer" if isinstance(strategy, str) else None,
        None if spec is None and "speculative_algorithm" not in args else spec is not None,
    )


def mamba_slots_relation(L: Launch) -> MambaSlotsRelation | None:
    """The relation, when the Mamba Cache line and the summary show it with the radix cache on
    (and the user did not pass --max-running-requests); None otherwise."""
    main, s = L.main_rank, L.summary
    t = main.target if main is not None else None
    if t is None or s is None or not t.mamba_pools or L.args.get("max_running_requests"):
        return None
    pool = t.mamba_pools[0]
    n = s.get_int("max_running_requests")
    if n is None or pool.max_size is None:
        return None
    given = _ratio(L)
    if given == 1:
        return None  # the radix cache is off: every slot runs a request already
    for r in (given,) if given is not None else _RADIX_RATIOS:
        if n == pool.max_size // r:
            return MambaSlotsRelation(
                pool.max_size, pool.source.line_no, n, s.source.line_no, r, given is not None
            )
    return None


def mamba_slots_limit(L: Launch) -> MambaSlotsLimit | None:
    """The finding when the summary's max_running_requests is the Mamba pool's slots // ratio
    and the KV pool could hold more requests than that (a full context each, or 2048 tokens)."""
    rel, s = mamba_slots_relation(L), L.summary
    main = L.main_rank
    if rel is None or s is None or main is None or main.target is None:
        return None
    n, kv, ctx = rel.max_running_requests, s.max_total_num_tokens, s.get_int("context_len")
    if not kv:
        return None
    # Only worth saying when the KV pool would hold more of them than the Mamba pool allows.
    per_request = min(ctx, 2048) if ctx else 2048
    if kv // per_request <= n:
        return None
    pool = main.target.mamba_pools[0]
    slot = pool.total_bytes // rel.slots if rel.slots else None
    # Without the radix cache SGLang runs min(default pool, slots) requests; the default is at
    # least 2,048 whatever it was profiled from, so up to that many slots it is the slots.
    lo = rules.DEFAULT_REQUEST_ROWS[0]
    without = rel.slots if rel.slots <= lo else None
    growth = None
    if without is not None and ctx:
        printed = printed_on(L)
        growth = rules.req_to_token_bytes_for(without, ctx, printed) - rules.req_to_token_bytes_for(
            n, ctx, printed
        )
    return MambaSlotsLimit(
        rel.slots,
        rel.slots_line,
        n,
        rel.summary_line,
        kv,
        ctx,
        rel.ratio,
        rel.ratio_from_args,
        slot,
        without,
        growth,
    )
