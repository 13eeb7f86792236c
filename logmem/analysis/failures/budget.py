"""The budget behind the fixes: SGLang's KV-sizing inputs as a launch printed them.

P, A and mem_fraction_static come from logmem.sglang.rules (the same readings the ledger's
findings use), SGLang's scaling of the flag and the price of a KV token from the launch's
Sizing (logmem.analysis.sizing), so a fix quotes the figures the findings of the same report
quote, and a proposed --mem-fraction-static is the flag that gives the rule the value it needs.
"""

from __future__ import annotations

import math

from logmem.analysis.failures.effects import pool_ratio
from logmem.analysis.findings_sizing import pools_vs_budget
from logmem.analysis.sizing import MfsScaling, mfs_scaling, sizing
from logmem.frozen import frozen
from logmem.model.records import Launch, Model, Rank
from logmem.sglang import rules


@frozen
class Budget:
    """SGLang's KV-sizing inputs as this launch printed them (logmem.sglang.rules)."""

    mfs: float | None
    pre_load_bytes: int | None  # P: min over ranks of Load weight begin avail
    pre_load_rank: str | None
    post_load_bytes: int | None  # A: min over ranks of the reading the pools were sized from
    weights_bytes: int | None  # Load weight end mem usage (the largest rank)
    kv_bytes: int | None
    kv_tokens: int | None
    mamba_bytes: int | None
    tp_size: int | None
    ranks_seen: int
    # What one KV token of capacity costs of the budget in every pool it occupies
    # (Sizing.all_pools_bytes_per_token: full cell, SWA and Mamba shares, draft KV), when the
    # launch's sizing prices this budget's pool.
    token_price: float | None = None
    cell_bytes: float | None = (
        None  # the full pool's own cell in that price (Sizing.full_cell_bytes)
    )
    # SGLang's own scaling of the flag before the rule (Sizing.scaling, by era and model).
    scaling: MfsScaling = MfsScaling()
    # The cell SGLang's sizing divided the budget by, when the pools allocate a bigger one
    # (PoolsVsBudget.sizing_cell_bytes, e.g. 003's FP8 indexer): a token given up returns
    # token_price of pools but only sizing_cell of the rule's budget.
    sizing_cell: float | None = None

    @property
    def factor(self) -> float:
        """The rule runs with mfs x factor (1: no adjustment applies to this launch)."""
        return self.scaling.factor

    @property
    def bytes_per_token(self) -> float | None:
        """The price of a KV token (token_price), else the printed KV bytes / #tokens."""
        if self.token_price:
            return self.token_price
        if self.kv_bytes is None or not self.kv_tokens:
            return None
        return self.kv_bytes / self.kv_tokens

    @property
    def rest_bytes(self) -> int | None:
        """SGLang's KV budget from these readings (rules.kv_budget_bytes), when all are printed."""
        if self.mfs is None or self.pre_load_bytes is None or self.post_load_bytes is None:
            return None
        return rules.kv_budget_bytes(
            self.post_load_bytes, self.pre_load_bytes, self.scaling.rule_mfs_for(self.mfs)
        )

    @property
    def kv_share(self) -> float:
        """Share of the budget that goes to KV (hybrid models give the rest to Mamba state);
        1 when token_price already counts every pool a token occupies."""
        if self.token_price:
            return 1.0
        if self.mamba_bytes and self.kv_bytes:
            return self.kv_bytes / (self.kv_bytes + self.mamba_bytes)
        return 1.0

    @property
    def pool_ratio(self) -> float:
        """Bytes of pools per byte of the rule's budget (effects.pool_ratio)."""
        return pool_ratio(self.bytes_per_token, self.sizing_cell)


def _model(rank: Rank, draft: bool) -> Model | None:
    return rank.draft if draft else rank.target


def budget(launch: Launch, draft: bool = False, mfs: float | None = None) -> Budget:
    models = [m for r in launch.ranks if (m := _model(r, draft)) is not None]
    readings = rules.budget_readings(launch, draft)
    usage = [m.weights_end.usage.bytes for m in models if m.weights_end and m.weights_end.usage]
    kv = next((p for m in models for p in m.kv_pools if p.tokens), None)
    mamba_owner = next((m for m in models if m.mamba_pools), None)
    mamba = sum(p.total_bytes for p in mamba_owner.mamba_pools) if mamba_owner else None
    arg_mfs = launch.args.get("mem_fraction_static")
    tp = launch.args.get("tp_size")
    sz = sizing(launch)
    kv_bytes, kv_tokens = (kv.total_bytes, kv.tokens) if kv else (None, None)
    price = cell = sizing_cell = None
    if not draft and sz is not None and sz.kv_tokens:
        # The pool the findings price: a sliding-window model's full pool, not its first line.
        kv_bytes, kv_tokens = sz.kv_bytes, sz.kv_tokens
        price, cell = sz.all_pools_bytes_per_token, sz.full_cell_bytes
        main = launch.main_rank
        gap = pools_vs_budget(sz, main, launch, None) if main is not None else None
        sizing_cell = gap.sizing_cell_bytes if gap is not None else None
    return Budget(
        mfs=mfs
        if mfs is not None
        else (float(arg_mfs) if isinstance(arg_mfs, (int, float)) else None),
        pre_load_bytes=readings.pre_load_bytes,
        pre_load_rank=readings.pre_load_rank,
        post_load_bytes=readings.after_weights_bytes,
        weights_bytes=max(usage) if usage else None,
        kv_bytes=kv_bytes,
        kv_tokens=kv_tokens,
        mamba_bytes=mamba,
        tp_size=tp if isinstance(tp, int) else None,
        ranks_seen=readings.ranks_seen,
        token_price=price,
        cell_bytes=cell,
        scaling=sz.scaling if sz is not None else mfs_scaling(launch),
        sizing_cell=sizing_cell,
    )


# mem_fraction_static is suggested in steps of 0.001 (SGLang rounds its own default to 3
# decimals); "one step" of a fix that has no figures to size it is 0.01.
MFS_STEP = 0.01


def floor3(x: float) -> float:
    # The tiny epsilon keeps an exact result (e.g. 0.808) from dropping to 0.807 by float error.
    return math.floor(x * 1000 + 1e-9) / 1000


def ceil3(x: float) -> float:
    return math.ceil(x * 1000 - 1e-9) / 1000


def fmt_mfs(x: float) -> str:
    return f"{x:.3f}".rstrip("0").rstrip(".") if x != 0 else "0"


def min_mfs_for_pool(b: Budget) -> float | None:
    """Smallest mem_fraction_static with rest > 0: mfs > 1 - avail_after_weights / P (rounded up)."""
    if b.pre_load_bytes is None or b.post_load_bytes is None:
        return None
    exact = rules.smallest_mfs_with_pool(b.post_load_bytes, b.pre_load_bytes)
    if exact is None:
        return None
    exact = b.scaling.flag_mfs_for(exact)  # the flag whose scaled value the rule needs
    x = ceil3(exact)
    if x <= exact:  # strictly positive pool
        x = round(x + 0.001, 3)
    return x
