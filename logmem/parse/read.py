"""Read stage: paths or stdin -> candidate segments, in bounded memory.

A *segment* is the text between two separators, where both ``\\n`` and ``\\r`` separate
(tqdm writes every progress-bar render after a ``\\r``). Line numbers count ``\\n`` only,
so they match what an editor shows. Only segments that contain one of the literal
keywords of the pattern table are decoded and passed on: a week of "Decode batch"
lines costs a byte scan, not a regex per line. The keyword scan is
logmem.parse.matchers' (``LOGMEM_MATCHER=python|hyperscan|regex`` forces one).

The bytes come from logmem.parse.source (decompression, byte-order marks, the byte limit),
whose names used by callers are re-exported here. Every scan is linear in the input,
whatever its separators.
"""

from __future__ import annotations

from array import array
from collections.abc import Generator, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, NamedTuple

from logmem.parse import cri, separators
from logmem.parse.command_lines import COMMAND, asks_more, is_command_head
from logmem.parse.continuation import (
    MAX_CONTINUATION_LINES as MAX_CONTINUATION_LINES,  # re-exported: tests use it
)
from logmem.parse.continuation import (
    MESSAGE,
    REARM,
    Once,
    OnceSearch,
    Pending,
    continuation,
    is_exception_head,
)
from logmem.parse.matchers import (  # noqa: F401 - re-exported: tests and benchmarks use them
    _MATCHERS,
    Cursor,
    Matcher,
    _FindMatcher,
    _literals_of,
    _RegexMatcher,
    matcher_for,
)
from logmem.parse.sizes import may_read_ahead

# Re-exported: callers open inputs and read their stats through this module.
from logmem.parse.source import ReadStats as ReadStats
from logmem.parse.source import byte_limit as byte_limit
from logmem.parse.source import iter_chunks as iter_chunks
from logmem.parse.source import open_stream as open_stream

if TYPE_CHECKING:
    import regex

    from logmem.parse import prescan

# A longer segment is cut: server_args lines are 10-40 KB, nothing real is near this.
MAX_SEGMENT_BYTES = 4 << 20


class Segment(NamedTuple):
    """One candidate record span: where it came from and its raw bytes.

    A named tuple, not a ``@frozen`` record like the rest: a 1 GiB log yields about 100,000
    of them, made twice with the read-ahead (in the child, then again here), and a tuple is
    made in a third of a frozen dataclass's time (0.33 against 0.96 us). It is as immutable."""

    path: str
    line_no: int
    data: bytes
    truncated: bool = False
    # A line after an exception line that continues its message (continuation.MESSAGE), or after
    # a command line that continues the command (command_lines.COMMAND); no keyword needed. 0: not.
    continuation: int = 0


# --- segments ---------------------------------------------------------------------------


def _first_sep(buf: bytes, start: int) -> int:
    nl = buf.find(b"\n", start)
    cr = buf.find(b"\r", start, nl if nl >= 0 else len(buf))
    return cr if cr >= 0 else nl


def iter_segments(
    path: str,
    keywords: regex.Pattern[bytes],
    stats: ReadStats | None = None,
    once: Sequence[bytes] = (),
    continuations: bool = False,
    chunk_bytes: int | None = None,
    scan_ahead: bool = False,
    small: bool = False,
) -> Iterator[Segment]:
    """Yield the segments of one input that contain a keyword, with their line numbers;
    of the segments that hold one of `once`, the first of the file and the first after each
    scheduler summary; with `continuations`, the lines that continue an exception's message.
    `chunk_bytes` cuts the input into smaller chunks (tests: the result must not change).
    With `scan_ahead`, a forked process does the keyword scan (logmem.parse.prescan); `small`
    (a small input, logmem.parse.sizes) picks the pure-Python matcher unless one is forced."""
    stats = stats or ReadStats(path)
    chunks = chunks_of(path, stats, chunk_bytes)
    scanner = None
    if scan_ahead:
        from logmem.parse import prescan  # a big file's: a small one never imports it

        scanner = prescan.start(keywords, chunks)
    try:
        found = _segments(path, chunks, keywords, stats, once, continuations, scanner, small)
        for seg in found:
            # A CRI file's logical lines are numbered back to the physical line of their
            # first piece (whether it is one is known from the first chunk on).
            yield seg if not chunks.cri else seg._replace(line_no=chunks.line_no(seg.line_no))
        if chunks.cri:
            stats.lines, stats.ends_with_newline = chunks.physical_lines, chunks.ends_with_newline
    finally:
        if scanner is not None:
            scanner.close()


def chunks_of(path: str, stats: ReadStats, chunk_bytes: int | None = None) -> cri.Joined:
    """The chunks the reader cuts into segments (an iterator: nothing is opened before the
    first), a CRI container log's P/F pieces joined into lines (logmem.parse.cri);
    `chunk_bytes` cuts them smaller (before the joining, so it is cut too)."""
    chunks = iter_chunks(path, stats)
    if chunk_bytes:
        chunks = (c[i : i + chunk_bytes] for c in chunks for i in range(0, len(c), chunk_bytes))
    return cri.Joined(chunks, stats)


