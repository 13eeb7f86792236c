"""diff's words for how each launch ended: analyze's verdict line, a capture one launch stopped
in, wording markers its unfinished start-up lacks, and the end-state rows (and their JSON)."""

from __future__ import annotations

from typing import Any

from logmem.analysis.failures.facts import Verdict
from logmem.compare.diff import PhaseChange
from logmem.compare.diff_outcome import EndState
from logmem.report.verdict import verdict_lines
from logmem.sglang import rules
from logmem.units import gib


def outcome_line(side: str, v: Verdict) -> str:
    """'A: ' and the verdict's first line as analyze prints it, with the failure's line."""
    f = v.outcome.failure
    at = (
        f" Error at line {f.line.line_no}."
        if f is not None and f.kind != "stopped" and f.line
        else ""
    )
    return f"{side}: {verdict_lines(v)[0]}{at}"


def outcome_json(v: Verdict) -> dict[str, Any]:
    f = v.outcome.failure
    return {
        "status": v.outcome.status,
        "verdict": verdict_lines(v)[0],
        "failure": None
        if f is None
        else {
            "kind": f.kind,
            "phase": f.phase,
            "graph": f.graph,
            "size": f.size,
            "memory_related": f.memory_related,
            "line": f.line.line_no if f.line else None,
        },
    }


def stopped_text(p: PhaseChange) -> str | None:
    """Why a phase's change is not given: a side's capture stopped (short of its end)."""
    parts = []
    for side, cut in zip(("A", "B"), p.stopped, strict=True):
        if cut is None:
            continue
        n, size = cut
        unit = "num_tokens" if rules.graph_sized_in_tokens(p.phase.facts.graph) else "bs"
        at = f" ({unit} {size})" if size is not None else ""
        # The last bar read starts the bucket the capture stopped in.
        how = (
            "before its first bucket"
            if n == 0
            else "in its first bucket"
            if n == 1
            else f"in bucket {n}"
        )
        parts.append(f"{side} stopped {how}{at}")
    if not parts:
        return None
    return (
        f"'n/c' ({p.phase.facts.graph or 'capture'}): not comparable: {'; '.join(parts)}, so "
        "its drop is what the capture took before it stopped, not a whole capture's."
    )


def unreached_text(unreached: tuple[tuple[str, str], ...]) -> str | None:
    if not unreached:
        return None
    names = ", ".join(f"{m} ({side})" for m, side in unreached)
    return (
        f"Not compared: {names}: a line that launch's start-up stopped before printing, not a "
        "wording difference."
    )


def _g(b: int | None) -> float | None:
    return gib(b) if b is not None else None


def end_rows(ends: tuple[EndState, EndState]) -> list[tuple[str, Any, Any, Any]]:
    """(row, A, B, change) of the end state: GiB and requests as JSON-able values."""
    a, b = ends
    fa, fb = _g(a.free_bytes), _g(b.free_bytes)
    free_change = (
        gib(b.free_bytes - a.free_bytes)
        if a.free_bytes is not None and b.free_bytes is not None
        else None
    )
    ra, rb = a.max_running_requests, b.max_running_requests
    req_change = rb - ra if ra is not None and rb is not None else None
    return [
        ("free after start-up", fa, fb, free_change),
        ("max_running_requests", ra, rb, req_change),
    ]


def end_source(e: EndState) -> str:
    """Where a launch's end figures come from, short: 'l.137 summary'."""
    out = []
    for what, line, src in (
        ("free", e.free_line, e.free_from),
        ("max_running_requests", e.requests_line, e.requests_from),
    ):
        if src is not None:
            out.append(f"{what}: {src}" + (f" l.{line}" if line is not None else ""))
    return "; ".join(out) or "-"


def end_json(e: EndState) -> dict[str, Any]:
    return {
        "free_after_startup_gib": _g(e.free_bytes),
        "free_line": e.free_line,
        "free_from": e.free_from,
        "max_running_requests": e.max_running_requests,
        "max_running_requests_line": e.requests_line,
        "max_running_requests_from": e.requests_from,
    }
