"""Every sentence of ``logmem estimate`` and of ``analyze --model-config``'s cross-check.

The estimate stage returns typed facts (logmem/estimate/notes.py for what it assumed,
logmem/estimate/reasons.py for why a piece of weights is its size, crosscheck.py for the
checks and mismatches); this module words them, so a reporter can restyle the wording
without touching the arithmetic. estimate_render.py, report/model.py and the JSON
reporters call these functions.
"""

from __future__ import annotations

import logmem.estimate.notes as n
import logmem.estimate.reasons as r
from logmem.estimate.build import Component
from logmem.estimate.crosscheck import (
    Check,
    Checked,
    KVDiffers,
    KVWidth,
    Mismatch,
    ModelDiffers,
    WeightsDiffer,
)
from logmem.estimate.unknowns import Unknown
from logmem.sglang.rules import DIFFERENCE_RESOLUTION_BYTES as ROUNDING_BYTES
from logmem.units import format_gib

# --------------------------------------------------------------------------- notes

_WEIGHT_FORMATS = {
    n.WeightFormat.FP8: "FP8 weights: 1 byte; per-tensor or per-channel scales ignored",
    n.WeightFormat.INT8: "INT8 weights: 1 byte; per-channel scales ignored",
    n.WeightFormat.FP4: "FP4 weights: 0.5 byte plus one FP8 scale per 16 weights",
    n.WeightFormat.MXFP4: "MXFP4 weights: 0.5 byte plus one E8M0 scale per 32 weights",
}
_UNQUANTISED = {
    n.Unquantised.ATTENTION: "attention",
    n.Unquantised.SHARED_EXPERTS: "shared experts",
}
_KV_FORMATS = {
    n.KVFormat.FP8: "FP8 KV: 1 byte per element; per-layer k/v scale scalars ignored",
    n.KVFormat.FP4: "FP4 KV: 0.5 byte per element plus one FP8 scale per 16 (assumed layout)",
}


def _weights_note(note: n.WeightBytes | n.IntWeights | n.CompressedTensors) -> str:
    if isinstance(note, n.WeightBytes):
        if note.block is not None:
            rows, cols = note.block
            return f"FP8 weights: 1 byte plus one FP32 scale per {rows}x{cols} block"
        return _WEIGHT_FORMATS[note.format]
    if isinstance(note, n.IntWeights):
        if note.group is not None:
            return (
                f"{note.method}: {note.bits}-bit weights plus an FP16 scale and a packed zero "
                f"per group of {note.group}"
            )
        return f"{note.method}: {note.bits}-bit weights; per-channel scales ignored"
    if note.bits is None:
        return "compressed-tensors config without weight bits; weight bytes unknown"
    if note.ignored:
        return f"compressed-tensors: {note.bits}-bit weights; {note.strategy} scales ignored"
    if note.strategy == "group":
        return f"compressed-tensors: {note.bits}-bit weights, one scale per {note.group}"
    return f"compressed-tensors: {note.bits}-bit weights, FP32 scale per block"


