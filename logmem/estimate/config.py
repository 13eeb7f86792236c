"""Reading a model's config.json and a launch's server_args into the estimate's inputs.

``load_model_config`` reads a Hugging Face config.json (or a model folder), ``text_config``
flattens a multimodal one to its text model, ``int_key`` reads a size under any of the names
checkpoints use, and ``settings_from_server_args`` turns SGLang's resolved server_args into
the keyword arguments of ``logmem.estimate.estimate``.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from logmem.analysis.sizing import printed_kv_dtype, req_to_token_padded
from logmem.errors import LogmemError
from logmem.estimate.limits import LimitError, check_config, check_parallel
from logmem.frozen import frozen
from logmem.sglang import rules
from logmem.sglang.dtypes import kv_element_bytes

if TYPE_CHECKING:
    from logmem.model.records import Launch

# Latent-MoE models project tokens from hidden_size down to a smaller routed hidden size before
# dispatch. There is no standard Hugging Face key; these are the names we look for, in order.
# `moe_latent_size` is the one our fixtures use (fixtures/configs/latent-moe.json).
LATENT_KEYS = ("moe_latent_size", "routed_hidden_size", "latent_moe_dim")

_SUBCONFIG_KEYS = ("text_config", "llm_config", "language_config")


class EstimateError(LogmemError, ValueError):
    """A config.json that cannot be read, or settings that cannot describe a deployment.

    A LogmemError, so the command line shows it as "Error: ..." (exit 1) wherever it is raised;
    ``setting`` names the parallel size or option at fault when there is one (the CLI then
    points at its flag)."""

    def __init__(self, message: str, setting: str | None = None) -> None:
        super().__init__(message)
        self.setting = setting


@frozen
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
                raise EstimateError(f"{name} must be a positive integer, got {value!r}", name)
            try:
                check_parallel(name, value)
            except LimitError as e:
                raise EstimateError(str(e), name) from None
        if self.dp_attention and self.tp % self.dp:
            raise EstimateError(
                f"DP attention needs tp divisible by dp, got tp={self.tp}, dp={self.dp}", "dp"
            )

    @property
    def attn_tp(self) -> int:
        """Size of the attention TP group: DP attention splits TP into dp groups."""
        return self.tp // self.dp if self.dp_attention else self.tp

    @property
    def moe_tp(self) -> int:
        """TP size inside each expert once EP has taken its share of the TP group."""
        return max(1, self.tp // self.ep)


# --------------------------------------------------------------------------- loading


def load_model_config(path: str | os.PathLike[str]) -> dict[str, Any]:
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
        check_config(data)
    except LimitError as exc:
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

    device = server_args.get("device")
    if isinstance(device, str) and device:
        out["device"] = device
    if server_args.get("enable_dp_lm_head") is True:
        out["dp_lm_head"] = True

    if server_args.get("disable_cuda_graph") is not True:
        # Under any era's name (E7: cuda_graph_config's decode phase; rules.decode_max_bs).
        max_bs = rules.decode_max_bs(server_args)
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


@frozen
class ParallelFrom:
    """Where a launch without server_args got its parallel sizes: ``tp`` from the rank tags
    (TP0 .. TP{tp-1}: at least that many ranks ran), or the defaults (``defaults``)."""

    tp: int | None
    defaults: bool


def tp_from_rank_tags(launch: Launch) -> int | None:
    """The TP size the rank tags show (the highest TPn + 1), None when no rank is tagged or
    the tags show one rank (one untagged GPU says nothing of the TP size)."""
    found = [int(m.group(1)) for r in launch.ranks if (m := re.search(r"\bTP(\d+)\b", r.label))]
    return max(found) + 1 if found and max(found) > 0 else None


def settings_for_launch(launch: Launch) -> dict[str, Any]:
    """``settings_from_server_args`` for a launch, with the request slots and context length
    the scheduler summary printed (``max_running_requests=``, ``context_len=``: the values
    SGLang resolved, which the server_args dump often leaves None)."""
    from logmem.sglang.eras import static_logits_buffer

    out = settings_from_server_args(launch.args)
    if launch.server_args is None:
        tags = tp_from_rank_tags(launch)
        out["parallel_from"] = ParallelFrom(tags, tags is None)
        if tags is not None:
            out["parallel"] = Parallel(tp=tags)
    out["logits_static"] = static_logits_buffer(launch)
    summary = launch.summary
    for key, kwarg in (
        ("max_running_requests", "max_running_requests"),
        ("context_len", "context_len"),
    ):
        value = summary.get_int(key) if summary is not None else None
        if value is not None:
            out[kwarg] = value
    # Whether the table has a row beyond the printed requests: by the launch's release.
    out["request_padding_row"] = req_to_token_padded(launch)
    printed = printed_kv_dtype(launch)
    if printed is not None and kv_element_bytes(printed) is not None:
        # What the pools hold, even where --kv-cache-dtype said auto (an fp8 checkpoint's KV
        # scales) or the server_args dump is missing.
        out["kv_cache_dtype"] = printed
    return out


# --------------------------------------------------------------------------- reading keys


def int_key(cfg: Mapping[str, Any], *keys: str) -> int | None:
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


def text_config(config: Mapping[str, Any]) -> tuple[dict[str, Any], Mapping[str, Any] | None]:
    """Flatten a multimodal config: the text sub-config wins, top-level keys fill the gaps."""
    if isinstance(config.get("thinker_config"), Mapping):  # Qwen-Omni nests one level deeper
        return text_config(config["thinker_config"])
    vision = config.get("vision_config")
    vision = vision if isinstance(vision, Mapping) else None
    for key in _SUBCONFIG_KEYS:
        sub = config.get(key)
        if isinstance(sub, Mapping):
            merged = {k: v for k, v in config.items() if k not in _SUBCONFIG_KEYS}
            merged.update(sub)
            return merged, vision
    return dict(config), vision


def num_experts(cfg: Mapping[str, Any]) -> int | None:
    """Routed experts per MoE layer, under the names checkpoints use; None for a dense model."""
    return int_key(cfg, "n_routed_experts", "num_experts", "num_local_experts", "moe_num_experts")


# Gated MLPs (SwiGLU/GeGLU) have gate, up and down; these families have only up and down.
_NON_GATED = {
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


@frozen
class Dims:
    """The text model's sizes, read once from the config under whichever names it uses.

    None is a size the config does not give (its figures then stay unknown)."""

    model_type: str
    hidden: int | None
    heads: int | None
    kv_heads: int | None
    head_dim: int | None
    intermediate: int | None
    vocab: int | None
    mla: bool
    kv_lora: int | None
    q_lora: int | None
    rope: int | None
    nope: int | None
    v_head: int | None
    index_head_dim: int | None
    index_heads: int | None
    experts: int | None
    moe_inter: int | None
    latent: int | None
    shared_experts: int | None
    shared_inter: int | None
    router_bias: bool
    mlp_mats: int
    qkv_bias: bool
    q_gate: bool
    tie_word_embeddings: bool | None
    linear_key_heads: int | None
    linear_key_dim: int | None
    linear_value_heads: int | None
    linear_value_dim: int | None
    linear_conv_kernel: int | None
    nextn_layers: int | None

    @property
    def routed_hidden(self) -> int | None:
        """The width tokens are dispatched at: the latent size of a latent MoE, else hidden."""
        return self.latent or self.hidden


def read_dims(cfg: Mapping[str, Any]) -> Dims:
    """The sizes of a (flattened, see ``text_config``) config."""
    hidden = int_key(cfg, "hidden_size", "n_embd", "d_model", "dim")
    heads = int_key(cfg, "num_attention_heads", "n_head", "num_heads", "n_heads")
    kv_heads = (
        int_key(cfg, "num_key_value_heads", "num_kv_heads", "n_kv_heads", "multi_query_group_num")
        or heads
    )
    head_dim = int_key(cfg, "head_dim", "attention_head_dim")
    if head_dim is None and hidden and heads:
        head_dim = hidden // heads
    intermediate = int_key(cfg, "intermediate_size", "ffn_hidden_size", "n_inner", "ffn_dim")
    mla = int_key(cfg, "kv_lora_rank") is not None
    experts = num_experts(cfg)
    model_type = str(cfg.get("model_type", "")).lower()
    act = str(cfg.get("mlp_hidden_act", cfg.get("hidden_act", ""))).lower()
    bias = cfg.get("attention_bias", cfg.get("qkv_bias"))
    tie = cfg.get("tie_word_embeddings")
    return Dims(
        model_type=model_type,
        hidden=hidden,
        heads=heads,
        kv_heads=kv_heads,
        head_dim=head_dim,
        intermediate=intermediate,
        vocab=int_key(cfg, "vocab_size", "padded_vocab_size"),
        mla=mla,
        kv_lora=int_key(cfg, "kv_lora_rank"),
        q_lora=int_key(cfg, "q_lora_rank"),
        rope=int_key(cfg, "qk_rope_head_dim"),
        nope=int_key(cfg, "qk_nope_head_dim"),
        v_head=int_key(cfg, "v_head_dim") if mla else head_dim,
        index_head_dim=int_key(cfg, "index_head_dim"),
        index_heads=int_key(cfg, "index_n_heads"),
        experts=experts,
        moe_inter=int_key(cfg, "moe_intermediate_size", "expert_intermediate_size")
        or (intermediate if experts else None),
        latent=int_key(cfg, *LATENT_KEYS),
        shared_experts=int_key(cfg, "n_shared_experts", "num_shared_experts"),
        shared_inter=int_key(cfg, "shared_expert_intermediate_size"),
        router_bias=cfg.get("topk_method") == "noaux_tc",
        mlp_mats=2 if (act in ("relu2", "relu^2") or model_type in _NON_GATED) else 3,
        # Qwen2 hard-codes q/k/v biases without a config key.
        qkv_bias=bias is True or (bias is None and model_type.startswith("qwen2")),
        q_gate=cfg.get("attn_output_gate") is True,
        tie_word_embeddings=tie if isinstance(tie, bool) else None,
        linear_key_heads=int_key(cfg, "linear_num_key_heads"),
        linear_key_dim=int_key(cfg, "linear_key_head_dim"),
        linear_value_heads=int_key(cfg, "linear_num_value_heads"),
        linear_value_dim=int_key(cfg, "linear_value_head_dim"),
        linear_conv_kernel=int_key(cfg, "linear_conv_kernel_dim"),
        nextn_layers=int_key(cfg, "num_nextn_predict_layers"),
    )


_PARALLEL = ("tp", "dp", "ep", "pp", "dp_attention")


def deployment_settings(launch: Launch | None, overrides: Mapping[str, Any]) -> dict[str, Any]:
    """estimate() keywords for a deployment: a logged launch's (``settings_for_launch``), if
    any, then ``overrides`` on top (``tp``, ``dp``, ``ep``, ``pp``, ``dp_attention`` and
    estimate()'s own keywords; None means "not given")."""
    out = settings_for_launch(launch) if launch is not None else {}
    given = {k: v for k, v in overrides.items() if v is not None}
    par = out.get("parallel", Parallel())
    sizes: dict[str, Any] = {
        "tp": par.tp,
        "dp": par.dp,
        "ep": par.ep,
        "pp": par.pp,
        "dp_attention": par.dp_attention,
    }
    if "tp" in given:
        out.pop("parallel_from", None)  # the user's size, not the log's tags or a default
    sizes.update({k: given.pop(k) for k in _PARALLEL if k in given})
    out["parallel"] = Parallel(**sizes)
    out.update(given)
    return out
