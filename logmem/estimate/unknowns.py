"""Which figures an estimate leaves unknown (None), and what would fill each: the settings
(SGLang's flags), the config.json keys, or why no input can (a quantisation without a byte
rule, a device whose DeepEP is not the CUDA library)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from logmem.estimate.config import Dims
from logmem.estimate.dtypes import Quant
from logmem.estimate.layers import Layer
from logmem.frozen import frozen
from logmem.sglang.comm import deepep_formula_applies


class _Component(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def params(self) -> int | None: ...


class WeightsTotals(Protocol):
    """What unknowns() reads of the weights (build.py's _Weights)."""

    @property
    def components(self) -> Sequence[_Component]: ...
    @property
    def params_total(self) -> int | None: ...
    @property
    def bytes_per_rank(self) -> int | None: ...


@frozen
class Unknown:
    """A figure the estimate leaves unknown (None), and what would fill it.

    ``figure`` is the Estimate field; ``settings`` the estimate() keywords (SGLang's server
    flags of the same names) that would give it a value; ``config_keys`` the config.json
    keys it needs and the config lacks; ``missing`` the components without sizes, or
    ``unmodelled`` the quantisation without a byte rule, when neither applies; ``device``
    a device whose library the formula does not describe."""

    figure: str
    settings: tuple[str, ...] = ()
    config_keys: tuple[str, ...] = ()
    missing: tuple[str, ...] | None = None
    unmodelled: str | None = None
    device: str | None = None  # a device the figure's formula does not describe (DeepEP on npu)


def unknowns(
    d: Dims,
    plan: Sequence[Layer] | None,
    w: WeightsTotals,
    quant: Quant,
    est: Mapping[str, Any],
    settings: Mapping[str, Any],
) -> tuple[Unknown, ...]:
    """For each figure left None, the settings or config keys that would fill it."""
    out: list[Unknown] = []
    missing = tuple(c.name for c in w.components if c.params is None)
    if w.params_total is None:
        out.append(Unknown("params_total", missing=missing))
    if w.bytes_per_rank is None:
        if w.params_total is not None and quant.name is not None:
            # A quantization the settings gave (the log's server_args, or the flag) is the
            # checkpoint's: another value would describe another checkpoint, so no flag.
            given = settings.get("quantization") is not None
            out.append(
                Unknown(
                    "weights_bytes_per_rank",
                    () if given else ("quantization",),
                    unmodelled=quant.name,
                )
            )
        else:
            out.append(Unknown("weights_bytes_per_rank", missing=missing))
    has_full = plan is None or any(layer.attn == "full" for layer in plan)
    if est["kv_bytes_per_token_per_rank"] is None and has_full:
        keys: tuple[str, ...] = ("num_hidden_layers",) if plan is None else ()
        if d.mla:
            keys += tuple(
                k
                for k, v in (("kv_lora_rank", d.kv_lora), ("qk_rope_head_dim", d.rope))
                if v is None
            )
        else:
            keys += tuple(
                k
                for k, v in (("num_key_value_heads", d.kv_heads), ("head_dim", d.head_dim))
                if v is None
            )
        out.append(Unknown("kv_bytes_per_token_per_rank", config_keys=keys))
    if est["logits_buffer_bytes"] is None and settings.get("logits_static") is not False:
        out.append(
            Unknown(
                "logits_buffer_bytes",
                ("cuda_graph_max_bs",) if settings.get("cuda_graph_max_bs") is None else (),
                ("vocab_size",) if d.vocab is None else (),
            )
        )
    if d.experts is not None and not deepep_formula_applies(settings.get("device")):
        out.append(Unknown("deepep_buffer_bytes", device=settings.get("device")))
        out.append(Unknown("deepep_masked_gemm_bytes", device=settings.get("device")))
    elif d.experts is not None:
        if est["deepep_buffer_bytes"] is None:
            out.append(Unknown("deepep_buffer_bytes", config_keys=("hidden_size",)))
        if est["deepep_masked_gemm_bytes"] is None:
            out.append(Unknown("deepep_masked_gemm_bytes", config_keys=("moe_intermediate_size",)))
    if est["req_to_token_bytes"] is None:
        need: tuple[str, ...] = (
            ("max_running_requests",) if settings.get("max_running_requests") is None else ()
        )
        if settings.get("context_len") is None and est["max_position_embeddings"] is None:
            need += ("context_len",)
        out.append(Unknown("req_to_token_bytes", need))
    return tuple(out)
