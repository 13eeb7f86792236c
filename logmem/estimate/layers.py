"""The layer plan of a model and the KV cache cell per token it implies.

``layer_plan`` reads which layers are full attention, sliding window, linear attention or
Mamba, and which MLPs are dense or MoE, from whichever pattern keys the config uses
(``layer_types``, ``hybrid_override_pattern``, ``full_attention_interval`` ...). ``kv_cells``
turns it into KV bytes per token per rank for the full and the sliding-window pool with
SGLang's cell rules (logmem/sglang/sharding.py: MHA/GQA, MLA, DSA index keys).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import logmem.estimate.notes as n
from logmem.estimate.config import Dims, int_key, num_experts
from logmem.frozen import frozen
from logmem.sglang import sharding


@frozen
class Layer:
    """One decoder layer: the kind of its attention (or mixer) and of its MLP."""

    attn: str  # "full" | "sliding" | "linear" | "mamba" | "none"
    mlp: str  # "dense" | "moe" | "none"


_FULL_TYPES = {"full_attention", "attention", "global", "full", "global_attention"}
_SLIDING_TYPES = {
    "sliding_attention",
    "sliding_window",
    "local",
    "local_attention",
    "chunked_attention",
    "swa",
}
_LINEAR_TYPES = {"linear_attention", "linear", "gated_deltanet", "deltanet", "lightning"}
_MAMBA_TYPES = {"mamba", "mamba2", "ssm"}


def layer_plan(
    cfg: Mapping[str, Any], n_layers: int | None, notes: list[n.Note]
) -> list[Layer] | None:
    """Every layer's kinds, from the config's per-layer pattern keys; None without a layer count."""
    pattern = cfg.get("hybrid_override_pattern")
    if isinstance(pattern, str) and pattern:
        # Nemotron-H style: one character per layer, each layer is one block.
        kinds = {
            "M": Layer("mamba", "none"),
            "*": Layer("full", "none"),
            "-": Layer("none", "dense"),
            "E": Layer("none", "moe"),
        }
        odd = sorted({c for c in pattern if c not in kinds})
        if odd:
            notes.append(n.UnknownBlocks(tuple(odd)))
        return [kinds.get(c, Layer("full", "none")) for c in pattern]
    if n_layers is None:
        return None

    attn = ["full"] * n_layers
    layer_types = cfg.get("layer_types")
    if isinstance(layer_types, Sequence) and not isinstance(layer_types, str) and layer_types:
        if len(layer_types) != n_layers:
            notes.append(n.LayerTypesRepeated(len(layer_types), n_layers))
        unknown: set[str] = set()
        for i in range(n_layers):
            kind = str(layer_types[i % len(layer_types)]).lower()
            if kind in _SLIDING_TYPES:
                attn[i] = "sliding"
            elif kind in _LINEAR_TYPES:
                attn[i] = "linear"
            elif kind in _MAMBA_TYPES:
                attn[i] = "mamba"
            elif kind not in _FULL_TYPES:
                unknown.add(kind)
        if unknown:
            notes.append(n.LayerTypesUnknown(tuple(sorted(unknown))))
    elif (interval := int_key(cfg, "full_attention_interval")) is not None:
        # Qwen3-Next style: every interval-th layer is full attention, the rest linear.
        attn = ["full" if (i + 1) % interval == 0 else "linear" for i in range(n_layers)]
        notes.append(n.FullInterval(interval))
    elif (swa_pattern := int_key(cfg, "sliding_window_pattern")) is not None:
        # Gemma-3 style: every swa_pattern-th layer is global, the rest slide.
        attn = ["full" if (i + 1) % swa_pattern == 0 else "sliding" for i in range(n_layers)]
        notes.append(n.SlidingPattern(swa_pattern))
    elif str(cfg.get("model_type", "")).startswith("gemma2") and cfg.get("sliding_window"):
        attn = ["sliding" if i % 2 == 0 else "full" for i in range(n_layers)]
        notes.append(n.Gemma2Alternating())
    elif cfg.get("sliding_window") and cfg.get("use_sliding_window") is not False:
        notes.append(n.SlidingWithoutPattern(f"{cfg['sliding_window']}"))
    if cfg.get("attention_chunk_size") and "sliding" not in attn:
        notes.append(n.ChunkedAsFull())

    mlp = ["dense"] * n_layers
    if num_experts(cfg) is not None:
        first_dense = int_key(cfg, "first_k_dense_replace") or 0
        freq = int_key(cfg, "moe_layer_freq") or 1
        step = int_key(cfg, "decoder_sparse_step", "interleave_moe_layer_step") or 1
        only_dense_raw = cfg.get("mlp_only_layers") or []
        only_dense = set(only_dense_raw) if isinstance(only_dense_raw, Sequence) else set()
        for i in range(n_layers):
            if i >= first_dense and i % freq == 0 and (i + 1) % step == 0 and i not in only_dense:
                mlp[i] = "moe"
    return [Layer(a, m) for a, m in zip(attn, mlp, strict=True)]


# --------------------------------------------------------------------------- KV cells


@frozen
class KVWidth:
    """Bytes of one KV element in the cache dtype, plus per-element scale bytes (FP4 blocks)."""

    element: float
    scale: float = 0.0


def _layer_cell(d: Dims, attn_tp: int) -> tuple[int, int] | None:
    """(KV elements, fixed index bytes) per token of one attention layer on one rank."""
    if d.mla:
        if d.kv_lora is None or d.rope is None:
            return None
        index = sharding.dsa_index_bytes(d.index_head_dim) if d.index_head_dim else 0
        return sharding.mla_cell_elements(d.kv_lora, d.rope), index
    if d.kv_heads is None or d.head_dim is None or d.v_head is None:
        return None
    return sharding.mha_cell_elements(d.kv_heads, d.head_dim, d.v_head, attn_tp), 0


def cell_bytes(
    d: Dims, layers: Sequence[Layer], kinds: tuple[str, ...], width: KVWidth, attn_tp: int
) -> int | None:
    """KV bytes per token per rank of the layers whose attention is one of ``kinds``; 0 when
    there are none, None when the config lacks a size the cell needs."""
    elements = fixed = count = 0
    for layer in layers:
        if layer.attn not in kinds:
            continue
        got = _layer_cell(d, attn_tp)
        if got is None:
            return None
        elements += got[0]
        fixed += got[1]
        count += 1
    return sharding.cell_bytes(elements, width.element, width.scale, fixed) if count else 0


def kv_cells(
    d: Dims,
    plan: Sequence[Layer],
    ranges: Sequence[range],
    width: KVWidth,
    attn_tp: int,
    notes: list[n.Note],
) -> tuple[int | None, int | None]:
    """KV bytes per token per rank of the full-attention pool and of the SWA pool (None: no
    such pool, or a size is missing). Each is the largest over PP stages, since the smallest
    stage pool bounds the tokens."""

    def per_stage(kinds: tuple[str, ...]) -> list[int | None]:
        return [cell_bytes(d, [plan[i] for i in r], kinds, width, attn_tp) for r in ranges]

    full_stage, swa_stage = per_stage(("full",)), per_stage(("sliding",))
    full_layers = sum(1 for layer in plan if layer.attn == "full")
    full = swa = None
    # A stage without such layers holds 0 bytes; a model without them has no such pool.
    if full_layers and all(v is not None for v in full_stage):
        full = max(v for v in full_stage if v is not None)
    if any(layer.attn == "sliding" for layer in plan) and all(v is not None for v in swa_stage):
        swa = max(v for v in swa_stage if v is not None)
    other = {k: sum(1 for layer in plan if layer.attn == k) for k in ("sliding", "linear", "mamba")}
    if any(other.values()):
        notes.append(n.FullLayersOnly(full_layers, tuple((k, c) for k, c in other.items() if c)))
    if swa is not None:
        both = per_stage(("full", "sliding"))
        if all(v is not None for v in both):
            notes.append(n.SWAPool(swa, max(v or 0 for v in both)))
    if other["linear"] or other["mamba"]:
        notes.append(n.StatePerRequest())
    if d.mla:
        notes.append(n.MLACell())
    if d.index_head_dim:
        notes.append(n.DSAIndexKeys(d.index_head_dim))
    return full, swa
