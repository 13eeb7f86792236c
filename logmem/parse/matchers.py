"""Keyword matchers for the reader: which segments of a chunk hold one of the pattern keywords.

Three matchers find the keyword hits, all with the same result (the segments that contain a
keyword):

* ``hyperscan`` (optional, ``pip install logmem[fast]``): one multi-literal scan;
* ``python``: one ``bytes.translate`` of the chunk into a few byte classes, then a
  ``memchr`` for the rare bytes and one ``find`` for a class string; each hit is checked
  against the keywords with ``startswith``;
* ``regex``: the keyword regex itself, for keyword patterns that are not plain literals.

``LOGMEM_MATCHER=python|hyperscan|regex`` forces one (tests, benchmarks).
"""

from __future__ import annotations

import os
import re
import threading
from array import array
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol, cast

from logmem.errors import InputError

if TYPE_CHECKING:
    import regex


class Cursor(Protocol):
    """Keyword hits in ``buf[lo:hi]``, asked for in increasing `pos`."""

    def next_hit(self, pos: int) -> int:
        """A position inside a keyword occurrence in the first segment at or after `pos`
        that holds one, or -1. `pos` is the start of a segment."""
        ...


class Matcher(Protocol):
    name: str

    def cursor(self, buf: bytes, lo: int, hi: int) -> Cursor: ...

    def positions(self, buf: bytes, limit: int) -> array[int] | None:
        """Keyword positions in `buf`, in increasing order, at least one in each segment that
        holds a keyword (a cursor's answers, all at once: logmem.parse.prescan), or None when
        there are over `limit` of them."""
        ...

    def hits(self, data: bytes) -> list[int]:
        """Which literals occur in `data` (short: one record): their indexes in the keyword
        pattern's order, each once (logmem.parse.match runs the patterns that need them)."""
        ...


def _hits_by_find(literals: Sequence[bytes], data: bytes) -> list[int]:
    return [i for i, lit in enumerate(literals) if lit in data]


def _positions_by_cursor(m: Matcher, buf: bytes, limit: int) -> array[int] | None:
    """One keyword position in each segment of `buf` that holds one, from m's cursor."""
    cursor = m.cursor(buf, 0, len(buf))
    find = buf.find
    n = len(buf)
    out = array("q")
    pos = 0
    # The next \n and \r, found once each and reused until passed: searching both for every
    # segment would be quadratic in a buffer that lacks one of them (logmem.parse.separators).
    nl = cr = -2
    while pos < n:
        p = cursor.next_hit(pos)
        if p < 0:
            break
        out.append(p)
        if len(out) > limit:
            return None
        if nl != -1 and nl < p:
            nl = find(b"\n", p)
        if cr != -1 and cr < p:
            cr = find(b"\r", p)
        pos = min(nl if nl >= 0 else n, cr if cr >= 0 else n) + 1
    return out


class _RegexMatcher:
    """The keyword regex itself: exact for any pattern, slow (one regex step per byte)."""

    name = "regex"

    def __init__(self, keywords: regex.Pattern[bytes], literals: Sequence[bytes] | None) -> None:
        self._keywords = keywords
        self._literals = literals

    def cursor(self, buf: bytes, lo: int, hi: int) -> Cursor:
        return _RegexCursor(self._keywords, buf, hi)

    def positions(self, buf: bytes, limit: int) -> array[int] | None:
        return _positions_by_cursor(self, buf, limit)

    def hits(self, data: bytes) -> list[int]:
        if self._literals is None:
            raise TypeError("hits() needs keywords that are plain literals")
        return _hits_by_find(self._literals, data)


class _RegexCursor:
    def __init__(self, keywords: regex.Pattern[bytes], buf: bytes, hi: int) -> None:
        self._search = keywords.search
        self._buf = buf
        self._hi = hi

    def next_hit(self, pos: int) -> int:
        m = self._search(self._buf, pos, self._hi)
        return -1 if m is None else m.start()


