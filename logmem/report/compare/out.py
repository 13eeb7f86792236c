"""Where the diff / fit / whatif layout writes: ``Out`` (the interface), and ``TextOut`` for text
(underlined headings, aligned tables, 100 columns) and Markdown (### headings, pipe tables,
<details> for long tables). report.compare.html's HtmlOut is the third."""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Sequence
from typing import Protocol

from logmem.report.cells import fold_cell
from logmem.report.safe_text import one_line, strip_controls

WIDTH = 100


class Out(Protocol):
    """What report.compare.layout calls; ``md`` is True where whole tables show (Markdown, HTML)."""

    md: bool

    def title(self, text: str) -> None: ...
    def heading(self, text: str) -> None: ...
    def gap(self) -> None: ...
    def para(self, text: str) -> None: ...
    def bullets(self, items: Sequence[str]) -> None: ...
    def table(
        self, columns: Sequence[str], rows: Sequence[Sequence[str]], left: int = 1
    ) -> None: ...
    def details(self, summary: str, body: Callable[[], None]) -> None: ...
    def text(self) -> str: ...


def _wrap(text: str, bullet: str = "") -> list[str]:
    return textwrap.wrap(
        text,
        WIDTH,
        initial_indent=bullet,
        subsequent_indent=" " * len(bullet),
        break_on_hyphens=False,  # never split a flag such as --mem-fraction-static
    ) or [""]


def _table(columns: Sequence[str], rows: Sequence[Sequence[str]], left: int = 1) -> list[str]:
    """A plain table: the first `left` columns left-aligned, the rest right-aligned."""
    cells = [list(columns)] + [list(r) for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(columns))]
    # Too wide: the widest text (left-aligned) column gives way, one column at a time, down to 8
    # characters each, then any column.
    while (over := sum(widths) + 2 * (len(widths) - 1) - WIDTH) > 0:
        pool = [j for j in range(left) if widths[j] > 8] or [
            j for j in range(len(widths)) if widths[j] > 8
        ]
        if not pool:
            break
        i = max(pool, key=lambda j: widths[j])
        second = max((widths[j] for j in pool if j != i), default=8)
        widths[i] -= max(1, min(over, widths[i] - max(8, second)))
    out = []
    for n, r in enumerate(cells):
        # A cell wider than its column wraps onto continuation lines: nothing is cut.
        pieces = [fold_cell(c, w) for c, w in zip(r, widths)]
        for k in range(max(len(p) for p in pieces)):
            parts = []
            for i, piece in enumerate(pieces):
                c = piece[k] if k < len(piece) else ""
                parts.append(c.ljust(widths[i]) if i < left else c.rjust(widths[i]))
            out.append("  ".join(parts).rstrip())
        if n == 0:
            out.append("  ".join("-" * w for w in widths))
    return out


def _md_table(columns: Sequence[str], rows: Sequence[Sequence[str]], left: int = 1) -> list[str]:
    def esc(c: str) -> str:
        return c.replace("|", "\\|")

    out = ["| " + " | ".join(esc(c) for c in columns) + " |"]
    out.append("|" + "|".join(":---" if i < left else "---:" for i in range(len(columns))) + "|")
    out.extend("| " + " | ".join(esc(c) for c in r) + " |" for r in rows)
    return out


class TextOut:
    """Collects lines for one format: text (underlined headings) or Markdown (### headings)."""

    def __init__(self, md: bool) -> None:
        self.md = md
        self.lines: list[str] = []

    def title(self, text: str) -> None:
        text = one_line(text)  # every string of a layout can carry log text: inert on a terminal
        if self.md:
            self.lines.extend([f"## {text}", ""])
            return
        wrapped = textwrap.wrap(text, WIDTH, subsequent_indent="  ", break_on_hyphens=False) or [""]
        self.lines.extend([*wrapped, "=" * max(len(x) for x in wrapped)])

    def heading(self, text: str) -> None:
        text = one_line(text)
        if self.lines and self.lines[-1] == "":
            self.lines.pop()
        self.lines.extend(["", f"### {text}", ""] if self.md else ["", text])

    def gap(self) -> None:
        self.lines.append("")

    def _block(self) -> None:
        # Markdown blocks (paragraphs, tables, lists) need a blank line between them.
        if self.md and self.lines and self.lines[-1] != "":
            self.lines.append("")

    def para(self, text: str) -> None:
        text = one_line(text)
        if self.md:
            self._block()
            self.lines.append(text)
        else:
            self.lines.extend(_wrap(text))

    def bullets(self, items: Sequence[str]) -> None:
        self._block()
        for it in map(one_line, items):
            if self.md:
                self.lines.append(f"- {it}")
            else:
                self.lines.extend(_wrap(it, "- "))

    def table(self, columns: Sequence[str], rows: Sequence[Sequence[str]], left: int = 1) -> None:
        rows = [[one_line(c) for c in r] for r in rows]
        if self.md:
            self._block()
            self.lines.extend(_md_table(columns, rows, left))
        else:
            self.lines.extend(_table(columns, rows, left))

    def details(self, summary: str, body: Callable[[], None]) -> None:
        summary = one_line(summary)
        if self.md:
            self.lines.extend(["", f"<details><summary>{summary}</summary>", ""])
            body()
            self.lines.extend(["", "</details>"])
        else:
            self.heading(summary)
            body()

    def text(self) -> str:
        return strip_controls("\n".join(self.lines).rstrip() + "\n")
