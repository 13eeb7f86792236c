"""Outcome: how a start-up ended (ready, crashed with its failure, or incomplete) and why.

Only the ready line ends start-up for errors: a traceback after the scheduler summary but
before "fired up" (warm-up) is a crash, one after it is a runtime error. A crash's failure
is the decisive error of its tracebacks (records.py), placed where the failing rank's
start-up stood (place.py), with the fixes and notes that explain it (fixes.py).
"""

from __future__ import annotations

from collections.abc import Sequence

import logmem.analysis.failures.facts as fx
from logmem.analysis.failures.budget import budget
from logmem.analysis.failures.fixes import (
    draft_sized,
    imbalance_fixes,
    kv_fixes,
    not_memory_fixes,
    oom_fixes,
)
from logmem.analysis.failures.place import Place, furthest_rank, place_of
from logmem.analysis.failures.records import (
    ChildDied,
    CommBufferError,
    ErrorRecord,
    KVSizing,
    OtherRanksUnfinished,
    OutOfMemory,
    RankError,
    Unbalanced,
    exc_type_of,
    is_memory,
    kind_of,
    message_of,
    priority,
    read_errors,
)
from logmem.model.records import Launch, Rank, Traceback
from logmem.parse import events as ev
from logmem.parse.lines import Source


def _ready_source(launch: Launch) -> Source | None:
    return next((e.source for e in launch.events if isinstance(e, ev.Ready)), None)


def _finished(launch: Launch) -> bool:
    """Start-up finished: the ready line, the HTTP server, or the scheduler summary (offline Engine)."""
    if any(isinstance(e, (ev.Ready, ev.HttpUp)) for e in launch.events):
        return True
    return any(r.summary is not None for r in launch.ranks)


def _after_ready(src: Source | None, ready: Source | None) -> bool:
    """An error is a runtime error when the server was ready and it is not provably earlier."""
    if ready is None:
        return False
    if src is None or src.path != ready.path:
        return True
    return src.line_no > ready.line_no


def outcome(launch: Launch) -> fx.Outcome:
    """Classify a launch: ready, crashed (with the failure) or incomplete (where it stopped).

    Only the ready line ends start-up for errors: a traceback after the scheduler summary
    but before "fired up" (warm-up) is a crash, one after it is a runtime error.
    """
    ready = _ready_source(launch)
    last_steps = _last_step_lines(launch) if ready is None else {}
    crash_tbs = [
        t
        for t in launch.tracebacks
        if t.errors and not _after_ready(t.errors[0].source, ready) and _fatal(t, ready, last_steps)
    ]
    runtime = tuple(
        t for t in launch.tracebacks if t.errors and _after_ready(t.errors[0].source, ready)
    )
    sigquit = [
        e for e in launch.events if isinstance(e, ev.SigQuit) and not _after_ready(e.source, ready)
    ]
    if crash_tbs or sigquit:
        return fx.Outcome("crashed", _crash_failure(launch, crash_tbs), runtime)
    if _finished(launch):
        return fx.Outcome("ready", None, runtime)
    return fx.Outcome("incomplete", _stopped(launch), runtime)


_STEPS = (ev.WeightsBegin, ev.WeightsEnd, ev.PoolEnd, ev.CaptureBegin, ev.CaptureEnd, ev.Summary)


def _last_step_lines(launch: Launch) -> dict[str, int]:
    """Per input file, the line of the last memory step any rank printed there (read once
    per launch, not once per traceback)."""
    out: dict[str, int] = {}
    for r in launch.ranks:
        for e in r.events:
            if isinstance(e, _STEPS):
                src = e.source
                if src.line_no > out.get(src.path, 0):
                    out[src.path] = src.line_no
    return out


def _fatal(tb: Traceback, ready: Source | None, last_steps: dict[str, int]) -> bool:
    """Did this traceback end start-up? A scheduler's crash report or an OOM/KV/imbalance
    error does; a stray exception line, or a caught and printed traceback, does not when
    start-up carried on (the server came up, or a rank printed memory steps after it)."""
    if isinstance(tb.opening, ev.SchedulerException):
        return True
    if any(
        isinstance(e, (ev.TorchOOM, ev.NotEnoughMemory, ev.CaptureFailed, ev.Imbalance))
        for e in tb.errors
    ):
        return True
    if ready is not None:
        return False
    err = tb.errors[-1].source
    return last_steps.get(err.path, 0) <= err.line_no


