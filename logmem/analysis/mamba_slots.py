"""Hybrid Mamba / linear-attention models: when the Mamba state pool, not the KV pool, sets how
many requests run at once (a finding)."""

from __future__ import annotations

from typing import ClassVar

from logmem.analysis.findings_kinds import FindingKind
from logmem.frozen import frozen
from logmem.model.records import Launch

# SGLang printed max_running_requests = max_mamba_cache_size // 3 in both hybrid logs of the
# corpus (014: 186 -> 62, 005: 40 -> 13; mamba_scheduler_strategy 'no_buffer', radix cache on):
# an observed relation, not a formula the reference documents, so the finding names the figures.
_SLOTS_PER_REQUEST = 3


@frozen
class MambaSlotsLimit:
    kind: ClassVar[FindingKind] = FindingKind.MAMBA_SLOTS
    slots: int  # max_mamba_cache_size of the Mamba Cache line
    slots_line: int
    max_running_requests: int  # the scheduler summary's
    summary_line: int
    kv_tokens: int  # the KV pool the requests share
    context_len: int | None


@frozen
class MambaSlotsRelation:
    """The log shows max_running_requests = max_mamba_cache_size // 3: the Mamba pool's slots
    set the request count (and so move with the pool, e.g. in ``logmem whatif``)."""

    slots: int
    slots_line: int
    max_running_requests: int
    summary_line: int

    @staticmethod
    def requests_for(slots: int) -> int:
        """The request count this relation gives for ``slots`` Mamba slots."""
        return slots // _SLOTS_PER_REQUEST


def mamba_slots_relation(L: Launch) -> MambaSlotsRelation | None:
    """The relation, when the Mamba Cache line and the summary show it (and the user did not
    pass --max-running-requests); None otherwise."""
    main, s = L.main_rank, L.summary
    t = main.target if main is not None else None
    if t is None or s is None or not t.mamba_pools or L.args.get("max_running_requests"):
        return None
    pool = t.mamba_pools[0]
    n = s.get_int("max_running_requests")
    if n is None or pool.max_size is None or n != pool.max_size // _SLOTS_PER_REQUEST:
        return None
    return MambaSlotsRelation(pool.max_size, pool.source.line_no, n, s.source.line_no)


def mamba_slots_limit(L: Launch) -> MambaSlotsLimit | None:
    """The finding when the summary's max_running_requests is the Mamba pool's slots // 3 and
    the KV pool could hold more requests than that (a full context each, or 2048 tokens)."""
    rel, s = mamba_slots_relation(L), L.summary
    if rel is None or s is None:
        return None
    n, kv, ctx = rel.max_running_requests, s.max_total_num_tokens, s.get_int("context_len")
    if not kv:
        return None
    # Only worth saying when the KV pool would hold more of them than the Mamba pool allows.
    per_request = min(ctx, 2048) if ctx else 2048
    if kv // per_request <= n:
        return None
    return MambaSlotsLimit(rel.slots, rel.slots_line, n, rel.summary_line, kv, ctx)
