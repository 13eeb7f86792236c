"""Expected sizes from a model's config.json: parameters, weights per rank, KV bytes, buffers."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from logmem.errors import LogmemError
from logmem.estimate import limits

GIB = 1 << 30

# SGLang's VocabParallelEmbedding pads the vocabulary to a multiple of 64 before splitting it.
VOCAB_PADDING = 64

# SGLANG_DEEPEP_NUM_MAX_DISPATCH_TOKENS_PER_RANK default (reference 12.5, unverified there).
DEFAULT_MAX_DISPATCH_TOKENS = 128

# DeepEP's NUM_BUFFER_ALIGNMENT_BYTES.
DEEPEP_ALIGNMENT = 128

# Latent-MoE models project tokens from hidden_size down to a smaller routed hidden size before
# dispatch. There is no standard Hugging Face key; these are the names we look for, in order.
# `moe_latent_size` is the one our fixtures use (fixtures/configs/latent-moe.json).
LATENT_KEYS = ("moe_latent_size", "routed_hidden_size", "latent_moe_dim")

_SUBCONFIG_KEYS = ("text_config", "llm_config", "language_config")


class EstimateError(LogmemError, ValueError):
    """A config.json that cannot be read, or settings that cannot describe a deployment."""


@dataclass(frozen=True)
class Parallel:
    """Parallel layout of one deployment, as in SGLang's tp/dp/ep/pp sizes."""

    tp: int = 1
    dp: int = 1
    ep: int = 1
    pp: int = 1
    dp_attention: bool = False

    def __post_init__(self) -> None:
        for name in ("tp", "dp", "ep", "pp"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise EstimateError(f"{name} must be a positive integer, got {value!r}")
            try:
                limits.check_parallel(name, value)
            except limits.LimitError as e:
                raise EstimateError(str(e)) from None
        if self.dp_attention and self.tp % self.dp:
            raise EstimateError(
                f"DP attention needs tp divisible by dp, got tp={self.tp}, dp={self.dp}"
            )

    @property
    def attn_tp(self) -> int:
        """Size of the attention TP group: DP attention splits TP into dp groups."""
        return self.tp // self.dp if self.dp_attention else self.tp

    @property
    def moe_tp(self) -> int:
        """TP size inside each expert once EP has taken its share of the TP group."""
        return max(1, self.tp // self.ep)


@dataclass(frozen=True)
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
    why: str


@dataclass(frozen=True)
class Estimate:
    """What the config says one rank should hold. None means the config does not say."""

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
    notes: tuple[str, ...]
    weights_bytes_total: int | None = None
    kv_swa_bytes_per_token_per_rank: int | None = None
    deepep_masked_gemm_bytes: int | None = None


# --------------------------------------------------------------------------- loading


def load_model_config(path: str | Path) -> dict[str, Any]:
    """Read a Hugging Face config.json, or the config.json inside a model folder.

    When the file has no `_name_or_path`, the folder (or file stem) name is put there so the
    estimate can say which model it describes.
    """
    p = Path(path)
    if p.is_dir():
        folder = p
        p = p / "config.json"
        if not p.is_file():
            raise EstimateError(f"{folder} is a folder without a config.json")
        default_name = folder.name
    elif p.is_file():
        default_name = p.parent.name if p.name == "config.json" else p.stem
    else:
        raise EstimateError(f"{p}: no such file or folder")
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise EstimateError(f"{p}: cannot read: {exc}") from exc
    except json.JSONDecodeError as exc:
        raise EstimateError(f"{p}: not valid JSON: {exc}") from exc
    except RecursionError:
        raise EstimateError(f"{p}: nested too deeply to be a model config") from None
    except (ValueError, MemoryError) as exc:  # a 5000-digit number, a value too big to hold
        why = str(exc)[:200] or type(exc).__name__
        raise EstimateError(f"{p}: not a model config: {why}") from None
    if not isinstance(data, dict):
        raise EstimateError(f"{p}: expected a JSON object, got {type(data).__name__}")
    try:
        limits.check_config(data)
    except limits.LimitError as exc:
        raise EstimateError(f"{p}: {exc}") from None
    data.setdefault("_name_or_path", default_name)
    return data


def settings_from_server_args(server_args: Mapping[str, Any]) -> dict[str, Any]:
    """Keyword arguments for estimate() from SGLang's resolved server_args; absent stays absent."""
    out: dict[str, Any] = {}

    def num(key: str) -> int | None:
        value = server_args.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    par: dict[str, Any] = {}
    for key, field in (("tp_size", "tp"), ("dp_size", "dp"), ("ep_size", "ep"), ("pp_size", "pp")):
        value = num(key)
        if value is not None:
            par[field] = value
    if isinstance(server_args.get("enable_dp_attention"), bool):
        par["dp_attention"] = server_args["enable_dp_attention"]
    # Early-2025 dumps had enable_ep_moe instead of ep_size; it meant EP over the whole TP group.
    if server_args.get("enable_ep_moe") is True and par.get("ep", 1) == 1 and "tp" in par:
        par["ep"] = par["tp"]
    if par:
        out["parallel"] = Parallel(**par)

    for key, kwarg in (("dtype", "dtype"), ("kv_cache_dtype", "kv_cache_dtype")):
        value = server_args.get(key)
        if isinstance(value, str) and value:
            out[kwarg] = value
    # quantization=None means "read it from the checkpoint", which estimate() does anyway.
    quant = server_args.get("quantization")
    if isinstance(quant, str) and quant:
        out["quantization"] = quant

    if server_args.get("disable_cuda_graph") is not True:
        max_bs = num("cuda_graph_max_bs")
        if max_bs is None:
            max_bs = num("cuda_graph_max_bs_decode")
        if max_bs is None:
            graph = server_args.get("cuda_graph_config")
            decode = graph.get("decode") if isinstance(graph, Mapping) else None
            if isinstance(decode, Mapping):
                value = decode.get("max_bs")
                if isinstance(value, int) and not isinstance(value, bool):
                    max_bs = value
        if max_bs is not None:
            out["cuda_graph_max_bs"] = max_bs

    draft = num("speculative_num_draft_tokens")
    if draft is not None and server_args.get("speculative_algorithm", "unknown") is not None:
        out["tokens_per_req"] = draft
    for key, kwarg in (
        ("max_running_requests", "max_running_requests"),
        ("context_length", "context_len"),
    ):
        value = num(key)
        if value is not None:
            out[kwarg] = value
    return out


# --------------------------------------------------------------------------- small helpers


def _int(cfg: Mapping[str, Any], *keys: str) -> int | None:
    """First of keys holding a positive integer (integral floats accepted)."""
    for key in keys:
        value = cfg.get(key)
        if isinstance(value, bool):
            continue
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, int) and value > 0:
            return value
    return None


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _text_config(config: Mapping[str, Any]) -> tuple[dict[str, Any], Mapping[str, Any] | None]:
    """Flatten a multimodal config: the text sub-config wins, top-level keys fill the gaps."""
    if isinstance(config.get("thinker_config"), Mapping):  # Qwen-Omni nests one level deeper
        return _text_config(config["thinker_config"])
    vision = config.get("vision_config")
    vision = vision if isinstance(vision, Mapping) else None
    for key in _SUBCONFIG_KEYS:
        sub = config.get(key)
        if isinstance(sub, Mapping):
            merged = {k: v for k, v in config.items() if k not in _SUBCONFIG_KEYS}
            merged.update(sub)
            return merged, vision
    return dict(config), vision


_DTYPES = {
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
_KV_DTYPES = {
    "fp8_e4m3": ("fp8_e4m3", 1.0, 0.0),
    "fp8_e5m2": ("fp8_e5m2", 1.0, 0.0),
    "fp8": ("fp8_e4m3", 1.0, 0.0),
    "float8_e4m3fn": ("fp8_e4m3", 1.0, 0.0),
    "float8_e5m2": ("fp8_e5m2", 1.0, 0.0),
    # FP4 KV keeps one FP8 scale per 16 elements (NVFP4 layout); assumed, not read from source.
    "fp4_e2m1": ("fp4_e2m1", 0.5, 1 / 16),
    "fp4": ("fp4_e2m1", 0.5, 1 / 16),
}


def _norm(name: str) -> str:
    return name.strip().lower().removeprefix("torch.")


def _resolve_dtype(
    dtype: str | None, cfg: Mapping[str, Any], notes: list[str]
) -> tuple[str, float]:
    if dtype is not None and _norm(dtype) != "auto":
        found = _DTYPES.get(_norm(dtype))
        if found is None:
            raise EstimateError(
                f"unknown dtype {dtype!r}; expected one of bfloat16, float16, float32 or auto"
            )
        return found
    cfg_dtype = cfg.get("torch_dtype", cfg.get("dtype"))
    found = _DTYPES.get(_norm(cfg_dtype)) if isinstance(cfg_dtype, str) else None
    if found is None:
        notes.append("config has no torch_dtype; assumed bfloat16 weights")
        return "bfloat16", 2.0
    if found[0] == "float32":
        # SGLang's dtype=auto serves float32 checkpoints in bfloat16.
        notes.append("config torch_dtype is float32; dtype auto serves it as bfloat16")
        return "bfloat16", 2.0
    return found


def _resolve_kv_dtype(kv: str | None, dtype: tuple[str, float]) -> tuple[str, float, float]:
    if kv is None or _norm(kv) == "auto":
        return dtype[0], dtype[1], 0.0
    key = _norm(kv)
    if key in _KV_DTYPES:
        return _KV_DTYPES[key]
    if key in _DTYPES:
        name, size = _DTYPES[key]
        return name, size, 0.0
    raise EstimateError(
        f"unknown kv_cache_dtype {kv!r}; expected auto, bfloat16, float16, "
        "fp8_e4m3, fp8_e5m2 or fp4_e2m1"
    )


@dataclass(frozen=True)
class _Quant:
    """How the quantised linear layers are stored; None bytes means we cannot tell."""

    name: str | None
    bytes_per_param: float | None
    skip_attention: bool = False
    skip_shared: bool = False


def _quant_detail(name: str, qc: Mapping[str, Any], notes: list[str]) -> float | None:
    """Bytes per weight of a quantised linear layer, scales included where they are blocked."""
    block = qc.get("weight_block_size")
    if name in ("fp8", "modelopt_fp8", "w8a8_fp8", "fbgemm_fp8", "modelopt"):
        if (
            isinstance(block, Sequence)
            and len(block) == 2
            and all(isinstance(b, int) and b > 0 for b in block)
        ):
            rows, cols = int(block[0]), int(block[1])
            notes.append(f"FP8 weights: 1 byte plus one FP32 scale per {rows}x{cols} block")
            return 1.0 + 4.0 / (rows * cols)
        notes.append("FP8 weights: 1 byte; per-tensor or per-channel scales ignored")
        return 1.0
    if name in ("w8a8_int8", "int8"):
        notes.append("INT8 weights: 1 byte; per-channel scales ignored")
        return 1.0
    if name in ("modelopt_fp4", "nvfp4", "w4a4_nvfp4"):
        notes.append("FP4 weights: 0.5 byte plus one FP8 scale per 16 weights")
        return 0.5 + 1.0 / 16
    if name == "mxfp4":
        notes.append("MXFP4 weights: 0.5 byte plus one E8M0 scale per 32 weights")
        return 0.5 + 1.0 / 32
    if name in ("awq", "awq_marlin", "gptq", "gptq_marlin", "marlin", "moe_wna16"):
        bits = _int(qc, "bits", "w_bit") or 4
        group = qc.get("group_size", qc.get("q_group_size", 128))
        if isinstance(group, int) and group > 0:
            notes.append(
                f"{name}: {bits}-bit weights plus an FP16 scale and a packed zero per "
                f"group of {group}"
            )
            return bits / 8 + (2 + bits / 8) / group
        notes.append(f"{name}: {bits}-bit weights; per-channel scales ignored")
        return bits / 8
    if name == "compressed-tensors":
        groups = qc.get("config_groups")
        first = next(iter(groups.values()), None) if isinstance(groups, Mapping) else None
        weights = first.get("weights") if isinstance(first, Mapping) else None
        if not isinstance(weights, Mapping) or _int(weights, "num_bits") is None:
            notes.append("compressed-tensors config without weight bits; weight bytes unknown")
            return None
        bits = _int(weights, "num_bits") or 8
        strategy = weights.get("strategy")
        group = _int(weights, "group_size")
        blocks = weights.get("block_structure")
        base = bits / 8
        if strategy == "group" and group:
            scale = 1.0 if (weights.get("type") == "float" and bits == 4) else 2.0
            notes.append(f"compressed-tensors: {bits}-bit weights, one scale per {group}")
            return base + scale / group
        if strategy == "block" and isinstance(blocks, Sequence) and len(blocks) == 2:
            notes.append(f"compressed-tensors: {bits}-bit weights, FP32 scale per block")
            return base + 4.0 / (int(blocks[0]) * int(blocks[1]))
        notes.append(f"compressed-tensors: {bits}-bit weights; {strategy} scales ignored")
        return base
    notes.append(f"quantization {name!r} is not modelled; quantised weight bytes unknown")
    return None


def _resolve_quant(quantization: str | None, cfg: Mapping[str, Any], notes: list[str]) -> _Quant:
    qc_raw = cfg.get("quantization_config", cfg.get("compression_config"))
    qc: Mapping[str, Any] = qc_raw if isinstance(qc_raw, Mapping) else {}
    cfg_method = qc.get("quant_method")
    cfg_method = cfg_method.lower() if isinstance(cfg_method, str) else None
    if quantization is None or quantization.lower() in ("", "none", "auto"):
        name = cfg_method
        if name is None:
            return _Quant(None, None)
    else:
        name = quantization.lower()
        if cfg_method is not None and cfg_method != name:
            # Block sizes and group sizes describe the checkpoint's own method only.
            notes.append(f"quantization {name} overrides the checkpoint's {cfg_method}")
            qc = {}
    ignore = qc.get("ignore", qc.get("modules_to_not_convert")) or []
    ignore_text = " ".join(str(x) for x in ignore) if isinstance(ignore, Sequence) else ""
    skip_attn = "attn" in ignore_text
    skip_shared = "shared_expert" in ignore_text
    if skip_attn:
        notes.append("quantization config leaves attention unquantised")
    if skip_shared:
        notes.append("quantization config leaves shared experts unquantised")
    return _Quant(name, _quant_detail(name, qc, notes), skip_attn, skip_shared)


# --------------------------------------------------------------------------- layer plan


@dataclass(frozen=True)
class _Layer:
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


def _num_experts(cfg: Mapping[str, Any]) -> int | None:
    return _int(cfg, "n_routed_experts", "num_experts", "num_local_experts", "moe_num_experts")


def _layer_plan(
    cfg: Mapping[str, Any], n_layers: int | None, notes: list[str]
) -> list[_Layer] | None:
    pattern = cfg.get("hybrid_override_pattern")
    if isinstance(pattern, str) and pattern:
        # Nemotron-H style: one character per layer, each layer is one block.
        kinds = {
            "M": _Layer("mamba", "none"),
            "*": _Layer("full", "none"),
            "-": _Layer("none", "dense"),
            "E": _Layer("none", "moe"),
        }
        odd = sorted({c for c in pattern if c not in kinds})
        if odd:
            notes.append(
                f"hybrid_override_pattern has unknown blocks {odd}; treated as full attention"
            )
        return [kinds.get(c, _Layer("full", "none")) for c in pattern]
    if n_layers is None:
        return None

    attn = ["full"] * n_layers
    layer_types = cfg.get("layer_types")
    if isinstance(layer_types, Sequence) and not isinstance(layer_types, str) and layer_types:
        if len(layer_types) != n_layers:
            notes.append(
                f"layer_types has {len(layer_types)} entries for {n_layers} layers; "
                "repeated them in order"
            )
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
            notes.append(
                f"layer_types {sorted(unknown)} not recognised; counted as full "
                "attention (larger KV cell)"
            )
    elif (interval := _int(cfg, "full_attention_interval")) is not None:
        # Qwen3-Next style: every interval-th layer is full attention, the rest linear.
        attn = ["full" if (i + 1) % interval == 0 else "linear" for i in range(n_layers)]
        notes.append(
            f"full_attention_interval {interval}: layers other than every "
            f"{interval}th are linear attention"
        )
    elif (swa_pattern := _int(cfg, "sliding_window_pattern")) is not None:
        # Gemma-3 style: every swa_pattern-th layer is global, the rest slide.
        attn = ["full" if (i + 1) % swa_pattern == 0 else "sliding" for i in range(n_layers)]
        notes.append(
            f"sliding_window_pattern {swa_pattern}: every {swa_pattern}th layer is "
            "full attention, the others sliding window"
        )
    elif str(cfg.get("model_type", "")).startswith("gemma2") and cfg.get("sliding_window"):
        attn = ["sliding" if i % 2 == 0 else "full" for i in range(n_layers)]
        notes.append("gemma2: even layers sliding window, odd layers full attention")
    elif cfg.get("sliding_window") and cfg.get("use_sliding_window") is not False:
        notes.append(
            f"sliding_window {cfg['sliding_window']} with no per-layer pattern; "
            "counted every layer as full attention (conservative)"
        )
    if cfg.get("attention_chunk_size") and "sliding" not in attn:
        notes.append("attention_chunk_size set; chunked layers counted as full attention")

    mlp = ["dense"] * n_layers
    if _num_experts(cfg) is not None:
        first_dense = _int(cfg, "first_k_dense_replace") or 0
        freq = _int(cfg, "moe_layer_freq") or 1
        step = _int(cfg, "decoder_sparse_step", "interleave_moe_layer_step") or 1
        only_dense_raw = cfg.get("mlp_only_layers") or []
        only_dense = set(only_dense_raw) if isinstance(only_dense_raw, Sequence) else set()
        for i in range(n_layers):
            if i >= first_dense and i % freq == 0 and (i + 1) % step == 0 and i not in only_dense:
                mlp[i] = "moe"
    return [_Layer(a, m) for a, m in zip(attn, mlp, strict=True)]


def _pp_stages(n_layers: int, pp: int) -> list[range]:
    """Layer ranges per PP stage, as SGLang's get_pp_indices splits them."""
    sizes = [n_layers // pp] * pp
    for i in range(2, n_layers % pp + 2):  # extra layers go to the stages before the last
        sizes[-i] += 1
    out, start = [], 0
    for size in sizes:
        out.append(range(start, start + size))
        start += size
    return out


# --------------------------------------------------------------------------- per-layer pieces


@dataclass(frozen=True)
class _Piece:
    """Weights of one component in one layer (or once per model)."""

    name: str
    params: int | None
    rank_params: int | None
    sharding: str
    why: str
    quantised: bool


def _split(divisor: int) -> str:
    return "split" if divisor > 1 else "whole"


def _repl(group: int) -> str:
    return "replicated" if group > 1 else "whole"


def _over(group: int, label: str = "TP") -> str:
    return f"split over {label} {group}" if group > 1 else "on one rank"


class _Model:
    """The text model's dimensions, read once, with the pieces each layer is made of."""

    def __init__(self, cfg: Mapping[str, Any], par: Parallel, notes: list[str]) -> None:
        self.cfg = cfg
        self.par = par
        self.notes = notes
        self.hidden = _int(cfg, "hidden_size", "n_embd", "d_model", "dim")
        self.heads = _int(cfg, "num_attention_heads", "n_head", "num_heads", "n_heads")
        self.kv_heads = (
            _int(cfg, "num_key_value_heads", "num_kv_heads", "n_kv_heads", "multi_query_group_num")
            or self.heads
        )
        head_dim = _int(cfg, "head_dim", "attention_head_dim")
        if head_dim is None and self.hidden and self.heads:
            head_dim = self.hidden // self.heads
        self.head_dim = head_dim
        self.intermediate = _int(cfg, "intermediate_size", "ffn_hidden_size", "n_inner", "ffn_dim")
        self.vocab = _int(cfg, "vocab_size", "padded_vocab_size")
        self.mla = _int(cfg, "kv_lora_rank") is not None
        self.kv_lora = _int(cfg, "kv_lora_rank")
        self.q_lora = _int(cfg, "q_lora_rank")
        self.rope = _int(cfg, "qk_rope_head_dim")
        self.nope = _int(cfg, "qk_nope_head_dim")
        self.v_head = _int(cfg, "v_head_dim") if self.mla else head_dim
        self.index_head_dim = _int(cfg, "index_head_dim")
        self.experts = _num_experts(cfg)
        self.moe_inter = _int(cfg, "moe_intermediate_size", "expert_intermediate_size") or (
            self.intermediate if self.experts else None
        )
        self.latent = _int(cfg, *LATENT_KEYS)
        self.routed_hidden = self.latent or self.hidden
        model_type = str(cfg.get("model_type", "")).lower()
        act = str(cfg.get("mlp_hidden_act", cfg.get("hidden_act", ""))).lower()
        # Gated MLPs (SwiGLU/GeGLU) have gate, up and down; these families have only up and down.
        non_gated = {
            "gpt2",
            "gpt_bigcode",
            "starcoder2",
            "phi",
            "falcon",
            "gpt_neox",
            "opt",
            "bloom",
            "gptj",
        }
        self.mlp_mats = 2 if (act in ("relu2", "relu^2") or model_type in non_gated) else 3
        bias = cfg.get("attention_bias", cfg.get("qkv_bias"))
        # Qwen2 hard-codes q/k/v biases without a config key.
        self.qkv_bias = bias is True or (bias is None and model_type.startswith("qwen2"))
        self.q_gate = cfg.get("attn_output_gate") is True

    # -- attention ------------------------------------------------------------------------

    def _attn_over(self) -> str:
        t = self.par.attn_tp
        if t == 1 and self.par.tp > 1:
            return f"whole on each rank (DP attention, {self.par.dp} copies)"
        return _over(t, "attention TP")

    def _attn_shard(self) -> str:
        # Under DP attention each DP group holds its own copy of the attention weights.
        if self.par.attn_tp > 1:
            return "split"
        return "replicated" if self.par.tp > 1 else "whole"

    def attention(self) -> list[_Piece]:
        if self.mla:
            return self._mla()
        h, nq, nkv, d = self.hidden, self.heads, self.kv_heads, self.head_dim
        if h is None or nq is None or nkv is None or d is None:
            return [_Piece("attn", None, None, "whole", "attention sizes missing in config", True)]
        t = self.par.attn_tp
        q_rank_heads = _ceil_div(nq, t)
        kv_rank_heads = max(1, nkv // t)
        q_mult = 2 if self.q_gate else 1
        bias_q = nq * d * q_mult if self.qkv_bias else 0
        bias_kv = 2 * nkv * d if self.qkv_bias else 0
        pieces = [
            _Piece(
                "attn.q",
                h * nq * d * q_mult + bias_q,
                (h * d * q_mult + (d * q_mult if self.qkv_bias else 0)) * q_rank_heads,
                self._attn_shard(),
                f"{nq} query heads, {q_rank_heads} per rank"
                f" (attention TP {t})" + (" (output gate doubles q)" if self.q_gate else ""),
                True,
            ),
        ]
        kv_rank = (2 * h * d + (2 * d if self.qkv_bias else 0)) * kv_rank_heads
        if t == 1:
            kv_sharding, kv_why = self._attn_shard(), f"all {nkv} KV heads (attention TP 1)"
        elif nkv >= t:
            kv_sharding = "split"
            kv_why = f"{nkv} KV heads, {kv_rank_heads} per rank (attention TP {t})"
        else:
            kv_sharding = "replicated"
            kv_why = f"{nkv} KV heads < attention TP {t}: 1 per rank, each copied {t // nkv}x"
        pieces.append(
            _Piece("attn.kv", 2 * h * nkv * d + bias_kv, kv_rank, kv_sharding, kv_why, True)
        )
        pieces.append(
            _Piece(
                "attn.o",
                nq * d * h,
                q_rank_heads * d * h,
                self._attn_shard(),
                f"row-parallel, {self._attn_over()}",
                True,
            )
        )
        return pieces

    def _mla(self) -> list[_Piece]:
        h, nq, kv_lora, rope = self.hidden, self.heads, self.kv_lora, self.rope
        nope, v = self.nope, self.v_head
        if None in (h, nq, kv_lora, rope, nope, v):
            return [_Piece("attn", None, None, "whole", "MLA sizes missing in config", True)]
        assert h and nq and kv_lora and rope and nope and v
        t = self.par.attn_tp
        rank_heads = _ceil_div(nq, t)
        qk = nope + rope
        pieces: list[_Piece] = []
        if self.q_lora:
            pieces.append(
                _Piece(
                    "attn.q_a",
                    h * self.q_lora,
                    h * self.q_lora,
                    _repl(self.par.tp),
                    f"q down-projection to q_lora_rank {self.q_lora}, replicated linear",
                    True,
                )
            )
            pieces.append(
                _Piece(
                    "attn.q_b",
                    self.q_lora * nq * qk,
                    self.q_lora * rank_heads * qk,
                    self._attn_shard(),
                    f"{nq} heads, {self._attn_over()}",
                    True,
                )
            )
        else:
            pieces.append(
                _Piece(
                    "attn.q",
                    h * nq * qk,
                    h * rank_heads * qk,
                    self._attn_shard(),
                    f"{nq} heads, {self._attn_over()}",
                    True,
                )
            )
        pieces.append(
            _Piece(
                "attn.kv_a",
                h * (kv_lora + rope),
                h * (kv_lora + rope),
                _repl(self.par.tp),
                f"down-projection to kv_lora_rank {kv_lora} + rope {rope}, replicated linear",
                True,
            )
        )
        pieces.append(
            _Piece(
                "attn.kv_b",
                kv_lora * nq * (nope + v),
                kv_lora * rank_heads * (nope + v),
                self._attn_shard(),
                f"{nq} heads, {self._attn_over()}",
                True,
            )
        )
        pieces.append(
            _Piece(
                "attn.o",
                nq * v * h,
                rank_heads * v * h,
                self._attn_shard(),
                f"row-parallel, {self._attn_over()}",
                True,
            )
        )
        if self.index_head_dim:
            idim = self.index_head_dim
            nh = _int(self.cfg, "index_n_heads") or 64
            q_in = self.q_lora or h
            params = q_in * nh * idim + h * idim + 2 * idim + h * nh
            pieces.append(
                _Piece(
                    "attn.indexer",
                    params,
                    params,
                    _repl(self.par.tp),
                    f"DSA indexer ({nh} heads x {idim}), replicated",
                    True,
                )
            )
        return pieces

    def linear_attention(self) -> _Piece:
        """Gated DeltaNet (Qwen3-Next style) projections; None when the keys are absent."""
        h = self.hidden
        nk = _int(self.cfg, "linear_num_key_heads")
        dk = _int(self.cfg, "linear_key_head_dim")
        nv = _int(self.cfg, "linear_num_value_heads")
        dv = _int(self.cfg, "linear_value_head_dim")
        kernel = _int(self.cfg, "linear_conv_kernel_dim") or 4
        t = self.par.attn_tp
        if h is None or nk is None or dk is None or nv is None or dv is None:
            return _Piece(
                "attn.linear",
                None,
                None,
                self._attn_shard(),
                "linear-attention sizes missing in config",
                True,
            )
        params = (
            h * (2 * nk * dk + 2 * nv * dv)
            + h * 2 * nv
            + (2 * nk * dk + nv * dv) * kernel
            + 2 * nv
            + dv
            + nv * dv * h
        )
        return _Piece(
            "attn.linear",
            params,
            _ceil_div(params, t),
            self._attn_shard(),
            f"gated DeltaNet ({nk} key / {nv} value heads), {self._attn_over()}",
            True,
        )

    # -- MLP --------------------------------------------------------------------------------

    def dense_mlp(self) -> _Piece:
        h, inter, tp = self.hidden, self.intermediate, self.par.tp
        if h is None or inter is None:
            return _Piece("mlp.dense", None, None, _split(tp), "intermediate_size missing", True)
        m = self.mlp_mats
        return _Piece(
            "mlp.dense",
            m * h * inter,
            m * h * _ceil_div(inter, tp),
            _split(tp),
            f"intermediate {inter} {_over(tp)}",
            True,
        )

    def moe(self) -> list[_Piece]:
        h, e, inter, hr = self.hidden, self.experts, self.moe_inter, self.routed_hidden
        par, m = self.par, self.mlp_mats
        if h is None or e is None or inter is None or hr is None:
            return [_Piece("moe.experts", None, None, "split", "MoE sizes missing", True)]
        local = _ceil_div(e, par.ep)
        rank_inter = _ceil_div(inter, par.moe_tp)
        if par.ep > 1:
            why = f"{e} experts over EP {par.ep}: {local} per rank"
            if par.moe_tp > 1:
                why += f", intermediate split over MoE TP {par.moe_tp}"
        else:
            why = f"all {e} experts on every rank, intermediate {_over(par.tp)}"
        if self.latent:
            why += f"; routed hidden {hr} (latent)"
        pieces = [
            _Piece(
                "moe.experts",
                e * m * hr * inter,
                local * m * hr * rank_inter,
                _split(par.ep * par.moe_tp),
                why,
                True,
            )
        ]
        n_shared = _int(self.cfg, "n_shared_experts", "num_shared_experts")
        shared_inter = _int(self.cfg, "shared_expert_intermediate_size")
        if shared_inter is None and n_shared:
            shared_inter = n_shared * inter
        if shared_inter:
            gate = h if _int(self.cfg, "shared_expert_intermediate_size") else 0
            pieces.append(
                _Piece(
                    "moe.shared",
                    m * h * shared_inter + gate,
                    m * h * _ceil_div(shared_inter, par.tp) + gate,
                    _split(par.tp),
                    f"shared intermediate {shared_inter} {_over(par.tp)}",
                    True,
                )
            )
        bias = e if self.cfg.get("topk_method") == "noaux_tc" else 0
        pieces.append(
            _Piece(
                "moe.router",
                e * h + bias,
                e * h + bias,
                _repl(par.tp),
                "gate over full hidden, replicated, kept unquantised",
                False,
            )
        )
        if self.latent:
            proj = 2 * h * self.latent
            pieces.append(
                _Piece(
                    "moe.latent_proj",
                    proj,
                    proj,
                    _repl(par.tp),
                    f"hidden {h} <-> latent {self.latent} projections; assumed "
                    "replicated and unquantised",
                    False,
                )
            )
        return pieces

    def norms(self, layer: _Layer) -> int | None:
        if self.hidden is None:
            return None
        # Two RMSNorms per layer; MLA adds the latent norms. Per-model extras are ignored.
        n = 2 * self.hidden if layer.attn != "none" and layer.mlp != "none" else self.hidden
        if self.mla and layer.attn != "none":
            n += (self.q_lora or 0) + (self.kv_lora or 0)
        return n

    def layer_pieces(self, layer: _Layer) -> list[_Piece]:
        pieces: list[_Piece] = []
        if layer.attn in ("full", "sliding"):
            pieces += self.attention()
        elif layer.attn == "linear":
            pieces.append(self.linear_attention())
        elif layer.attn == "mamba":
            pieces.append(
                _Piece(
                    "mamba",
                    None,
                    None,
                    _split(self.par.tp),
                    "Mamba mixer weights not modelled",
                    True,
                )
            )
        if layer.mlp == "dense":
            pieces.append(self.dense_mlp())
        elif layer.mlp == "moe":
            pieces += self.moe()
        n = self.norms(layer)
        pieces.append(
            _Piece("norms", n, n, _repl(self.par.tp), "RMSNorm weights, replicated", False)
        )
        return pieces

    # -- once-per-model pieces --------------------------------------------------------------

    def tied(self) -> bool:
        value = self.cfg.get("tie_word_embeddings")
        if isinstance(value, bool):
            return value
        # Hugging Face's default depends on the class: Gemma ties, Llama/Qwen/DeepSeek do not.
        guess = str(self.cfg.get("model_type", "")).startswith("gemma")
        self.notes.append(f"tie_word_embeddings absent; assumed {'tied' if guess else 'untied'}")
        return guess

    def embedding(self) -> _Piece:
        h, v, par = self.hidden, self.vocab, self.par
        if h is None or v is None:
            return _Piece("embedding", None, None, "split", "vocab_size or hidden missing", False)
        padded = _ceil_div(v, VOCAB_PADDING) * VOCAB_PADDING
        tied = " (tied with lm_head)" if self.tied() else ""
        if par.dp_attention and par.tp > 1:
            # deepseek_v2-style models build the embedding without TP under DP attention.
            return _Piece(
                "embedding",
                v * h,
                padded * h,
                "replicated",
                f"vocab {v} whole on every rank under DP attention{tied}",
                False,
            )
        return _Piece(
            "embedding",
            v * h,
            _ceil_div(padded, par.tp) * h,
            _split(par.tp),
            f"vocab {v} (padded {padded}) {_over(par.tp)}{tied}",
            False,
        )

    def lm_head(self) -> _Piece | None:
        h, v, par = self.hidden, self.vocab, self.par
        if h is None or v is None:
            return _Piece("lm_head", None, None, "split", "vocab_size or hidden missing", False)
        padded = _ceil_div(v, VOCAB_PADDING) * VOCAB_PADDING
        rank = _ceil_div(padded, par.tp) * h
        if self.tied():
            if par.pp == 1:
                return None
            return _Piece(
                "lm_head",
                0,
                rank,
                _split(par.tp),
                "tied with the embedding, but the last PP stage holds its own copy",
                False,
            )
        return _Piece(
            "lm_head",
            v * h,
            rank,
            _split(par.tp),
            f"vocab {v} (padded {padded}) {_over(par.tp)}",
            False,
        )


def _vision_piece(vision: Mapping[str, Any], text_hidden: int | None, tp: int) -> _Piece:
    """A ViT tower plus a linear projector; approximate, for multimodal checkpoints."""
    h = _int(vision, "embed_dim", "hidden_size", "width")
    layers = _int(vision, "num_hidden_layers", "depth", "num_layers", "layers")
    inter = _int(vision, "intermediate_size")
    if inter is None and h is not None:
        ratio = vision.get("mlp_ratio")
        inter = int(h * ratio) if isinstance(ratio, (int, float)) else None
    if h is None or layers is None or inter is None:
        return _Piece("vision", None, None, _split(tp), "vision_config sizes missing", False)
    # Per layer: q,k,v,o with biases, a two-matrix MLP with biases, two LayerNorms.
    per_layer = 4 * h * h + 4 * h + 2 * h * inter + h + inter + 4 * h
    params = layers * per_layer + 2 * h
    patch, image = _int(vision, "patch_size"), _int(vision, "image_size")
    if patch:
        params += 3 * patch * patch * h + h
        if image:
            params += (image // patch) ** 2 * h
    if text_hidden:
        params += h * text_hidden
    return _Piece(
        "vision",
        params,
        _ceil_div(params, tp),
        _split(tp),
        f"approximate ViT ({layers} layers, width {h}) and projector; assumed TP-split",
        False,
    )


# --------------------------------------------------------------------------- buffers


def deepep_low_latency_bytes(
    max_dispatch_tokens: int,
    hidden: int,
    num_experts: int,
    num_ranks: int = 1,
    *,
    scaled_combine: bool = False,
) -> int:
    """DeepEP low-latency RDMA buffer per rank (get_low_latency_rdma_size_hint, reference 12.5).

    scaled_combine=False is the original layout (combine messages of 2*H bytes, E*4 signal
    bytes); True is the newer one that adds per-128-channel scales to each combine message
    and local-expert flags to the signal buffer.
    """
    t, h, e = max_dispatch_tokens, hidden, num_experts
    num_scales = h // 128
    dispatch_msg = 16 + max(2 * h, h + 4 * num_scales)
    combine_msg = 4 * num_scales + 2 * h if scaled_combine else 2 * h
    send = max(t * dispatch_msg, e * t * combine_msg)
    recv = max(e * t * dispatch_msg, e * t * combine_msg)
    local = _ceil_div(e, max(1, num_ranks))
    signal = e * 8 + local * 4 if scaled_combine else e * 4
    signal = _ceil_div(signal, 128) * 128
    total = 2 * (send + recv + signal)
    return _ceil_div(total, DEEPEP_ALIGNMENT) * DEEPEP_ALIGNMENT


def deepep_masked_gemm_bytes(
    max_dispatch_tokens: int, num_experts: int, moe_intermediate: int, num_ranks: int = 1
) -> int:
    """Masked grouped-GEMM intermediates for one DeepEP low-latency step, per rank.

    Rows are local experts x (max_dispatch x ranks), about num_experts x max_dispatch. Each row
    holds the gate/up output (2 x intermediate, BF16) and its activated FP8 copy with one FP32
    scale per 128 values. The down-projection output is not counted.
    """
    ranks = max(1, num_ranks)
    rows = _ceil_div(num_experts, ranks) * max_dispatch_tokens * ranks
    per_row = 2 * moe_intermediate * 2 + moe_intermediate + _ceil_div(moe_intermediate, 128) * 4
    return rows * per_row


# --------------------------------------------------------------------------- estimate


def _sum(values: Sequence[int | None]) -> int | None:
    return None if any(v is None for v in values) else sum(v for v in values if v is not None)


def _kv_elements(model: _Model, layer: _Layer, attn_tp: int) -> tuple[int, int] | None:
    """(KV elements, fixed index bytes) per token for one attention layer on one rank."""
    if model.mla:
        if model.kv_lora is None or model.rope is None:
            return None
        # DSA index keys are FP8 with one FP32 scale per 128, whatever the KV dtype.
        idx = model.index_head_dim
        index_bytes = idx + _ceil_div(idx, 128) * 4 if idx else 0
        return model.kv_lora + model.rope, index_bytes
    if model.kv_heads is None or model.head_dim is None or model.v_head is None:
        return None
    heads = max(1, model.kv_heads // attn_tp)
    return heads * (model.head_dim + model.v_head), 0


def _kv_bytes(
    model: _Model,
    layers: Sequence[_Layer],
    kinds: tuple[str, ...],
    elem: float,
    scale: float,
    attn_tp: int,
) -> int | None:
    elements = 0
    fixed = 0
    count = 0
    for layer in layers:
        if layer.attn not in kinds:
            continue
        got = _kv_elements(model, layer, attn_tp)
        if got is None:
            return None
        elements += got[0]
        fixed += got[1]
        count += 1
    return math.ceil(elements * (elem + scale)) + fixed if count else 0


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
) -> Estimate:
    """Expected per-rank weights, KV bytes per token and static buffers for one deployment."""
    notes: list[str] = []
    cfg, vision = _text_config(config)
    par = parallel
    dt = _resolve_dtype(dtype, cfg, notes)
    kv_name, kv_elem, kv_scale = _resolve_kv_dtype(kv_cache_dtype, dt)
    if kv_name.startswith("fp8"):
        notes.append("FP8 KV: 1 byte per element; per-layer k/v scale scalars ignored")
    elif kv_name.startswith("fp4"):
        notes.append("FP4 KV: 0.5 byte per element plus one FP8 scale per 16 (assumed layout)")
    quant = _resolve_quant(quantization, cfg, notes)
    model = _Model(cfg, par, notes)
    n_layers = _int(cfg, "num_hidden_layers", "n_layer", "num_layers", "n_layers")
    plan = _layer_plan(cfg, n_layers, notes)

    def bpp(piece: _Piece) -> float | None:
        if not piece.quantised or quant.name is None:
            return dt[1]
        if quant.skip_attention and piece.name.startswith("attn"):
            return dt[1]
        if quant.skip_shared and piece.name == "moe.shared":
            return dt[1]
        return quant.bytes_per_param

    # Per PP stage: the pieces it holds. Embedding on the first, lm_head and final norm on the
    # last, as SGLang's PPMissingLayer placement does.
    stages: list[list[_Piece]] = []
    all_pieces: list[_Piece] = []
    ranges = _pp_stages(len(plan), par.pp) if plan is not None else [range(0)] * par.pp
    emb, head = model.embedding(), model.lm_head()
    final_norm = _Piece(
        "norms", model.hidden, model.hidden, _repl(par.tp), "RMSNorm weights, replicated", False
    )
    vis = _vision_piece(vision, model.hidden, par.tp) if vision is not None else None
    for s, layer_range in enumerate(ranges):
        pieces: list[_Piece] = []
        if s == 0:
            pieces.append(emb)
            if vis is not None:
                pieces.append(vis)
        if plan is not None:
            for i in layer_range:
                pieces += model.layer_pieces(plan[i])
        else:
            pieces.append(_Piece("layers", None, None, "split", "num_hidden_layers missing", True))
        if s == par.pp - 1:
            if head is not None:
                pieces.append(head)
            pieces.append(final_norm)
        stages.append(pieces)
        all_pieces += pieces

    def rank_bytes(piece: _Piece) -> int | None:
        b = bpp(piece)
        return None if b is None or piece.rank_params is None else round(piece.rank_params * b)

    stage_bytes = [_sum([rank_bytes(p) for p in st]) for st in stages]
    stage_params = [_sum([p.rank_params for p in st]) for st in stages]
    known = stage_bytes if all(b is not None for b in stage_bytes) else stage_params
    pick = max(range(par.pp), key=lambda s: known[s] or 0)
    if par.pp > 1:
        layer_range = ranges[pick]
        notes.append(
            f"PP {par.pp}: per-rank figures are for the heaviest stage, {pick} "
            f"(layers {layer_range.start}-{layer_range.stop - 1})"
        )

    # One Component per name: params summed over the model, bytes over the picked stage only.
    order: list[str] = []
    info: dict[str, _Piece] = {}
    totals: dict[str, list[int | None]] = {}
    total_bytes: dict[str, list[int | None]] = {}
    for p in all_pieces:
        if p.name not in info:
            order.append(p.name)
            info[p.name] = p
            totals[p.name] = []
            total_bytes[p.name] = []
        totals[p.name].append(p.params)
        b = bpp(p)
        total_bytes[p.name].append(None if b is None or p.params is None else round(p.params * b))
    rank_by_name: dict[str, list[int | None]] = {name: [] for name in order}
    for p in stages[pick]:
        rank_by_name[p.name].append(rank_bytes(p))
    canonical = (
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
    order.sort(
        key=lambda n: next((i for i, c in enumerate(canonical) if n.startswith(c)), len(canonical))
    )
    components = []
    for name in order:
        first = info[name]
        rank_list = rank_by_name[name]
        why = first.why
        if par.pp > 1 and not rank_list:
            why += f"; not on PP stage {pick}"
        components.append(
            Component(
                name, _sum(totals[name]), _sum(rank_list) if rank_list else 0, first.sharding, why
            )
        )

    params_total = _sum([c.params for c in components])
    weights_total = _sum([b for name in order for b in total_bytes[name]])
    weights_rank = stage_bytes[pick]

    # KV cell per rank: the largest over PP stages, since the smallest stage pool bounds tokens.
    kv_rank: int | None = None
    kv_swa: int | None = None
    if plan is not None:
        per_stage = [
            _kv_bytes(model, [plan[i] for i in r], ("full",), kv_elem, kv_scale, par.attn_tp)
            for r in ranges
        ]
        swa_stage = [
            _kv_bytes(model, [plan[i] for i in r], ("sliding",), kv_elem, kv_scale, par.attn_tp)
            for r in ranges
        ]
        full_layers = sum(1 for layer in plan if layer.attn == "full")
        # A stage without such layers holds 0 bytes; a model without them has no such pool.
        if full_layers and all(v is not None for v in per_stage):
            kv_rank = max(v for v in per_stage if v is not None)
        if any(layer.attn == "sliding" for layer in plan) and all(v is not None for v in swa_stage):
            kv_swa = max(v for v in swa_stage if v is not None)
        other = {
            k: sum(1 for layer in plan if layer.attn == k) for k in ("sliding", "linear", "mamba")
        }
        if any(other.values()):
            parts = ", ".join(f"{n} {k}" for k, n in other.items() if n)
            notes.append(
                f"KV per token counts the {full_layers} full-attention layers only "
                f"({parts} layers are in their own pools)"
            )
        if kv_swa is not None:
            both = [
                _kv_bytes(
                    model, [plan[i] for i in r], ("full", "sliding"), kv_elem, kv_scale, par.attn_tp
                )
                for r in ranges
            ]
            if all(v is not None for v in both):
                notes.append(
                    f"sliding-window layers need {kv_swa:,} bytes per token in the "
                    "SWA pool; without the hybrid SWA pool every layer is full: "
                    f"{max(v or 0 for v in both):,} bytes per token"
                )
        if other["linear"] or other["mamba"]:
            notes.append(
                "linear-attention / Mamba state is per request, not per token; not estimated"
            )
        if model.mla:
            notes.append("MLA KV: (kv_lora_rank + qk_rope_head_dim) per layer, no TP divisor")
        if model.index_head_dim:
            notes.append(
                f"DSA index keys: {model.index_head_dim} FP8 bytes plus FP32 scales "
                "per layer, included in KV per token"
            )
    kv_per_gib = GIB / kv_rank if kv_rank else None

    nextn = _int(cfg, "num_nextn_predict_layers")
    if nextn:
        notes.append(
            f"{nextn} MTP/NextN layer(s) excluded; they load only with speculative decoding"
        )
    if par.dp_attention:
        notes.append(
            f"DP attention: attention TP group is {par.attn_tp}; dense MLP and "
            "shared experts assumed split over the full TP group"
        )

    logits = None
    if cuda_graph_max_bs is not None and model.vocab is not None:
        rows = cuda_graph_max_bs * tokens_per_req
        logits = rows * model.vocab * 4
        notes.append(
            f"logits buffer: {rows} rows ({cuda_graph_max_bs} x {tokens_per_req}) x "
            f"vocab {model.vocab} x 4 bytes"
        )

    deepep = masked = None
    if model.experts is not None and model.routed_hidden is not None:
        t = max_dispatch_tokens or DEFAULT_MAX_DISPATCH_TOKENS
        deepep = deepep_low_latency_bytes(t, model.routed_hidden, model.experts, par.ep)
        newer = deepep_low_latency_bytes(
            t, model.routed_hidden, model.experts, par.ep, scaled_combine=True
        )
        notes.append(
            f"DeepEP low-latency buffer (only with moe_a2a_backend deepep): "
            f"{t} dispatch tokens x {model.experts} experts x hidden "
            f"{model.routed_hidden}, combine messages of 2*H bytes; DeepEP versions "
            f"that add combine scales need {newer / GIB:.2f} GiB"
        )
        if max_dispatch_tokens is None:
            notes.append(f"max dispatch tokens defaulted to {DEFAULT_MAX_DISPATCH_TOKENS}")
        if model.moe_inter is not None:
            masked = deepep_masked_gemm_bytes(t, model.experts, model.moe_inter, par.ep)
            notes.append(
                f"masked-GEMM intermediates: about {model.experts} x {t} rows of "
                f"2 x {model.moe_inter} BF16 plus the FP8 copy and scales; "
                "down-projection output not counted"
            )

    req = None
    ctx = context_len
    if max_running_requests is not None and ctx is None:
        ctx = _int(cfg, "max_position_embeddings")
        if ctx is not None:
            notes.append(f"context length taken from max_position_embeddings ({ctx})")
    if max_running_requests is not None and ctx is not None:
        req = (max_running_requests + 1) * ctx * 4

    model_name: str | None = None
    archs = cfg.get("architectures")
    for candidate in (
        config.get("_name_or_path"),
        archs[0] if isinstance(archs, list) and archs else None,
        cfg.get("model_type"),
    ):
        if isinstance(candidate, str) and candidate:
            model_name = candidate
            break

    return Estimate(
        model=model_name,
        parallel=par,
        dtype=dt[0],
        kv_cache_dtype=kv_name,
        quantization=quant.name,
        params_total=params_total,
        weights_bytes_per_rank=weights_rank,
        kv_bytes_per_token_per_rank=kv_rank,
        kv_tokens_per_gib=kv_per_gib,
        components=tuple(components),
        logits_buffer_bytes=logits,
        deepep_buffer_bytes=deepep,
        req_to_token_bytes=req,
        notes=tuple(dict.fromkeys(notes)),  # tied() may note the same guess twice
        weights_bytes_total=weights_total,
        kv_swa_bytes_per_token_per_rank=kv_swa,
        deepep_masked_gemm_bytes=masked,
    )
