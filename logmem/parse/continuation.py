"""Reader additions to keyword segments: the lines that continue an exception's message, and
the once-literals a running server prints by the thousand (logmem.parse.read uses both).

Both keep the reader linear: a continuation is looked at only after an exception line, and a
once-literal is searched for (one bytes.find per literal and chunk) only while armed.
"""

from __future__ import annotations

import re
from collections.abc import Generator
from typing import TYPE_CHECKING

from logmem.frozen import mutable

if TYPE_CHECKING:
    from logmem.parse.read import Segment

# An exception's message can run over the lines after its first (NCCL's "Last error:" and
# "Cuda failure 'out of memory'", dynamo's "raised:" and the inner error, a ValueError's
# list): those lines hold no keyword, so the reader yields them right after the exception
# line, marked as continuations, up to a line that starts something else, whatever chunk of
# the input they land in (Once.pending carries an unfinished one to the next range).
MAX_CONTINUATION_LINES = 12
EXCEPTION_HEAD = re.compile(
    rb"^[ \t]{0,8}(?:[a-z_][a-z0-9_]{0,40}\.){0,5}(?:[A-Z][A-Za-z0-9_]{0,60})?(?:Error|Exception)"
    rb"(?::|[ \t]*$)"
)
CONTINUATION_STOP = re.compile(
    rb"^(?:[ \t]*$|[ \t]*\[|Traceback \(most recent|During handling of|The above exception"
    rb"|[ \t]{1,8}File \"|(?:INFO|WARNING|ERROR|DEBUG|CRITICAL|FAIL):"
    # a rule line, or a test runner's progress dots (".", "E", "F")
    rb"|[=*#~_-]{3,}[ \t]*$|[.EFsx]{1,3}[ \t]*$)"
)


@mutable
class Once:
    """Literals yielded once per file and once per start-up (see patterns.ONCE_LITERALS):
    armed at the start of a file and again at each scheduler summary."""

    literals: tuple[bytes, ...]
    armed: bool = True
    continuations: bool = False  # also yield the lines that continue an exception's message
    # Continuation lines taken when the last range scanned ran out: the next range goes on.
    pending: int | None = None
    # Segments yielded so far: the reader counts newlines with numpy only while they are
    # sparse (separators.numpy_ok).
    segments: int = 0

    def find(self, buf: bytes, lo: int, hi: int) -> int:
        if not self.armed or not self.literals:
            return -1
        found = [p for lit in self.literals if (p := buf.find(lit, lo, hi)) >= 0]
        return min(found) if found else -1


REARM = b"max_total_num_tokens="


class OnceSearch:
    """Where the armed once-literal is next in ``buf[:hi]``, each stretch searched once.

    A summary re-arms the literals, and a log whose every rank prints one while none prints
    the literal (8,192 ranks, no traffic yet) would search to the range's end once per
    summary: quadratic (6 of 15 s at 8,192 ranks). The last answer holds for any later start
    up to it: nothing lies between where it was searched from and where it was found."""

    def __init__(self, once: Once, buf: bytes, hi: int) -> None:
        self._once, self._buf, self._hi = once, buf, hi
        self._from, self._at = hi, -1  # searched from hi: nothing there

    def find(self, lo: int) -> int:
        """The first once-literal at or after `lo`, or -1 (and -1 while disarmed)."""
        once = self._once
        if not once.armed or not once.literals:
            return -1
        if not (self._from <= lo and (self._at < 0 or self._at >= lo)):
            self._from, self._at = lo, once.find(self._buf, lo, self._hi)
        return self._at


def continuation(
    path: str, buf: bytes, start: int, hi: int, line_no: int, cut: int, done: int = 0
) -> Generator[Segment, None, tuple[int, int | None]]:
    """The lines from `start` (numbered from `line_no`) that continue an exception's message,
    `done` of them taken already, as continuation segments of at most `cut` bytes.

    Returns where the last one taken ends (``start - 1``: none), and, when ``buf[:hi]`` ran out
    at a line's start before a line that stops them, how many are taken: the reader goes on with
    them at the start of its next range (a chunk boundary then changes nothing)."""
    end, k = start - 1, done
    while k < MAX_CONTINUATION_LINES:
        if start >= hi:
            return end, k
        stop = buf.find(b"\n", start, hi)
        stop = hi if stop < 0 else stop
        line = buf[start:stop]
        if b"\r" in line or CONTINUATION_STOP.match(line):
            break
        yield _segment(path, line_no + k - done, line[:cut])
        k, end = k + 1, stop
        if buf[end : end + 1] != b"\n":
            break
        start = end + 1
    return end, None


def is_exception_head(data: bytes) -> bool:
    """A segment that is an exception's first line (``Type: message`` or a bare ``Type``)."""
    return (b"Error" in data or b"Exception" in data) and EXCEPTION_HEAD.match(data) is not None


def _segment(path: str, line_no: int, data: bytes) -> Segment:
    from logmem.parse.read import Segment

    return Segment(path, line_no, data, continuation=True)
