"""The words for what a caller's --model-config adds to a "Not enough memory" fix
(logmem.analysis.config_kv.ConfigFit): the mem_fraction_static whose pool holds one full context,
always said to come from config.json, never as if the log printed it."""

from __future__ import annotations

from logmem.analysis.config_kv import ConfigKV
from logmem.analysis.failures import facts as fx
from logmem.analysis.failures.budget import fmt_mfs
from logmem.report.fixes import gib_text


def threshold_fix(o: fx.Outcome) -> bool:
    """The verdict's mem_fraction_static fix is the threshold of a "Not enough memory"."""
    f = o.failure
    return f is not None and any(isinstance(x.effect, fx.SmallestMfs) for x in f.fixes)


def config_fit_line(c: ConfigKV) -> str | None:
    """The Fix line, or None when config.json gives no cell or no context for this launch."""
    fit, cell, size = c.fit, c.cell_bytes, c.context_bytes
    if fit is None or cell is None or size is None:
        return None
    ctx = (
        f"context_len {fit.context_len:,} (the log's)"
        if fit.context_from_log
        else f"context length {fit.context_len:,} ({c.context_key}, with context_length=None in "
        "server_args)"
    )
    what = (
        f"from config.json (--model-config), not the log: one full context is {ctx} x "
        f"{cell:,} B of KV per token per rank = {gib_text(size)} GiB"
    )
    if fit.mfs is None:
        return (
            f"Fix: none by --mem-fraction-static holds one full context: {what}, and even 1.0 "
            f"gives {fit.tokens_at_full_mfs:,} tokens by SGLang's rule; fewer weights per rank "
            "(below) or a shorter --context-length."
        )
    left = gib_text(fit.outside_bytes) if fit.outside_bytes is not None else "?"
    return (
        f"Fix: --mem-fraction-static {fmt_mfs(fit.mfs)} for a pool of one full context, {what}; "
        f"SGLang's rule gives that pool from {fmt_mfs(fit.mfs)}, leaving {left} GiB outside the "
        "budget for activations and CUDA graphs."
    )
