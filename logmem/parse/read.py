"""Read stage: paths or stdin -> decompressed byte chunks -> candidate segments, in bounded memory.

A *segment* is the text between two separators, where both ``\\n`` and ``\\r`` separate
(tqdm writes every progress-bar render after a ``\\r``). Line numbers count ``\\n`` only,
so they match what an editor shows. Only segments that contain one of the literal
keywords of the pattern table are decoded and passed on: a week of "Decode batch"
lines costs a byte scan, not a regex per line.

The scan is a literal prefilter over 4 MiB chunks, never a regex per line. Three matchers
find the keyword hits, all with the same result (the segments that contain a keyword):

* ``hyperscan`` (optional, ``pip install logmem[fast]``): one multi-literal scan;
* ``python``: one ``bytes.translate`` of the chunk into a few byte classes, then a
  ``memchr`` for the rare bytes and one ``find`` for a class string; each hit is checked
  against the keywords with ``startswith``;
* ``regex``: the keyword regex itself, for keyword patterns that are not plain literals.

``LOGMEM_MATCHER=python|hyperscan|regex`` forces one (tests, benchmarks).
"""

from __future__ import annotations

import bz2
import contextlib
import gzip
import lzma
import os
import stat
import sys
from collections.abc import Generator, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, BinaryIO, Protocol, cast

import regex

from logmem.errors import InputError
from logmem.parse import progress as progress

CHUNK_BYTES = 4 << 20
# A longer segment is cut: server_args lines are 10-40 KB, nothing real is near this.
MAX_SEGMENT_BYTES = 4 << 20

_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x1f\x8b", "gzip"),
    (b"BZh", "bz2"),
    (b"\xfd7zXZ\x00", "xz"),
    (b"\x28\xb5\x2f\xfd", "zstd"),
)


@dataclass(frozen=True)
class Segment:
    """One candidate record span: where it came from and its raw bytes."""

    path: str
    line_no: int
    data: bytes
    truncated: bool = False


@dataclass
class ReadStats:
    """What the reader saw, for reports about the input itself."""

    path: str
    bytes_read: int = 0
    lines: int = 0
    truncated_segments: int = 0
    ends_with_newline: bool = True
    compression: str | None = None


def _open_raw(path: str) -> BinaryIO:
    if path == "-":
        return sys.stdin.buffer
    try:
        return open(path, "rb")  # noqa: SIM115 - closed by the caller
    except OSError as e:
        raise InputError(f"cannot open {path}: {e.strerror or e}") from None


class _Peeked:
    """A binary stream with its first bytes put back, so we can sniff compression."""

    def __init__(self, head: bytes, rest: BinaryIO) -> None:
        self._head = head
        self._rest = rest

    def read(self, n: int = -1) -> bytes:
        if self._head:
            if n < 0:
                out, self._head = self._head + self._rest.read(), b""
                return out
            out, self._head = self._head[:n], self._head[n:]
            if len(out) < n:
                out += self._rest.read(n - len(out))
            return out
        return self._rest.read(n)

    def close(self) -> None:
        self._rest.close()


def _open(path: str, stats: ReadStats) -> tuple[BinaryIO, BinaryIO]:
    """(decompressed stream, raw file): the raw one tells the progress bar how far we are."""
    raw = _open_raw(path)
    try:
        head = raw.read(6)
    except OSError as e:
        raise InputError(f"cannot read {path}: {e.strerror or e}") from None
    # _Peeked has the read/close a decompressor needs, not the whole BinaryIO surface.
    peeked = cast(BinaryIO, _Peeked(head, raw))
    kind = next((k for magic, k in _MAGIC if head.startswith(magic)), None)
    stats.compression = kind
    if kind is None:
        return peeked, raw
    if kind == "gzip":
        return cast(BinaryIO, gzip.GzipFile(fileobj=peeked)), raw
    if kind == "bz2":
        return cast(BinaryIO, bz2.BZ2File(peeked)), raw
    if kind == "xz":
        return cast(BinaryIO, lzma.LZMAFile(peeked)), raw
    try:
        import zstandard
    except ImportError:
        raise InputError(
            f"{path} is zstd-compressed; install the 'zstandard' package (pip install logmem[zstd]) "
            "or decompress it first"
        ) from None
    return cast(BinaryIO, zstandard.ZstdDecompressor().stream_reader(peeked)), raw


def open_stream(path: str, stats: ReadStats) -> BinaryIO:
    """Open a path (or '-') and undo gzip/bz2/xz/zstd, detected by content (snapshots too)."""
    return _open(path, stats)[0]


