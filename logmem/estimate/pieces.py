"""A piece of weights (one component of one layer) and the words for how it is sharded."""

from __future__ import annotations

from dataclasses import dataclass

from logmem.estimate.config import Parallel


@dataclass(frozen=True)
class Piece:
    """Weights of one component in one layer (or once per model).

    ``params`` counts the whole model's copy, ``rank_params`` what one rank holds; both None
    when the config lacks a size. ``quantised`` says whether the checkpoint's quantisation
    applies (embeddings, norms and routers stay in the weight dtype)."""

    name: str
    params: int | None
    rank_params: int | None
    sharding: str
    why: str
    quantised: bool


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def split(divisor: int) -> str:
    """Sharding of a piece divided among ``divisor`` ranks."""
    return "split" if divisor > 1 else "whole"


def repl(group: int) -> str:
    """Sharding of a piece every rank of a ``group`` holds whole."""
    return "replicated" if group > 1 else "whole"


def over(group: int, label: str = "TP") -> str:
    return f"split over {label} {group}" if group > 1 else "on one rank"


def attn_over(par: Parallel) -> str:
    t = par.attn_tp
    if t == 1 and par.tp > 1:
        return f"whole on each rank (DP attention, {par.dp} copies)"
    return over(t, "attention TP")


def attn_shard(par: Parallel) -> str:
    # Under DP attention each DP group holds its own copy of the attention weights.
    if par.attn_tp > 1:
        return "split"
    return "replicated" if par.tp > 1 else "whole"
