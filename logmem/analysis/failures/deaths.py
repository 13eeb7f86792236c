"""Processes that died without a Python traceback, as the launcher's watchdog saw them.

SGLang's SubprocessWatchdog (srt/utils/watchdog.py, in 0.5.23) prints 'Subprocess NAME
(pid=P) crashed with exit code C' when a child ends with a code other than 0, then raises
SIGQUIT. A process killed by a signal (SIGABRT from a ROCm hardware exception or a failed
assertion in native code, SIGSEGV, SIGKILL from the kernel's OOM killer) leaves no Python
traceback: the watchdog's line, with faulthandler's 'Fatal Python error: X' and the ROCm
runtime's 'HSA_STATUS_ERROR_...' line before it, is all the log has. A death after
'SIGTERM received' is the server being stopped, not a failure.
"""

from __future__ import annotations

import signal

from logmem.frozen import frozen
from logmem.model.records import Launch
from logmem.parse import events as ev

# At most this many fatal-error lines are kept per death: the first ones, one or two per rank
# that died (each rank's process prints its own).
MAX_FATAL_LINES = 8


@frozen
class Death:
    """One child process the watchdog saw die, with the signal that ended it, if any, and
    the fatal-error lines printed in the same file since start-up or the previous death."""

    event: ev.ProcessDied
    signal: str | None  # SIGABRT for exit code -6; None for a positive code
    fatal: tuple[ev.FatalError, ...]
    shutdown: bool  # after 'SIGTERM received' in the same file: the server was being stopped
    oom_logged: bool  # the launch's tracebacks hold an out-of-memory error
    # Where it died in SGLang's code, by faulthandler's dump after 'Fatal Python error': the
    # innermost frame under sglang/ that is not the watchdog's own thread (None: no dump).
    died_in: ev.Frame | None = None


def signal_name(exit_code: int | None) -> str | None:
    """multiprocessing's exit code -N is signal N: its name, when Python knows it."""
    if exit_code is None or exit_code >= 0:
        return None
    try:
        return signal.Signals(-exit_code).name
    except ValueError:
        return None


def deaths(launch: Launch) -> tuple[Death, ...]:
    """Every watchdog death of the launch, in log order, with its fatal-error lines."""
    out: list[Death] = []
    events = sorted(
        (
            e
            for e in launch.events
            if isinstance(e, (ev.ProcessDied, ev.SigTerm, ev.FatalError, ev.Frame))
        ),
        key=lambda e: (e.source.path, e.source.line_no),
    )
    oom = any(
        isinstance(err, (ev.TorchOOM, ev.NotEnoughMemory))
        for t in launch.tracebacks
        for err in t.errors
    )
    pending: dict[str, list[ev.FatalError]] = {}
    frames: dict[str, ev.Frame] = {}  # per file: the first SGLang frame of a dump since then
    stopped: set[str] = set()
    for e in events:
        path = e.source.path
        if isinstance(e, ev.SigTerm):
            stopped.add(path)
        elif isinstance(e, ev.FatalError):
            held = pending.setdefault(path, [])
            if len(held) < MAX_FATAL_LINES:
                held.append(e)
        elif isinstance(e, ev.Frame):
            if path not in frames and _sglang_frame(e):
                frames[path] = e
        else:
            fatal = tuple(pending.pop(path, ()))
            died_in = frames.pop(path, None)
            out.append(Death(e, signal_name(e.exit_code), fatal, path in stopped, oom, died_in))
    return tuple(out)


def _sglang_frame(f: ev.Frame) -> bool:
    """A frame in SGLang's own code, other than the watchdog thread every dump lists first."""
    p = f.path.replace("\\", "/")
    return "/sglang/" in p and not p.endswith("/watchdog.py")


def failed_deaths(launch: Launch) -> tuple[Death, ...]:
    """The deaths that are failures: not the shutdown a SIGTERM started."""
    return tuple(d for d in deaths(launch) if not d.shutdown)
