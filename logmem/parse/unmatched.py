"""Memory lines that no pattern claims: counted per line shape, a few examples kept.

A record that carries a memory figure (GB, GiB, MiB, MB, avail mem, mem usage) but matches
no pattern is never dropped silently, but it is not hoarded either: a busy server prints
hundreds of thousands of them (HiCache, cache flushes, runtime counters). Each is counted
under its *shape*, the message with every number masked, and the first few of each shape
are kept with their file and line. Memory and report size are therefore bounded at any
density: at most MAX_SHAPES shapes of EXAMPLES_PER_SHAPE examples, each cut to
EXAMPLE_CHARS; lines of further shapes are counted only. `logmem lines` lists every one
through an :class:`UnmatchedSink` of its own.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import field
from typing import Protocol

from logmem.frozen import frozen, mutable
from logmem.parse.lines import Record, Source
from logmem.parse.patterns import MEMORY_FIGURE

EXAMPLES_PER_SHAPE = 3
MAX_SHAPES = 200
EXAMPLE_CHARS = 1000
# Shapes are told apart by the first bytes of the message only: a hostile 4 MiB line must
# not become a 4 MiB dictionary key.
SHAPE_BYTES = 300


@frozen
class Unmatched:
    """A record that carries a memory figure but matched no pattern."""

    rank: str | None
    source: Source


@frozen
class UnmatchedShape:
    shape: str  # the message with each number shown as N
    count: int
    examples: tuple[Unmatched, ...]  # the first EXAMPLES_PER_SHAPE, in input order


@frozen
class UnmatchedSummary:
    """Every unmatched memory line, counted; shapes in order of first appearance."""

    shapes: tuple[UnmatchedShape, ...] = ()
    examples: tuple[Unmatched, ...] = ()  # the examples of every shape, in input order
    other_lines: int = 0  # lines of shapes beyond MAX_SHAPES: counted, not described

    @property
    def total(self) -> int:
        return sum(s.count for s in self.shapes) + self.other_lines

    def __bool__(self) -> bool:
        return self.total > 0


_DIGITS_TO_NUL = bytes.maketrans(b"0123456789", b"\0" * 10)


def shape_key(message: bytes) -> bytes:
    """The message's first SHAPE_BYTES with each number (digits, or digits.digits) as one
    NUL byte: a byte no message holds (the reader removes NULs)."""
    key = message[:SHAPE_BYTES].translate(_DIGITS_TO_NUL)
    while b"\0\0" in key:
        key = key.replace(b"\0\0", b"\0")
    return key.replace(b"\0.\0", b"\0")


def message_bytes(record: Record) -> bytes:
    return record.message.encode("utf-8", "surrogatepass")


# Each MEMORY_FIGURE alternative holds one of these, case-folded: a message without any is
# rejected with a few substring tests instead of a case-insensitive regex scan.
_FIGURE_NEEDLES = ("gb", "mb", "gib", "mib", "avail", "mem usage")


def has_memory_figure(text: str) -> bool:
    """Whether MEMORY_FIGURE finds a figure in `text` (tests check the two agree)."""
    # Only ASCII text is rejected by the needles: the regex's case-insensitive match takes some
    # other letters for the units' ('İ' for 'i', 'ſ' for 's') where folding the text does not.
    if text.isascii() and not any(n in text.lower() for n in _FIGURE_NEEDLES):
        return False
    return MEMORY_FIGURE.search(text) is not None


# MEMORY_FIGURE for ASCII bytes, lower-cased first: on ASCII, case folding is lower() and the
# stdlib engine needs a third of the time of a case-insensitive search (tests: they agree).
_FIGURE_ASCII = re.compile(rb"\d(?:\.\d{1,9})? ?(?:gb|gib|mib|mb)\b|avail(?:_mem| mem)|mem usage")


def ascii_memory_figure(message: bytes) -> bool:
    """has_memory_figure() of an ASCII message, from its bytes."""
    return _FIGURE_ASCII.search(message.lower()) is not None


# The same on a shape key (digit runs and decimals are one NUL): a figure is a digit right
# before an optional space and the unit, and \b after the unit is "no word character next",
# where a NUL stands for digits. Equal to ascii_memory_figure() of every ASCII message of at
# most SHAPE_BYTES with that key (tests), so the answer can be kept per shape.
_FIGURE_SHAPE = re.compile(rb"\0 ?(?:gb|gib|mib|mb)(?![a-z0-9_\0])|avail(?:_mem| mem)|mem usage")


def shape_memory_figure(key: bytes) -> bool:
    return _FIGURE_SHAPE.search(key.lower()) is not None


# A record that ends inside a memory figure: the input stops between a figure's key and its
# unit ("... avail mem=0" at the end of a cut file). Only the record's last bytes are searched.
_CUT_FIGURE = re.compile(
    r"(?:avail(?:_mem| mem)|mem usage) ?= ?-?\d{0,9}(?:\.\d{0,9})?(?: ?G)?\s*$"
)
_CUT_TAIL = 60


def ends_in_cut_figure(text: str) -> bool:
    """`text` ends inside a memory figure, cut before its unit ("... avail mem=0"). A text the
    unmatched spool shortened to EXAMPLE_CHARS does not show its end: never taken as cut (a
    Source excerpt ends with its own note, which never matches)."""
    if len(text) == EXAMPLE_CHARS:
        return False
    return _CUT_FIGURE.search(text[-_CUT_TAIL:]) is not None


class UnmatchedSink(Protocol):
    def add(self, record: Record) -> None:
        """Take one unmatched memory line."""
        ...

    def count_known(self, key: bytes) -> bool:
        """Count a line of shape `key` without its record, if the sink needs no more of
        that shape (True); False: the caller must build the record and add() it."""
        ...


@mutable
class _Shape:
    shape: str
    count: int = 0
    examples: list[Unmatched] = field(default_factory=list)


class UnmatchedCounter:
    """The analysis' sink: counts per shape, keeps the first examples of each."""

    def __init__(self) -> None:
        self._shapes: dict[bytes, _Shape] = {}
        self._examples: list[Unmatched] = []
        self._other_lines = 0

    def add(self, record: Record) -> None:
        key = shape_key(message_bytes(record))
        s = self._shapes.get(key)
        if s is None:
            if len(self._shapes) >= MAX_SHAPES:
                self._other_lines += 1
                return
            shown = key.decode("utf-8", "replace").replace("\0", "N").strip()
            s = self._shapes[key] = _Shape(shown)
        s.count += 1
        if len(s.examples) < EXAMPLES_PER_SHAPE:
            src = record.source
            text = src.text if len(src.text) <= EXAMPLE_CHARS else src.text[:EXAMPLE_CHARS]
            u = Unmatched(record.rank, Source(src.path, src.line_no, text, src.ts))
            s.examples.append(u)
            self._examples.append(u)

    def count_known(self, key: bytes) -> bool:
        s = self._shapes.get(key)
        if s is None:
            if len(self._shapes) < MAX_SHAPES:
                return False
            self._other_lines += 1
            return True
        if len(s.examples) < EXAMPLES_PER_SHAPE:
            return False
        s.count += 1
        return True

    def summary(self) -> UnmatchedSummary:
        shapes = tuple(
            UnmatchedShape(s.shape, s.count, tuple(s.examples)) for s in self._shapes.values()
        )
        return UnmatchedSummary(shapes, tuple(self._examples), self._other_lines)


