r"""CRI container log files (/var/log/pods/..., /var/log/containers/*.log): P/F pieces joined.

A Kubernetes node's container runtime writes each line a container prints as one record per
physical line, ``<RFC 3339 nano time> <stdout|stderr> <P|F> <text>``. A line longer than the
runtime's buffer (containerd: 16 KiB by default) arrives as records tagged ``P`` (partial)
followed by one tagged ``F`` (final), and the records of stdout and stderr interleave. Read
line by line, a server_args dump or a tqdm capture bar split that way is lost, and a figure cut
in two reads as a wrong number.

:class:`Joined` sits between the byte source and the reader (logmem.parse.read.chunks_of). It
looks at an input's first lines (at most DETECT_LINES lines in DETECT_BYTES) and, when most of
them are CRI records, rewrites the chunks: each record's prefix is taken off and the pieces of
a stream's line are joined into one logical line, ordered by where its first piece is (the
order the container began to print them), so the reader sees the text the container printed.
:meth:`Joined.line_no` turns the reader's logical line numbers back into the file's physical
ones (the first piece's line). A line that is not a CRI record (mixed input) is its own line.
Any other input passes through untouched: one look at its first 64 KiB.

Memory stays bounded. The first open line of the file is streamed out as it comes (the
reader's own 4 MiB segment cap applies to it as to any line); only lines that begin while an
earlier line is still open are held, at most HELD_BYTES of them. Past that, and at the end of
the input, an unfinished line is *cut*: it keeps its text up to its last whitespace (the
partial word, which may be half a number, is dropped), the rest of its pieces are dropped up
to its stream's next ``F``, and ReadStats counts it.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections import deque
from collections.abc import Iterator

from logmem.parse.source import ReadStats

DETECT_BYTES = 64 << 10
DETECT_LINES = 16
# A record prefix is at most 35 + 14 bytes; with this many bytes of a line in hand, whether it
# is a record is decided.
_PREFIX_MAX = 64
# Lines held behind an open one (plus a per-line cost, so that many empty lines count too).
HELD_BYTES = 4 << 20
_LINE_COST = 64
# How far back a cut looks for whitespace: a word longer than this holds no figure.
TOKEN_BYTES = 4096

_TIME = rb"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:Z|[+-]\d{2}:\d{2})"
# A record: the text starts after one space (an empty line's record may have none).
_RECORD = re.compile(rb"" + _TIME + rb" (stdout|stderr) ([PF])(?: |(?=\n)|\Z)")
# A whole (F) record's prefix, for the chunks that hold nothing else.
_FULL = re.compile(rb"^" + _TIME + rb" (?:stdout|stderr) F(?: |$)", re.MULTILINE)


def is_cri(head: bytes, whole: bool = False) -> bool:
    """Whether an input that starts with `head` (`whole`: that is all of it) is a CRI log: at
    least half of its first non-blank lines (DETECT_LINES at most; a last unfinished one only
    if long enough to tell) are records."""
    lines = head[:DETECT_BYTES].split(b"\n", DETECT_LINES)[:DETECT_LINES]
    if len(lines[-1]) < _PREFIX_MAX and not whole:
        lines.pop()  # too short to tell, and cut by the look's bound
    lines = [ln for ln in lines if ln.strip()]
    hits = sum(1 for ln in lines if _RECORD.match(ln + b"\n") is not None)
    return hits > 0 and 2 * hits >= len(lines)


_PARTIAL_NEEDLES = (b" stdout P", b" stderr P")


def _next_partial(data: bytes, pos: int, found: list[int]) -> int:
    """The start of the first line at or after `pos` that is a P record, else len(data).
    `found` keeps where each needle was last found (searched again only once passed): with
    one needle missing, a search to the end per call would make the chunk's work quadratic."""
    n = len(data)
    while pos < n:
        for i, needle in enumerate(_PARTIAL_NEEDLES):
            if found[i] < pos:
                at = data.find(needle, pos)
                found[i] = n if at < 0 else at
        hit = min(found)
        if hit >= n:
            return n
        start = data.rfind(b"\n", 0, hit) + 1
        m = _RECORD.match(data, start)
        if m is not None and m.start(2) == hit + 8:
            return start
        pos = hit + 1
    return n


def _safe_cut(data: bytes) -> int:
    """Where text that is cut must end: after its last whitespace (within TOKEN_BYTES)."""
    lo = max(0, len(data) - TOKEN_BYTES)
    ws = max(data.rfind(b" ", lo), data.rfind(b"\t", lo), data.rfind(b"\r", lo))
    return ws + 1 if ws >= 0 else lo


class _Line:
    """One logical line: where its first piece is, and its text not yet written out."""

    __slots__ = ("phys", "parts", "size", "tail", "open", "pieces", "stream")

    def __init__(self, phys: int, stream: int) -> None:
        self.phys = phys
        self.stream = stream  # 0 stdout, 1 stderr, -1 not a record
        self.parts: list[bytes] = []  # held text (a line behind the first open one)
        self.size = _LINE_COST
        self.tail = b""  # the first open line's last partial word, written when it goes on
        self.open = True
        self.pieces = 0


