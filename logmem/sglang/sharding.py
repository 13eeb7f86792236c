"""How SGLang lays a model out over ranks: what must divide, heads per rank, the KV cell per token.

SGLang's rules for the expected sizes of ``logmem estimate`` and the ``--model-config``
cross-check, each once, each with the SGLang (or DeepEP) source it comes from; the weights
and layer plan built from a config.json live in logmem/estimate/, which calls these. The
sizes in docs/reference.md 12.2 (KV cell) and 12.5 (DeepEP) are the ones here.

Plain numbers in and out; imports nothing of the package, so any stage may use it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from logmem.frozen import frozen

VOCAB_PADDING = 64
"""``VocabParallelEmbedding`` / ``ParallelLMHead`` (``layers/vocab_parallel_embedding.py``,
``DEFAULT_VOCAB_PADDING_SIZE``, all versions) pad the vocabulary to a multiple of 64 before
splitting it over TP ranks."""

INT32_BYTES = 4
FP32_BYTES = 4

DSA_INDEX_SCALE_BLOCK = 128
"""NSA/DSA index keys are FP8 with one FP32 scale per 128 values (``NSATokenToKVPool``,
``mem_cache/memory_pool.py``, DeepSeek V3.2 / GLM-5, about Oct 2025 on)."""


def padded_vocab(vocab: int) -> int:
    """The vocabulary rounded up to ``VOCAB_PADDING``."""
    return -(-vocab // VOCAB_PADDING) * VOCAB_PADDING


# --- what must divide ---------------------------------------------------------------------


@frozen
class Indivisible:
    """A parallel size that does not divide a dimension SGLang splits by it.

    SGLang refuses such a deployment at start-up (an assertion in the layer's constructor):
    ``what`` is the dimension (e.g. "attention heads"), ``count`` its size in the config,
    ``setting`` the parallel size at fault ("tp", "ep"; "attn_tp" is tp / dp under DP
    attention, "moe_tp" is tp / ep), ``size`` its value, ``source`` the SGLang code that
    asserts it."""

    what: str
    count: int
    setting: str
    size: int
    source: str


HEADS_SOURCE = "total_num_heads % attn_tp_size == 0 in QKVParallelLinear, layers/linear.py"
KV_HEADS_SOURCE = (
    "QKVParallelLinear, layers/linear.py: KV heads are split when there are at least as many "
    "as attention TP ranks, else replicated; either way one count divides the other"
)
COLUMN_SOURCE = "divide() in MergedColumnParallelLinear, layers/linear.py"
MOE_TP_SOURCE = "intermediate_size % moe_tp_size == 0 in the MoE layers, layers/moe/"
EP_SOURCE = "num_experts % ep_size == 0 in the expert-parallel MoE layers, layers/moe/"


def check_divides(
    what: str, count: int, setting: str, size: int, source: str
) -> Indivisible | None:
    """``count % size == 0``, as SGLang's ``divide()`` and its ``% tp_size == 0`` asserts need."""
    if size <= 1 or count % size == 0:
        return None
    return Indivisible(what, count, setting, size, source)


def check_kv_heads(kv_heads: int, attn_tp: int) -> Indivisible | None:
    """KV heads and attention TP: one must divide the other (``QKVParallelLinear``)."""
    if attn_tp <= 1 or kv_heads % attn_tp == 0 or attn_tp % kv_heads == 0:
        return None
    return Indivisible("KV heads", kv_heads, "attn_tp", attn_tp, KV_HEADS_SOURCE)


def kv_heads_per_rank(kv_heads: int, attn_tp: int) -> int:
    """KV heads one rank holds: ``kv_heads / attn_tp``, at least 1 (replicated past their
    count; ``QKVParallelLinear``, and the pool's ``get_num_kv_heads``)."""
    return max(1, kv_heads // attn_tp)


# --- PP ---------------------------------------------------------------------------------------


def pp_layer_ranges(n_layers: int, pp: int) -> list[range]:
    """Layer ranges per PP stage, as ``get_pp_indices`` (``distributed/utils.py``) splits them:
    equal shares, the remainder one each to the stages before the last."""
    sizes = [n_layers // pp] * pp
    for i in range(2, n_layers % pp + 2):
        sizes[-i] += 1
    out, start = [], 0
    for size in sizes:
        out.append(range(start, start + size))
        start += size
    return out


# --- the KV cell per token ---------------------------------------------------------------


def mha_cell_elements(kv_heads: int, head_dim: int, v_head_dim: int, attn_tp: int) -> int:
    """K and V elements per token of one MHA/GQA layer on one rank:
    ``kv_heads_per_rank x (head_dim + v_head_dim)`` (``MHATokenToKVPool``,
    ``mem_cache/memory_pool.py``; ``profile_max_num_token`` cell size, all eras)."""
    return kv_heads_per_rank(kv_heads, attn_tp) * (head_dim + v_head_dim)


def mla_cell_elements(kv_lora_rank: int, qk_rope_head_dim: int) -> int:
    """Latent elements per token of one MLA layer: ``kv_lora_rank + qk_rope_head_dim``, the same
    on every rank (no TP divisor; ``MLATokenToKVPool``, ``mem_cache/memory_pool.py``)."""
    return kv_lora_rank + qk_rope_head_dim


def dsa_index_bytes(index_head_dim: int) -> int:
    """Index-key bytes per token of one NSA/DSA layer, whatever the KV dtype: FP8 keys plus one
    FP32 scale per 128 (``NSATokenToKVPool``, ``mem_cache/memory_pool.py``)."""
    return index_head_dim + -(-index_head_dim // DSA_INDEX_SCALE_BLOCK) * FP32_BYTES


def cell_bytes(elements: int, element_bytes: float, scale_bytes: float, fixed_bytes: int) -> int:
    """Bytes per token of a pool: its elements at the KV dtype's width (plus per-element scale
    bytes for block-scaled dtypes), rounded up, plus bytes that do not follow the dtype."""
    return math.ceil(elements * (element_bytes + scale_bytes)) + fixed_bytes


# --- static buffers ------------------------------------------------------------------------


def logits_buffer_bytes(max_bs: int, tokens_per_req: int, vocab: int) -> int:
    """The decode graph's logits buffer: ``max_bs x tokens_per_req`` rows of ``vocab`` FP32
    values (the graph runner's static output buffers, ``cuda_graph_runner.py``; tokens per
    request is ``speculative_num_draft_tokens`` for a verify graph)."""
    return max_bs * tokens_per_req * vocab * FP32_BYTES


# --- which settings size the KV cell ------------------------------------------------------

KV_CELL_SETTINGS = (
    "model_path",
    "json_model_override_args",
    "tp_size",
    "dp_size",
    "enable_dp_attention",
    "pp_size",
    "dtype",
    "kv_cache_dtype",
    "quantization",
    "attention_backend",
)
"""The server_args that decide a launch's KV bytes per token per rank, so two launches that
print the same values of all of them have the same cell (``ModelRunner`` sizes the pool from
``cell_size`` before any token count; ``model_executor/model_runner.py``, all eras E0-E7):

* ``model_path`` and ``json_model_override_args``: layers, KV heads and head_dim;
* ``tp_size``, ``dp_size`` with ``enable_dp_attention``: the attention TP group, which splits
  the KV heads; ``pp_size``: the layers a rank holds;
* ``kv_cache_dtype``, and ``dtype`` that ``auto`` follows: bytes per element; ``quantization``
  because a quantised checkpoint can bring its own KV dtype and scales;
* ``attention_backend``: the MLA / NSA backends lay the cell out their own way (FP8 with
  scales, an indexer), so two launches on different backends are not compared.

Settings that do not enter the cell need not match: ``page_size`` only rounds the token count
(the buffers hold ``#tokens + page_size`` slots), ``mem_fraction_static``, ``context_length``
and the request pool change how many tokens, not their size, and a draft model has its own
pool."""

KV_CELL_REQUIRED = ("model_path", "tp_size")
"""Settings both dumps must print: without them two launches cannot be shown to be one model on
one layout (the others, unprinted in older versions, compare as printed)."""


def kv_cell_settings_differ(a: Mapping[str, object], b: Mapping[str, object]) -> tuple[str, ...]:
    """The KV_CELL_SETTINGS two server_args dumps do not share (a required one missing on
    either side counts as differing): empty when one launch's cell is the other's."""
    return tuple(
        k
        for k in KV_CELL_SETTINGS
        if a.get(k) != b.get(k) or (k in KV_CELL_REQUIRED and a.get(k) is None)
    )
