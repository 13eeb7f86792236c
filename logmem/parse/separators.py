"""Where the separators of a buffer are: the segment around a keyword hit, and line numbers.

The reader (logmem.parse.read._scan) asks two things about each candidate segment of a chunk:
where the segment holding a keyword hit starts (the last ``\\n`` or ``\\r`` before the hit) and
ends (the first one after it), found with ``bytes.rfind`` / ``find`` bounded by the previous
segment, and how many ``\\n`` lie before its start (its line number).

Counting is most of the reader's byte work after the keyword scan: ``bytes.count`` takes about
0.6-0.9 s per GiB on the project's machine, more than half the hyperscan scan. So a big range is
counted once with numpy instead: a vectorised compare, packed into one bit per byte, and a
running popcount per 64-byte block (about 0.12 s per GiB); a line number is then one array
lookup plus a count of at most 63 bytes. numpy comes with pandas, a dependency, but importing
it costs about a tenth of a second, so the reader asks for it only once an input has given
NUMPY_AFTER_BYTES (a small log never imports it), while its segments are more than SPARSE_GAP
bytes apart on average, for ranges of at least ARRAY_MIN_BYTES, and only where numpy has
``bitwise_count`` (2.0 and newer). Both ways give the same counts (tests/test_separators.py).

Why only sparse inputs: numpy's import adds about 14 MiB to the process that reads, and a
dense input is where memory binds (issue 15's 100 MiB at 370,000 keyword lines per GiB: 99 MiB
with numpy, 85 without), while its time goes to the segments, not the count (0.5 s of 8).
"""

from __future__ import annotations

from typing import Any

# Reading this much of one input first: a file that ends before never pays numpy's import.
NUMPY_AFTER_BYTES = 64 << 20
ARRAY_MIN_BYTES = 1 << 20
SPARSE_GAP = 8 << 10  # the realistic mix: 11 KiB between segments; 370k lines per GiB: 2.7 KiB
_BLOCK = 64  # bytes per running count: one uint64 of packed bits


class Separators:
    """The segments of ``buf[lo:hi]`` around keyword hits, and their line numbers."""

    def __init__(self, buf: bytes, lo: int, hi: int, blocks: Any = None) -> None:
        self._buf, self._lo, self._hi = buf, lo, hi
        # The next \n and \r at or after the last hit, found once each and reused until passed:
        # searching both to the range's end for every segment is quadratic when one separator
        # is missing (10 MB of "GB\r" took minutes).
        self._nl = self._cr = -2
        self._counted, self._lines = lo, 0
        # blocks[k]: the newlines in the first k + 1 blocks of _BLOCK bytes from `lo` (numpy)
        self._blocks = blocks
        self._nblocks = 0 if blocks is None else len(blocks)

    def segment(self, pos: int, p: int) -> tuple[int, int]:
        """(start, end) of the segment holding position `p`: the byte after the last separator
        in ``[pos, p)`` (`pos` if none), and the first separator at or after `p` (the range's
        end if none). Asked for increasing `p`; `pos` is a segment start at or before `p`."""
        buf, hi = self._buf, self._hi
        sep = max(buf.rfind(b"\n", pos, p), buf.rfind(b"\r", pos, p))
        if self._nl != -1 and self._nl < p:
            self._nl = buf.find(b"\n", p, hi)
        if self._cr != -1 and self._cr < p:
            self._cr = buf.find(b"\r", p, hi)
        nl, cr = self._nl, self._cr
        return (sep + 1 if sep >= 0 else pos), min(nl if nl >= 0 else hi, cr if cr >= 0 else hi)

    def newlines_before(self, x: int) -> int:
        """How many ``\\n`` lie in ``[lo, x)``; asked for non-decreasing `x`."""
        if x <= self._counted:
            return self._lines
        if self._blocks is None:
            self._lines += self._buf.count(b"\n", self._counted, x)
        else:
            k = min((x - self._lo) // _BLOCK, self._nblocks)
            full = int(self._blocks[k - 1]) if k else 0
            self._lines = full + self._buf.count(b"\n", self._lo + k * _BLOCK, x)
        self._counted = x
        return self._lines


_np: Any = None


def numpy_ok(bytes_read: int, segments: int) -> bool:
    """Whether an input that has given `bytes_read` bytes and `segments` segments so far is
    counted with numpy from here on (see the module's docstring)."""
    return bytes_read >= NUMPY_AFTER_BYTES and segments * SPARSE_GAP < bytes_read


def for_range(buf: bytes, lo: int, hi: int, bytes_read: int, segments: int) -> Separators:
    """The separators of ``buf[lo:hi]`` of an input that has given `bytes_read` bytes and
    `segments` segments so far: counted at once with numpy when numpy_ok() and the range is
    big enough, else as the reader goes."""
    big = hi - lo >= ARRAY_MIN_BYTES
    blocks = _blocks(buf, lo, hi) if big and numpy_ok(bytes_read, segments) else None
    return Separators(buf, lo, hi, blocks)


def _numpy() -> Any:
    global _np
    if _np is None:
        try:
            import numpy

            # bitwise_count came with numpy 2.0; an older one counts the bytes way.
            _np = numpy if hasattr(numpy, "bitwise_count") else False
        except ImportError:  # pandas brings it; without it the bytes searches do
            _np = False
    return _np


def _blocks(buf: bytes, lo: int, hi: int) -> Any:
    np = _numpy()
    if not np:
        return None
    n = (hi - lo) // _BLOCK * _BLOCK
    is_nl = np.frombuffer(buf, np.uint8, count=n, offset=lo) == 10
    words = np.packbits(is_nl, bitorder="little").view(np.uint64)
    return np.cumsum(np.bitwise_count(words), dtype=np.int64)