def _size_of(raw: BinaryIO) -> int | None:
    """The input's size for the progress bar, or None for a pipe or terminal."""
    try:
        st = os.fstat(raw.fileno())
    except (OSError, AttributeError, ValueError):
        return None
    return st.st_size if stat.S_ISREG(st.st_mode) else None


def _position(raw: BinaryIO, fallback: int) -> int:
    try:
        return raw.tell()
    except (OSError, AttributeError, ValueError):
        return fallback


def iter_chunks(path: str, stats: ReadStats) -> Iterator[bytes]:
    stream, raw = _open(path, stats)
    total = _size_of(raw)
    bar = progress.start(path, total, compressed=stats.compression is not None)
    try:
        while True:
            try:
                chunk = stream.read(CHUNK_BYTES)
            except (OSError, EOFError, lzma.LZMAError, ValueError) as e:
                raise InputError(
                    f"{path}: cannot decompress after {stats.bytes_read} bytes: {e}"
                ) from None
            except Exception as e:  # zstandard.ZstdError has no common base we can name
                raise InputError(
                    f"{path}: cannot read after {stats.bytes_read} bytes: {e}"
                ) from None
            if not chunk:
                return
            stats.bytes_read += len(chunk)
            if bar is not None:
                # Compressed input: progress is how far into the file, not how much came out.
                done = _position(raw, stats.bytes_read) if stats.compression else stats.bytes_read
                bar.update(done, stats.bytes_read)
            yield chunk
    finally:
        if bar is not None:
            bar.close()
        if path != "-":
            stream.close()


# --- matchers ---------------------------------------------------------------------------


class Cursor(Protocol):
    """Keyword hits in ``buf[lo:hi]``, asked for in increasing `pos`."""

    def next_hit(self, pos: int) -> int:
        """A position inside a keyword occurrence in the first segment at or after `pos`
        that holds one, or -1. `pos` is the start of a segment."""
        ...


class Matcher(Protocol):
    name: str

    def cursor(self, buf: bytes, lo: int, hi: int) -> Cursor: ...


class _RegexMatcher:
    """The keyword regex itself: exact for any pattern, slow (one regex step per byte)."""

    name = "regex"

    def __init__(self, keywords: regex.Pattern[bytes]) -> None:
        self._keywords = keywords

    def cursor(self, buf: bytes, lo: int, hi: int) -> Cursor:
        return _RegexCursor(self._keywords, buf, hi)


class _RegexCursor:
    def __init__(self, keywords: regex.Pattern[bytes], buf: bytes, hi: int) -> None:
        self._search = keywords.search
        self._buf = buf
        self._hi = hi

    def next_hit(self, pos: int) -> int:
        m = self._search(self._buf, pos, self._hi)
        return -1 if m is None else m.start()


class _HyperscanMatcher:
    """All literals in one hyperscan pass; the scan stops at the first hit."""

    name = "hyperscan"

    def __init__(self, literals: Sequence[bytes]) -> None:
        import hyperscan

        self._hs = hyperscan
        self._db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        self._db.compile(
            expressions=list(literals),
            ids=list(range(len(literals))),
            elements=len(literals),
            flags=hyperscan.HS_FLAG_SINGLEMATCH,
            literal=True,
        )

    def cursor(self, buf: bytes, lo: int, hi: int) -> Cursor:
        return _HyperscanCursor(self, buf, hi)


class _HyperscanCursor:
    def __init__(self, m: _HyperscanMatcher, buf: bytes, hi: int) -> None:
        self._m = m
        self._view = memoryview(buf)
        self._hi = hi
        self._hit = -1
        # Scratch space per cursor: one shared by threads reading different logs would clash.
        self._scratch = m._hs.Scratch(m._db)

    def _on_match(self, _id: int, _from: int, to: int, _flags: int, _ctx: object) -> bool:
        self._hit = to - 1
        return True  # stop: the caller extracts the segment and resumes after it

    def next_hit(self, pos: int) -> int:
        if pos >= self._hi:
            return -1
        self._hit = -1
        m = self._m
        # Any buffer works (no copy of the chunk); the stubs only name str and bytes.
        window = cast(bytes, self._view[pos : self._hi])
        with contextlib.suppress(m._hs.ScanTerminated):
            m._db.scan(window, match_event_handler=self._on_match, scratch=self._scratch)
        return -1 if self._hit < 0 else pos + self._hit


# Bytes that runtime lines (Decode/Prefill batch, uvicorn access, weight-loading bars)
# almost never contain: a memchr for them is nearly free. Correctness does not depend
# on this choice, only speed: every hit is checked against the keywords.
_RARE = frozenset(b"ABCJMQRUVWXYZ_=%'!;@`xyzj{}~^\\")
# Keywords without a rare byte are found as a 3-byte class string: first byte in
# _CLASS_FIRST then two in _CLASS_NEXT ("Ini", "Err", "Tra", "vai"); runtime text has
# these letters but almost never in that order.
_CLASS_FIRST = frozenset(b"IETv")
_CLASS_NEXT = frozenset(b"nira")
_RARE_CODE, _FIRST_CODE, _NEXT_CODE = 1, 2, 3
_CLASS_NEEDLE = bytes((_FIRST_CODE, _NEXT_CODE, _NEXT_CODE))


