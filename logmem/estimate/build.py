"""``estimate()``: what one rank of a deployment should hold, composed from the stage's parts.

config.py reads the config and the settings, dtypes.py the bytes per element, layers.py
the layer plan and the KV cells, weights.py (with attention.py) the pieces of weights,
buffers.py the static buffers. This module checks that the parallel sizes divide what
SGLang splits (logmem/sglang/sharding.py), places the pieces on PP stages, sums them into
components and says which figures stay unknown and what would fill them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import logmem.estimate.notes as nf
from logmem.estimate.buffers import deepep_buffers, logits_buffer, request_table
from logmem.estimate.config import (
    Dims,
    EstimateError,
    Parallel,
    ParallelFrom,
    int_key,
    read_dims,
    text_config,
)
from logmem.estimate.dtypes import Quant, resolve_dtype, resolve_kv_dtype, resolve_quant
from logmem.estimate.layers import KVWidth, Layer, kv_cells, layer_plan
from logmem.estimate.pieces import Piece
from logmem.estimate.reasons import Part, Reason, SizesMissing
from logmem.estimate.unknowns import Unknown, unknowns
from logmem.estimate.weights import embedding, final_norm, layer_pieces, lm_head, vision_piece
from logmem.frozen import frozen
from logmem.sglang import sharding
from logmem.units import GIB


@frozen
class Component:
    """One group of weights: parameters in the whole model and bytes on the reported rank.

    sharding is "split" (divided among the ranks of a group), "replicated" (every rank of a
    group of more than one holds a full copy) or "whole" (the group is one rank, nothing to
    divide).
    """

    name: str
    params: int | None
    bytes_per_rank: int | None
    sharding: str
    why: Reason
    off_stage: int | None = None  # the reported PP stage, when this component is not on it


@frozen
class Estimate:
    """What the config says one rank should hold. None means the config does not say;
    ``unknown`` lists those figures and what would fill each."""

    model: str | None
    parallel: Parallel
    dtype: str
    kv_cache_dtype: str
    quantization: str | None
    params_total: int | None
    weights_bytes_per_rank: int | None
    kv_bytes_per_token_per_rank: int | None
    kv_tokens_per_gib: float | None
    components: tuple[Component, ...]
    logits_buffer_bytes: int | None
    deepep_buffer_bytes: int | None
    req_to_token_bytes: int | None
    notes: tuple[nf.Note, ...]
    weights_bytes_total: int | None = None
    kv_swa_bytes_per_token_per_rank: int | None = None
    deepep_masked_gemm_bytes: int | None = None
    unknown: tuple[Unknown, ...] = ()
    has_experts: bool = False
    # The version allocates a static logits buffer: False before SGLang 0.5.1 (the logits
    # are graph outputs), None when the version is not known (no log, or it does not tell).
    logits_static: bool | None = None

    def unknown_for(self, figure: str) -> Unknown | None:
        return next((u for u in self.unknown if u.figure == figure), None)


# --------------------------------------------------------------------------- sharding check


def _indivisible(
    d: Dims, par: Parallel, plan: Sequence[Layer] | None
) -> list[sharding.Indivisible]:
    """Every dimension SGLang splits by a parallel size that the size does not divide."""
    found: list[sharding.Indivisible | None] = []
    attn = plan is None or any(layer.attn in ("full", "sliding") for layer in plan)
    if attn and d.heads is not None:
        found.append(
            sharding.check_divides(
                "attention heads", d.heads, "attn_tp", par.attn_tp, sharding.HEADS_SOURCE
            )
        )
        if not d.mla and d.kv_heads is not None:
            found.append(sharding.check_kv_heads(d.kv_heads, par.attn_tp))
    dense = plan is None or any(layer.mlp == "dense" for layer in plan)
    if dense and d.intermediate is not None and not (plan is None and d.experts):
        found.append(
            sharding.check_divides(
                "MLP intermediate size", d.intermediate, "tp", par.tp, sharding.COLUMN_SOURCE
            )
        )
    if d.experts is not None:
        found.append(
            sharding.check_divides("routed experts", d.experts, "ep", par.ep, sharding.EP_SOURCE)
        )
        if d.moe_inter is not None:
            found.append(
                sharding.check_divides(
                    "expert intermediate size",
                    d.moe_inter,
                    "moe_tp",
                    par.moe_tp,
                    sharding.MOE_TP_SOURCE,
                )
            )
    return [f for f in found if f is not None]


_SETTING_FOR = {"attn_tp": "tp", "moe_tp": "tp"}


def _group_words(setting: str, par: Parallel) -> str:
    """The parallel group of ``setting`` as EstimateError's message names it."""
    words = {
        "tp": f"TP {par.tp}",
        "ep": f"EP {par.ep}",
        "attn_tp": f"attention TP {par.attn_tp} (TP {par.tp} / DP {par.dp}, DP attention)",
        "moe_tp": f"MoE TP {par.moe_tp} (TP {par.tp} / EP {par.ep})",
    }
    return words[setting]