class Joined:
    """The chunks of one input, CRI records joined into lines (see the module's docstring);
    any other input's chunks unchanged. An iterator: nothing is read before the first."""

    def __init__(self, chunks: Iterator[bytes], stats: ReadStats) -> None:
        self._src = chunks
        self._stats = stats
        self.cri: bool | None = None  # None until the first chunk is asked for
        self._peeked: deque[bytes] = deque()
        # the joining state
        self._rest = b""  # the start of a physical line too short to tell what it is
        self._rec: tuple[_Line | None, int, bool] | None = None  # record in progress
        self._phys = 1  # physical line number of the record in progress (or the next)
        self._q: deque[_Line] = deque()  # lines not yet written out, by first piece
        self._open: list[_Line | None] = [None, None]
        self._drop = [False, False]  # a cut line's pieces are dropped up to its F
        self._held = 0
        self._out: list[bytes] = []
        self._out_nl = 0  # newlines written out: logical line numbers
        self._last = b""  # the input's last byte
        self._done = False
        # logical -> physical line numbers: from keys[i] on, physical = logical + deltas[i]
        self._keys: list[int] = []
        self._deltas: list[int] = []
        self._delta = 0
        self._base = 0  # the delta before the first key kept
        self._mark = 1  # the logical line in progress when the last chunk was handed out

    def __iter__(self) -> Joined:
        return self

    def __next__(self) -> bytes:
        if self.cri is None:
            self._detect()
        if not self.cri:
            if self._peeked:
                return self._peeked.popleft()
            return next(self._src)
        while not self._done:
            chunk = self._peeked.popleft() if self._peeked else next(self._src, None)
            if chunk is None:
                self._finish()
                self._done = True
            else:
                self._last = chunk[-1:] or self._last
                self._feed(chunk)
            if self._out:
                return self._hand_out()
        raise StopIteration

    # --- detection --------------------------------------------------------------------

    def _detect(self) -> None:
        size = newlines = 0
        whole = False
        while size < DETECT_BYTES and newlines < DETECT_LINES:
            chunk = next(self._src, None)
            if chunk is None:
                whole = True
                break
            self._peeked.append(chunk)
            size += len(chunk)
            newlines += chunk.count(b"\n", 0, DETECT_BYTES)
        head = b"".join(self._peeked)[:DETECT_BYTES]
        self.cri = bool(head) and is_cri(head, whole)
        if self.cri:
            self._stats.container = "cri"

    # --- line numbers -----------------------------------------------------------------

    def line_no(self, logical: int) -> int:
        """The physical line (first piece) of the reader's logical line `logical`; asked for
        lines at or after the one in progress when the previous chunk was handed out."""
        i = bisect_right(self._keys, logical) - 1
        return logical + (self._deltas[i] if i >= 0 else self._base)

    @property
    def physical_lines(self) -> int:
        """The input's physical lines (after the last chunk)."""
        return self._phys - 1 + (1 if self._last not in (b"\n", b"") else 0)

    @property
    def ends_with_newline(self) -> bool:
        return self._last in (b"\n", b"")

    def _hand_out(self) -> bytes:
        out = b"".join(self._out)
        self._out = []
        # The reader has yielded every segment before the line in progress at the last hand-out.
        i = bisect_right(self._keys, self._mark) - 1
        if i > 0:
            self._base = self._deltas[i - 1]
            del self._keys[:i], self._deltas[:i]
        self._mark = self._out_nl + 1
        return out

    def _begins(self, line: _Line) -> None:
        """`line` is the next to be written out: note its number."""
        delta = line.phys - (self._out_nl + 1)
        if delta != self._delta:
            self._keys.append(self._out_nl + 1)
            self._deltas.append(delta)
            self._delta = delta

    # --- joining ----------------------------------------------------------------------

    def _feed(self, data: bytes, final: bool = False) -> None:
        if self._rest:
            data, self._rest = self._rest + data, b""
        pos, n = 0, len(data)
        # The line-by-line path runs from a P record to where nothing is open again; the lines
        # between are taken whole (_whole_records). Each search below is made once per range.
        next_p = -1  # the line start of the next P record at or after pos (n: none)
        found = [-1, -1]  # where _next_partial last found each of its needles
        slow_until = 0  # whole records were tried up to here and did not fit
        while pos < n:
            if self._rec is None and pos >= slow_until and self._idle():
                if next_p < pos:
                    next_p = _next_partial(data, pos, found)
                end = self._whole_records(data, pos, next_p)
                if end == pos:
                    slow_until = next_p
                pos = end
                if pos >= n:
                    break
            if self._rec is None:
                nl = data.find(b"\n", pos, pos + _PREFIX_MAX)
                if nl < 0 and n - pos < _PREFIX_MAX and not final:
                    self._rest = data[pos:]
                    return
                m = _RECORD.match(data, pos)
                if m is None:
                    self._start(-1, True)
                else:
                    self._start(0 if m.group(1) == b"stdout" else 1, m.group(2) == b"F")
                    pos = m.end()
            nl = data.find(b"\n", pos)
            end = n if nl < 0 else nl
            if end > pos:
                self._text(data[pos:end], eol=nl >= 0)
            if nl < 0:
                return
            self._end_record()
            pos = nl + 1

    def _idle(self) -> bool:
        return not self._q and not (self._drop[0] or self._drop[1])

    def _whole_records(self, data: bytes, pos: int, stop: int) -> int:
        """With nothing open: the whole F records of ``data[pos:stop]`` (up to its last
        newline), prefixes taken off in one substitution; where they end (`pos`: not all of
        them are records, the line-by-line path takes them)."""
        end = data.rfind(b"\n", pos, stop) + 1
        if end <= pos:
            return pos
        out, k = _FULL.subn(b"", data[pos:end])
        lines = data.count(b"\n", pos, end)
        if k != lines:
            return pos
        delta = self._phys - (self._out_nl + 1)
        if delta != self._delta:
            self._keys.append(self._out_nl + 1)
            self._deltas.append(delta)
            self._delta = delta
        self._out.append(out)
        self._phys += lines
        self._out_nl += lines
        return end

    def _start(self, stream: int, final: bool) -> None:
        """A record (or a line that is not one: stream -1) begins at line self._phys."""
        if stream >= 0 and self._drop[stream]:
            self._rec = (None, stream, final)
            return
        line = self._open[stream] if stream >= 0 else None
        if line is None:
            line = _Line(self._phys, stream)
            first = not self._q
            if first:
                self._begins(line)
                line.size = 0
            self._q.append(line)
            if stream >= 0 and not final:
                self._open[stream] = line
        else:
            first = True
        line.pieces += 1
        if line.pieces == 2:
            self._stats.joined_lines += 1
        self._rec = (line, stream, final)
        if not first:
            self._grow(line.size)

    def _text(self, data: bytes, eol: bool) -> None:
        """Text of the record in progress; `eol`: the record ends with it."""
        rec = self._rec
        line = rec[0] if rec is not None else None
        if line is None:
            return
        if line is self._q[0]:
            if eol and rec is not None and rec[2]:
                self._out.append(line.tail + data if line.tail else data)
                line.tail = b""
            else:
                self._stream(line, data)
        else:
            line.parts.append(data)
            line.size += len(data)
            self._grow(len(data))

    def _stream(self, line: _Line, data: bytes) -> None:
        if line.tail:
            data = line.tail + data
        cut = _safe_cut(data)
        self._out.append(data[:cut])
        line.tail = data[cut:]

    def _grow(self, n: int) -> None:
        self._held += n
        while self._held > HELD_BYTES and self._q:
            self._cut(self._q[0])

    def _end_record(self) -> None:
        rec, self._rec = self._rec, None
        self._phys += 1
        if rec is None:
            return
        line, stream, final = rec
        if line is None:
            if final:
                self._drop[stream] = False
            return
        if final:
            if stream >= 0:
                self._open[stream] = None
            self._close(line)

    def _close(self, line: _Line) -> None:
        line.open = False
        while self._q and not self._q[0].open:
            head = self._q.popleft()
            self._out.append(head.tail)
            self._out.append(b"\n")
            self._out_nl += 1
            if self._q:
                self._to_head(self._q[0])

    def _to_head(self, line: _Line) -> None:
        """`line` becomes the first not written out: its held text goes out."""
        self._begins(line)
        self._held -= line.size
        line.size = 0
        data = b"".join(line.parts)
        line.parts = []
        if line.open:
            self._stream(line, data)
        else:
            self._out.append(data)

    def _cut(self, line: _Line) -> None:
        """`line` (open) ends here, its partial last word dropped; its stream's pieces are
        dropped up to its next F."""
        st = self._stats
        st.cut_lines += 1
        if st.first_cut_line is None:
            st.first_cut_line = line.phys
        if line is self._q[0]:
            line.tail = b""
        else:
            data = b"".join(line.parts)
            line.parts = [data[: _safe_cut(data)]]
        if line.stream >= 0:
            self._open[line.stream] = None
            rec = self._rec
            if rec is not None and rec[0] is line:
                self._rec = (None, rec[1], rec[2])
                self._drop[line.stream] = not rec[2]
            else:
                self._drop[line.stream] = True
        self._close(line)

    def _finish(self) -> None:
        """The end of the input: what is left is written out, unfinished lines cut."""
        if self._rest:
            self._feed(b"", final=True)
        rec = self._rec
        if rec is not None:
            line = rec[0]
            if line is not None and line.stream < 0:
                self._end_record()  # a last line without a newline, not a record: as it is
                self._phys -= 1
            elif line is not None:
                self._cut(line)  # a record without its newline: the input was cut there
                self._rec = None
            else:
                self._rec = None
        while self._q:
            self._cut(self._q[0])
        if self._out and self._out[-1] == b"\n" and self._last not in (b"\n", b""):
            self._out.pop()  # the input ended without a newline: so does the text
            self._out_nl -= 1
