"""Plot data: a ledger (or a diff/fit JSON document) -> the plain dicts report.figures.plots draws.

Numbers in GiB, strings as the log printed them; this is what tests check. The fit plot reads
the slope records of ``logmem diff``/``logmem fit`` JSON (issue 4):

    {"slopes": [{"graph": "decode", "rank": "TP0",
                 "rows": [80, 160, ...],                 # largest bs x tokens per request
                 "largest_bucket_gib": [0.52, 0.68, ...],
                 "mib_per_row": 2.05, "intercept_gib": 0.36,
                 "mib_per_row_error": 0.13,              # from the printing (two decimals)
                 "residuals_gib": [...],                 # optional (fit only)
                 "labels": ["a.log", "b.log"]}]}         # optional: one per point
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from logmem.analysis.attribution import LaunchLedger, RankLedger
from logmem.analysis.ledger import CaptureEnd, What
from logmem.report.causes import cause_name, ledger_note, phase_name, size_text
from logmem.report.figures.scene import elide
from logmem.report.table import rank_name
from logmem.sglang.rules import (
    DIFFERENCE_RESOLUTION_BYTES,
    DIFFERENCE_RESOLUTION_GIB,
    PRINT_RESOLUTION_GIB,
    graph_sized_in_tokens,
)
from logmem.units import GIB

POINT_ERROR_GIB = DIFFERENCE_RESOLUTION_GIB  # a bucket cost: a difference of two readings
MAX_LABEL = 60  # characters of one cause in a step label


def _gib(n: int | None) -> float | None:
    return None if n is None else round(n / GIB, 4)


def short(text: str, n: int = MAX_LABEL) -> str:
    """A label cut to `n` characters, with an ellipsis (names with no figures: file names)."""
    return text if len(text) <= n else text[: n - 1] + "…"


def shorten(text: str, n: int = MAX_LABEL) -> str:
    """A label that carries figures brought to about `n` characters: words of its names
    dropped, never a number (scene.elide)."""
    return elide(text, lambda t: len(t) <= n)


# --- view models -------------------------------------------------------------------------


_PAREN = re.compile(r" \([^()]{11,}\)")  # long detail only: "(bs 36)" stays


def step_label(causes: Sequence[Mapping[str, Any]], delta_gib: float) -> str:
    """What a waterfall step says: the drop and its biggest causes (waterfall_data leaves out
    the rounding of printed values)."""
    head = f"+{-delta_gib:.2f} GiB freed" if delta_gib < 0 else f"−{delta_gib:.2f} GiB"
    # Below half a printed unit a cause is not visible in the log's own figures.
    big = sorted(
        (c for c in causes if abs(c["gib"]) >= PRINT_RESOLUTION_GIB), key=lambda c: -abs(c["gib"])
    )
    if not big:
        return head
    if len(big) == 1 and abs(big[0]["gib"] - delta_gib) < PRINT_RESOLUTION_GIB:
        return f"{head} {shorten(big[0]['name'])}"
    # Two causes share one line: drop their parenthesised detail (the ledger table has it).
    parts = [f"{shorten(_PAREN.sub('', c['name']), 32)} {c['gib']:.2f}" for c in big[:2]]
    more = f" +{len(big) - 2} more" if len(big) > 2 else ""
    return f"{head}: " + "; ".join(parts) + more


def waterfall_data(rl: RankLedger) -> dict[str, Any]:
    """One rank's phases: free memory before/after each, and its causes with their kinds."""
    steps = []
    for p in rl.phases:
        causes = [
            {"name": cause_name(c), "gib": _gib(c.bytes), "kind": c.kind, "lines": list(c.lines)}
            for c in p.causes
        ]
        # Rounding of the printed values is noise beside a named cause: it stays in the bar only.
        named = [d for d, c in zip(causes, p.causes) if c.what is not What.ROUNDING]
        before, after = _gib(p.before_bytes), _gib(p.after_bytes)
        assert before is not None and after is not None
        delta = round(before - after, 4)
        steps.append(
            {
                "key": p.key,
                "phase": phase_name(p),
                "before_gib": before,
                "after_gib": after,
                "delta_gib": delta,
                "causes": causes,
                "label": step_label(named or causes, delta),
                "lines": list(p.lines),
                # A phase between two equal readings with nothing in it adds a row and says nothing.
                "shown": p.delta_bytes != 0 or any(c.bytes for c in p.causes),
            }
        )
    return {
        "kind": "waterfall",
        "rank": rl.rank,
        "title": f"Free memory phase by phase: {rank_name(rl.rank)}",
        "steps": steps,
        "note": ledger_note(rl),
    }


def buckets_data(rl: RankLedger) -> list[dict[str, Any]]:
    """Per graph family with bucket readings: size, free memory at the start, cost; the largest marked."""
    out = []
    for p in rl.phases:
        if not p.buckets:
            continue
        if abs(p.before_bytes - p.after_bytes) <= DIFFERENCE_RESOLUTION_BYTES and all(
            b.cost_bytes is None or abs(b.cost_bytes) <= DIFFERENCE_RESOLUTION_BYTES
            for b in p.buckets
        ):
            continue  # a capture that took nothing measurable: a flat line says less than the finding
        sizes = [b.size for b in p.buckets]
        known = [s for s in sizes if s is not None]
        largest = sizes.index(max(known)) if known else 0
        name = p.graph.name if p.graph is not None else p.key.removeprefix("capture:")
        tokens = graph_sized_in_tokens(name)  # the unit the text reports use (causes.size_text)
        per_req = p.facts.verify_per_req
        out.append(
            {
                "kind": "buckets",
                "graph": name,
                "phase": phase_name(p),
                "rank": rl.rank,
                "sizes": sizes,
                "size_labels": [
                    size_text(v, tokens, per_req) if v is not None else None for v in sizes
                ],
                "unit": "num_tokens" if tokens else "bs",
                "avail_gib": [_gib(b.avail_bytes) for b in p.buckets],
                "cost_gib": [_gib(b.bucket_cost_bytes) for b in p.buckets],
                "lines": [b.line for b in p.buckets],
                "largest": largest,
                "begin_gib": _gib(p.before_bytes),
                "end_gib": _gib(p.after_bytes),
                "stopped": p.facts.end is CaptureEnd.STOPPED,
                "title": f"Buckets of {phase_name(p)}: {rank_name(rl.rank)}",
            }
        )
    return out


