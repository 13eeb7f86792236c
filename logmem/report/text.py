"""Text reporter: the report model as plain text for a terminal, at most 100 columns."""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING

from logmem.report.cells import fold_cell
from logmem.report.model import Report, analysis_report
from logmem.report.safe_text import one_line, strip_controls
from logmem.report.table import Table

if TYPE_CHECKING:
    from logmem.model.analysis import Analysis

WIDTH = 100


def _wrap(text: str, bullet: str = "") -> str:
    return textwrap.fill(
        one_line(text),
        WIDTH,
        initial_indent=bullet,
        subsequent_indent=" " * len(bullet),
        break_on_hyphens=False,  # never split a flag such as --mem-fraction-static
    )


MAX_ROWS = 14  # long bucket tables: head and tail on a terminal, all rows in Markdown/JSON


def table_lines(t: Table) -> list[str]:
    rows = [[one_line(c) for c in r] for r in t.rows]
    if len(rows) > MAX_ROWS and not t.indent:
        hidden = len(rows) - 10
        rows = rows[:8] + [[f"... {hidden} more"] + [""] * (len(t.columns) - 1)] + rows[-2:]
    cells = [list(t.columns)] + rows
    indent = [0] + list(t.indent or [0] * len(t.rows))
    for row, ind in zip(cells, indent):
        if ind:
            row[0] = "  " * ind + row[0]
    widths = [max(len(row[i]) for row in cells) for i in range(len(t.columns))]
    # Keep within WIDTH: a trailing text column gives way first, then a text column before
    # the last, then the first. A cell wider than its column wraps onto continuation lines
    # rather than being cut: a ledger label's end ("(size not printed)") is part of its sense.
    over = sum(widths) + 2 * (len(widths) - 1) - WIDTH
    last = len(widths) - 1
    wrap_last = t.alignment(last) == "l" and last > 0
    if over > 0 and wrap_last and widths[last] > 20:
        cut = min(over, widths[last] - 20)
        widths[last] -= cut
        over -= cut
    for i in (last - 1 if last > 0 and t.alignment(last - 1) == "l" else 0, 0):
        if over > 0 and widths[i] > 12:
            cut = min(over, widths[i] - 12)
            widths[i] -= cut
            over -= cut
    out = []
    for n, row in enumerate(cells):
        pieces = [
            textwrap.wrap(cell, w)
            if i == last and wrap_last and len(cell) > w
            else fold_cell(cell, w)
            for i, (cell, w) in enumerate(zip(row, widths))
        ]
        for k in range(max(len(p) for p in pieces)):
            parts = []
            for i, piece in enumerate(pieces):
                cell = piece[k] if k < len(piece) else ""
                w = widths[i]
                parts.append(cell.ljust(w) if t.alignment(i) == "l" else cell.rjust(w))
            out.append("  ".join(parts).rstrip())
        if n == 0:
            out.append("  ".join("-" * w for w in widths))
    return out


def render_report(rep: Report) -> str:
    out: list[str] = []
    for lr in rep.launches:
        title = one_line(lr.title)  # a model path from the log
        title = title if len(title) <= WIDTH else title[: WIDTH - 3] + "..."
        out.append(title)
        out.append("=" * len(title))
        out.extend(_wrap(v) for v in lr.verdict)
        if lr.findings:
            out.append("")
            out.append("Findings")
            out.extend(_wrap(f, "- ") for f in lr.findings)
        for sec in lr.sections:
            if sec.title == "Other ranks":
                out.append("")
                out.append(
                    f"(The ledgers of {lr.other_ranks} more ranks: pick one with --rank, or see -f markdown/json.)"
                )
                continue
            for t in sec.tables:
                out.append("")
                out.append(t.title)
                if t.rows:  # a rank with no readings: its note says why, no empty grid
                    out.extend(table_lines(t))
                out.extend(_wrap(n) for n in t.notes)
            out.extend(_wrap(p) for p in sec.paragraphs)
        out.append("")
    if rep.input_notes:
        out.append("Input")
        out.extend(_wrap(n, "- ") for n in rep.input_notes)
    return strip_controls("\n".join(out).rstrip() + "\n")


def render(a: Analysis) -> str:
    return render_report(analysis_report(a))
