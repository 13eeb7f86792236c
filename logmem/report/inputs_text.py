"""Which input file is which launch, and why files given together were not merged.

The facts are the model stage's (:class:`logmem.model.inputs.Apart`,
``Analysis.launches_of``); this module says them, the same words in every format.
"""

from __future__ import annotations

from typing import Any

from logmem.model.analysis import Analysis
from logmem.model.inputs import Apart

_WHY = {
    "server_args": "their server_args differ",
    "clock": "their clocks cannot be one launch",
    "model": "they load different models at the same time",
    "ranks": "one is a single-GPU launch and the other has tagged ranks",
}


def file_launches(a: Analysis, path: str) -> list[int]:
    return [L.index for L in a.launches_of(path)]


def apart_text(p: Apart) -> str:
    diffs = "; ".join(f"{what}: {this} here, {other} there" for what, this, other in p.differences)
    why = _WHY.get(p.kind, p.kind)
    return f"{p.path} is not part of the launch of {p.other}: {why} ({diffs})."


def input_sentences(a: Analysis) -> list[str]:
    """Empty for one file, or several files read as one launch."""
    if len(a.paths) < 2 or not a.apart:
        return []
    out = []
    for path in a.paths:
        idx = file_launches(a, path)
        which = ", ".join(str(i) for i in idx) if idx else "none (no start-up step)"
        out.append(f"{path}: launch {which}.")
    out.extend(apart_text(p) for p in a.apart)
    return out


def inputs_json(a: Analysis) -> dict[str, Any]:
    """The grouping for the JSON report: which file is which launch, and the reasons."""
    return {
        "launches_by_path": {p: file_launches(a, p) for p in a.paths},
        "apart": [
            {
                "path": p.path,
                "other": p.other,
                "kind": p.kind,
                "differences": [{"what": w, "this": t, "other": o} for w, t, o in p.differences],
                "text": apart_text(p),
            }
            for p in a.apart
        ],
    }
