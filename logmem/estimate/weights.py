"""The weights of each layer and of the whole model, as pieces: whole-model params, per-rank share.

One decoder layer is its attention (logmem/estimate/attention.py), its MLP (dense or MoE)
and its norms; once per model come the embedding, the lm_head and, for multimodal
checkpoints, an approximate vision tower. Sharding follows SGLang: dense MLPs and shared
experts over TP, routed experts over EP then MoE TP, the vocabulary padded to 64 and split.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from logmem.estimate.attention import attention, linear_attention
from logmem.estimate.config import Dims, Parallel, int_key
from logmem.estimate.layers import Layer
from logmem.estimate.notes import EmbeddingByVersion, Note, TieAssumed
from logmem.estimate.pieces import Piece, ceil_div, repl, split
from logmem.estimate.reasons import (
    DenseMLP,
    Experts,
    LatentProjections,
    MambaNotModelled,
    Norms,
    Part,
    Router,
    SharedExperts,
    SizesMissing,
    Spread,
    TiedCopy,
    VisionTower,
    Vocab,
)
from logmem.sglang.sharding import padded_vocab


def dense_mlp(d: Dims, par: Parallel) -> Piece:
    h, inter, tp = d.hidden, d.intermediate, par.tp
    if h is None or inter is None:
        return Piece("mlp.dense", None, None, split(tp), SizesMissing(Part.INTERMEDIATE), True)
    m = d.mlp_mats
    return Piece(
        "mlp.dense",
        m * h * inter,
        m * h * ceil_div(inter, tp),
        split(tp),
        DenseMLP(inter, Spread(tp)),
        True,
    )


def shared_intermediate(d: Dims) -> int | None:
    """The shared experts' combined intermediate size (n_shared x the expert's, if not given)."""
    if d.shared_inter is None and d.shared_experts and d.moe_inter:
        return d.shared_experts * d.moe_inter
    return d.shared_inter


def moe(d: Dims, par: Parallel) -> list[Piece]:
    h, e, inter, hr = d.hidden, d.experts, d.moe_inter, d.routed_hidden
    m = d.mlp_mats
    if h is None or e is None or inter is None or hr is None:
        return [Piece("moe.experts", None, None, "split", SizesMissing(Part.MOE), True)]
    local = ceil_div(e, par.ep)
    rank_inter = ceil_div(inter, par.moe_tp)
    why = Experts(e, par.ep, local, par.moe_tp, par.tp, hr if d.latent else None)
    pieces = [
        Piece(
            "moe.experts",
            e * m * hr * inter,
            local * m * hr * rank_inter,
            split(par.ep * par.moe_tp),
            why,
            True,
        )
    ]
    shared_inter = shared_intermediate(d)
    if shared_inter:
        # A given shared_expert_intermediate_size comes with its own sigmoid gate (Qwen-MoE).
        gate = h if d.shared_inter else 0
        pieces.append(
            Piece(
                "moe.shared",
                m * h * shared_inter + gate,
                m * h * ceil_div(shared_inter, par.tp) + gate,
                split(par.tp),
                SharedExperts(shared_inter, Spread(par.tp)),
                True,
            )
        )
    bias = e if d.router_bias else 0
    pieces.append(
        Piece(
            "moe.router",
            e * h + bias,
            e * h + bias,
            repl(par.tp),
            Router(),
            False,
        )
    )
    if d.latent:
        proj = 2 * h * d.latent
        pieces.append(
            Piece(
                "moe.latent_proj",
                proj,
                proj,
                repl(par.tp),
                LatentProjections(h, d.latent),
                False,
            )
        )
    return pieces


def norms(d: Dims, layer: Layer) -> int | None:
    if d.hidden is None:
        return None
    # Two RMSNorms per layer; MLA adds the latent norms. Per-model extras are ignored.
    n = 2 * d.hidden if layer.attn != "none" and layer.mlp != "none" else d.hidden
    if d.mla and layer.attn != "none":
        n += (d.q_lora or 0) + (d.kv_lora or 0)
    return n


def layer_pieces(d: Dims, par: Parallel, layer: Layer) -> list[Piece]:
    """Every piece of one decoder layer."""
    pieces: list[Piece] = []
    if layer.attn in ("full", "sliding"):
        pieces += attention(d, par)
    elif layer.attn == "linear":
        pieces.append(linear_attention(d, par))
    elif layer.attn == "mamba":
        pieces.append(Piece("mamba", None, None, split(par.tp), MambaNotModelled(), True))
    if layer.mlp == "dense":
        pieces.append(dense_mlp(d, par))
    elif layer.mlp == "moe":
        pieces += moe(d, par)
    n = norms(d, layer)
    pieces.append(Piece("norms", n, n, repl(par.tp), Norms(), False))
    return pieces


# --------------------------------------------------------------------------- once per model


def tied(d: Dims, notes: list[Note]) -> bool:
    """Whether the lm_head shares the embedding's weights."""
    if d.tie_word_embeddings is not None:
        return d.tie_word_embeddings
    # Hugging Face's default depends on the class: Gemma ties, Llama/Qwen/DeepSeek do not.
    guess = d.model_type.startswith("gemma")
    notes.append(TieAssumed(guess))
    return guess