def _layers_note(note: n.Note) -> str | None:
    """The layer plan's and the KV cell's notes; None for any other kind."""
    if isinstance(note, n.UnknownBlocks):
        return (
            f"hybrid_override_pattern has unknown blocks {list(note.blocks)}; "
            "treated as full attention"
        )
    if isinstance(note, n.LayerTypesRepeated):
        return (
            f"layer_types has {note.entries} entries for {note.layers} layers; "
            "repeated them in order"
        )
    if isinstance(note, n.LayerTypesUnknown):
        return (
            f"layer_types {list(note.kinds)} not recognised; counted as full "
            "attention (larger KV cell)"
        )
    if isinstance(note, n.FullInterval):
        i = note.interval
        return f"full_attention_interval {i}: layers other than every {i}th are linear attention"
    if isinstance(note, n.SlidingPattern):
        p = note.pattern
        return (
            f"sliding_window_pattern {p}: every {p}th layer is "
            "full attention, the others sliding window"
        )
    if isinstance(note, n.Gemma2Alternating):
        return "gemma2: even layers sliding window, odd layers full attention"
    if isinstance(note, n.SlidingWithoutPattern):
        return (
            f"sliding_window {note.window} with no per-layer pattern; "
            "counted every layer as full attention (conservative)"
        )
    if isinstance(note, n.ChunkedAsFull):
        return "attention_chunk_size set; chunked layers counted as full attention"
    if isinstance(note, n.FullLayersOnly):
        parts = ", ".join(f"{count} {kind}" for kind, count in note.others)
        return (
            f"KV per token counts the {note.full} full-attention layers only "
            f"({parts} layers are in their own pools)"
        )
    if isinstance(note, n.SWAPool):
        return (
            f"sliding-window layers need {note.swa_bytes:,} bytes per token in the "
            "SWA pool; without the hybrid SWA pool every layer is full: "
            f"{note.all_full_bytes:,} bytes per token"
        )
    if isinstance(note, n.StatePerRequest):
        return "linear-attention / Mamba state is per request, not per token; not estimated"
    if isinstance(note, n.MLACell):
        return "MLA KV: (kv_lora_rank + qk_rope_head_dim) per layer, no TP divisor"
    if isinstance(note, n.DSAIndexKeys):
        return (
            f"DSA index keys: {note.dim} FP8 bytes plus FP32 scales "
            "per layer, included in KV per token"
        )
    return None


def _buffers_note(note: n.Note) -> str | None:
    """The static buffers' and the deployment's notes; None for any other kind."""
    if isinstance(note, n.LogitsRows):
        return (
            f"logits buffer: {note.rows} rows ({note.max_bs} x {note.tokens_per_req}) x "
            f"vocab {note.vocab} x 4 bytes"
        )
    if isinstance(note, n.EmbeddingByVersion):
        return (
            "embedding under DP attention: whole on every rank in SGLang 0.5.1-0.5.7 (as "
            f"counted); 0.4.9 and 0.5.8 on split it over attention TP {note.attn_tp} "
            f"({note.split_params / 1e6:,.2f} M parameters per rank)"
        )
    if isinstance(note, n.LogitsNotStatic):
        return (
            "logits buffer: none as a static buffer in this version (the logits are graph "
            f"outputs; SGLang allocates one from {note.first})"
        )
    if isinstance(note, n.LogitsFromVersion):
        return f"the logits buffer is a static buffer from SGLang {note.first} on; none before"
    if isinstance(note, n.ParallelFromLog):
        if note.tp is None:
            return (
                "the log prints no server_args: parallel sizes are the defaults (TP 1); pass --tp"
            )
        return (
            f"TP {note.tp} from the rank tags (TP0-TP{note.tp - 1}; no server_args): at least "
            "that many ranks; DP, EP and PP unknown, so 1"
        )
    if isinstance(note, n.DeepEPBuffer):
        return (
            "DeepEP low-latency buffer (only with moe_a2a_backend deepep): "
            f"{note.tokens} dispatch tokens x {note.experts} experts x hidden "
            f"{note.hidden}, combine messages of 2*H bytes; DeepEP versions "
            f"that add combine scales need {format_gib(note.scaled_bytes)} GiB"
        )
    if isinstance(note, n.DispatchDefault):
        return f"max dispatch tokens defaulted to {note.tokens}"
    if isinstance(note, n.MaskedGemm):
        return (
            f"masked-GEMM intermediates: about {note.experts} x {note.tokens} rows of "
            f"2 x {note.intermediate} BF16 plus the FP8 copy and scales; "
            "down-projection output not counted"
        )
    if isinstance(note, n.ContextFromMaxPositions):
        return f"context length taken from max_position_embeddings ({note.context})"
    if isinstance(note, n.TieAssumed):
        return f"tie_word_embeddings absent; assumed {'tied' if note.tied else 'untied'}"
    if isinstance(note, n.HeaviestStage):
        return (
            f"PP {note.pp}: per-rank figures are for the heaviest stage, {note.stage} "
            f"(layers {note.first}-{note.last})"
        )
    if isinstance(note, n.NextNExcluded):
        return (
            f"{note.layers} MTP/NextN layer(s) excluded; they load only with speculative decoding"
        )
    if isinstance(note, n.DPAttentionSplit):
        return (
            f"DP attention: attention TP group is {note.attn_tp}; dense MLP and "
            "shared experts assumed split over the full TP group"
        )
    return None


