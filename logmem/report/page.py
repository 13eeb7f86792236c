"""The page every HTML report shares: escaping, the style, the self-contained page, tables and
inline SVG figures. report.html (analyze) and report.compare.html (diff, fit, whatif) build on
it, so neither imports the other.

The page loads nothing: a Content-Security-Policy forbids scripts and every fetch, so even a
string that escaped html.escape could not run or call out. Every string that came from a log
goes through ``esc``; report.figures.svg escapes the text it writes into a figure.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable

from logmem import __version__
from logmem.frozen import frozen
from logmem.report.table import Table


def esc(text: object) -> str:
    """Escape for element text and attribute values alike."""
    return html.escape(str(text), quote=True)


CSS = """
:root { color-scheme: light; --fg: #1d1d1f; --muted: #5f6368; --line: #d9d9de; --bg: #fff; --soft: #f5f5f7;
  --ok: #1f7a3a; --bad: #b3261e; --warn: #8a5a00; }
* { box-sizing: border-box; }
body { margin: 0 auto; max-width: 62rem; padding: 1rem; color: var(--fg); background: var(--bg);
  font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
h1 { font-size: 1.35rem; margin: 0 0 .25rem; }
h2 { font-size: 1.2rem; margin: 1.6rem 0 .4rem; overflow-wrap: anywhere; }
h3 { font-size: 1.02rem; margin: 1.3rem 0 .4rem; }
.meta, .note, figcaption { color: var(--muted); font-size: .86rem; }
.verdict { border-left: 4px solid var(--muted); background: var(--soft); padding: .5rem .8rem; margin: .6rem 0;
  font-weight: 600; overflow-wrap: anywhere; }
.verdict.ready { border-color: var(--ok); } .verdict.crashed { border-color: var(--bad); }
.verdict.incomplete { border-color: var(--warn); }
.verdict p { margin: .15rem 0; }
ul.findings { padding-left: 1.2rem; } ul.findings li { margin: .25rem 0; overflow-wrap: anywhere; }
.scroll { overflow-x: auto; -webkit-overflow-scrolling: touch; margin: .3rem 0 .2rem; }
table { border-collapse: collapse; font-size: .86rem; font-variant-numeric: tabular-nums; }
caption { text-align: left; font-weight: 600; padding: .2rem 0; }
th, td { padding: .18rem .55rem; border-bottom: 1px solid var(--line); vertical-align: top; }
th { background: var(--soft); text-align: left; white-space: nowrap; }
td.r, th.r { text-align: right; white-space: nowrap; }
tr.phase td { font-weight: 600; border-top: 1px solid #bbb; }
tr.cause td:first-child { padding-left: 1.6rem; font-weight: 400; }
td.k-logged { color: #3b6fb6; } td.k-derived { color: #b06512; } td.k-estimated { color: #7450a0; }
td.k-unattributed { color: var(--muted); }
details { margin: .5rem 0; } summary { cursor: pointer; font-weight: 600; }
figure { margin: 1rem 0 1.4rem; }
figure .plotbox { overflow-x: auto; -webkit-overflow-scrolling: touch; }
figure svg { display: block; width: 100%; height: auto; }
pre.src { font: 12px/1.4 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; background: var(--soft);
  padding: .5rem; overflow-x: auto; white-space: pre; }
pre.src .ln { color: var(--muted); user-select: none; }
footer { margin-top: 2rem; color: var(--muted); font-size: .8rem; }
@media (max-width: 40rem) {
  body { padding: .6rem; font-size: 14px; } th, td { padding: .15rem .35rem; }
  td:first-child { min-width: 10.5rem; }
  /* A phone would shrink the figure's text below reading size: keep it large, let it scroll. */
  figure svg { min-width: 620px; }
  figure figcaption::before { content: "Scroll the figure sideways. "; }
}
"""

# Nothing may load and nothing may run: only the inline style and inline (data:) images.
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"


def page(title: str, body: Iterable[str]) -> str:
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en">',
            "<head>",
            '<meta charset="utf-8">',
            f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            '<meta name="referrer" content="no-referrer">',
            f"<title>{esc(title)}</title>",
            f"<style>{CSS}</style>",
            "</head>",
            "<body>",
            *body,
            f"<footer>Made by logmem {esc(__version__)}. This file is self-contained: it loads nothing and runs no script.</footer>",
            "</body>",
            "</html>",
            "",
        ]
    )


# --- tables -----------------------------------------------------------------------------


def table_html(t: Table, kind_column: int | None = None) -> str:
    """A model Table as an HTML table; phase rows bold, cause rows indented (Table.indent)."""
    if not t.rows:  # a rank with no readings: its caption and note say why, no empty grid
        notes = "".join(f'<p class="note">{esc(n)}</p>' for n in t.notes)
        return f'<div class="empty-table"><p class="meta">{esc(t.title)}</p>{notes}</div>'
    out = ['<div class="scroll"><table>']
    if t.title:
        out.append(f"<caption>{esc(t.title)}</caption>")
    out.append("<thead><tr>")
    for i, c in enumerate(t.columns):
        out.append(f'<th class="{t.alignment(i)}" scope="col">{esc(c)}</th>')
    out.append("</tr></thead><tbody>")
    indent = t.indent or (0,) * len(t.rows)
    kind_at = (
        kind_column
        if kind_column is not None
        else (t.columns.index("kind") if "kind" in t.columns else None)
    )
    for row, ind in zip(t.rows, indent):
        cls = (' class="cause"' if ind else ' class="phase"') if t.indent else ""
        out.append(f"<tr{cls}>")
        for i, cell in enumerate(row):
            classes = [t.alignment(i)]
            if i == kind_at and cell:
                classes.append(f"k-{re.sub(r'[^a-z]', '', cell)}")
            out.append(f'<td class="{" ".join(classes)}">{esc(cell)}</td>')
        out.append("</tr>")
    out.append("</tbody></table></div>")
    out.extend(f'<p class="note">{esc(n)}</p>' for n in t.notes)
    return "\n".join(out)


# --- figures ----------------------------------------------------------------------------


_ID = re.compile(r'\bid="([^"]+)"')
_REF = re.compile(r'(url\(#|xlink:href="#|href="#)([^)"]+)')


# Ids are rewritten in tags only: a label's text (a model path from the log) can read
# id="..." or url(#...) too, and must be shown as it is.
_TAG = re.compile(r"<[^<>]*>")


def _prefixed_ids(tag: str, prefix: str) -> str:
    tag = _ID.sub(lambda m: f'id="{prefix}-{m.group(1)}"', tag)
    return _REF.sub(lambda m: f"{m.group(1)}{prefix}-{m.group(2)}", tag)


def inline_svg(svg: str, prefix: str) -> str:
    """A figure's SVG (report.figures.svg) made fit to sit in a page: no XML prolog, ids unique to this figure,
    and sized by CSS (the natural width kept as a maximum)."""
    start = svg.find("<svg")
    svg = svg[start:] if start >= 0 else svg
    svg = _TAG.sub(lambda t: _prefixed_ids(t.group(0), prefix), svg)
    m = re.match(r'<svg([^>]*?) width="([\d.]+)pt" height="([\d.]+)pt"', svg)
    if m:
        width = float(m.group(2))
        svg = svg.replace(
            m.group(0),
            f'<svg{m.group(1)} style="max-width: {width:g}pt" role="img" aria-labelledby="{prefix}-cap"',
            1,
        )
    return svg


@frozen
class Figure:
    """One plot in the page: its kind, the SVG text, a caption and the source lines behind it."""

    kind: str
    svg: str
    caption: str
    sources: tuple[tuple[str, int, str], ...]  # (path, line number, raw text)


def figure_html(n: int, fig: Figure) -> str:
    prefix = f"fig{n}"
    return "\n".join(
        [
            f'<figure class="plot" id="{prefix}" data-kind="{esc(fig.kind)}">',
            f'<div class="plotbox">{inline_svg(fig.svg, prefix)}</div>',
            f'<figcaption id="{prefix}-cap">Figure {n}. {esc(fig.caption)}</figcaption>',
            "</figure>",
        ]
    )
