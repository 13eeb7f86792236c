"""Which input file is which launch, why files given together were not merged, and why a
launch inside one file begins where it does (its JSON; the sentence is a finding's).

The facts are the model stage's (:class:`logmem.model.inputs.Apart`,
``Analysis.launches_of``); this module says them, the same words in every format.
"""

from __future__ import annotations

from typing import Any

from logmem.model.analysis import Analysis
from logmem.model.boundaries import LaunchStart, Repeat
from logmem.model.inputs import Apart
from logmem.parse.lines import Source

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


def source_json(src: Source | None) -> dict[str, Any] | None:
    """A line as every JSON report gives it: {path, line}."""
    return {"path": src.path, "line": src.line_no} if src is not None else None


def start_json(s: LaunchStart | None) -> dict[str, Any] | None:
    """Why a launch begins where it does in its file (logmem.model.boundaries)."""
    if s is None:
        return None
    return {
        "kind": s.kind,
        "line": source_json(s.line),
        "rank": s.rank,
        "step": s.step or None,
        "at": s.at,
        "evidence": source_json(s.evidence),
        "after": s.after,
        "values": {"what": s.values[0], "this": s.values[1], "earlier": s.values[2]}
        if s.values
        else None,
    }


def repeats_json(repeats: tuple[Repeat, ...]) -> list[dict[str, Any]]:
    """A rank's lines printed again before its launch came up (logmem.model.boundaries)."""
    return [
        {
            "rank": x.rank,
            "path": x.path,
            "lines": [x.first, x.last],
            "again": [x.again, x.again_last],
        }
        for x in repeats
    ]