def _class_window(lit: bytes) -> int:
    """Offset of a 3-byte window of `lit` that maps to _CLASS_NEEDLE, or -1."""
    for i in range(len(lit) - 2):
        if lit[i] in _CLASS_FIRST and lit[i + 1] in _CLASS_NEXT and lit[i + 2] in _CLASS_NEXT:
            return i
    return -1


class _FindMatcher:
    """Pure Python: a translate into byte classes, memchr and find, then exact checks."""

    name = "python"

    def __init__(self, literals: Sequence[bytes]) -> None:
        # rare byte -> (literal, offset of that byte in it) pairs that could hold it
        self.by_rare: dict[int, list[tuple[bytes, int]]] = {}
        self.by_window: dict[int, list[tuple[bytes, int]]] = {}  # keyed by the window's first byte
        self.plain: list[bytes] = []  # neither: found with bytes.find (slower, still exact)
        for lit in literals:
            rare = [i for i, b in enumerate(lit) if b in _RARE]
            if rare:
                for i in rare:
                    self.by_rare.setdefault(lit[i], []).append((lit, i))
                continue
            w = _class_window(lit)
            if w >= 0:
                self.by_window.setdefault(lit[w], []).append((lit, w))
            else:
                self.plain.append(lit)
        table = bytearray(256)
        for b in _RARE:
            table[b] = _RARE_CODE
        for b in _CLASS_FIRST:
            table[b] = _FIRST_CODE
        for b in _CLASS_NEXT:
            table[b] = _NEXT_CODE
        self.table = bytes(table)

    def cursor(self, buf: bytes, lo: int, hi: int) -> Cursor:
        return _FindCursor(self, buf, lo, hi)


class _FindCursor:
    def __init__(self, m: _FindMatcher, buf: bytes, lo: int, hi: int) -> None:
        self._buf = buf
        self._lo = lo
        self._hi = hi
        classes = buf.translate(m.table) if (m.by_rare or m.by_window) else b""
        # (haystack, needle, candidates) per probe: the (literal, offset) pairs a hit at p
        # must be checked against; None for a plain literal (a hit is a match). Plain data,
        # no bound methods: a reference cycle would keep 4 MiB buffers alive until gc runs.
        self._probes: list[tuple[bytes, bytes, dict[int, list[tuple[bytes, int]]] | None]] = []
        if m.by_rare:
            self._probes.append((classes, bytes((_RARE_CODE,)), m.by_rare))
        if m.by_window:
            self._probes.append((classes, _CLASS_NEEDLE, m.by_window))
        self._probes += [(buf, lit, None) for lit in m.plain]
        # Next verified hit per probe (-1: none left); valid while >= the asked pos.
        self._next = [-2] * len(self._probes)

    def _covered(self, p: int, cands: dict[int, list[tuple[bytes, int]]]) -> bool:
        """Whether a keyword occurrence covers position p (the probe's hit)."""
        buf, lo, hi = self._buf, self._lo, self._hi
        for lit, off in cands.get(buf[p], ()):
            s = p - off
            if s >= lo and buf.startswith(lit, s, hi):
                return True
        return False

    def next_hit(self, pos: int) -> int:
        best = -1
        hi = self._hi
        for i, (hay, needle, cands) in enumerate(self._probes):
            p = self._next[i]
            if p != -1 and p < pos:
                p = hay.find(needle, pos, hi)
                while p >= 0 and cands is not None and not self._covered(p, cands):
                    p = hay.find(needle, p + 1, hi)
                self._next[i] = p
            if p >= 0 and (best < 0 or p < best):
                best = p
        return best


def _literals_of(keywords: regex.Pattern[bytes]) -> list[bytes] | None:
    """The literals of a pattern built as '|'.join(regex.escape(k) ...), else None."""
    if keywords.flags & (regex.IGNORECASE | regex.VERBOSE):
        return None
    out: list[bytes] = []
    cur = bytearray()
    src = keywords.pattern
    i = 0
    while i < len(src):
        c = src[i]
        if c == 0x5C:  # backslash: an escaped punctuation byte is that byte
            if i + 1 >= len(src) or chr(src[i + 1]).isalnum():
                return None
            cur.append(src[i + 1])
            i += 2
            continue
        if c == 0x7C:  # '|'
            out.append(bytes(cur))
            cur = bytearray()
        elif chr(c) in ".^$*+?{}[]()":
            return None
        else:
            cur.append(c)
        i += 1
    out.append(bytes(cur))
    # An empty or separator-holding alternative would need the regex's own semantics.
    if any(not lit or b"\n" in lit or b"\r" in lit for lit in out):
        return None
    return out


