"""A progress bar on stderr while big inputs are read.

Shown only for inputs over :data:`THRESHOLD` bytes, only when stderr is a terminal, and
never under ``logmem -q``: the CLI group sets :data:`enabled` from ``--quiet`` (a module
setting, so that the reader needs no option threaded through every command). Library
callers get the same rule; notebooks and pipes stay silent because stderr is no terminal.
"""

from __future__ import annotations

import os
import sys
import time
from typing import TextIO

# Set by the `logmem` group callback: False under --quiet.
enabled = True
# "Inputs over 100 MB": smaller files are read in about a second, a bar would only flicker.
THRESHOLD = 100_000_000
# Redraws per second: enough to look alive, too few to cost anything.
_MIN_INTERVAL = 0.1
_MIB = 1 << 20


class Bar:
    """One input's bar: `update(done, produced)` after each chunk, `close()` clears the line.

    `done` is how far into the input (bytes of the file), `produced` how many bytes it has
    yielded (more than `done` when it is compressed). A bar whose input is not known to be
    big (a pipe, a small compressed file) stays hidden until `produced` passes the threshold.
    """

    def __init__(self, name: str, total: int | None, stream: TextIO, threshold: int) -> None:
        self.name = name
        self.total = total
        self.stream = stream
        self.threshold = threshold
        self._eager = total is not None and total > threshold
        self._t0 = time.monotonic()
        self._last = 0.0
        self._drawn = False

    def update(self, done: int, produced: int | None = None) -> None:
        now = time.monotonic()
        if now - self._last < _MIN_INTERVAL:
            return
        # Not known to be big: start drawing only once the input has proved to be.
        if not self._eager and (done if produced is None else produced) <= self.threshold:
            return
        self._last = now
        self._draw(done, now)

    def _draw(self, done: int, now: float) -> None:
        width = _columns(self.stream)
        rate = done / _MIB / max(now - self._t0, 1e-6)
        if self.total:
            frac = min(done / self.total, 1.0)
            tail = f" {frac * 100:3.0f}% {done / _MIB:,.0f}/{self.total / _MIB:,.0f} MiB {rate:,.0f} MiB/s"
        else:
            frac = None
            tail = f" {done / _MIB:,.0f} MiB {rate:,.0f} MiB/s"
        head = f"logmem: {self.name}"
        # Sized for the widest tail this input will show, so the bar does not jitter.
        widest = f" 100% {(self.total or 0) / _MIB:,.0f}/{(self.total or 0) / _MIB:,.0f} MiB 99,999 MiB/s"
        bar_width = width - len(head) - max(len(tail), len(widest)) - 4
        if frac is not None and bar_width >= 10:
            filled = int(bar_width * frac)
            head += " [" + "#" * filled + "-" * (bar_width - filled) + "]"
        line = (head + tail)[: width - 1]
        self.stream.write("\r" + line.ljust(width - 1))
        self.stream.flush()
        self._drawn = True

    def close(self) -> None:
        # Leave the terminal as it was: the report follows on stdout.
        if self._drawn:
            self.stream.write("\r" + " " * (_columns(self.stream) - 1) + "\r")
            self.stream.flush()
            self._drawn = False


def _columns(stream: TextIO) -> int:
    try:
        cols = os.get_terminal_size(stream.fileno()).columns
    except (OSError, ValueError, AttributeError):
        return 80
    return cols if cols >= 20 else 80  # a pty without a size reports 0


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def start(
    name: str,
    total: int | None,
    stream: TextIO | None = None,
    threshold: int | None = None,
    compressed: bool = False,
) -> Bar | None:
    """A bar for one input, or None when none should be shown.

    `total` is the input's size in bytes (None for a pipe: then the bar appears once more
    than the threshold has been read). A compressed input counts by what it decompresses
    to, so a small file is not ruled out. `stream` defaults to sys.stderr.
    """
    out = stream if stream is not None else sys.stderr
    limit = THRESHOLD if threshold is None else threshold
    if not enabled or out is None or not _is_terminal(out):
        return None
    if total is not None and total <= limit and not compressed:
        return None
    return Bar(name, total, out, limit)