def note_text(note: n.Note) -> str:
    """One note of the estimate, as a sentence fragment."""
    if isinstance(note, n.ModelDiffers):
        return model_differs_text(note)
    if isinstance(note, n.NoTorchDtype):
        return "config has no torch_dtype; assumed bfloat16 weights"
    if isinstance(note, n.Float32ServedAsBf16):
        return "config torch_dtype is float32; dtype auto serves it as bfloat16"
    if isinstance(note, n.KVElement):
        return _KV_FORMATS[note.format]
    if isinstance(note, (n.WeightBytes, n.IntWeights, n.CompressedTensors)):
        return _weights_note(note)
    if isinstance(note, n.QuantNotModelled):
        return f"quantization {note.method!r} is not modelled; quantised weight bytes unknown"
    if isinstance(note, n.QuantOverride):
        return f"quantization {note.method} overrides the checkpoint's {note.checkpoint}"
    if isinstance(note, n.QuantLeaves):
        return f"quantization config leaves {_UNQUANTISED[note.part]} unquantised"
    text = _layers_note(note) or _buffers_note(note)
    if text is None:
        raise TypeError(f"no wording for {type(note).__name__}")
    return text


def notes_text(notes: tuple[n.Note, ...]) -> tuple[str, ...]:
    return tuple(note_text(x) for x in notes)


# --------------------------------------------------------------------------- why a piece


def _spread(s: r.Spread) -> str:
    label = "attention TP" if s.attention else "TP"
    return f"split over {label} {s.group}" if s.group > 1 else "on one rank"


def _attn_spread(s: r.AttnSpread) -> str:
    if s.attn_tp == 1 and s.tp > 1:
        return f"whole on each rank (DP attention, {s.dp} copies)"
    return _spread(r.Spread(s.attn_tp, attention=True))


_MISSING = {
    r.Part.ATTENTION: "attention sizes missing in config",
    r.Part.MLA: "MLA sizes missing in config",
    r.Part.LINEAR_ATTENTION: "linear-attention sizes missing in config",
    r.Part.MOE: "MoE sizes missing",
    r.Part.VOCAB: "vocab_size or hidden missing",
    r.Part.VISION: "vision_config sizes missing",
    r.Part.INTERMEDIATE: "intermediate_size missing",
    r.Part.LAYERS: "num_hidden_layers missing",
}


def _attention_reason(why: r.Reason) -> str | None:
    """The attention pieces' reasons; None for any other kind."""
    if isinstance(why, r.QueryHeads):
        gate = " (output gate doubles q)" if why.gated else ""
        return (
            f"{why.heads} query heads, {why.per_rank} per rank (attention TP {why.attn_tp}){gate}"
        )
    if isinstance(why, r.KVHeads):
        if why.attn_tp == 1:
            return f"all {why.heads} KV heads (attention TP 1)"
        if why.copies is None:
            return f"{why.heads} KV heads, {why.per_rank} per rank (attention TP {why.attn_tp})"
        return (
            f"{why.heads} KV heads < attention TP {why.attn_tp}: 1 per rank, "
            f"each copied {why.copies}x"
        )
    if isinstance(why, r.Heads):
        return f"{why.heads} heads, {_attn_spread(why.spread)}"
    if isinstance(why, r.RowParallel):
        return f"row-parallel, {_attn_spread(why.spread)}"
    if isinstance(why, r.QDown):
        return f"q down-projection to q_lora_rank {why.q_lora}, replicated linear"
    if isinstance(why, r.KVDown):
        return f"down-projection to kv_lora_rank {why.kv_lora} + rope {why.rope}, replicated linear"
    if isinstance(why, r.Indexer):
        return f"DSA indexer ({why.heads} heads x {why.dim}), replicated"
    if isinstance(why, r.DeltaNet):
        return (
            f"gated DeltaNet ({why.key_heads} key / {why.value_heads} value heads), "
            f"{_attn_spread(why.spread)}"
        )
    return None


