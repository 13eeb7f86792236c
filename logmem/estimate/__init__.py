"""Expected sizes from a model's config.json: parameters, weights per rank, KV bytes, buffers.

    from logmem.estimate import Parallel, estimate, load_model_config
    est = estimate(load_model_config("config.json"), parallel=Parallel(tp=8))

The stage, one concern per module: config (config.json and server_args in), dtypes (bytes
per element), layers (layer plan and KV cells), attention and weights (the pieces of each
layer), buffers (logits, DeepEP, request table), build (``estimate()``), unknowns (what fills
a figure left None), crosscheck (the estimate against a measured ledger). What the stage
assumed (notes.py) and why each piece is its size (reasons.py) are typed facts;
logmem/report/estimate/words.py words them.
SGLang's own layout rules are in logmem/sglang/.
"""

from logmem.estimate.buffers import deepep_masked_gemm_bytes
from logmem.estimate.build import Component, Estimate, estimate
from logmem.estimate.config import (
    EstimateError,
    Parallel,
    load_model_config,
    settings_from_server_args,
)
from logmem.estimate.unknowns import Unknown
from logmem.sglang.comm import deepep_low_latency_bytes

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