def milestone(key: str, name: str) -> str:
    """The moment a phase ends, said so that "after before capture" never appears."""
    base = key.split("#")[0]
    if base.startswith("pre_capture:"):
        return f"at {name.removeprefix('before ')} begin"
    if base.startswith("pre_weights:"):
        return f"at {name.removeprefix('before ')} begin"
    if base == "post_capture":
        return "last reading (after warm-up)"
    if base.endswith("_kv_after_capture"):
        return "after the KV pool (post-capture sizing)"
    return f"after {name}"


def ranks_data(led: LaunchLedger) -> dict[str, Any]:
    """Free memory after each phase, per rank; phases that change nothing on any rank are left out."""
    order: list[str] = []
    names: dict[str, str] = {}
    for rl in led.ranks:
        for p in rl.phases:
            if p.key not in names:
                order.append(p.key)
                names[p.key] = phase_name(p)
    # Keep the chain order of the rank with the most phases (the bar-printing rank).
    longest = max(led.ranks, key=lambda r: len(r.phases), default=None)
    if longest is not None:
        rank_order = [p.key for p in longest.phases]
        order = rank_order + [k for k in order if k not in rank_order]
    series: list[dict[str, Any]] = []
    for key in order:
        values: list[float | None] = []
        moved = False
        for rl in led.ranks:
            ph = rl.phase(key)
            values.append(_gib(ph.after_bytes) if ph is not None else None)
            moved = moved or (ph is not None and ph.delta_bytes != 0)
        if moved:
            series.append({"key": key, "phase": milestone(key, names[key]), "gib": values})
    start = [_gib(rl.first_bytes) for rl in led.ranks]
    if any(v is not None for v in start):
        series.insert(0, {"key": "start", "phase": "first reading", "gib": start})
    for s in series:
        known = [v for v in s["gib"] if v is not None]
        least = min(known) if known else 0.0
        s["above_min_gib"] = [None if v is None else round(v - least, 4) for v in s["gib"]]
    return {
        "kind": "ranks",
        "ranks": [r.rank for r in led.ranks],
        "binding": led.binding_rank,
        "series": series,
        "title": "Free memory per rank after each phase",
    }


def fit_data(view: Mapping[str, Any] | Any) -> dict[str, Any]:
    """The slope records of a diff/fit view model (a dict, or an object with ``to_json()``).

    Each slope's y values are its largest bucket, or its total when its ``basis`` says so
    (launches whose bars print no per-bucket memory); points are labelled with the launch
    names when the view model lists one launch per point."""
    vm = view.to_json() if hasattr(view, "to_json") else view
    names: list[str] = []
    if isinstance(vm.get("launches"), list):
        names = [str(x.get("name", "")) for x in vm["launches"]]
    elif isinstance(vm.get("a"), Mapping) and isinstance(vm.get("b"), Mapping):
        names = [str(vm["a"].get("name", "A")), str(vm["b"].get("name", "B"))]
    slopes = []
    for s in vm.get("slopes", []) or []:
        basis = str(s.get("basis") or "largest bucket")
        ys_raw = s.get("largest_bucket_gib") if basis == "largest bucket" else None
        ys_raw = ys_raw if ys_raw is not None else s.get("total_gib")
        if ys_raw is None:
            continue
        rows = [float(x) for x in s["rows"]]
        labels = [str(x) for x in s.get("labels", [])] or (names if len(names) == len(rows) else [])
        slopes.append(
            {
                "graph": str(s.get("graph", "")),
                "rank": str(s.get("rank", "")),
                "basis": basis,
                "rows": rows,
                "largest_bucket_gib": [float(y) for y in ys_raw],
                "mib_per_row": float(s["mib_per_row"]),
                "intercept_gib": float(s["intercept_gib"]),
                "mib_per_row_error": float(s.get("mib_per_row_error") or 0.0),
                "labels": labels,
                "residuals_gib": list(s.get("residuals_gib") or []),
            }
        )
    return {"kind": "fit", "slopes": slopes, "title": "Largest bucket against rows"}


def fit_band(
    slope: Mapping[str, Any], xs: Sequence[float]
) -> tuple[list[float], list[float], list[float]]:
    """Fitted line and its band at xs: the slopes the stated error allows, pivoting on the mean
    of the points, widened by one point's error (POINT_ERROR_GIB: a bucket cost is the
    difference of two printed readings)."""
    rows = slope["rows"]
    x_mean = sum(rows) / len(rows) if rows else 0.0
    k = slope["mib_per_row"] / 1024
    dk = slope["mib_per_row_error"] / 1024
    b = slope["intercept_gib"]
    mid = [b + k * x for x in xs]
    half = [abs(x - x_mean) * dk + POINT_ERROR_GIB for x in xs]
    return mid, [m - h for m, h in zip(mid, half)], [m + h for m, h in zip(mid, half)]
