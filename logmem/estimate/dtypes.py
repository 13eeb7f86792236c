"""Bytes per element: the weight dtype, the KV cache dtype and the checkpoint's quantisation.

What ``--dtype``, ``--kv-cache-dtype`` and ``--quantization`` (or the config's
``torch_dtype`` and ``quantization_config``) mean in bytes per weight or per KV element,
scales included where a format stores them per block. Anything that is not modelled says so
in a note (logmem/estimate/notes.py) and leaves the bytes unknown (None), never guessed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import logmem.estimate.notes as n
from logmem.estimate.config import EstimateError, int_key
from logmem.frozen import frozen
from logmem.sglang.dtypes import DTYPES, KV_DTYPES, norm_dtype


def resolve_dtype(
    dtype: str | None, cfg: Mapping[str, Any], notes: list[n.Note]
) -> tuple[str, float]:
    if dtype is not None and norm_dtype(dtype) != "auto":
        found = DTYPES.get(norm_dtype(dtype))
        if found is None:
            raise EstimateError(
                f"unknown dtype {dtype!r}; expected one of bfloat16, float16, float32 or auto"
            )
        return found
    cfg_dtype = cfg.get("torch_dtype", cfg.get("dtype"))
    found = DTYPES.get(norm_dtype(cfg_dtype)) if isinstance(cfg_dtype, str) else None
    if found is None:
        notes.append(n.NoTorchDtype())
        return "bfloat16", 2.0
    if found[0] == "float32":
        # SGLang's dtype=auto serves float32 checkpoints in bfloat16.
        notes.append(n.Float32ServedAsBf16())
        return "bfloat16", 2.0
    return found


def resolve_kv_dtype(kv: str | None, dtype: tuple[str, float]) -> tuple[str, float, float]:
    if kv is None or norm_dtype(kv) == "auto":
        return dtype[0], dtype[1], 0.0
    key = norm_dtype(kv)
    if key in KV_DTYPES:
        return KV_DTYPES[key]
    if key in DTYPES:
        name, size = DTYPES[key]
        return name, size, 0.0
    raise EstimateError(
        f"unknown kv_cache_dtype {kv!r}; expected auto, bfloat16, float16, "
        "fp8_e4m3, fp8_e5m2 or fp4_e2m1"
    )


@frozen
class Quant:
    """How the quantised linear layers are stored; None bytes means we cannot tell."""

    name: str | None
    bytes_per_param: float | None
    skip_attention: bool = False
    skip_shared: bool = False


def _quant_detail(name: str, qc: Mapping[str, Any], notes: list[n.Note]) -> float | None:
    """Bytes per weight of a quantised linear layer, scales included where they are blocked."""
    block = qc.get("weight_block_size")
    if name in ("fp8", "modelopt_fp8", "w8a8_fp8", "fbgemm_fp8", "modelopt"):
        if (
            isinstance(block, Sequence)
            and len(block) == 2
            and all(isinstance(b, int) and b > 0 for b in block)
        ):
            rows, cols = int(block[0]), int(block[1])
            notes.append(n.WeightBytes(n.WeightFormat.FP8, (rows, cols)))
            return 1.0 + 4.0 / (rows * cols)
        notes.append(n.WeightBytes(n.WeightFormat.FP8))
        return 1.0
    if name in ("w8a8_int8", "int8"):
        notes.append(n.WeightBytes(n.WeightFormat.INT8))
        return 1.0
    if name in ("modelopt_fp4", "nvfp4", "w4a4_nvfp4"):
        notes.append(n.WeightBytes(n.WeightFormat.FP4))
        return 0.5 + 1.0 / 16
    if name == "mxfp4":
        notes.append(n.WeightBytes(n.WeightFormat.MXFP4))
        return 0.5 + 1.0 / 32
    if name in ("awq", "awq_marlin", "gptq", "gptq_marlin", "marlin", "moe_wna16"):
        bits = int_key(qc, "bits", "w_bit") or 4
        group = qc.get("group_size", qc.get("q_group_size", 128))
        if isinstance(group, int) and group > 0:
            notes.append(n.IntWeights(name, bits, group))
            return bits / 8 + (2 + bits / 8) / group
        notes.append(n.IntWeights(name, bits, None))
        return bits / 8
    if name == "compressed-tensors":
        groups = qc.get("config_groups")
        first = next(iter(groups.values()), None) if isinstance(groups, Mapping) else None
        weights = first.get("weights") if isinstance(first, Mapping) else None
        if not isinstance(weights, Mapping) or int_key(weights, "num_bits") is None:
            notes.append(n.CompressedTensors(None))
            return None
        bits = int_key(weights, "num_bits") or 8
        strategy = weights.get("strategy")
        group = int_key(weights, "group_size")
        blocks = weights.get("block_structure")
        base = bits / 8
        if strategy == "group" and group:
            scale = 1.0 if (weights.get("type") == "float" and bits == 4) else 2.0
            notes.append(n.CompressedTensors(bits, "group", group))
            return base + scale / group
        if strategy == "block" and isinstance(blocks, Sequence) and len(blocks) == 2:
            notes.append(n.CompressedTensors(bits, "block"))
            return base + 4.0 / (int(blocks[0]) * int(blocks[1]))
        notes.append(n.CompressedTensors(bits, f"{strategy}", ignored=True))
        return base
    notes.append(n.QuantNotModelled(name))
    return None


def resolve_quant(quantization: str | None, cfg: Mapping[str, Any], notes: list[n.Note]) -> Quant:
    qc_raw = cfg.get("quantization_config", cfg.get("compression_config"))
    qc: Mapping[str, Any] = qc_raw if isinstance(qc_raw, Mapping) else {}
    cfg_method = qc.get("quant_method")
    cfg_method = cfg_method.lower() if isinstance(cfg_method, str) else None
    if quantization is None or quantization.lower() in ("", "none", "auto"):
        name = cfg_method
        if name is None:
            return Quant(None, None)
    else:
        name = quantization.lower()
        if cfg_method is not None and cfg_method != name:
            # Block sizes and group sizes describe the checkpoint's own method only.
            notes.append(n.QuantOverride(name, cfg_method))
            qc = {}
    ignore = qc.get("ignore", qc.get("modules_to_not_convert")) or []
    ignore_text = " ".join(str(x) for x in ignore) if isinstance(ignore, Sequence) else ""
    skip_attn = "attn" in ignore_text
    skip_shared = "shared_expert" in ignore_text
    if skip_attn:
        notes.append(n.QuantLeaves(n.Unquantised.ATTENTION))
    if skip_shared:
        notes.append(n.QuantLeaves(n.Unquantised.SHARED_EXPERTS))
    return Quant(name, _quant_detail(name, qc, notes), skip_attn, skip_shared)
