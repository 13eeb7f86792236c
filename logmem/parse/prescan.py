"""The keyword scan of a big file, done by one more process: the read-ahead child's other half.

The read-ahead child (logmem.parse.ahead) spends about half its time in the keyword scan
(hyperscan takes ~0.85 s per GiB on the project's 2-core machine for the 43 literals, some of
them 2 bytes) and the other half cutting segments, counting lines and sending them. So, for a
big uncompressed file, it forks a *scanner* that reads the same chunks (read.chunks_of: the
same code on the same file gives the same chunks) and sends, per chunk, the keyword positions
the same matcher finds (Matcher.positions: at least one in each segment that holds a
keyword). The reader's cursor for that chunk (ListCursor) then looks them up instead of
scanning. A cursor's answer is "a keyword position in the first keyword segment at or after
`pos`", which the first listed position at or after `pos` is: the answers are the scan's,
nothing about the result changes, only which process found it.

The scanner is checked, not trusted: each message names its chunk's length and first and last
bytes. From a chunk that differs (a file appended to or rewritten while it is read), or once
the scanner has ended (an error, a kill), the reader scans each chunk itself. Memory stays
bounded: a chunk's list holds at most one position per POSITION_GAP bytes (at the first
denser chunk the scanner ends and the reader scans on), and the scanner waits while the pipe
is full.
"""

from __future__ import annotations

import os
import signal
import struct
import warnings
from array import array
from bisect import bisect_left
from collections.abc import Iterator
from typing import IO

import regex

from logmem.parse import progress
from logmem.parse.matchers import Matcher, matcher_for

# A chunk with more than one keyword position per POSITION_GAP bytes (real logs: one per
# 1.5 KiB at 370,000 keyword lines per GiB) ends the scanner, and the reader scans from there
# on: each position costs the scanner a Python call, and in a chunk the reader skips (one
# giant line, "GBGB..." or a keyword every 100 bytes) they would make the reader wait for work
# it never needed (200 MB of "GB": 4.2 s against 0.3 s in one process).
POSITION_GAP = 256
_PROBE = 16  # bytes from each end of a chunk, to check it is the chunk the reader has
# length of the chunk, number of hits (_DENSE: none sent, the last message), its first and
# last _PROBE bytes
_HEADER = struct.Struct(f"<QI{2 * _PROBE}s")
_DENSE = 0xFFFFFFFF
# A dense input's time goes to its records (in the parent), not to the scan: once an input has
# given JUDGE_AFTER_BYTES with a keyword segment every DENSE_GAP bytes or less, the reader ends
# its scanner. The scanner's ~14 MiB (a chunk, and what malloc keeps of the last ones) buy 18%
# at 150,000 keyword lines per GiB (2.0 s against 2.5), 2-8% at 250,000, 2% at 370,000, where
# memory binds (issue 15's 100 MiB: 99 MiB with the scanner).
JUDGE_AFTER_BYTES = 64 << 20
DENSE_GAP = 4 << 10
_MAX_FD = 1 << 20  # os.closerange uses close_range(2) where it exists: no loop over them


def _probe(chunk: bytes) -> bytes:
    return (chunk[:_PROBE] + chunk[-_PROBE:]).ljust(2 * _PROBE, b"\0")


def worth_keeping(bytes_read: int, segments: int) -> bool:
    """Whether an input that has given `bytes_read` bytes and `segments` segments keeps its
    scanner (see DENSE_GAP)."""
    return bytes_read < JUDGE_AFTER_BYTES or segments * DENSE_GAP < bytes_read


class ListCursor:
    """The matcher's Cursor over ``chunk[lo:hi]``, answered from the scanner's list."""

    def __init__(self, hits: array[int], hi: int) -> None:
        self._hits = hits
        self._n = len(hits)
        self._hi = hi
        self._i = 0

    def next_hit(self, pos: int) -> int:
        # Asked for increasing `pos`: the search starts where the last answer was.
        i = self._i = bisect_left(self._hits, pos, self._i)
        if i < self._n and (p := self._hits[i]) < self._hi:
            return p
        return -1


class Scanner:
    """The reader's side: a forked scanner's lists, one per chunk, taken in order."""

    def __init__(self, pid: int, fd: int) -> None:
        self._pid = pid
        self._in: IO[bytes] | None = os.fdopen(fd, "rb", buffering=1 << 16)

    def hits(self, chunk: bytes) -> array[int] | None:
        """The keyword positions of the next chunk, which is `chunk`; None: scan it here."""
        f = self._in
        if f is None:
            return None
        head = f.read(_HEADER.size)
        if len(head) < _HEADER.size:  # the scanner ended (an error, a kill): scan from here on
            self.close()
            return None
        length, n, probe = _HEADER.unpack(head)
        body = b"" if n == _DENSE else f.read(8 * n)
        if length != len(chunk) or probe != _probe(chunk) or len(body) != 8 * (n % _DENSE):
            self.close()  # not this chunk: the file changed under the two readers
            return None
        if n == _DENSE:  # the scanner has ended: a dense input is the reader's to scan
            self.close()
            return None
        out = array("q")
        out.frombytes(body)
        return out

    def close(self) -> None:
        f, self._in = self._in, None
        if f is not None:
            f.close()
            # Done, or stopped early: either way the scanner has nothing left to do.
            os.kill(self._pid, signal.SIGKILL)
            os.waitpid(self._pid, 0)


def start(keywords: regex.Pattern[bytes], chunks: Iterator[bytes]) -> Scanner:
    """Fork a scanner that sends the keyword positions of `chunks`. `chunks` is a generator
    not started yet (it opens its input when first asked): the scanner reads its own copy
    of it after the fork, and the caller reads its copy too, so both get the same chunks."""
    matcher = matcher_for(keywords)
    r, w = os.pipe()
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:  # the scanner: never returns
        # Only its own pipe stays open: a copy of the reader's pipe to its parent would keep
        # that one from seeing the end of the reader's output if the reader died first.
        os.closerange(3, w)
        os.closerange(w + 1, _MAX_FD)
        _scan(w, matcher, chunks, parent)
    os.close(w)
    return Scanner(pid, r)


def _scan(w: int, matcher: Matcher, chunks: Iterator[bytes], parent: int) -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # Ctrl-C: the reader reports it
    progress.enabled = False  # the reader draws the bar
    warnings.simplefilter("ignore")  # the reader raises the input's warnings and errors
    try:
        with os.fdopen(w, "wb", buffering=1 << 16) as out:
            for chunk in chunks:
                found = matcher.positions(chunk, len(chunk) // POSITION_GAP + 16)
                n = _DENSE if found is None else len(found)
                out.write(_HEADER.pack(len(chunk), n, _probe(chunk)))
                if found is None:
                    break
                out.write(found.tobytes())
                out.flush()  # whole messages: the reader waits for this chunk's
                # Let go of this chunk before the next is read: one 4 MiB buffer held, not two.
                del chunk, found
                if os.getppid() != parent:  # the reader is gone
                    break
    except BaseException:
        pass  # a broken pipe (the reader stopped), or an error the reader meets itself
    finally:
        os._exit(0)