def _with(par: Parallel, setting: str, n: int) -> Parallel:
    sizes = {"tp": par.tp, "dp": par.dp, "ep": par.ep, "pp": par.pp}
    sizes[setting] = n
    return Parallel(**sizes, dp_attention=par.dp_attention)


def _fitting(d: Dims, par: Parallel, plan: Sequence[Layer] | None, setting: str) -> list[int]:
    """Values of ``setting`` (the other sizes unchanged) that divide what it splits."""
    out = []
    for n in range(1, 1025):
        try:
            trial = _with(par, setting, n)
        except EstimateError:
            continue
        if not any(_flag(x) == setting for x in _indivisible(d, trial, plan)):
            out.append(n)
    return out


def _flag(x: sharding.Indivisible) -> str:
    """The parallel size a user changes to fix ``x``."""
    return _SETTING_FOR.get(x.setting, x.setting)


def _check_sharding(d: Dims, par: Parallel, plan: Sequence[Layer] | None, model: str) -> None:
    bad = _indivisible(d, par, plan)
    if not bad:
        return
    sentences = []
    settings: list[str] = []
    for x in bad:
        setting = _flag(x)
        if setting in settings:
            continue  # one problem per size is enough to act on
        settings.append(setting)
        words = x.setting if x.setting != "attn_tp" or par.dp_attention else "tp"
        group = _group_words(words, par)
        fit = _fitting(d, par, plan, setting)
        shown = ", ".join(str(n) for n in fit[:12]) + (", ..." if len(fit) > 12 else "")
        sentences.append(
            f"{group} does not divide the {x.count} {x.what} of {model}: SGLang refuses "
            f"this deployment at start-up ({x.source}). "
            + (
                f"{setting.upper()} sizes that fit this model: {shown}."
                if fit
                else f"No {setting.upper()} size fits with the other parallel sizes given."
            )
        )
    raise EstimateError(" ".join(sentences), settings[0])


# --------------------------------------------------------------------------- weights


def _bytes_per_param(piece: Piece, dtype_bytes: float, quant: Quant) -> float | None:
    if not piece.quantised or quant.name is None:
        return dtype_bytes
    if quant.skip_attention and piece.name.startswith("attn"):
        return dtype_bytes
    if quant.skip_shared and piece.name == "moe.shared":
        return dtype_bytes
    return quant.bytes_per_param


def _sum(values: Sequence[int | None]) -> int | None:
    return None if any(v is None for v in values) else sum(v for v in values if v is not None)


def _stages(
    d: Dims,
    par: Parallel,
    plan: Sequence[Layer] | None,
    ranges: Sequence[range],
    vision: Mapping[str, Any] | None,
    notes: list[nf.Note],
    dp_lm_head: bool = False,
) -> list[list[Piece]]:
    """The pieces each PP stage holds: the embedding on the first, lm_head and the final norm
    on the last, as SGLang's PPMissingLayer placement does."""
    emb, head = embedding(d, par, notes), lm_head(d, par, notes, dp_lm_head)
    vis = vision_piece(vision, d.hidden, par.tp) if vision is not None else None
    stages: list[list[Piece]] = []
    for s, layer_range in enumerate(ranges):
        pieces: list[Piece] = []
        if s == 0:
            pieces.append(emb)
            if vis is not None:
                pieces.append(vis)
        if plan is not None:
            for i in layer_range:
                pieces += layer_pieces(d, par, plan[i])
        else:
            pieces.append(Piece("layers", None, None, "split", SizesMissing(Part.LAYERS), True))
        if s == par.pp - 1:
            if head is not None:
                pieces.append(head)
            pieces.append(final_norm(d, par))
        stages.append(pieces)
    return stages