class _HyperscanMatcher:
    """All literals in one hyperscan pass: hits() stops at each literal's first occurrence;
    a cursor collects the occurrences of a whole chunk in one scan."""

    name = "hyperscan"

    def __init__(self, literals: Sequence[bytes]) -> None:
        import hyperscan

        self._hs = hyperscan
        self._db = self._database(literals, hyperscan.HS_FLAG_SINGLEMATCH)
        # Every occurrence, for cursors: one scan per chunk instead of one per segment
        # (a scan stopped at each hit cost a scan set-up and a ScanTerminated per segment).
        self._db_all = self._database(literals, 0)
        self._local = threading.local()  # scratch space for hits(), one per thread

    def _database(self, literals: Sequence[bytes], flags: int) -> Any:
        db = self._hs.Database(mode=self._hs.HS_MODE_BLOCK)
        db.compile(
            expressions=list(literals),
            ids=list(range(len(literals))),
            elements=len(literals),
            flags=flags,
            literal=True,
        )
        return db

    def cursor(self, buf: bytes, lo: int, hi: int) -> Cursor:
        return _HyperscanCursor(self, buf, hi)

    def positions(self, buf: bytes, limit: int) -> array[int] | None:
        # Every occurrence's last byte, as a cursor collects them: one scan, no Python per
        # segment (several in one segment are fine: a position list may hold more than one).
        out = array("q")
        append = out.append

        def on_match(_id: int, _from: int, to: int, _flags: int, _ctx: object) -> bool:
            append(to - 1)
            return len(out) > limit  # True stops the scan

        try:
            self._db_all.scan(
                buf, match_event_handler=on_match, scratch=self._hs.Scratch(self._db_all)
            )
        except self._hs.ScanTerminated:
            return None
        return out

    def hits(self, data: bytes) -> list[int]:
        scratch = getattr(self._local, "scratch", None)
        if scratch is None:
            scratch = self._local.scratch = self._hs.Scratch(self._db)
        found: list[int] = []
        # SINGLEMATCH: each literal is reported once.
        self._db.scan(data, match_event_handler=lambda i, *_: found.append(i), scratch=scratch)
        return found


class _HyperscanCursor:
    """The last bytes of the keyword occurrences in ``buf[pos:hi]``, collected by one scan
    (at most BATCH at a time, so a chunk of hits on every line keeps a bounded list) and
    handed out in order. A literal holds no separator and `pos` is a segment start, so an
    occurrence ending at or after `pos` lies wholly at or after it: the first such one is in
    the first segment at or after `pos` that holds a keyword."""

    BATCH = 4096

    def __init__(self, m: _HyperscanMatcher, buf: bytes, hi: int) -> None:
        self._m = m
        self._view = memoryview(buf)
        self._hi = hi
        self._ends: list[int] = []  # last byte of each occurrence, in the order of their ends
        self._i = 0
        self._base = 0
        self._complete = False  # the last scan reached `hi`: nothing after _ends[-1] is missing
        # Scratch space per cursor: one shared by threads reading different logs would clash.
        self._scratch = m._hs.Scratch(m._db_all)

    def _on_match(self, _id: int, _from: int, to: int, _flags: int, _ctx: object) -> bool:
        ends = self._ends
        ends.append(self._base + to - 1)
        return len(ends) >= self.BATCH  # True stops the scan: the rest waits for a refill

    def _fill(self, pos: int) -> None:
        self._ends, self._i, self._base = [], 0, pos
        m = self._m
        # Any buffer works (no copy of the chunk); the stubs only name str and bytes.
        window = cast(bytes, self._view[pos : self._hi])
        try:
            m._db_all.scan(window, match_event_handler=self._on_match, scratch=self._scratch)
            self._complete = True
        except m._hs.ScanTerminated:
            self._complete = False

    def next_hit(self, pos: int) -> int:
        if pos >= self._hi:
            return -1
        while True:
            ends, i = self._ends, self._i
            n = len(ends)
            while i < n and ends[i] < pos:
                i += 1
            self._i = i
            if i < n:
                return ends[i]
            if self._complete and self._base <= pos:
                return -1
            self._fill(pos)