class UnmatchedSpool:
    """Every unmatched memory line, in input order, for `logmem lines`: kept in memory up to
    SPOOL_BYTES, on a temporary file beyond (so listing them all stays bounded too)."""

    SPOOL_BYTES = 4 << 20

    def __init__(self) -> None:
        import tempfile  # only `logmem lines` needs it: not imported by every run

        self._file = tempfile.SpooledTemporaryFile(  # noqa: SIM115 - closed by close()
            max_size=self.SPOOL_BYTES, mode="w+", encoding="utf-8", errors="replace", newline="\n"
        )
        self._paths: dict[str, int] = {}
        self._count = 0

    def add(self, record: Record) -> None:
        src = record.source
        path = self._paths.setdefault(src.path, len(self._paths))
        rank = "\x01" if record.rank is None else record.rank  # a rank holds no control byte
        # A record's text holds no newline (the reader splits there): one line per record.
        self._file.write(f"{path}\t{src.line_no}\t{rank}\t{src.text[:EXAMPLE_CHARS]}\n")
        self._count += 1

    def count_known(self, key: bytes) -> bool:
        return False  # every line is listed, so every one needs its record

    def __len__(self) -> int:
        return self._count

    def __iter__(self) -> Iterator[Unmatched]:
        paths = list(self._paths)
        self._file.seek(0)
        for line in self._file:
            path, line_no, rank, text = line.rstrip("\n").split("\t", 3)
            source = Source(paths[int(path)], int(line_no), text)
            yield Unmatched(None if rank == "\x01" else rank, source)
        self._file.seek(0, 2)

    def close(self) -> None:
        self._file.close()
