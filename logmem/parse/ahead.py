"""Read ahead in a second process: a big input's segments are found while records are built.

A regular file of at least AHEAD_BYTES (a compressed one: a quarter of that) is read by a
forked child that runs logmem.parse.read.iter_segments on it and sends the segments back through
a pipe, in batches; meanwhile this process matches them and builds the model. The byte work (reading, decompressing,
the keyword scan, the newline count) and the per-record Python then run on two cores.

Nothing about the result changes: the same code finds the same segments, in the same order; a
warning the child raises is raised again here at the same place in the stream of segments, an
error too, and the input's ReadStats come back at its end. Memory stays bounded: a batch holds
at most BATCH_BYTES of segment data (plus one segment) and the child waits while the pipe is
full. Standard input, small files, systems other than Linux, a single core and a process that
runs other threads (forking one is unsafe) are read in this process. ``LOGMEM_READ_AHEAD=0``
reads every input in this process, ``=1`` every regular file ahead (tests).
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import os
import pickle
import signal
import stat
import sys
import threading
import warnings
from collections.abc import Iterator, Sequence
from typing import IO, Any

import regex

from logmem.parse.matchers import matcher_for
from logmem.parse.read import ReadStats, Segment, iter_segments
from logmem.parse.source import _SNIFF_BYTES as SNIFF_BYTES
from logmem.parse.source import _sniff

# Under this size the fork and the pipe cost more than the second core gives back.
AHEAD_BYTES = 16 << 20
# A compressed file counts this many times its size (text logs shrink 5-15 times).
COMPRESSION_RATIO = 4
BATCH_BYTES = 1 << 20
BATCH_SEGMENTS = 2048


def wanted(path: str) -> bool:
    """Whether `path` is read ahead in a child process."""
    setting = os.environ.get("LOGMEM_READ_AHEAD", "")
    # Linux only: elsewhere fork is either missing or unsafe under system frameworks (macOS).
    if setting == "0" or path == "-" or not sys.platform.startswith("linux"):
        return False
    if threading.active_count() > 1 or _cores() < 2:
        return False
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode):
            return False
        if setting == "1" or st.st_size >= AHEAD_BYTES:
            return True
        if st.st_size < AHEAD_BYTES // COMPRESSION_RATIO:
            return False
        with open(path, "rb") as f:
            head = f.read(SNIFF_BYTES)
    except OSError:
        return False  # the reader says why it cannot be opened
    # A compressed log holds several times its size in text (and decompressing is work the
    # child takes over as well).
    return _sniff(head.ljust(SNIFF_BYTES, b"\0")) is not None


def _cores() -> int:
    """The cores this process may run on: with one, a child only adds its overhead."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def segments(
    path: str,
    keywords: regex.Pattern[bytes],
    stats: ReadStats,
    once: Sequence[bytes],
    continuations: bool,
    chunk_bytes: int | None,
) -> Iterator[Segment]:
    """iter_segments(path, ...), read by a child process."""
    matcher_for(keywords)  # compiled once here, inherited by every child
    r, w = os.pipe()
    _widen(w)
    pid = os.fork()
    if pid == 0:  # the child: never returns
        os.close(r)
        _child(w, stats, iter_segments(path, keywords, stats, once, continuations, chunk_bytes))
    os.close(w)
    pipe = os.fdopen(r, "rb")
    try:
        while True:
            try:
                kind, payload = _Unpickler(pipe).load()
            except EOFError:
                raise RuntimeError(f"the process reading {path} ended unexpectedly") from None
            if kind == "segments":
                for line_no, data, truncated, cont in payload:
                    yield Segment(path, line_no, data, truncated, cont)
            elif kind == "warning":
                warnings.warn(payload, stacklevel=2)
            elif kind == "error":
                raise payload
            else:
                for name, value in payload.items():
                    setattr(stats, name, value)
                return
    finally:
        pipe.close()
        # Done, or the caller stopped early (an error, a closed generator): either way the
        # child has nothing left to do. Killing an exited child is harmless until it is reaped.
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)


class _Unpickler(pickle.Unpickler):
    """The child's messages hold bytes, numbers, strings and dicts, plus the warnings and
    errors it met; nothing else may name a Python global. The child is this process's own
    fork, but its messages carry the log's bytes, and logmem never unpickles a global it did
    not expect (a crafted stream could otherwise call any importable function)."""

    def find_class(self, module: str, name: str) -> Any:
        if module == "builtins" or module.startswith("logmem."):
            found = super().find_class(module, name)
            if isinstance(found, type) and issubclass(found, BaseException):
                return found
        raise pickle.UnpicklingError(f"the read-ahead child sent {module}.{name}")


def _widen(fd: int) -> None:
    """Room in the pipe for a whole batch (Linux), so the child can go on with the next one
    while the parent reads this one; elsewhere the pipe keeps its size."""
    try:
        import fcntl

        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, 2 * BATCH_BYTES)
    except (OSError, ImportError, AttributeError):
        pass  # no such call, or over the system's limit: a smaller pipe only waits more


def _child(w: int, stats: ReadStats, found: Iterator[Segment]) -> None:
    """Send the segments `found` yields (a generator: nothing is read before the first)."""
    # Ctrl-C reaches both processes: the parent reports it, the child just ends.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    out = os.fdopen(w, "wb", buffering=1 << 16)
    try:
        batch: list[tuple[int, bytes, bool, bool]] = []
        size = 0
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")  # the parent's filters decide when it raises them
            sent = 0
            for seg in found:
                if len(caught) > sent:  # raised while reaching this segment: before it
                    size = _flush(out, batch)
                    sent = _warn(out, caught, sent)
                batch.append((seg.line_no, seg.data, seg.truncated, seg.continuation))
                size += len(seg.data)
                if size >= BATCH_BYTES or len(batch) >= BATCH_SEGMENTS:
                    size = _flush(out, batch)
            _flush(out, batch)
            _warn(out, caught, sent)
        _send(out, "done", dataclasses.asdict(stats))
    except BrokenPipeError:
        pass  # the parent stopped reading
    except BaseException as e:  # the parent raises it where it would have happened
        with contextlib.suppress(BaseException):  # the pipe may be gone as well
            _send(out, "error", _picklable(e))
    finally:
        os._exit(0)  # no atexit handlers, no flush of the parent's buffers


def _send(out: IO[bytes], kind: str, payload: Any) -> None:
    pickle.dump((kind, payload), out, protocol=pickle.HIGHEST_PROTOCOL)
    # Whole messages only: a batch's tail left in the buffer would keep the parent waiting
    # until the next batch, and the child waiting on the pipe while the parent works.
    out.flush()


def _flush(out: IO[bytes], batch: list[tuple[int, bytes, bool, bool]]) -> int:
    if batch:
        _send(out, "segments", batch)
        batch.clear()
    return 0


def _warn(out: IO[bytes], caught: list[warnings.WarningMessage], sent: int) -> int:
    for w in caught[sent:]:
        _send(out, "warning", w.message)
    return len(caught)


def _picklable(e: BaseException) -> BaseException:
    """`e` if the parent's _Unpickler takes it back, else its type and text as a RuntimeError."""
    try:
        _Unpickler(io.BytesIO(pickle.dumps(e))).load()
    except Exception:
        return RuntimeError(f"{type(e).__name__}: {e}")
    return e
