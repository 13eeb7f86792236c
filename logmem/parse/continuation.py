"""Reader additions to keyword segments: the lines that continue an exception's message or an
echoed launch command, and the once-literals a running server prints by the thousand
(logmem.parse.read uses them).

All keep the reader linear: a continuation is looked at only after an exception or command
line, each line once, and a once-literal is searched for (one bytes.find per literal and
chunk) only while armed.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Generator
from typing import TYPE_CHECKING

from logmem.frozen import mutable
from logmem.parse.command_lines import COMMAND, MAX_COMMAND_LINES, asks_more, command_goes_on

if TYPE_CHECKING:
    from logmem.parse.read import Segment

# An exception's message can run over the lines after its first (NCCL's "Last error:" and
# "Cuda failure 'out of memory'", dynamo's "raised:" and the inner error, a ValueError's
# list): those lines hold no keyword, so the reader yields them right after the exception
# line, marked as continuations, up to a line that starts something else, whatever chunk of
# the input they land in (Once.pending carries an unfinished one to the next range).
MAX_CONTINUATION_LINES = 12
MESSAGE = 1  # Segment.continuation: a line of an exception's message (COMMAND: of a command)
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
class Pending:
    """The continuation lines being taken: of which kind, how many and how many bytes so far,
    and (a command) whether the last one ends with a shell ``\\`` that asks for another."""

    kind: int
    taken: int = 0
    nbytes: int = 0
    more: bool = False


@mutable
class Once:
    """Literals yielded once per file and once per start-up (see patterns.ONCE_LITERALS):
    armed at the start of a file and again at each scheduler summary."""

    literals: tuple[bytes, ...]
    armed: bool = True
    # also yield the lines that continue an exception's message or an echoed command
    continuations: bool = False
    # Continuation lines taken when the last range scanned ran out: the next range goes on.
    pending: Pending | None = None
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
    path: str,
    buf: bytes,
    start: int,
    hi: int,
    line_no: int,
    cut: int,
    state: Pending,
    keyword_at: Callable[[int], int],
) -> Generator[Segment, None, tuple[int, Pending | None]]:
    """The lines from `start` (numbered from `line_no`) that continue an exception's message or
    a command (`state`: its kind and what is taken already), as continuation segments of at
    most `cut` bytes. `keyword_at(pos)`: where the next keyword is at or after a line start
    (-1: none): a line that holds one is never a command's, so it is read as itself.

    Returns where the last one taken ends (``start - 1``: none), and, when ``buf[:hi]`` ran out
    at a line's start before a line that stops them, what is taken: the reader goes on with
    it at the start of its next range (a chunk boundary then changes nothing)."""
    end, command = start - 1, state.kind == COMMAND
    while state.taken < (MAX_COMMAND_LINES if command else MAX_CONTINUATION_LINES):
        if start >= hi:
            return end, state
        stop = buf.find(b"\n", start, hi)
        stop = hi if stop < 0 else stop
        line = buf[start:stop]
        if b"\r" in line:
            break
        if command:
            at = keyword_at(start)
            if (0 <= at < stop) or not command_goes_on(line, state):
                break
        elif CONTINUATION_STOP.match(line):
            break
        yield _segment(path, line_no, line[:cut], state.kind)
        state.taken, state.nbytes, line_no, end = (
            state.taken + 1,
            state.nbytes + len(line),
            line_no + 1,
            stop,
        )
        state.more = command and asks_more(line)
        if buf[end : end + 1] != b"\n":
            break
        start = end + 1
    return end, None


def is_exception_head(data: bytes) -> bool:
    """A segment that is an exception's first line (``Type: message`` or a bare ``Type``)."""
    return (b"Error" in data or b"Exception" in data) and EXCEPTION_HEAD.match(data) is not None


def _segment(path: str, line_no: int, data: bytes, kind: int) -> Segment:
    from logmem.parse.read import Segment

    return Segment(path, line_no, data, continuation=kind)
