"""Bytes per element of each dtype name SGLang, torch and the CLI use (``torch.float8_e5m2``,
``--kv-cache-dtype fp8_e5m2``, ``bf16``): one table for the analysis, which prices a printed
KV dtype, and the estimate stage, which resolves flags and configs with it."""

from __future__ import annotations

DTYPES = {
    "bfloat16": ("bfloat16", 2.0),
    "bf16": ("bfloat16", 2.0),
    "float16": ("float16", 2.0),
    "fp16": ("float16", 2.0),
    "half": ("float16", 2.0),
    "float32": ("float32", 4.0),
    "fp32": ("float32", 4.0),
    "float": ("float32", 4.0),
}

# KV cache dtypes: name -> (bytes per element, extra scale bytes per element).
KV_DTYPES = {
    "fp8_e4m3": ("fp8_e4m3", 1.0, 0.0),
    "fp8_e5m2": ("fp8_e5m2", 1.0, 0.0),
    "fp8": ("fp8_e4m3", 1.0, 0.0),
    "float8_e4m3fn": ("fp8_e4m3", 1.0, 0.0),
    "float8_e5m2": ("fp8_e5m2", 1.0, 0.0),
    "float8_e4m3fnuz": ("fp8_e4m3", 1.0, 0.0),  # ROCm's fp8 (MI300): one byte, as e4m3fn
    # FP4 KV keeps one FP8 scale per 16 elements (NVFP4 layout); assumed, not read from source.
    "fp4_e2m1": ("fp4_e2m1", 0.5, 1 / 16),
    "fp4": ("fp4_e2m1", 0.5, 1 / 16),
}


def norm_dtype(name: str) -> str:
    """'torch.Float16' -> 'float16': the key of DTYPES / KV_DTYPES."""
    return name.strip().lower().removeprefix("torch.")


def kv_element_bytes(name: str) -> float | None:
    """Bytes per KV element of a dtype as SGLang prints it (``torch.float8_e5m2``) or as
    ``--kv-cache-dtype`` names it (``fp8_e5m2``), scales included; None when not modelled."""
    key = norm_dtype(name)
    if key in KV_DTYPES:
        _, size, scale = KV_DTYPES[key]
        return size + scale
    found = DTYPES.get(key)
    return found[1] if found is not None else None
