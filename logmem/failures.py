"""Failures stage: a launch -> outcome (ready / crashed / incomplete) and, when it died, where and why."""

from __future__ import annotations

from dataclasses import dataclass

from logmem import events as ev
from logmem.ledger import Launch, Rank, Traceback
from logmem.lines import Source


@dataclass(frozen=True)
class Fix:
    flag: str
    value: str | None
    effect: str


@dataclass(frozen=True)
class Failure:
    kind: str  # oom | not_enough_memory | imbalance | capture_failed | error | stopped
    memory_related: bool | None  # None: cannot tell (a log that just stops)
    phase: str | None
    ranks: tuple[str, ...]
    graph: str | None
    size: int | None  # bucket being captured (its last sample)
    tried_bytes: int | None
    free_bytes: int | None
    capacity_bytes: int | None
    message: str
    line: Source | None
    fixes: tuple[Fix, ...] = ()


@dataclass(frozen=True)
class Outcome:
    status: str  # ready | crashed | incomplete
    failure: Failure | None
    runtime_errors: tuple[Traceback, ...]  # errors after start-up finished


def rank_phase(rank: Rank) -> str:
    """Where a rank's start-up stands, from the last memory step it printed."""
    phase = "before distributed init"
    if rank.init_begin is not None:
        phase = "distributed init"
    if rank.init_end is not None:
        phase = "after distributed init"
    # Walk the rank's own order of steps: models and graphs interleave for drafts.
    steps: list[tuple[int, str]] = []
    for m in rank.models:
        label = "" if m.role == "target" else "draft "
        if m.weights_begin:
            steps.append((m.weights_begin.source.line_no, f"{label}weights"))
        if m.weights_end:
            steps.append((m.weights_end.source.line_no, f"{label}pools"))
        if m.pool_end:
            steps.append((m.pool_end.source.line_no, f"after {label}pools"))
    for g in rank.graphs:
        if g.begin:
            steps.append((g.begin.source.line_no, f"capture {g.name}"))
        if g.end:
            steps.append((g.end.source.line_no, f"after capture {g.name}"))
    if rank.summary is not None:
        steps.append((rank.summary.source.line_no, "serving"))
    if steps:
        phase = max(steps)[1]
    return phase


def _finished_line(launch: Launch) -> int | None:
    """Line where start-up was over: the ready line, the HTTP server, or the summary line."""
    marks = [e.source.line_no for e in launch.events if isinstance(e, (ev.Ready, ev.HttpUp))]
    marks += [r.summary.source.line_no for r in launch.ranks if r.summary is not None]
    return min(marks) if marks else None


def _kind(errors: tuple[ev.Event, ...]) -> tuple[str, bool]:
    for e in errors:
        if isinstance(e, ev.TorchOOM):
            return "oom", True
    for e in errors:
        if isinstance(e, ev.NotEnoughMemory):
            return "not_enough_memory", True
        if isinstance(e, ev.Imbalance):
            return "imbalance", True
    for e in errors:
        if isinstance(e, ev.CaptureFailed):
            oom = "out of memory" in e.message.lower()
            return ("oom" if oom else "capture_failed"), oom
    for e in errors:
        if isinstance(e, ev.ExceptionLine):
            text = f"{e.exc_type}: {e.message}".lower()
            if "out of memory" in text or "outofmemory" in text:
                return "oom", True
            if any(w in text for w in ("nvshmem", "deepep")) and any(
                w in text for w in ("alloc", "memory", "buffer")
            ):
                return "error", True
    return "error", False


def _message(errors: tuple[ev.Event, ...]) -> tuple[str, Source | None]:
    for e in reversed(errors):
        if isinstance(e, ev.ExceptionLine):
            return f"{e.exc_type}: {e.message}".strip(), e.source
        if isinstance(e, ev.TorchOOM):
            return e.message, e.source
        if isinstance(e, ev.CaptureFailed):
            return f"Capture CUDA graph failed: {e.message}", e.source
    if errors:
        return errors[-1].source.text.strip(), errors[-1].source
    return "", None


def _crash_rank(launch: Launch, tb: Traceback) -> Rank | None:
    if tb.rank is not None:
        return launch.rank(tb.rank)
    return None


def outcome(launch: Launch) -> Outcome:
    """Classify a launch: ready, crashed (with the failure) or incomplete (where it stopped)."""
    done = _finished_line(launch)

    def before_done(src: Source | None) -> bool:
        return done is None or src is None or src.line_no < done

    crash_tbs = [t for t in launch.tracebacks if t.errors and before_done(t.errors[0].source)]
    runtime = tuple(t for t in launch.tracebacks if t.errors and not before_done(t.errors[0].source))
    sigquit = [e for e in launch.events if isinstance(e, ev.SigQuit) and before_done(e.source)]
    if crash_tbs or sigquit:
        return Outcome("crashed", _crash_failure(launch, crash_tbs), runtime)
    if done is not None:
        return Outcome("ready", None, runtime)
    return Outcome("incomplete", _stopped(launch), runtime)


def _crash_failure(launch: Launch, tbs: list[Traceback]) -> Failure:
    errors = tuple(e for t in tbs for e in t.errors)
    kind, memory = _kind(errors)
    message, line = _message(errors)
    ranks = tuple(dict.fromkeys(t.rank for t in tbs if t.rank is not None))
    first_rank = next((r for t in tbs if (r := _crash_rank(launch, t)) is not None), None)
    if first_rank is None and launch.ranks:
        first_rank = _furthest_rank(launch)
    oom = next((e for e in errors if isinstance(e, ev.TorchOOM)), None)
    graph = _open_graph(first_rank) if first_rank else None
    if not tbs:
        message, line = "a child process died (sigquit) without a readable traceback", None
    return Failure(
        kind=kind,
        memory_related=memory,
        phase=rank_phase(first_rank) if first_rank else None,
        ranks=ranks,
        graph=graph.name if graph else None,
        size=graph.samples[-1].size if graph and graph.samples else None,
        tried_bytes=oom.tried.bytes if oom and oom.tried else None,
        free_bytes=oom.free.bytes if oom and oom.free else None,
        capacity_bytes=oom.capacity.bytes if oom and oom.capacity else None,
        message=message,
        line=line,
    )


def _open_graph(rank: Rank):  # type: ignore[no-untyped-def]
    return next((g for g in reversed(rank.graphs) if g.end is None and g.begin is not None), None)


def _furthest_rank(launch: Launch) -> Rank:
    return max(launch.ranks, key=lambda r: (r.prints_bars, len(r.events)))


def _stopped(launch: Launch) -> Failure | None:
    if not launch.ranks:
        return None
    rank = _furthest_rank(launch)
    graph = _open_graph(rank)
    last = rank.last_event
    return Failure(
        kind="stopped",
        memory_related=None,
        phase=rank_phase(rank),
        ranks=(rank.label,),
        graph=graph.name if graph else None,
        size=graph.samples[-1].size if graph and graph.samples else None,
        tried_bytes=None,
        free_bytes=graph.samples[-1].avail.bytes if graph and graph.samples else None,
        capacity_bytes=None,
        message="the log stops before start-up finished (no error, no ready line)",
        line=last.source if last else None,
    )
