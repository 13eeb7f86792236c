"""What a caller's --model-config gives a launch's KV findings when the log lacks it: the full
pool's KV cell for this launch's layout (the estimate's), the context length SGLang serves when
--context-length was not given (rules.config_context_length), and, with the launch's sizing
readings, the mem_fraction_static whose pool holds one full context (rules.smallest_mfs_holding
on rules.kv_budget_bytes).

Every figure here comes from config.json, not from the log: the report says so wherever one is
used. Without --model-config nothing here exists (None), and the findings stay the log's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from logmem.frozen import frozen
from logmem.model.records import Launch
from logmem.sglang import rules


@frozen
class ConfigFit:
    """The pool SGLang's rule gives at each mem_fraction_static, in the config's cell, against
    one full context: ``mfs`` the smallest value holding it (None: not even 1.0)."""

    context_len: int
    context_from_log: bool  # the log printed the context length; False: config.json's
    mfs: float | None
    tokens_at_full_mfs: int  # the pool at mem_fraction_static 1.0
    outside_bytes: int | None  # P x (1 - mfs) at ``mfs``: left for activations and graphs


@frozen
class ConfigKV:
    """--model-config's figures for one launch (see the module docstring)."""

    model: str | None
    cell_bytes: int | None  # full pool's KV bytes per token per rank; None: no single cell
    kv_dtype: str | None
    attn_tp: int | None
    context_len: int | None  # what SGLang serves by the config, when context_length=None
    context_key: str | None  # the config key it came from (max_position_embeddings ...)
    rope_factor_applied: bool = False  # rope_scaling's factor multiplied the key's value
    fit: ConfigFit | None = None

    @property
    def context_bytes(self) -> int | None:
        """One full context of the fit's length in the config's cell."""
        if self.fit is None or self.cell_bytes is None:
            return None
        return self.fit.context_len * self.cell_bytes


def _unset_context(launch: Launch) -> bool:
    """server_args printed context_length=None: SGLang derives the length from the config."""
    args = launch.args
    return (
        launch.server_args is not None
        and "context_length" in args
        and args["context_length"] is None
    )


def _log_context(launch: Launch) -> int | None:
    s = launch.summary
    ctx = s.get_int("context_len") if s is not None else None
    if ctx is None:
        v = launch.args.get("context_length")
        ctx = v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else None
    return ctx


def config_kv(launch: Launch, config: Mapping[str, Any] | None) -> ConfigKV | None:
    """The launch's ConfigKV, or None without a config or when it names another architecture
    than the log's Load weight end line."""
    if config is None:
        return None
    from logmem.estimate.build import estimate
    from logmem.estimate.config import EstimateError, settings_for_launch, text_config
    from logmem.estimate.crosscheck import model_differs

    if model_differs(launch, config) is not None:
        return None
    cfg, _ = text_config(config)
    derived = rules.config_context_length(cfg) if _unset_context(launch) else None
    cell = model = dtype = attn_tp = None
    try:
        est = estimate(config, **settings_for_launch(launch))
    except EstimateError:
        est = None  # a layout the config cannot split: no cell for this launch
    if est is not None:
        model, dtype, attn_tp = est.model, est.kv_cache_dtype, est.parallel.attn_tp
        # A hybrid sliding-window model splits the budget over two pools: no one cell.
        if est.kv_swa_bytes_per_token_per_rank is None and est.kv_bytes_per_token_per_rank:
            cell = est.kv_bytes_per_token_per_rank
    ctx, key = derived if derived is not None else (None, None)
    scaled = derived is not None and key is not None and cfg.get(key) != ctx
    out = ConfigKV(model, cell, dtype, attn_tp, ctx, key, scaled)
    log_ctx = _log_context(launch)
    fit = _fit(launch, cell, log_ctx or ctx, log_ctx is not None) if cell else None
    return out if fit is None else ConfigKV(model, cell, dtype, attn_tp, ctx, key, scaled, fit)


def _fit(launch: Launch, cell: int, context: int | None, from_log: bool) -> ConfigFit | None:
    """The smallest mfs holding one full context by the rule on the launch's readings, for a
    launch with one full KV pool sized from them (no draft model, no hybrid pools)."""
    if context is None or rules.speculative_algorithm(launch.args) is not None:
        return None
    from logmem.analysis.failures.budget import budget

    b = budget(launch)
    a, p = b.post_load_bytes, b.pre_load_bytes
    if a is None or p is None or b.mamba_bytes:
        return None
    page = rules.page_size(launch.args)

    def tokens_at(m: float) -> int:
        rest = rules.kv_budget_bytes(a, p, b.scaling.rule_mfs_for(m))
        return max(rest, 0) // cell // page * page

    m = rules.smallest_mfs_holding(tokens_at, context)
    outside = rules.outside_budget_bytes(p, b.scaling.rule_mfs_for(m)) if m is not None else None
    return ConfigFit(context, from_log, m, tokens_at(1.0), outside)
