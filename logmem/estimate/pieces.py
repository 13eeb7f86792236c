"""A piece of weights (one component of one layer) and how it is sharded."""

from __future__ import annotations

from logmem.estimate.config import Parallel
from logmem.estimate.reasons import AttnSpread, Reason
from logmem.frozen import frozen


@frozen
class Piece:
    """Weights of one component in one layer (or once per model).

    ``params`` counts the whole model's copy, ``rank_params`` what one rank holds; both None
    when the config lacks a size. ``quantised`` says whether the checkpoint's quantisation
    applies (embeddings, norms and routers stay in the weight dtype)."""

    name: str
    params: int | None
    rank_params: int | None
    sharding: str
    why: Reason
    quantised: bool


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def split(divisor: int) -> str:
    """Sharding of a piece divided among ``divisor`` ranks."""
    return "split" if divisor > 1 else "whole"


def repl(group: int) -> str:
    """Sharding of a piece every rank of a ``group`` holds whole."""
    return "replicated" if group > 1 else "whole"


def attn_spread(par: Parallel) -> AttnSpread:
    return AttnSpread(par.attn_tp, par.tp, par.dp)


def attn_shard(par: Parallel) -> str:
    # Under DP attention each DP group holds its own copy of the attention weights.
    if par.attn_tp > 1:
        return "split"
    return "replicated" if par.tp > 1 else "whole"
