"""Markdown reporter: the report model for a GitHub or Jira ticket (findings first, details folded)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from logmem.report.model import Report, analysis_report
from logmem.report.safe_text import one_line, strip_controls
from logmem.report.table import Table

if TYPE_CHECKING:
    from logmem.model.analysis import Analysis


def md_escape(text: str) -> str:
    """Keep log text inert: no table breaks, no HTML, no accidental emphasis."""
    return (
        one_line(text)
        .replace("\\", "\\\\")
        .replace("|", "\\|")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace("*", "\\*")
        .replace("_", "\\_")
        .replace("`", "\\`")
        .replace("\n", " ")
    )


def table_md(t: Table) -> list[str]:
    out = [f"**{md_escape(t.title)}**", ""]
    if not t.rows:  # a rank with no readings: its note says why, no empty grid
        return out + [f"_{md_escape(n)}_  " for n in t.notes]
    out.append("| " + " | ".join(md_escape(c) for c in t.columns) + " |")
    out.append(
        "|"
        + "|".join(("---:" if t.alignment(i) == "r" else ":---") for i in range(len(t.columns)))
        + "|"
    )
    indent = t.indent or (0,) * len(t.rows)
    for row, ind in zip(t.rows, indent):
        cells = [md_escape(c) for c in row]
        if ind:
            cells[0] = "&nbsp;&nbsp;" * 2 * ind + cells[0]
        else:
            cells[0] = f"**{cells[0]}**" if any(i for i in indent) else cells[0]
        out.append("| " + " | ".join(cells) + " |")
    if t.notes:
        out.append("")
        out.extend(f"_{md_escape(n)}_  " for n in t.notes)
    return out


def render_report(rep: Report) -> str:
    out: list[str] = []
    for lr in rep.launches:
        out.append(f"## {md_escape(lr.title)}")
        out.append("")
        out.extend(f"**{md_escape(v)}**  " for v in lr.verdict)
        if lr.findings:
            out.append("")
            out.extend(f"- {md_escape(f)}" for f in lr.findings)
        for sec in lr.sections:
            out.append("")
            if sec.details:
                out.append(f"<details><summary>{md_escape(sec.title)}</summary>")
                out.append("")
            for t in sec.tables:
                out.extend(table_md(t))
                out.append("")
            for p in sec.paragraphs:  # a blank line between: Markdown would merge them
                out.extend([md_escape(p), ""])
            if sec.details:
                out.append("</details>")
        out.append("")
    if rep.input_notes:
        out.append("<details><summary>Input</summary>")
        out.append("")
        out.extend(f"- {md_escape(n)}" for n in rep.input_notes)
        out.append("")
        out.append("</details>")
    return strip_controls("\n".join(out).rstrip() + "\n")


def render(a: Analysis) -> str:
    return render_report(analysis_report(a))
