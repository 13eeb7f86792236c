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

The child of an uncompressed file forks one more process that does the keyword scan
(logmem.parse.prescan, unless ``LOGMEM_SCAN_AHEAD=0``): the scan is half the child's work.

``logmem analyze BIG.log`` starts its child before the CLI is imported (start_early, called by
logmem.cli.early); the first read of the same file with the same parameters takes it over.
"""

from __future__ import annotations

import atexit
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

from logmem.frozen import frozen
from logmem.parse import source
from logmem.parse.matchers import matcher_for
from logmem.parse.read import ReadStats, Segment, iter_segments
from logmem.parse.sizes import AHEAD_BYTES as AHEAD_BYTES  # re-exported: tests use them
from logmem.parse.sizes import COMPRESSION_RATIO as COMPRESSION_RATIO
from logmem.parse.source import _SNIFF_BYTES as SNIFF_BYTES
from logmem.parse.source import _sniff

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
    except OSError:
        return False  # the reader says why it cannot be opened
    # A compressed log holds several times its size in text (and decompressing is work the
    # child takes over as well).
    return _compressed(path) is True


def _compressed(path: str) -> bool | None:
    """Whether `path` starts like a compressed file; None when it cannot be read."""
    try:
        with open(path, "rb") as f:
            head = f.read(SNIFF_BYTES)
    except OSError:
        return None  # the reader says why it cannot be opened
    return _sniff(head.ljust(SNIFF_BYTES, b"\0")) is not None


def scan_ahead(path: str) -> bool:
    """Whether the child reading `path` has one more process do the keyword scan
    (logmem.parse.prescan): for a file not compressed (both would decompress it), unless
    ``LOGMEM_SCAN_AHEAD=0``."""
    if os.environ.get("LOGMEM_SCAN_AHEAD", "") == "0":
        return False
    return _compressed(path) is False


def _cores() -> int:
    """The cores this process may run on: with one, a child only adds its overhead."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


@frozen
class _Started:
    """A child reading `path`, and what it was started with (to check it is the one wanted)."""

    path: str
    identity: tuple[int, ...]
    params: tuple[Any, ...]
    pid: int
    fd: int


# A child the entry point started before the CLI was imported (start_early); the first
# segments() call for the same file and parameters takes it over, anything else ends it.
_early: _Started | None = None


def _identity(path: str) -> tuple[int, ...]:
    st = os.stat(path)
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def _params(
    keywords: regex.Pattern[bytes], once: Sequence[bytes], continuations: bool, chunk: int | None
) -> tuple[Any, ...]:
    return (keywords.pattern, tuple(once), continuations, chunk, source._max_bytes)


def _start(
    path: str,
    keywords: regex.Pattern[bytes],
    once: Sequence[bytes],
    continuations: bool,
    chunk_bytes: int | None,
) -> _Started:
    identity = _identity(path)
    matcher_for(keywords)  # compiled once here, inherited by every child
    stats = ReadStats(path)
    r, w = os.pipe()
    _widen(w)
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        os.close(r)
        scan = scan_ahead(path)
        found = iter_segments(path, keywords, stats, once, continuations, chunk_bytes, scan)
        _child(w, stats, found, parent)
    os.close(w)
    return _Started(path, identity, _params(keywords, once, continuations, chunk_bytes), pid, r)


def start_early(path: str) -> None:
    """Start reading `path` ahead now, as `logmem analyze PATH` will (see logmem.__main__):
    the child works while this process imports the rest of logmem, about a quarter of a second
    on a small machine. Nothing changes if the command then reads something else: the child is
    ended, and one is started for what it does read."""
    global _early
    from logmem.parse.patterns import KEYWORD_BYTES, ONCE_BYTES

    if _early is None and wanted(path):
        _early = _start(path, KEYWORD_BYTES, ONCE_BYTES, True, None)
        atexit.register(_end_early)


def _end_early() -> None:
    global _early
    started, _early = _early, None
    if started is not None:
        _discard(started)


def _take_early(path: str, params: tuple[Any, ...]) -> _Started | None:
    global _early
    started, _early = _early, None
    if started is None:
        return None
    try:
        same = started.params == params and _identity(path) == started.identity
    except OSError:
        same = False
    if same:
        return started
    _discard(started)
    return None


def _discard(started: _Started) -> None:
    os.close(started.fd)
    _end(started.pid)


def _end(pid: int) -> None:
    # Done, or the caller stopped early (an error, a closed generator): either way the
    # child has nothing left to do. Killing an exited child is harmless until it is reaped.
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)


def segments(
    path: str,
    keywords: regex.Pattern[bytes],
    stats: ReadStats,
    once: Sequence[bytes],
    continuations: bool,
    chunk_bytes: int | None,
) -> Iterator[Segment]:
    """iter_segments(path, ...), read by a child process."""
    params = _params(keywords, once, continuations, chunk_bytes)
    child = _take_early(path, params) or _start(path, keywords, once, continuations, chunk_bytes)
    pipe = os.fdopen(child.fd, "rb")
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
                    if name != "path":  # the child's name for it may be spelt differently
                        setattr(stats, name, value)
                return
    finally:
        pipe.close()
        _end(child.pid)


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


def _child(w: int, stats: ReadStats, found: Iterator[Segment], parent: int) -> None:
    """Send the segments `found` yields (a generator: nothing is read before the first)."""
    # Ctrl-C reaches both processes: the parent reports it, the child just ends.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    out = os.fdopen(w, "wb", buffering=1 << 16)
    try:
        batch: list[tuple[int, bytes, bool, int]] = []
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
                    if os.getppid() != parent:  # the parent is gone (killed before it read)
                        break
            _flush(out, batch)
            _warn(out, caught, sent)
        _send(out, "done", dataclasses.asdict(stats))
    except BrokenPipeError:
        pass  # the parent stopped reading
    except BaseException as e:  # the parent raises it where it would have happened
        with contextlib.suppress(BaseException):  # the pipe may be gone as well
            _send(out, "error", _picklable(e))
    finally:
        # A reader stopped early (the parent gone) ends what it started: its scanner.
        close = getattr(found, "close", None)
        if close is not None:
            with contextlib.suppress(BaseException):
                close()
        os._exit(0)  # no atexit handlers, no flush of the parent's buffers


def _send(out: IO[bytes], kind: str, payload: Any) -> None:
    pickle.dump((kind, payload), out, protocol=pickle.HIGHEST_PROTOCOL)
    # Whole messages only: a batch's tail left in the buffer would keep the parent waiting
    # until the next batch, and the child waiting on the pipe while the parent works.
    out.flush()


def _flush(out: IO[bytes], batch: list[tuple[int, bytes, bool, int]]) -> int:
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