def _crash_failure(launch: Launch, tbs: list[Traceback]) -> fx.Failure:
    errors = read_errors(tbs)
    if not errors:
        errors = (RankError(None, ChildDied(), None),)
    principal = min(errors, key=lambda e: (priority(e.record), e.source.line_no if e.source else 0))
    rec = principal.record
    same = [e for e in errors if type(e.record) is type(rec)]
    ranks = _order_ranks(launch, [e.rank for e in same if e.rank is not None])
    rank = launch.rank(principal.rank) if principal.rank is not None else None
    place = place_of(launch, rank, principal.source)
    size, bucket_free = place.sample
    phase = place.phase
    in_capture = bool(phase and phase.startswith("capture"))
    memory = is_memory(rec)
    fixes: list[fx.Fix] = []
    notes: list[fx.Note] = []
    if isinstance(rec, OutOfMemory):
        fixes, notes = oom_fixes(launch, rec, place)
    elif isinstance(rec, KVSizing):
        fixes, notes = kv_fixes(launch, rec, place)
    elif isinstance(rec, Unbalanced):
        fixes, notes = imbalance_fixes(launch, rec, ranks)
    elif isinstance(rec, OtherRanksUnfinished):
        lagging = tuple(
            r.label for r in launch.ranks if r.target is not None and r.target.weights_end is None
        )
        notes = [fx.RanksLagging(lagging)]
    elif isinstance(rec, ChildDied):
        notes = [fx.NoTraceback()]
    elif memory is False:
        fixes = not_memory_fixes(place)
        notes = [fx.NotMemory(exc_type_of(rec), bucket_free)]
    elif isinstance(rec, CommBufferError):
        notes = [fx.CommUnknown(rec.library)]
    free = (
        rec.free_bytes
        if isinstance(rec, OutOfMemory) and rec.free_bytes is not None
        else bucket_free
    )
    return fx.Failure(
        kind=kind_of(rec),
        memory_related=memory,
        phase=phase,
        ranks=ranks,
        graph=place.graph.name
        if place.graph
        else (place.bar_graph.name if place.bar_graph else None),
        size=size if in_capture else None,
        tried_bytes=rec.tried_bytes if isinstance(rec, OutOfMemory) else None,
        free_bytes=free,
        capacity_bytes=rec.capacity_bytes if isinstance(rec, OutOfMemory) else None,
        message=message_of(rec, principal.source),
        line=principal.source,
        fixes=tuple(fixes),
        notes=tuple(notes),
        shortfall_bytes=rec.shortfall_bytes
        if isinstance(rec, OutOfMemory)
        else _kv_shortfall(launch, rec, place),
        bucket_free_bytes=bucket_free if in_capture else None,
        exc_type=exc_type_of(rec),
        record=rec,
        errors=errors,
        ranks_total=len(launch.ranks),
        bar_rank=place.bar_rank,
    )


def _kv_shortfall(launch: Launch, rec: ErrorRecord, place: Place) -> int | None:
    """For "Not enough memory": how far below zero the KV budget came out."""
    if not isinstance(rec, KVSizing):
        return None
    rest = budget(launch, draft=draft_sized(place), mfs=rec.mem_fraction_static).rest_bytes
    if rest is None:
        return None
    return -rest if rest < 0 else 0


def _order_ranks(launch: Launch, labels: Sequence[str]) -> tuple[str, ...]:
    order = {r.label: i for i, r in enumerate(launch.ranks)}
    return tuple(sorted(dict.fromkeys(labels), key=lambda x: (order.get(x, len(order)), x)))


def _stopped(launch: Launch) -> fx.Failure | None:
    if not launch.ranks:
        return None
    rank = furthest_rank(launch)
    place = place_of(launch, rank, None)
    size, free = place.sample
    compiling, begin = _capture_state(place)
    return fx.Failure(
        kind="stopped",
        memory_related=None,
        phase=place.phase,
        ranks=(rank.label,),
        graph=place.graph.name if place.graph else None,
        size=size,
        tried_bytes=None,
        free_bytes=free,
        capacity_bytes=None,
        message="the log stops before start-up finished (no error, no ready line)",
        line=_last_source(launch, rank),
        notes=(fx.LogStops(),),
        bucket_free_bytes=free,
        ranks_total=len(launch.ranks),
        bar_rank=place.bar_rank,
        compiling_size=compiling,
        capture_begin_bytes=begin,
    )


def _capture_state(place: Place) -> tuple[int | None, int | None]:
    """For a log that stops in a capture: the size a piecewise bar was compiling, and the
    free memory at the capture's begin."""
    g = place.bar_graph or place.graph
    if g is None or not (place.phase or "").startswith("capture "):
        return None, None
    bars = [e for e in (place.rank.events if place.rank else ()) if isinstance(e, ev.BarRender)]
    compiling = bars[-1].size if bars and bars[-1].kind == "compile" else None
    return compiling, g.begin_bytes


def _last_source(launch: Launch, rank: Rank) -> Source | None:
    """The last line read in the rank's file: where the log stops."""
    path = rank.last_event.source.path if rank.last_event else None
    srcs = [e.source for e in launch.all_events() if path is None or e.source.path == path]
    return max(srcs, key=lambda s: s.line_no) if srcs else None