_MATCHERS: dict[tuple[Any, str], Matcher] = {}


def matcher_for(keywords: regex.Pattern[bytes], kind: str | None = None) -> Matcher:
    """The fastest matcher available for `keywords` (cached); `kind` forces one."""
    kind = kind or os.environ.get("LOGMEM_MATCHER") or "auto"
    key = (keywords.pattern, kind)
    found = _MATCHERS.get(key)
    if found is not None:
        return found
    literals = _literals_of(keywords)
    m: Matcher
    if literals is None or kind == "regex":
        m = _RegexMatcher(keywords)
    elif kind == "python":
        m = _FindMatcher(literals)
    else:
        try:
            m = _HyperscanMatcher(literals)
        except Exception as e:  # not installed, or a wheel whose library will not load
            if kind == "hyperscan":
                raise InputError(
                    f"LOGMEM_MATCHER=hyperscan, but hyperscan cannot be used: {e}"
                ) from None
            m = _FindMatcher(literals)
    _MATCHERS[key] = m
    return m


# --- segments ---------------------------------------------------------------------------


def _count_newlines(buf: bytes, start: int, end: int) -> int:
    return buf.count(b"\n", start, end)


def _first_sep(buf: bytes, start: int) -> int:
    nl = buf.find(b"\n", start)
    cr = buf.find(b"\r", start, nl if nl >= 0 else len(buf))
    return cr if cr >= 0 else nl


def iter_segments(
    path: str, keywords: regex.Pattern[bytes], stats: ReadStats | None = None
) -> Iterator[Segment]:
    """Yield the segments of one input that contain a keyword, with their line numbers."""
    stats = stats or ReadStats(path)
    matcher = matcher_for(keywords)
    carry = b""
    carry_truncated = False
    line_no = 1  # line number at the start of `carry` (or of the next chunk)
    last = b"\n"
    for chunk in iter_chunks(path, stats):
        last = chunk[-1:]
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
                line_no = yield from _scan(path, head, 0, len(head), line_no, matcher, stats)
                start = first
            line_no = yield from _scan(path, chunk, start, cut, line_no, matcher, stats)
            carry = chunk[cut:]
        if len(carry) > MAX_SEGMENT_BYTES:
            carry = carry[:MAX_SEGMENT_BYTES]
            carry_truncated = True
            stats.truncated_segments += 1
    if carry:
        line_no = yield from _scan(path, carry, 0, len(carry), line_no, matcher, stats)
    stats.ends_with_newline = last in (b"\n", b"") and not carry
    stats.lines = line_no - (1 if stats.ends_with_newline and stats.bytes_read else 0)


def _scan(
    path: str,
    buf: bytes,
    lo: int,
    hi: int,
    line_no: int,
    matcher: Matcher,
    stats: ReadStats,
) -> Generator[Segment, None, int]:
    """Yield each segment of ``buf[lo:hi]`` that holds a keyword; return the line number at `hi`.

    Every search is bounded by the previous segment's end, so hostile input (a hit on
    every line, no ``\\r`` anywhere) stays linear.
    """
    if lo >= hi:
        return line_no
    cursor = matcher.cursor(buf, lo, hi)
    pos = counted = lo
    while pos < hi:
        p = cursor.next_hit(pos)
        if p < 0:
            break
        sep = max(buf.rfind(b"\n", pos, p), buf.rfind(b"\r", pos, p))
        start = sep + 1 if sep >= 0 else pos
        nl = buf.find(b"\n", p, hi)
        end = nl if nl >= 0 else hi
        cr = buf.find(b"\r", p, end)
        if cr >= 0:
            end = cr
        line_no += _count_newlines(buf, counted, start)
        counted = start
        data = buf[start:end]
        truncated = len(data) > MAX_SEGMENT_BYTES
        if truncated:
            data = data[:MAX_SEGMENT_BYTES]
            stats.truncated_segments += 1
        yield Segment(path, line_no, data, truncated)
        pos = end + 1
    return line_no + _count_newlines(buf, counted, hi)


def read_segments(
    paths: Iterable[str], keywords: regex.Pattern[bytes], stats: list[ReadStats] | None = None
) -> Iterator[Segment]:
    """All candidate segments of several inputs, input after input."""
    for path in paths:
        st = ReadStats(path)
        if stats is not None:
            stats.append(st)
        yield from iter_segments(path, keywords, st)
