"""Outcome: how a start-up ended (ready, crashed with its failure, or incomplete) and why.

Only the ready line ends start-up for errors: a traceback after the scheduler summary but
before "fired up" (warm-up) is a crash, one after it is a runtime error. A crash's failure
is the decisive error of its tracebacks (records.py), placed where the failing rank's
start-up stood (place.py), with the fixes and notes that explain it (fixes.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import logmem.analysis.failures.facts as fx
from logmem.analysis.failures.budget import budget
from logmem.analysis.failures.deaths import Death, failed_deaths
from logmem.analysis.failures.harness import results_before, test_check
from logmem.analysis.failures.place import Place, furthest_rank, place_of
from logmem.analysis.failures.records import (
    ChildDied,
    CommBufferError,
    CutTraceback,
    ErrorRecord,
    KVSizing,
    OtherRanksUnfinished,
    OutOfMemory,
    PythonError,
    RankError,
    Unbalanced,
    exc_type_of,
    is_memory,
    kind_of,
    message_of,
    priority,
    read_errors,
)
from logmem.analysis.failures.traces import (
    NoiseKind,
    RaisedIn,
    Up,
    Where,
    after,
    came_up,
    ignored_lines,
    noise_kind,
    offline_tool,
    raised_in,
)
from logmem.model.records import Launch, Rank, Traceback
from logmem.parse import events as ev
from logmem.parse.lines import Source


def _finished(launch: Launch) -> bool:
    """Start-up finished: the ready line, the HTTP server, or the scheduler summary (offline Engine)."""
    if any(isinstance(e, (ev.Ready, ev.HttpUp)) for e in launch.events):
        return True
    return any(r.summary is not None for r in launch.ranks)


def outcome(launch: Launch) -> fx.Outcome:
    """Classify a launch: ready, crashed (with the failure) or incomplete (where it stopped).

    Only the end of start-up (traces.came_up: the ready line, or what a process that prints
    none ends it with) makes later errors runtime errors: a traceback after the scheduler
    summary but before "fired up" (warm-up) is a crash. Tracebacks printed at interpreter
    exit or by a test harness are not the server's errors (traces.noise_kind).
    """
    up = came_up(launch)
    ignored = ignored_lines(launch)
    noise: list[fx.Noise] = []
    own: list[Traceback] = []
    for t in launch.tracebacks:
        kind = noise_kind(t, ignored)
        if kind is None:
            own.append(t)
        else:
            first = read_errors((t,))
            err = first[0] if first else None
            at = err.source if err is not None else (t.opening.source if t.opening else None)
            past = at is not None and after(at, up)
            check = test_check(err) if kind is NoiseKind.HARNESS else None
            seen = results_before(launch, at) if check is not None else None
            noise.append(fx.Noise(kind, t, err, check, seen, past))
    last_steps = _last_step_lines(launch) if up is None else {}
    crash_tbs = [
        t
        for t in own
        if t.errors and not after(t.errors[0].source, up) and _fatal(t, up, last_steps)
    ]
    cut = [t for t in own if _cut(t, own, up, last_steps)]
    runtime = tuple(t for t in own if t.errors and after(t.errors[0].source, up))
    sigquit = [e for e in launch.events if isinstance(e, ev.SigQuit) and not after(e.source, up)]
    died = failed_deaths(launch)
    early = tuple(d for d in died if not after(d.event.source, up))
    late = tuple(d for d in died if after(d.event.source, up))
    tool = offline_tool(launch)
    if crash_tbs or cut or sigquit or early:
        failure = _crash_failure(launch, crash_tbs, cut, tool, early)
        return fx.Outcome("crashed", failure, runtime, up, tuple(noise), tool, late)
    if _finished(launch) or up is not None:
        return fx.Outcome("ready", None, runtime, up, tuple(noise), tool, late)
    return fx.Outcome("incomplete", _stopped(launch), runtime, up, tuple(noise), tool, late)


def _cut(t: Traceback, own: Sequence[Traceback], up: Up | None, last_steps: dict[str, int]) -> bool:
    """A traceback the paste cuts before its exception line: opened, no error, the last of its
    file, and nothing of start-up after it (else it was printed and start-up went on)."""
    if t.errors or t.opening is None or up is not None:
        return False
    at = t.opening.source
    later = [x for x in own if x is not t and (x.opening or x.errors[0]).source.path == at.path]
    if any((x.opening or x.errors[0]).source.line_no > at.line_no for x in later):
        return False
    return last_steps.get(at.path, 0) <= at.line_no


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


def _fatal(tb: Traceback, up: Up | None, last_steps: dict[str, int]) -> bool:
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
    if up is not None:
        return False
    err = tb.errors[-1].source
    return last_steps.get(err.path, 0) <= err.line_no


def _crash_failure(
    launch: Launch,
    tbs: list[Traceback],
    cut: list[Traceback],
    tool: str | None,
    died: tuple[Death, ...] = (),
) -> fx.Failure:
    errors = read_errors(tbs) + tuple(
        RankError(t.rank, CutTraceback(), t.opening.source) for t in cut if t.opening
    )
    if len(launch.ranks) == 1:
        # One process: an unprefixed traceback (bench_one_batch, a paste without prefixes) is its.
        sole = launch.ranks[0].label
        errors = tuple(replace(e, rank=sole) if e.rank is None else e for e in errors)
    if not errors and died:
        d = died[0]
        fatal = d.fatal[0].text if d.fatal else None
        rec0 = ChildDied(d.event.process, d.event.exit_code, d.signal, fatal)
        errors = (RankError(None, rec0, d.event.source),)
    if not errors:
        errors = (RankError(None, ChildDied(), None),)
    principal = min(errors, key=lambda e: (priority(e.record), e.source.line_no if e.source else 0))
    rec = principal.record
    raised = raised_in(_traceback_of(principal, [*tbs, *cut]), message_of(rec, principal.source))
    same = [e for e in errors if type(e.record) is type(rec)]
    ranks = _order_ranks(launch, [e.rank for e in same if e.rank is not None])
    rank = launch.rank(principal.rank) if principal.rank is not None else None
    place = place_of(launch, rank, principal.source)
    size, bucket_free = place.sample
    phase = place.phase
    in_capture = bool(phase and phase.startswith("capture"))
    memory = is_memory(rec)
    # Imported here: only a crash needs the fix rules, and a clean launch's analyze does not
    # import them (0.6 ms of a small log's analyze).
    from logmem.analysis.failures.checks import imbalance_fixes, kv_fixes
    from logmem.analysis.failures.code_fixes import not_memory_fixes
    from logmem.analysis.failures.fixes import oom_fixes

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
    elif isinstance(rec, CutTraceback):
        # The last frame printed is not where it was raised: the cut hides that.
        notes = [fx.TracebackCut(raised.frame)]
        fixes = not_memory_fixes(launch, place, RaisedIn(Where.UNKNOWN, None, None))
    elif memory is False:
        fixes = not_memory_fixes(launch, place, raised)
        notes = [fx.NotMemory(exc_type_of(rec), bucket_free, raised)]
    elif isinstance(rec, PythonError) and rec.memory_hint:
        notes = [fx.MemoryHint(rec.exc_type)]
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
        offline=tool,
    )


def _traceback_of(e: RankError, tbs: Sequence[Traceback]) -> Traceback:
    """The traceback a decisive error came from (its error line, or a cut one's opening)."""
    for t in tbs:
        if e.source is not None and (
            any(x.source == e.source for x in t.errors)
            or (t.opening is not None and t.opening.source == e.source)
        ):
            return t
    return Traceback(e.rank, None, ())


def _kv_shortfall(launch: Launch, rec: ErrorRecord, place: Place) -> int | None:
    """For "Not enough memory": how far below zero the KV budget came out."""
    if not isinstance(rec, KVSizing):
        return None
    from logmem.analysis.failures.fixes import draft_sized  # a crash's rule (see _crash_failure)

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
    last = _last_source(launch, rank)
    own = rank.last_event.source if rank.last_event is not None else None
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
        line=last,
        notes=(fx.LogStops(*_next_launch_line(launch, last)),),
        bucket_free_bytes=free,
        ranks_total=len(launch.ranks),
        bar_rank=place.bar_rank,
        compiling_size=compiling,
        capture_begin_bytes=begin,
        rank_line=own
        if own is not None and last is not None and own.line_no != last.line_no
        else None,
    )


def _next_launch_line(launch: Launch, last: Source | None) -> tuple[int | None, int | None]:
    """The line the next launch of this file begins at, when it follows where this one stops,
    and the last line read before it (Launch.next_after)."""
    nxt = launch.next_start
    if nxt is None or (last is not None and nxt.path != last.path):
        return None, None
    return nxt.line_no, launch.next_after


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