# Bytes that runtime lines (Decode/Prefill batch, uvicorn access, weight-loading bars)
# rarely contain, rarest first (counted on bench/gen.py's realistic mix and the corpus): a
# memchr for them is nearly free. Each literal is probed by its one rarest such byte, and only
# the bytes some literal is probed by are looked for: a byte that is common in runtime text
# ('C' in "Completed" bars, 'v' in "/get_server_info" access lines) costs a check per
# occurrence, so it is probed only for the literals that hold nothing rarer. '_' is not one:
# every "/get_model_info" access line holds two, and one bytes.find pass for the literal that
# has nothing rarer ("sglang.bench_") costs less than checking them all (0.86-0.94 s against
# 1.10-1.12 s for the cursor on the 256 MiB bench mix). Correctness does not depend on this
# choice, only speed: every hit is checked against its literals.
_RARE = b"@JXYZ\\^`~W{}jUQzA'x;!yVRM=%CBv"
# Keywords without a rare byte are found as a 3-byte class string: first byte in
# _CLASS_FIRST then two in _CLASS_NEXT ("Ini", "Err", "Tra"); runtime text has these
# letters but almost never in that order. No rare byte is a class byte (tests).
_CLASS_FIRST = frozenset(b"IET")
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
        self.literals = tuple(literals)
        # rare byte -> (literal, offset of that byte in it) pairs that could hold it
        self.by_rare: dict[int, list[tuple[bytes, int]]] = {}
        self.by_window: dict[int, list[tuple[bytes, int]]] = {}  # keyed by the window's first byte
        self.plain: list[bytes] = []  # neither: found with bytes.find (slower, still exact)
        for lit in literals:
            rare = [i for i, b in enumerate(lit) if b in _RARE]
            if rare:
                i = min(rare, key=lambda i: _RARE.index(lit[i]))
                self.by_rare.setdefault(lit[i], []).append((lit, i))
                continue
            w = _class_window(lit)
            if w >= 0:
                self.by_window.setdefault(lit[w], []).append((lit, w))
            else:
                self.plain.append(lit)
        table = bytearray(256)
        for b in self.by_rare:
            table[b] = _RARE_CODE
        for b in _CLASS_FIRST:
            table[b] = _FIRST_CODE
        for b in _CLASS_NEXT:
            table[b] = _NEXT_CODE
        self.table = bytes(table)

    def cursor(self, buf: bytes, lo: int, hi: int) -> Cursor:
        return _FindCursor(self, buf, lo, hi)

    def positions(self, buf: bytes, limit: int) -> array[int] | None:
        return _positions_by_cursor(self, buf, limit)

    def hits(self, data: bytes) -> list[int]:
        return _hits_by_find(self.literals, data)


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
    # The stdlib's flag values are the regex module's: a keyword pattern may be either's.
    if keywords.flags & (re.IGNORECASE | re.VERBOSE):
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


def matcher_for(
    keywords: regex.Pattern[bytes], kind: str | None = None, small: bool = False
) -> Matcher:
    """The fastest matcher available for `keywords` (cached); `kind` forces one, and so does
    ``LOGMEM_MATCHER``. Else `small` (small inputs only, logmem.parse.sizes) is the pure-Python
    one: it scans a small file in less time than hyperscan takes to load."""
    kind = kind or os.environ.get("LOGMEM_MATCHER") or ("python" if small else "auto")
    key = (keywords.pattern, kind)
    found = _MATCHERS.get(key)
    if found is not None:
        return found
    literals = _literals_of(keywords)
    m: Matcher
    if literals is None or kind == "regex":
        m = _RegexMatcher(keywords, literals)
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