def _segments(
    path: str,
    chunks: Iterator[bytes],
    keywords: regex.Pattern[bytes],
    stats: ReadStats,
    once: Sequence[bytes],
    continuations: bool,
    scanner: prescan.Scanner | None,
    small: bool = False,
) -> Iterator[Segment]:
    matcher = matcher_for(keywords, small=small)
    state = Once(tuple(once), continuations=continuations)
    carry = b""
    carry_truncated = False
    line_no = 1  # line number at the start of `carry` (or of the next chunk)
    last = b"\n"
    for chunk in chunks:
        last = chunk[-1:]
        hits = None  # the scanner's keyword positions in this chunk, or None: a cursor scans
        if scanner is not None:
            from logmem.parse import prescan

            if prescan.worth_keeping(stats.bytes_read, state.segments):
                hits = scanner.hits(chunk)
            else:
                scanner.close()  # a dense input: the scan is not what it waits for
                scanner = None
        start = 0
        if carry_truncated:
            # Inside a giant segment whose head we kept: drop bytes up to its end.
            start = _first_sep(chunk, 0)
            if start < 0:
                continue
            carry_truncated = False
        # Complete segments end at the chunk's last separator; the tail waits.
        nl = chunk.rfind(b"\n", start)
        cr = chunk.rfind(b"\r", max(nl, start))
        cut = max(nl, cr) + 1
        if cut <= start:
            carry += chunk[start:] if start else chunk
        else:
            if carry:
                # The carried tail and this chunk's first segment form one segment: join
                # only those bytes, not the whole chunk.
                first = _first_sep(chunk, start) + 1
                head = carry + chunk[start:first]
                line_no = yield from _scan(path, head, 0, len(head), line_no, matcher, stats, state)
                start = first
            line_no = yield from _scan(
                path, chunk, start, cut, line_no, matcher, stats, state, hits
            )
            carry = chunk[cut:]
        if len(carry) > MAX_SEGMENT_BYTES:
            carry = carry[:MAX_SEGMENT_BYTES]
            carry_truncated = True
            stats.truncated_segments += 1
    if carry:
        line_no = yield from _scan(path, carry, 0, len(carry), line_no, matcher, stats, state)
    stats.ends_with_newline = last in (b"\n", b"") and not carry
    # An empty input has no lines (not "1 lines"); a final newline opens no new line.
    if not stats.bytes_read:
        stats.lines = 0
    else:
        stats.lines = line_no - (1 if stats.ends_with_newline else 0)


def _scan(
    path: str,
    buf: bytes,
    lo: int,
    hi: int,
    line_no: int,
    matcher: Matcher,
    stats: ReadStats,
    once: Once | None = None,
    hits: array[int] | None = None,
) -> Generator[Segment, None, int]:
    """Yield each segment of ``buf[lo:hi]`` that holds a keyword (and the continuation
    lines of an exception line, and the `once` segments); return the line number at `hi`.

    Every search is bounded by the previous segment's end, so hostile input (a hit on
    every line, no ``\\r`` anywhere) stays linear.
    """
    if lo >= hi:
        return line_no
    once = once or Once(())
    # `hits`: the scanner's keyword positions in `buf` (logmem.parse.prescan), else a scan.
    if hits is not None:
        from logmem.parse.prescan import ListCursor

        cursor: Cursor = ListCursor(hits, hi)
    else:
        cursor = matcher.cursor(buf, lo, hi)
    seps = separators.for_range(buf, lo, hi, stats.bytes_read, once.segments)
    base = line_no  # the line number at `lo`
    pos = lo
    if once.pending is not None:  # a message or command ran on to the end of the last range
        end, once.pending = yield from continuation(
            path, buf, lo, hi, line_no, MAX_SEGMENT_BYTES, once.pending, cursor.next_hit
        )
        pos = end + 1
    # Where the armed once-literal is next (looked up again only after a summary re-arms it).
    search = OnceSearch(once, buf, hi)
    first = search.find(lo)
    while pos < hi:
        p = cursor.next_hit(pos)
        if 0 <= first < pos:  # inside a segment taken as a continuation: look further on
            first = search.find(pos)
        if first >= pos and (p < 0 or first < p):
            p = first
        if p < 0:
            break
        start, end = seps.segment(pos, p)
        line_no = base + seps.newlines_before(start)
        data = buf[start:end]
        truncated = len(data) > MAX_SEGMENT_BYTES
        if truncated:
            data = data[:MAX_SEGMENT_BYTES]
            stats.truncated_segments += 1
        yield Segment(path, line_no, data, truncated)
        once.segments += 1
        if once.armed and first >= 0 and first < end:
            once.armed, first = False, -1
        if REARM in data and once.literals:
            once.armed = True
            first = search.find(end)
        if once.continuations and buf[end : end + 1] == b"\n":
            state = _continued(data)
            if state is not None:
                end, once.pending = yield from continuation(
                    path, buf, end + 1, hi, line_no + 1, MAX_SEGMENT_BYTES, state, cursor.next_hit
                )
        pos = end + 1
    return base + seps.newlines_before(hi)


def _continued(data: bytes) -> Pending | None:
    """What the lines after segment `data` may continue: an exception's message, a command."""
    if is_exception_head(data):
        return Pending(MESSAGE)
    if is_command_head(data):
        return Pending(COMMAND, nbytes=len(data), more=asks_more(data))
    return None


def read_segments(
    paths: Iterable[str],
    keywords: regex.Pattern[bytes],
    stats: list[ReadStats] | None = None,
    once: Sequence[bytes] = (),
    continuations: bool = False,
    chunk_bytes: int | None = None,
    small: bool = False,
) -> Iterator[Segment]:
    """All candidate segments of several inputs, input after input (see iter_segments); a big
    file is read by a second process meanwhile (logmem.parse.ahead), with the same result.
    `small`: every input is small (logmem.parse.sizes.small_inputs), see iter_segments."""
    for path in paths:
        st = ReadStats(path)
        if stats is not None:
            stats.append(st)
        if may_read_ahead(path):
            from logmem.parse import ahead  # not imported for a small file

            if ahead.wanted(path):
                yield from ahead.segments(path, keywords, st, once, continuations, chunk_bytes)
                continue
        yield from iter_segments(path, keywords, st, once, continuations, chunk_bytes, small=small)