def embedding(d: Dims, par: Parallel, notes: list[Note]) -> Piece:
    h, v = d.hidden, d.vocab
    if h is None or v is None:
        return Piece("embedding", None, None, "split", SizesMissing(Part.VOCAB), False)
    padded = padded_vocab(v)
    tie = tied(d, notes)
    if par.dp_attention and par.tp > 1:
        # deepseek_v2-style models build the embedding without TP under DP attention in
        # sglang 0.5.1-0.5.7 (srt/models/deepseek_v2.py, ``enable_tp=not
        # is_dp_attention_enabled()``); 0.4.9 and 0.5.8 on split it over the attention TP
        # group (``use_attn_tp_group``): the note gives that figure too.
        notes.append(EmbeddingByVersion(par.attn_tp, ceil_div(padded, par.attn_tp) * h))
        return Piece(
            "embedding",
            v * h,
            padded * h,
            "replicated",
            Vocab(v, padded, Spread(par.tp), tie, whole=True),
            False,
        )
    return Piece(
        "embedding",
        v * h,
        ceil_div(padded, par.tp) * h,
        split(par.tp),
        Vocab(v, padded, Spread(par.tp), tie),
        False,
    )


def lm_head(d: Dims, par: Parallel, notes: list[Note], dp_lm_head: bool = False) -> Piece | None:
    """The output projection; None when it is the embedding (tied, one PP stage).

    With enable_dp_lm_head it is split over the attention TP group, not the whole TP group
    (sglang 0.5.8, srt/models/deepseek_v2.py and llama.py, ``ParallelLMHead(...,
    use_attn_tp_group=enable_dp_lm_head)``; 0.4.9 through 0.5.16 for DeepSeek)."""
    h, v = d.hidden, d.vocab
    if h is None or v is None:
        return Piece("lm_head", None, None, "split", SizesMissing(Part.VOCAB), False)
    padded = padded_vocab(v)
    group = par.attn_tp if dp_lm_head else par.tp
    spread = Spread(group, attention=dp_lm_head and group != par.tp)
    rank = ceil_div(padded, group) * h
    if tied(d, notes):
        if par.pp == 1:
            return None
        return Piece(
            "lm_head",
            0,
            rank,
            split(group),
            TiedCopy(),
            False,
        )
    return Piece(
        "lm_head",
        v * h,
        rank,
        split(group),
        Vocab(v, padded, spread),
        False,
    )


def final_norm(d: Dims, par: Parallel) -> Piece:
    return Piece("norms", d.hidden, d.hidden, repl(par.tp), Norms(), False)


def vision_piece(vision: Mapping[str, Any], text_hidden: int | None, tp: int) -> Piece:
    """A ViT tower plus a linear projector; approximate, for multimodal checkpoints."""
    h = int_key(vision, "embed_dim", "hidden_size", "width")
    layers = int_key(vision, "num_hidden_layers", "depth", "num_layers", "layers")
    inter = int_key(vision, "intermediate_size")
    if inter is None and h is not None:
        ratio = vision.get("mlp_ratio")
        inter = int(h * ratio) if isinstance(ratio, (int, float)) else None
    if h is None or layers is None or inter is None:
        return Piece("vision", None, None, split(tp), SizesMissing(Part.VISION), False)
    # Per layer: q,k,v,o with biases, a two-matrix MLP with biases, two LayerNorms.
    per_layer = 4 * h * h + 4 * h + 2 * h * inter + h + inter + 4 * h
    params = layers * per_layer + 2 * h
    patch, image = int_key(vision, "patch_size"), int_key(vision, "image_size")
    if patch:
        params += 3 * patch * patch * h + h
        if image:
            params += (image // patch) ** 2 * h
    if text_hidden:
        params += h * text_hidden
    return Piece(
        "vision",
        params,
        ceil_div(params, tp),
        split(tp),
        VisionTower(layers, h),
        False,
    )
