"""How big an input is, told before the reader's machinery is imported.

A small log (`logmem analyze tp0.log` of a start-up, a few hundred KB) is read in this
process with the pure-Python matcher: loading hyperscan and compiling its databases takes
longer than the byte scan of the whole file, and the read-ahead child (logmem.parse.ahead),
its keyword scanner and their pickling are never imported. A big one gets all of them. The
result is the same either way (every matcher finds the same segments and literals; tests).
This module imports nothing of logmem, so that logmem.cli.early can ask it first.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence

# Under this size the fork and the pipe cost more than the second core gives back.
AHEAD_BYTES = 16 << 20
# A compressed file counts this many times its size (text logs shrink 5-15 times).
COMPRESSION_RATIO = 4
# Up to this size (compressed or not: at most about COMPRESSION_RATIO times as much text)
# the pure-Python matcher scans a file faster than hyperscan loads.
SMALL_BYTES = 1 << 20


def size_of(path: str) -> int | None:
    """The size of the regular file `path`, else None (stdin, a pipe, a missing file)."""
    if path == "-":
        return None
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return st.st_size if stat.S_ISREG(st.st_mode) else None


def may_read_ahead(path: str) -> bool:
    """False when `path` is certainly not read ahead (logmem.parse.ahead.wanted says the rest):
    a regular file below AHEAD_BYTES // COMPRESSION_RATIO, unless LOGMEM_READ_AHEAD=1."""
    if os.environ.get("LOGMEM_READ_AHEAD", "") == "1":
        return True
    size = size_of(path)
    return size is None or size >= AHEAD_BYTES // COMPRESSION_RATIO


def small_inputs(paths: Sequence[str]) -> bool:
    """Whether every input is a regular file below SMALL_BYTES (then the reader uses the
    pure-Python matcher unless LOGMEM_MATCHER names one)."""
    sizes = [size_of(p) for p in paths]
    return bool(sizes) and all(s is not None and s < SMALL_BYTES for s in sizes)