_CANONICAL = (
    "embedding",
    "vision",
    "attn",
    "mamba",
    "mlp.dense",
    "moe.experts",
    "moe.shared",
    "moe.router",
    "moe.latent_proj",
    "norms",
    "lm_head",
)


@frozen
class _Weights:
    components: tuple[Component, ...]
    params_total: int | None
    bytes_total: int | None
    bytes_per_rank: int | None


def _weights(
    stages: Sequence[Sequence[Piece]],
    ranges: Sequence[range],
    par: Parallel,
    dtype_bytes: float,
    quant: Quant,
    notes: list[nf.Note],
) -> _Weights:
    """Components (params over the model, bytes on the heaviest PP stage) and the totals."""

    def bytes_of(piece: Piece, params: int | None) -> int | None:
        b = _bytes_per_param(piece, dtype_bytes, quant)
        return None if b is None or params is None else round(params * b)

    stage_bytes = [_sum([bytes_of(p, p.rank_params) for p in st]) for st in stages]
    stage_params = [_sum([p.rank_params for p in st]) for st in stages]
    known = stage_bytes if all(b is not None for b in stage_bytes) else stage_params
    pick = max(range(par.pp), key=lambda s: known[s] or 0)
    if par.pp > 1:
        notes.append(nf.HeaviestStage(par.pp, pick, ranges[pick].start, ranges[pick].stop - 1))
    # One Component per name: params summed over the model, bytes over the picked stage only.
    first: dict[str, Piece] = {}
    params: dict[str, list[int | None]] = {}
    total_bytes: dict[str, list[int | None]] = {}
    for p in (p for st in stages for p in st):
        first.setdefault(p.name, p)
        params.setdefault(p.name, []).append(p.params)
        total_bytes.setdefault(p.name, []).append(bytes_of(p, p.params))
    rank_bytes: dict[str, list[int | None]] = {name: [] for name in first}
    for p in stages[pick]:
        rank_bytes[p.name].append(bytes_of(p, p.rank_params))
    order = sorted(
        first,
        key=lambda n: next(
            (i for i, c in enumerate(_CANONICAL) if n.startswith(c)), len(_CANONICAL)
        ),
    )
    components = []
    for name in order:
        off = pick if par.pp > 1 and not rank_bytes[name] else None
        on_rank = _sum(rank_bytes[name]) if rank_bytes[name] else 0
        components.append(
            Component(name, _sum(params[name]), on_rank, first[name].sharding, first[name].why, off)
        )
    return _Weights(
        tuple(components),
        _sum([c.params for c in components]),
        _sum([b for name in order for b in total_bytes[name]]),
        stage_bytes[pick],
    )


# --------------------------------------------------------------------------- estimate


def _model_name(config: Mapping[str, Any], cfg: Mapping[str, Any]) -> str | None:
    archs = cfg.get("architectures")
    for candidate in (
        config.get("_name_or_path"),
        archs[0] if isinstance(archs, list) and archs else None,
        cfg.get("model_type"),
    ):
        if isinstance(candidate, str) and candidate:
            return candidate
    return None


def _kv_width(
    kv_cache_dtype: str | None, dt: tuple[str, float], notes: list[nf.Note]
) -> tuple[str, KVWidth]:
    kv_name, kv_elem, kv_scale = resolve_kv_dtype(kv_cache_dtype, dt)
    if kv_name.startswith("fp8"):
        notes.append(nf.KVElement(nf.KVFormat.FP8))
    elif kv_name.startswith("fp4"):
        notes.append(nf.KVElement(nf.KVFormat.FP4))
    return kv_name, KVWidth(kv_elem, kv_scale)


