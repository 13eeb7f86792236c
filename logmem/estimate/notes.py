"""What the estimate assumed or left out, as typed facts with their numbers.

The stage records one of these where it makes a choice a reader should know about (a dtype
assumed, a layer pattern read, a buffer's inputs); logmem/report/estimate/words.py words
each one, so a reporter can restyle the notes without touching the arithmetic.
"""

from __future__ import annotations

from enum import Enum

from logmem.frozen import frozen

# --------------------------------------------------------------------------- identity


@frozen
class ModelDiffers:
    """config.json names another architecture than the one the log's Load weight end line
    loaded: the config does not describe this launch (estimate/crosscheck.model_differs)."""

    config_arch: str
    config_name: str | None  # the config's _name_or_path (or its folder name)
    log_arch: str
    log_path: str | None  # server_args model_path
    line: int  # the Load weight end line


# --------------------------------------------------------------------------- dtypes


@frozen
class NoTorchDtype:
    """The config names no weight dtype; bfloat16 assumed."""


@frozen
class Float32ServedAsBf16:
    """SGLang's dtype=auto serves a float32 checkpoint in bfloat16."""


class KVFormat(Enum):
    FP8 = "fp8"
    FP4 = "fp4"


@frozen
class KVElement:
    """Bytes per KV element of a narrow KV cache dtype."""

    format: KVFormat


class WeightFormat(Enum):
    FP8 = "fp8"
    INT8 = "int8"
    FP4 = "fp4"
    MXFP4 = "mxfp4"


@frozen
class WeightBytes:
    """A fixed-width quantised weight format; ``block`` the FP8 scale block when given."""

    format: WeightFormat
    block: tuple[int, int] | None = None


@frozen
class IntWeights:
    """AWQ / GPTQ style integer weights; ``group`` None when the scales are per channel."""

    method: str
    bits: int
    group: int | None


@frozen
class CompressedTensors:
    """compressed-tensors weights: ``bits`` None when the config gives none (bytes unknown);
    ``strategy`` the scale strategy ("group" with ``group``, or "block"); ``ignored`` when
    the strategy's scales are not counted (one the stage does not model)."""

    bits: int | None
    strategy: str | None = None
    group: int | None = None
    ignored: bool = False


@frozen
class QuantNotModelled:
    """A quantisation method the stage has no byte rule for."""

    method: str


@frozen
class QuantOverride:
    """--quantization differs from the checkpoint's method."""

    method: str
    checkpoint: str


class Unquantised(Enum):
    ATTENTION = "attention"
    SHARED_EXPERTS = "shared_experts"


@frozen
class QuantLeaves:
    """The quantisation config leaves this part in the weight dtype."""

    part: Unquantised


# --------------------------------------------------------------------------- layer plan


@frozen
class UnknownBlocks:
    """hybrid_override_pattern characters without a known block (counted full attention)."""

    blocks: tuple[str, ...]


@frozen
class LayerTypesRepeated:
    entries: int
    layers: int


@frozen
class LayerTypesUnknown:
    """layer_types entries not recognised (counted full attention)."""

    kinds: tuple[str, ...]


@frozen
class FullInterval:
    """full_attention_interval: every ``interval``-th layer full, the rest linear."""

    interval: int


@frozen
class SlidingPattern:
    """sliding_window_pattern: every ``pattern``-th layer full, the rest sliding."""

    pattern: int


@frozen
class Gemma2Alternating:
    """gemma2: even layers sliding window, odd layers full."""


@frozen
class SlidingWithoutPattern:
    """sliding_window set with no per-layer pattern; ``window`` as the config writes it."""

    window: str


@frozen
class ChunkedAsFull:
    """attention_chunk_size set; chunked layers counted as full attention."""


# --------------------------------------------------------------------------- KV cells


@frozen
class FullLayersOnly:
    """KV per token counts ``full`` layers; ``others`` (kind, count) live in other pools."""

    full: int
    others: tuple[tuple[str, int], ...]


@frozen
class SWAPool:
    """Bytes per token of the SWA pool, and of one pool holding every layer as full."""

    swa_bytes: int
    all_full_bytes: int


@frozen
class StatePerRequest:
    """Linear-attention / Mamba state is per request; not estimated."""


@frozen
class MLACell:
    """MLA's KV cell: kv_lora_rank + qk_rope_head_dim per layer, no TP divisor."""


@frozen
class DSAIndexKeys:
    """DSA index keys, ``dim`` FP8 bytes plus scales per layer, in the KV per token."""

    dim: int


# --------------------------------------------------------------------------- buffers, build


@frozen
class TieAssumed:
    """tie_word_embeddings absent; ``tied`` what the model type suggests."""

    tied: bool


@frozen
class LogitsRows:
    rows: int
    max_bs: int
    tokens_per_req: int
    vocab: int


@frozen
class EmbeddingByVersion:
    """Under DP attention the embedding is whole on every rank in SGLang 0.5.1-0.5.7, split
    over the attention TP group (``attn_tp``) in 0.4.9 and 0.5.8 on (``split_params`` per
    rank then)."""

    attn_tp: int
    split_params: int


@frozen
class LogitsNotStatic:
    """The log's SGLang predates the static logits buffer (first in ``first``): the logits
    are graph outputs in the graph pool, so there is no buffer to size."""

    first: str


@frozen
class LogitsFromVersion:
    """The logits buffer is static only from SGLang ``first``; the version is not known."""

    first: str


@frozen
class ParallelFromLog:
    """The log prints no server_args: TP ``tp`` from its rank tags, or (None) the defaults."""

    tp: int | None


@frozen
class DeepEPBuffer:
    """The low-latency buffer's inputs; ``scaled_bytes`` what versions with combine scales need."""

    tokens: int
    experts: int
    hidden: int
    scaled_bytes: int


@frozen
class DispatchDefault:
    tokens: int


@frozen
class MaskedGemm:
    experts: int
    tokens: int
    intermediate: int


@frozen
class ContextFromMaxPositions:
    context: int


@frozen
class HeaviestStage:
    """PP: per-rank figures are for stage ``stage`` (layers ``first`` to ``last``)."""

    pp: int
    stage: int
    first: int
    last: int


@frozen
class NextNExcluded:
    layers: int


@frozen
class DPAttentionSplit:
    """DP attention: the attention TP group; dense MLP and shared experts over full TP."""

    attn_tp: int


Note = (
    ModelDiffers
    | NoTorchDtype
    | Float32ServedAsBf16
    | KVElement
    | WeightBytes
    | IntWeights
    | CompressedTensors
    | QuantNotModelled
    | QuantOverride
    | QuantLeaves
    | UnknownBlocks
    | LayerTypesRepeated
    | LayerTypesUnknown
    | FullInterval
    | SlidingPattern
    | Gemma2Alternating
    | SlidingWithoutPattern
    | ChunkedAsFull
    | FullLayersOnly
    | SWAPool
    | StatePerRequest
    | MLACell
    | DSAIndexKeys
    | LogitsRows
    | LogitsNotStatic
    | EmbeddingByVersion
    | LogitsFromVersion
    | ParallelFromLog
    | DeepEPBuffer
    | DispatchDefault
    | MaskedGemm
    | ContextFromMaxPositions
    | TieAssumed
    | HeaviestStage
    | NextNExcluded
    | DPAttentionSplit
)