def _experts(why: r.Experts) -> str:
    if why.ep > 1:
        text = f"{why.experts} experts over EP {why.ep}: {why.per_rank} per rank"
        if why.moe_tp > 1:
            text += f", intermediate split over MoE TP {why.moe_tp}"
    else:
        text = f"all {why.experts} experts on every rank, intermediate {_spread(r.Spread(why.tp))}"
    if why.latent_hidden is not None:
        text += f"; routed hidden {why.latent_hidden} (latent)"
    return text


def reason_text(why: r.Reason) -> str:
    """Why a piece of weights is its size on a rank."""
    if isinstance(why, r.SizesMissing):
        return _MISSING[why.part]
    if isinstance(why, r.MambaNotModelled):
        return "Mamba mixer weights not modelled"
    if isinstance(why, r.DenseMLP):
        return f"intermediate {why.intermediate} {_spread(why.spread)}"
    if isinstance(why, r.Experts):
        return _experts(why)
    if isinstance(why, r.SharedExperts):
        return f"shared intermediate {why.intermediate} {_spread(why.spread)}"
    if isinstance(why, r.Router):
        return "gate over full hidden, replicated, kept unquantised"
    if isinstance(why, r.LatentProjections):
        return (
            f"hidden {why.hidden} <-> latent {why.latent} projections; "
            "assumed replicated and unquantised"
        )
    if isinstance(why, r.Norms):
        return "RMSNorm weights, replicated"
    if isinstance(why, r.Vocab):
        tie = " (tied with lm_head)" if why.tied else ""
        if why.whole:
            return f"vocab {why.vocab} whole on every rank under DP attention{tie}"
        return f"vocab {why.vocab} (padded {why.padded}) {_spread(why.spread)}{tie}"
    if isinstance(why, r.TiedCopy):
        return "tied with the embedding, but the last PP stage holds its own copy"
    if isinstance(why, r.VisionTower):
        return (
            f"approximate ViT ({why.layers} layers, width {why.width}) and projector; "
            "assumed TP-split"
        )
    text = _attention_reason(why)
    if text is None:
        raise TypeError(f"no wording for {type(why).__name__}")
    return text


def component_why(c: Component) -> str:
    """The "why" cell of a component: its reason, and the PP stage it is absent from."""
    text = reason_text(c.why)
    return text if c.off_stage is None else f"{text}; not on PP stage {c.off_stage}"


def unknown_reason(u: Unknown) -> str:
    """The short fact behind an unknown figure; "" when its settings or keys say it all."""
    if u.device is not None:
        return f"DeepEP on {u.device} is not the CUDA library: no formula"
    if u.unmodelled is not None:
        return f"quantization {u.unmodelled} is not modelled"
    if u.missing is not None:
        return "sizes missing for " + ", ".join(u.missing)
    return ""


# --------------------------------------------------------------------------- cross-check

_CHECKED = {
    Checked.WEIGHTS: "weights per rank",
    Checked.KV_PER_TOKEN: "KV bytes per token per rank",
}


def check_label(c: Check) -> str:
    if c.what is Checked.STATIC_VS_LOGITS:
        return f"{c.graph}: static buffers vs logits buffer"
    return _CHECKED[c.what]


def check_verdict(c: Check) -> str:
    """A check's verdict cell: differs, agrees (consistent, for a part of a whole), or -."""
    if c.differs:
        return "differs"
    if c.measured_bytes is None or c.expected_bytes is None:
        return "-"
    return "consistent" if c.what is Checked.STATIC_VS_LOGITS else "agrees"