def estimate(
    config: Mapping[str, Any],
    *,
    parallel: Parallel = Parallel(),  # noqa: B008 - frozen, so sharing the default is safe
    dtype: str | None = None,
    kv_cache_dtype: str | None = None,
    quantization: str | None = None,
    cuda_graph_max_bs: int | None = None,
    tokens_per_req: int = 1,
    max_dispatch_tokens: int | None = None,
    max_running_requests: int | None = None,
    context_len: int | None = None,
    request_padding_row: bool = True,
    device: str | None = None,
    dp_lm_head: bool = False,
    logits_static: bool | None = None,
    parallel_from: ParallelFrom | None = None,
    other_model: nf.ModelDiffers | None = None,
) -> Estimate:
    """Expected per-rank weights, KV bytes per token and static buffers for one deployment.

    ``device`` is server_args' (DeepEP's formulas are CUDA's), ``dp_lm_head`` its
    enable_dp_lm_head (the lm_head over the attention TP group), ``logits_static`` whether the
    version allocates the static logits buffer (``eras.static_logits_buffer``; None: not
    known), ``parallel_from`` where a log without server_args got its parallel sizes and
    ``other_model`` a log whose loaded architecture is not the config's (noted first).

    Raises EstimateError (its ``setting`` naming the size at fault) when a parallel size does
    not divide a dimension SGLang splits by it: SGLang itself would refuse to start."""
    notes: list[nf.Note] = [other_model] if other_model is not None else []
    if parallel_from is not None:
        notes.append(nf.ParallelFromLog(parallel_from.tp))
    cfg, vision = text_config(config)
    par = parallel
    dt = resolve_dtype(dtype, cfg, notes)
    kv_name, width = _kv_width(kv_cache_dtype, dt, notes)
    quant = resolve_quant(quantization, cfg, notes)
    d = read_dims(cfg)
    n_layers = int_key(cfg, "num_hidden_layers", "n_layer", "num_layers", "n_layers")
    plan = layer_plan(cfg, n_layers, notes)
    model_name = _model_name(config, cfg)
    _check_sharding(d, par, plan, model_name or "this model")

    ranges = (
        sharding.pp_layer_ranges(len(plan), par.pp) if plan is not None else [range(0)] * par.pp
    )
    stages = _stages(d, par, plan, ranges, vision, notes, dp_lm_head)
    w = _weights(stages, ranges, par, dt[1], quant, notes)

    kv_rank: int | None = None
    kv_swa: int | None = None
    if plan is not None:
        kv_rank, kv_swa = kv_cells(d, plan, ranges, width, par.attn_tp, notes)
    if d.nextn_layers:
        notes.append(nf.NextNExcluded(d.nextn_layers))
    if par.dp_attention:
        notes.append(nf.DPAttentionSplit(par.attn_tp))
    logits = logits_buffer(d, cuda_graph_max_bs, tokens_per_req, notes, logits_static)
    deepep, masked = deepep_buffers(d, par, max_dispatch_tokens, notes, device)
    max_pos = int_key(cfg, "max_position_embeddings")
    req = request_table(max_running_requests, context_len, max_pos, notes, request_padding_row)
    figures = {
        "kv_bytes_per_token_per_rank": kv_rank,
        "logits_buffer_bytes": logits,
        "deepep_buffer_bytes": deepep,
        "deepep_masked_gemm_bytes": masked,
        "req_to_token_bytes": req,
        "max_position_embeddings": max_pos,
    }
    given = {
        "quantization": quantization,
        "device": device,
        "logits_static": logits_static,
        "cuda_graph_max_bs": cuda_graph_max_bs,
        "max_running_requests": max_running_requests,
        "context_len": context_len,
    }
    return Estimate(
        model=model_name,
        parallel=par,
        dtype=dt[0],
        kv_cache_dtype=kv_name,
        quantization=quant.name,
        params_total=w.params_total,
        weights_bytes_per_rank=w.bytes_per_rank,
        kv_bytes_per_token_per_rank=kv_rank,
        kv_tokens_per_gib=GIB / kv_rank if kv_rank else None,
        components=w.components,
        logits_buffer_bytes=logits,
        deepep_buffer_bytes=deepep,
        req_to_token_bytes=req,
        notes=tuple(dict.fromkeys(notes)),  # tied() may note the same guess twice
        weights_bytes_total=w.bytes_total,
        kv_swa_bytes_per_token_per_rank=kv_swa,
        deepep_masked_gemm_bytes=masked,
        unknown=unknowns(d, plan, w, quant, figures, given),
        has_experts=d.experts is not None,
        logits_static=logits_static,
    )
