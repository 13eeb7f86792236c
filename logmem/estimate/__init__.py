"""Expected sizes from a model's config.json: parameters, weights per rank, KV bytes, buffers.

    from logmem.estimate import Parallel, estimate, load_model_config
    est = estimate(load_model_config("config.json"), parallel=Parallel(tp=8))

The stage, one concern per module: config (config.json and server_args in), dtypes (bytes
per element), layers (layer plan and KV cells), attention and weights (the pieces of each
layer), buffers (logits, DeepEP, request table), build (``estimate()``), crosscheck (the
estimate against a measured ledger). What the stage assumed (notes.py) and why each piece
is its size (reasons.py) are typed facts; logmem/report/estimate_words.py words them.
SGLang's own layout rules are in logmem/sglang/.
"""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from logmem.estimate.buffers import deepep_masked_gemm_bytes
    from logmem.estimate.build import Component, Estimate, Unknown, estimate
    from logmem.estimate.config import (
        EstimateError,
        Parallel,
        load_model_config,
        settings_from_server_args,
    )
    from logmem.sglang.comm import deepep_low_latency_bytes

# Loaded on first use, so that the analysis, which reaches into the stage for one table
# (estimate.dtype_sizes), does not build the whole stage's ~60 record classes for every log.
_HOMES = {
    "deepep_masked_gemm_bytes": "logmem.estimate.buffers",
    "Component": "logmem.estimate.build",
    "Estimate": "logmem.estimate.build",
    "Unknown": "logmem.estimate.build",
    "estimate": "logmem.estimate.build",
    "EstimateError": "logmem.estimate.config",
    "Parallel": "logmem.estimate.config",
    "load_model_config": "logmem.estimate.config",
    "settings_from_server_args": "logmem.estimate.config",
    "deepep_low_latency_bytes": "logmem.sglang.comm",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'logmem.estimate' has no attribute {name!r}")
    return getattr(importlib.import_module(home), name)


__all__ = [
    "Component",
    "Estimate",
    "EstimateError",
    "Parallel",
    "Unknown",
    "deepep_low_latency_bytes",
    "deepep_masked_gemm_bytes",
    "estimate",
    "load_model_config",
    "settings_from_server_args",
]
