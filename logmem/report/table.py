"""Report tables: the Table and Section records that text, Markdown and HTML all draw, and the
cells every table writes the same way (a GiB figure, a rank's name)."""

from __future__ import annotations

from logmem.frozen import frozen
from logmem.units import format_gib


@frozen
class Table:
    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    align: tuple[str, ...] = ()  # "l" | "r" per column; default: first left, rest right
    notes: tuple[str, ...] = ()
    indent: tuple[int, ...] = ()  # per row: 0 a phase, 1 a cause under it

    def alignment(self, i: int) -> str:
        if self.align:
            return self.align[i]
        return "l" if i == 0 else "r"


@frozen
class Section:
    title: str
    tables: tuple[Table, ...] = ()
    paragraphs: tuple[str, ...] = ()
    details: bool = False  # collapsed in Markdown/HTML


def gib_cell(n: int | None, signed: bool = False) -> str:
    """A figure in GiB as a table cell; "-" when the log lacks it."""
    return format_gib(n, signed=signed, unknown="-")


def rank_name(label: str) -> str:
    return label or "the GPU (no rank tag)"
