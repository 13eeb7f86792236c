"""Builder of the uninitialized-weights line (pattern ``weights_uninitialized``): SGLang's list
of parameters no checkpoint tensor filled, summarised as counts (the list is never kept).

A name's layer number (``layers.12.``, ``h.12.``, ``blocks.12.``) is written ``*`` to give its
kind, so 60 names of 30 layers read as two kinds of 30. Every scan is one linear pass over the
list; the kinds kept are bounded (MAX_KINDS). Kept apart from logmem.parse.builders (at its size
limit); registered in its BUILDERS.
"""

from __future__ import annotations

from collections import Counter

import regex

from logmem.parse.events import Event, WeightsUninitialized
from logmem.parse.lines import Record

MAX_KINDS = 8  # shapes listed by name; the rest are counted in other_kinds
_NAME = regex.compile(r"'([^'\n]{1,1000})'|\"([^\"\n]{1,1000})\"", regex.ASCII)
_LAYER = regex.compile(r"(?:^|\.)(?:layers|layer|h|blocks)\.(\d{1,6})(?=\.|$)", regex.ASCII)


def build_uninitialized(m: regex.Match[str], r: Record) -> Event:
    text = m.group("list")
    kinds: Counter[str] = Counter()
    layers: set[int] = set()
    names = experts = 0
    for nm in _NAME.finditer(text):
        name = nm.group(1) or nm.group(2)
        names += 1
        experts += ".experts." in name
        layer = _LAYER.search(name)
        if layer is not None:
            layers.add(int(layer.group(1)))
            name = f"{name[: layer.start(1)]}*{name[layer.end(1) :]}"
        kinds[name] += 1
    top = tuple(kinds.most_common(MAX_KINDS))
    return WeightsUninitialized(
        rank=r.rank,
        source=r.source,
        names=names,
        complete=text.rstrip().endswith("]" if text.startswith("[") else "}"),
        kinds=top,
        other_kinds=len(kinds) - len(top),
        layers=len(layers),
        layer_min=min(layers, default=None),
        layer_max=max(layers, default=None),
        experts=experts,
    )