def check_note(c: Check) -> str:
    if c.what is Checked.STATIC_VS_LOGITS:
        return (
            "logits buffer = rows x vocab x 4 B; other static buffers add to it, so only static "
            "buffers below it differ"
        )
    return ""


def gib_or_bytes(c: Check, value: int | None) -> str:
    """A checked figure: bytes for per-token figures, GiB with two decimals otherwise."""
    if value is None:
        return "-"
    return f"{value:,} B" if c.what is Checked.KV_PER_TOKEN else format_gib(value)


_KV_WIDTH = {
    KVWidth.TWICE: "the KV cache is twice as wide as assumed: check kv_cache_dtype "
    "(e.g. bf16 instead of fp8)",
    KVWidth.HALF: "the KV cache is half as wide as assumed: an 8-bit kv_cache_dtype",
    KVWidth.MORE: "the pool holds more per token than the attention layers "
    "(draft layers, an indexer, scales)",
    KVWidth.LESS: "the pool holds less per token than the config's attention layers "
    "(fewer layers with KV, as in hybrid or sliding-window models, or a narrower KV dtype)",
}


def mismatch_text(m: Mismatch) -> str:
    """A cross-check finding: what differs from config.json and the likely cause."""
    if isinstance(m, ModelDiffers):
        return model_differs_text(m) + " and no cause is guessed."
    if isinstance(m, KVDiffers):
        return (
            f"A KV cell takes {m.measured_bytes:,} bytes per token; config.json predicts "
            f"{m.expected_bytes:,} ({m.ratio:.2f}x): {_KV_WIDTH[m.width]}."
        )
    head = (
        f"Weights took {format_gib(m.measured_bytes)} GiB per rank; config.json predicts "
        f"{format_gib(m.expected_bytes)} GiB ({format_gib(m.gap_bytes, signed=True)})"
    )
    if m.gap_bytes > 0:
        return (
            f"{head}: likely memory held after load (loader temporaries still referenced), "
            "or weights not sharded as assumed."
        )
    causes, ruled = _smaller_weights_causes(m)
    if not causes:
        return (
            f"{head}: the log rules out the usual causes ({', '.join(ruled)}), so the config "
            "may describe another size or checkpoint of the model."
        )
    out = f"{head}: likely {_or(causes)}"
    return out + (f" ({', '.join(ruled)} in server_args rules out the rest)." if ruled else ".")


def _smaller_weights_causes(m: WeightsDiffer) -> tuple[list[str], list[str]]:
    """The causes of weights smaller than predicted the launch allows, and the facts that
    rule out the others (server_args values as printed)."""
    causes: list[str] = []
    ruled: list[str] = []
    if m.cpu_offload_gb is None:
        causes.append("CPU offload (cpu_offload_gb)")
    elif m.cpu_offload_gb > 0:
        causes.append(f"CPU offload (cpu_offload_gb={m.cpu_offload_gb:g})")
    else:
        ruled.append("cpu_offload_gb=0")
    if m.tied_bound_bytes is None or -m.gap_bytes <= m.tied_bound_bytes + ROUNDING_BYTES:
        causes.append("tied embedding and lm_head weights")
    if m.quantization is not None:
        causes.append(f"quantization={m.quantization!r} storing fewer bytes than assumed")
    elif m.quantization_printed:
        ruled.append("quantization=None")
    else:
        causes.append("a stronger quantisation than the config says")
    return causes, ruled


def _or(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + f" or {items[-1]}"


def model_differs_text(m: ModelDiffers) -> str:
    """config.json against the model the log loaded (no final stop: callers add the rest)."""
    cfg = f"{m.config_arch} ({m.config_name})" if m.config_name else m.config_arch
    where = f"{m.log_path}, line {m.line}" if m.log_path else f"line {m.line}"
    return (
        f"config.json is for {cfg}; the log loads {m.log_arch} ({where}): the config does "
        "not describe this launch, so its expected figures are another model's"
    )
