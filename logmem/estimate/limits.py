"""Bounds of physical sense for a config.json and a deployment's parallel sizes.

A config.json is untrusted input: a layer count of 10**12 or 1e300, a 5000-digit integer or
100,000 nested arrays would make the estimate allocate without end, overflow or recurse.
Real models are far inside these bounds (hundreds of layers, thousands of GPUs); past them
a value is a typo or an attack, and the estimate says so instead of running.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

MAX_PARALLEL = 1 << 16  # tp, dp, ep, pp: GPUs in one deployment
MAX_LAYERS = 1 << 16
# Sizes are counts of parameters, tokens or bytes: beyond 2**53 a JSON number is not even an
# exact float, and no model has that many of anything.
MAX_NUMBER = 1 << 53
MAX_DEPTH = 64
LAYER_KEYS = frozenset(
    {"num_hidden_layers", "n_layer", "num_layers", "n_layers", "depth", "layers",
     "num_nextn_predict_layers"}
)  # fmt: skip


class LimitError(ValueError):
    """A config value outside physical sense; the message names it."""


def check_config(data: Mapping[str, Any]) -> None:
    """Raise LimitError for the first value of `data` (at any depth) outside the bounds."""
    todo: list[tuple[str, Any, int]] = [("", data, 0)]
    while todo:
        where, value, depth = todo.pop()
        if depth > MAX_DEPTH:
            raise LimitError(f"{where or 'the config'} is nested more than {MAX_DEPTH} levels deep")
        if isinstance(value, Mapping):
            todo.extend(
                (f"{where}.{k}" if where else str(k), v, depth + 1) for k, v in value.items()
            )
        elif isinstance(value, list):
            if where.rsplit(".", 1)[-1] == "layer_types" and len(value) > MAX_LAYERS:
                raise LimitError(f"{where} lists {len(value):,} layers (at most {MAX_LAYERS:,})")
            todo.extend((f"{where}[{i}]", v, depth + 1) for i, v in enumerate(value))
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            if isinstance(value, float) and not math.isfinite(value):
                raise LimitError(f"{where} is {value}, not a size")
            if abs(value) > MAX_NUMBER:
                raise LimitError(f"{where} = {value:.3g} is beyond any model's size")
            key = where.rsplit(".", 1)[-1]
            if key in LAYER_KEYS and value > MAX_LAYERS:
                raise LimitError(
                    f"{where} = {value:,} layers is beyond any model (at most {MAX_LAYERS:,})"
                )


def check_parallel(name: str, value: int) -> None:
    if value > MAX_PARALLEL:
        raise LimitError(
            f"{name}={value:,} is beyond any real deployment (at most {MAX_PARALLEL:,} GPUs)"
        )
