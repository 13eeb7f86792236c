"""The JSON of a launch's failure, its first runtime error and its runtime deaths."""

from __future__ import annotations

from typing import Any

from logmem.analysis.failures.deaths import Death
from logmem.analysis.failures.facts import Failure
from logmem.analysis.failures.harness import TestCheck
from logmem.analysis.failures.records import RankError, exc_type_of, message_of
from logmem.parse.lines import Source
from logmem.report.inputs_text import source_json as _line
from logmem.report.verdict import headline_text
from logmem.units import gib


def failure_json(f: Failure | None) -> dict[str, Any] | None:
    if f is None:
        return None
    # Imported for a failure only: a clean launch's report does not load them (see
    # logmem.report.verdict).
    from logmem.report.fixes import effect_text, fix_value
    from logmem.report.memory_split import failure_split
    from logmem.report.notes import explanation_text

    return {
        "kind": f.kind,
        "memory_related": f.memory_related,
        "phase": f.phase,
        "ranks": list(f.ranks),
        "graph": f.graph,
        "size": f.size,
        "tried_gib": gib(f.tried_bytes),
        "free_gib": gib(f.free_bytes),
        "capacity_gib": gib(f.capacity_bytes),
        "message": f.message,
        "line": _line(f.line),
        "rank_line": _line(f.rank_line),
        "fixes": [
            {"flag": x.flag, "value": fix_value(x), "effect": effect_text(x.effect)}
            for x in f.fixes
        ],
        # The verdict in words (what every format prints first) and the figures behind it.
        "headline": headline_text(f),
        "explanation": explanation_text(f),
        "exc_type": f.exc_type,
        "shortfall_gib": gib(f.shortfall_bytes),
        "bucket_free_gib": gib(f.bucket_free_bytes),
        "memory_split": failure_split(f.record),
        "errors": [
            {"rank": e.rank, "record": type(e.record).__name__, "line": _line(e.source)}
            for e in f.errors
        ],
    }


def error_json(errors: tuple[RankError | None, ...]) -> dict[str, Any] | None:
    """The first decisive error: its rank, whole message (continuation lines too) and line."""
    e = errors[0] if errors else None
    if e is None:
        return None
    return {
        "rank": e.rank,
        "exc_type": exc_type_of(e.record),
        "message": message_of(e.record, e.source),
        "line": _line(e.source),
    }


def death_json(d: Death) -> dict[str, Any]:
    """A child process the watchdog saw die after start-up (no Python traceback)."""
    e = d.event
    return {
        "process": e.process,
        "pid": e.pid,
        "exit_code": e.exit_code,
        "signal": d.signal,
        "line": _line(e.source),
        "fatal": [{"text": f.text, "line": _line(f.source)} for f in d.fatal],
        "oom_logged": d.oom_logged,
        "died_in": (
            {
                "path": d.died_in.path,
                "line": d.died_in.line,
                "func": d.died_in.func,
                "at": _line(d.died_in.source),
            }
            if d.died_in is not None
            else None
        ),
    }


def check_json(c: TestCheck | None, results: Source | None) -> dict[str, Any] | None:
    """A test harness's failed comparison: the figures as printed, the relation the test
    required, and the benchmark results printed before it."""
    if c is None:
        return None
    return {
        "actual": c.actual,
        "limit": c.limit,
        "required": c.required,
        "line": _line(c.source),
        "results_line": _line(results),
    }
