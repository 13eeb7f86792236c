"""The KV pool a launch would get at another mem_fraction_static: SGLang's budget rule
(logmem.sglang.rules.kv_budget_bytes) on the launch's own readings, in tokens of its cell.

One home for the projection both ``logmem whatif`` (logmem.compare.replay.Replay) and the
context-vs-pool finding of ``analyze`` (logmem.analysis.context) price mem_fraction_static with,
so that the two never disagree on from which value a full context fits.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from logmem.analysis.sizing import Sizing
from logmem.sglang.rules import (
    DIFFERENCE_RESOLUTION_BYTES,
    kv_budget_bytes,
    outside_budget_bytes,
    smallest_mfs_holding,
)


def bytes_per_token(sz: Sizing) -> int | None:
    """The cell size from the KV line: the round value the printed sizes allow, else the ratio."""
    if sz.likely_bytes_per_token:
        return sz.likely_bytes_per_token
    return round(sz.bytes_per_token) if sz.bytes_per_token else None


def rule_agrees(rule_tokens: int, logged_tokens: int, bpt: int) -> bool:
    """Whether SGLang's rule at the logged setting gives the logged pool, to 1% or what two
    printed readings resolve."""
    return abs(rule_tokens - logged_tokens) <= max(
        logged_tokens / 100, DIFFERENCE_RESOLUTION_BYTES / bpt
    )


def _positive_int(v: object) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else None


class PoolProjection:
    """The launch's KV pool as a function of mem_fraction_static (readings held as measured)."""

    def __init__(
        self, sz: Sizing, bpt: int, args: Mapping[str, Any], sizing_cell: float | None = None
    ) -> None:
        self.sz = sz
        self.bpt = bpt  # what the pool allocates per slot: its GiB
        # The cell SGLang divided the budget by, when analyze shows it differs from the
        # allocated one (findings_sizing.PoolsVsBudget.sizing_cell_bytes, 003): token counts.
        self.sizing_bpt: float = sizing_cell or bpt
        # The KV cache's share of what the budget buys (a Mamba / SWA split takes the rest).
        self.share = 1.0
        if sz.logged_pool_bytes and sz.kv_bytes and sz.logged_pool_bytes > sz.kv_bytes:
            self.share = sz.kv_bytes / sz.logged_pool_bytes
        self.page = sz.page_size  # rules.page_size, parsed once by sizing()
        self.max_total_tokens = _positive_int(args.get("max_total_tokens"))
        self.m0 = sz.mem_fraction_static
        # A projection is the logged pool plus the change of the rule's budget, in tokens of one
        # cell size, so an unchanged mfs gives exactly the logged pool. When --max-total-tokens
        # held the logged pool, the rule's own count is the base instead.
        logged = sz.kv_tokens
        capped = (
            self.max_total_tokens is not None
            and logged is not None
            and logged >= self.max_total_tokens
        )
        self.base: int | None = logged if logged and not capped else None
        rest0 = self.rest(self.m0)
        # True: the full pool's share is what its logged tokens take of the rule's rest (it
        # empties where rest does); False: its share of the logged pools (or 1.0, no split).
        self.share_of_rest = False
        if self.share < 1 and self.base and sz.kv_bytes and sz.logged_pool_bytes:
            # The full pool's own bytes are its tokens x cell, not its printed sizes (0.01 GB
            # each: 006 prints 0.30 GB for 0.29, 11.4% of the pools for 11.1%).
            exact = (self.base + self.page) * bpt
            self.share = exact / (exact + sz.logged_pool_bytes - sz.kv_bytes)
            if rest0 > 0 and rule_agrees(int(rest0 * self.share) // bpt, self.base, bpt):
                # Where the rule gives the logged pool, what is left between them is printing
                # and the other pools' whole-slot floors: the full pool takes its logged share of
                # rest, so that it is empty where rest is (014: from 0.386 = 1 - A/P, not 0.388).
                self.share = self.base * bpt / rest0
                self.share_of_rest = True
        self._kv0 = int(rest0 * self.share)

    @classmethod
    def of(cls, sz: Sizing | None, args: Mapping[str, Any]) -> PoolProjection | None:
        """The projection, or None without the sizing readings or a cell size."""
        if sz is None:
            return None
        bpt = bytes_per_token(sz)
        return cls(sz, bpt, args) if bpt else None

    def rest(self, m: float) -> int:
        # SGLang's own scaling of the flag's value (multimodal, aiter) applies at any value.
        return kv_budget_bytes(
            self.sz.after_weights_bytes, self.sz.pre_load_bytes, self.sz.rule_mfs_for(m)
        )

    def outside(self, m: float) -> int:
        """What SGLang leaves outside the KV budget at ``m``: P x (1 - mfs), for the request
        table, workspaces, graphs and activations (the KV rule's other term)."""
        return outside_budget_bytes(self.sz.pre_load_bytes, self.sz.rule_mfs_for(m))

    def tokens(self, m: float) -> int:
        """The rule's own token count at ``m`` (no logged base)."""
        kv = int(self.rest(m) * self.share)
        if kv <= 0:
            return 0
        t = int(kv // self.sizing_bpt)
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
        t = self.base + int((kv - self._kv0) // self.sizing_bpt) // self.page * self.page
        if self.max_total_tokens is not None:
            t = min(t, self.max_total_tokens)
        return max(t, 0)

    def pool_tokens_with(self, m: float, extra_after: int, extra_pre: int = 0) -> int:
        """The KV tokens at ``m`` had the readings been higher: ``extra_after`` more free after
        the weights and ``extra_pre`` more before them (memory the launch released after sizing,
        logmem.analysis.released), priced like ``pool_tokens`` from the logged pool."""
        sz = self.sz
        rest = kv_budget_bytes(
            sz.after_weights_bytes + extra_after, sz.pre_load_bytes + extra_pre, sz.rule_mfs_for(m)
        )
        kv = int(rest * self.share)
        if kv <= 0:
            return 0
        base = self.base if self.base is not None else self.tokens(self.m0)
        t = base + int((kv - self._kv0) // self.sizing_bpt) // self.page * self.page
        if self.max_total_tokens is not None:
            t = min(t, self.max_total_tokens)
        return max(t, 0)

    def smallest_mfs_for_context(self, context_len: int) -> float | None:
        """From which mem_fraction_static the pool holds one full context (None: not even 1.0)."""
        return smallest_mfs_holding(self.pool_tokens, context_len)
