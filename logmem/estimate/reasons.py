"""Why a piece of weights is the size it is on a rank, as typed facts with their numbers.

Each Piece (and so each Component) carries one of these: the sizes and the parallel group
that decided its share. logmem/report/estimate/words.py words them for the "why" column.
"""

from __future__ import annotations

from enum import Enum

from logmem.frozen import frozen


class Part(Enum):
    """A part of the model whose sizes the config lacks."""

    ATTENTION = "attention"
    MLA = "mla"
    LINEAR_ATTENTION = "linear_attention"
    MOE = "moe"
    VOCAB = "vocab"
    VISION = "vision"
    INTERMEDIATE = "intermediate"
    LAYERS = "layers"


@frozen
class SizesMissing:
    part: Part


@frozen
class MambaNotModelled:
    """Mamba mixer weights have no size rule here."""


@frozen
class Spread:
    """A piece divided over a group of ``group`` ranks (TP, or attention TP)."""

    group: int
    attention: bool = False


@frozen
class AttnSpread:
    """Attention weights over the attention TP group; under DP attention with attention TP 1
    every rank holds a whole copy, one per DP group."""

    attn_tp: int
    tp: int
    dp: int


@frozen
class QueryHeads:
    heads: int
    per_rank: int
    attn_tp: int
    gated: bool


@frozen
class KVHeads:
    """``copies`` is how many ranks hold each KV head when there are fewer heads than ranks."""

    heads: int
    per_rank: int
    attn_tp: int
    copies: int | None


@frozen
class Heads:
    heads: int
    spread: AttnSpread


@frozen
class RowParallel:
    spread: AttnSpread


@frozen
class QDown:
    q_lora: int


@frozen
class KVDown:
    kv_lora: int
    rope: int


@frozen
class Indexer:
    heads: int
    dim: int


@frozen
class DeltaNet:
    key_heads: int
    value_heads: int
    spread: AttnSpread


@frozen
class DenseMLP:
    intermediate: int
    spread: Spread


@frozen
class Experts:
    """Routed experts over EP (``per_rank`` each), their intermediate over MoE TP; with
    EP 1 over TP. ``latent_hidden`` the routed hidden size of a latent MoE."""

    experts: int
    ep: int
    per_rank: int
    moe_tp: int
    tp: int
    latent_hidden: int | None


@frozen
class SharedExperts:
    intermediate: int
    spread: Spread


@frozen
class Router:
    """The gate over the full hidden size, replicated and unquantised."""


@frozen
class LatentProjections:
    hidden: int
    latent: int


@frozen
class Norms:
    """RMSNorm weights, replicated."""


@frozen
class Vocab:
    """The embedding or lm_head: ``padded`` rows split over TP; ``whole`` under DP attention
    (every rank holds the whole vocabulary); ``tied`` with the lm_head."""

    vocab: int
    padded: int
    spread: Spread
    tied: bool = False
    whole: bool = False


@frozen
class TiedCopy:
    """A tied lm_head the last PP stage holds as its own copy."""


@frozen
class VisionTower:
    layers: int
    width: int


Reason = (
    SizesMissing
    | MambaNotModelled
    | QueryHeads
    | KVHeads
    | Heads
    | RowParallel
    | QDown
    | KVDown
    | Indexer
    | DeltaNet
    | DenseMLP
    | Experts
    | SharedExperts
    | Router
    | LatentProjections
    | Norms
    | Vocab
    | TiedCopy
    | VisionTower
)
