"""HTML reporter: the report model + plots -> one self-contained page (inline CSS and SVG, no script).

Numbers come from report.model (the same tables text and Markdown print) and the
figures from report.plots. The page loads nothing: a Content-Security-Policy forbids
scripts and every fetch, so even a string that escaped html.escape could not run or
call out. Every string that came from a log (model paths, rank labels, messages, raw
lines) goes through ``esc``; matplotlib escapes the text it writes into SVG.

Order, for a person opening the file from a ticket: verdict and findings, the ledger
tables, the plots, then the raw log lines behind each figure (collapsed).
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from logmem import __version__
from logmem.analysis.attribution import LaunchLedger, RankLedger
from logmem.model.launch import Launch
from logmem.parse.lines import Source
from logmem.report.model import LaunchReport, Report, Table, analysis_report, main_rank, rank_name

if TYPE_CHECKING:
    from logmem.model.analysis import Analysis

MAX_LINE_CHARS = 2000  # a raw line longer than this (a glued tqdm render) is cut in the page


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
    """matplotlib's SVG made fit to sit in a page: no XML prolog, ids unique to this figure,
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


@dataclass(frozen=True)
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


def sources_html(n: int, fig: Figure, multi_path: bool) -> str:
    rows = []
    for path, line, text in fig.sources:
        text = text.rstrip("\r\n")
        if len(text) > MAX_LINE_CHARS:
            text = text[:MAX_LINE_CHARS] + f" … ({len(text) - MAX_LINE_CHARS:,} more characters)"
        where = f"{path}:{line}" if multi_path else str(line)
        # \r inside a record (tqdm redraws) would overprint in a terminal; show it as a mark.
        rows.append(f'<span class="ln">{esc(where):>7}  </span>{esc(text.replace(chr(13), "⏎"))}')
    body = "\n".join(rows) if rows else "(no source lines)"
    return "\n".join(
        [
            f'<details class="sources" data-figure="{n}"><summary>Figure {n} ({esc(fig.kind)}):'
            f" {len(fig.sources)} log lines</summary>",
            f'<pre class="src">{body}</pre>',
            "</details>",
        ]
    )


def _line_index(launch: Launch, rank_label: str | None) -> dict[int, Source]:
    """Line number -> source, the rank's own lines first (per-rank files reuse line numbers)."""
    rank = launch.rank(rank_label) if rank_label is not None else None
    own = list(rank.events) if rank is not None else []
    index: dict[int, Source] = {}
    for e in [*own, *launch.all_events()]:
        index.setdefault(e.source.line_no, e.source)
    return index


def _sources(
    launch: Launch, rank_label: str | None, lines: Iterable[int]
) -> tuple[tuple[str, int, str], ...]:
    index = _line_index(launch, rank_label)
    out = []
    for n in sorted(set(lines)):
        src = index.get(n)
        if src is not None:
            out.append((src.path, src.line_no, src.text))
    return tuple(out)


def _rank_lines(rl: RankLedger) -> list[int]:
    lines: list[int] = []
    for p in rl.phases:
        lines.extend(p.lines)
        for c in p.causes:
            lines.extend(c.lines)
        lines.extend(b.line for b in p.buckets)
    return lines


def launch_figures(
    led: LaunchLedger, leading: Sequence[RankLedger]
) -> tuple[list[Figure], list[str]]:
    """The analyze plots of one launch, and notes on plots that could not be drawn."""
    from logmem.report import plots

    L = led.launch
    figs: list[Figure] = []
    notes: list[str] = []
    n_fig = 0

    def svg(kind: str, data: Any) -> str:
        nonlocal n_fig
        n_fig += 1
        # A salt per figure: matplotlib's clip-path ids are hashes, unique within one page this way.
        return plots.figure_svg(plots.draw(kind, data), salt=f"logmem-{L.index}-{n_fig}")

    drawn = [rl for rl in leading if rl.phases]
    if drawn:
        data = [plots.waterfall_data(rl) for rl in drawn]
        lines = [n for rl in drawn for n in _rank_lines(rl)]
        who = ", ".join(rank_name(rl.rank) for rl in drawn)
        figs.append(
            Figure(
                "waterfall",
                svg("waterfall", data),
                f"Free memory phase by phase on {who}; each step split into its causes.",
                _sources(L, drawn[0].rank, lines),
            )
        )
    else:
        notes.append("No waterfall: no rank printed two free-memory readings.")
    main = main_rank(L)
    rl_main = led.rank(main.label) if main is not None else None
    families = plots.buckets_data(rl_main) if rl_main is not None else []
    if families and rl_main is not None:
        lines = [
            n for p in rl_main.phases if p.buckets for n in (*p.lines, *(b.line for b in p.buckets))
        ]
        figs.append(
            Figure(
                "buckets",
                svg("buckets", families),
                f"Free memory at the start of each graph bucket on {rank_name(rl_main.rank)}; "
                "the largest bucket is highlighted.",
                _sources(L, rl_main.rank, lines),
            )
        )
    else:
        notes.append(
            "No bucket plot: the capture progress bars of this log print no free memory per bucket."
        )
    if len(led.ranks) >= 2:
        lines = [n for rl in led.ranks for p in rl.phases for n in p.lines]
        binding = (
            f"; the binding rank is {led.binding_rank}" if led.binding_rank is not None else ""
        )
        figs.append(
            Figure(
                "ranks",
                svg("ranks", plots.ranks_data(led)),
                f"Free memory after each phase, rank by rank{binding}.",
                _sources(L, None, lines),
            )
        )
    return figs, notes


# --- the analysis page --------------------------------------------------------------------


def _status(lr: LaunchReport) -> str:
    first = lr.verdict[0].lower() if lr.verdict else ""
    return next((s for s in ("ready", "crashed", "incomplete") if first.startswith(s)), "")


def launch_html(lr: LaunchReport, first_figure: int, multi_path: bool) -> tuple[str, int]:
    """One launch: verdict, findings, tables, plots, sources. Returns the HTML and the next figure number."""
    led = lr.ledger
    out = [f'<section class="launch" id="launch-{led.launch.index}">', f"<h2>{esc(lr.title)}</h2>"]
    out.append(
        f'<div class="verdict {_status(lr)}">'
        + "".join(f"<p>{esc(v)}</p>" for v in lr.verdict)
        + "</div>"
    )
    if lr.findings:
        out.append("<h3>Findings</h3>")
        out.append(
            '<ul class="findings">' + "".join(f"<li>{esc(f)}</li>" for f in lr.findings) + "</ul>"
        )
    for sec in lr.sections:
        tables = "\n".join(table_html(t) for t in sec.tables)
        paras = "".join(f"<p>{esc(p)}</p>" for p in sec.paragraphs)
        if sec.details:
            out.append(
                f"<details><summary>{esc(sec.title)} ({len(sec.tables)} tables)</summary>\n{tables}{paras}</details>"
            )
        else:
            out.append(f"<h3>{esc(sec.title)}</h3>\n{tables}{paras}")
    # The ranks whose ledgers the report shows in full (report.model's rule) get a waterfall.
    main = main_rank(led.launch)
    leading = [
        rl
        for rl in led.ranks
        if len(led.ranks) <= 2 or (main is not None and rl.rank == main.label)
    ]
    figs, notes = launch_figures(led, leading)
    if figs or notes:
        out.append("<h3>Plots</h3>")
        out.extend(f'<p class="note">{esc(n)}</p>' for n in notes)
    for i, fig in enumerate(figs):
        out.append(figure_html(first_figure + i, fig))
    if figs:
        out.append("<h3>Source lines behind each figure</h3>")
        out.extend(sources_html(first_figure + i, fig, multi_path) for i, fig in enumerate(figs))
    out.append("</section>")
    return "\n".join(out), first_figure + len(figs)


def render_report(rep: Report, paths: Sequence[str]) -> str:
    body = [f"<h1>{esc(rep.title)}</h1>"]
    if paths:
        body.append(f'<p class="meta">{esc(", ".join(paths))}</p>')
    multi_path = len(set(paths)) > 1
    n = 1
    for lr in rep.launches:
        part, n = launch_html(lr, n, multi_path)
        body.append(part)
    if rep.input_notes:
        body.append(
            "<details><summary>Input</summary><ul>"
            + "".join(f"<li>{esc(x)}</li>" for x in rep.input_notes)
            + "</ul></details>"
        )
    model = next((lr.title for lr in rep.launches), "")
    return page(f"logmem: {model}" if model else rep.title, body)


def render(a: Analysis) -> str:
    """The analysis as one self-contained HTML page."""
    return render_report(analysis_report(a), a.paths)


# --- diff / fit / whatif ------------------------------------------------------------------


class HtmlOut:
    """report.compare's layout interface (title, heading, para, bullets, table, details),
    writing escaped HTML. compare lays a Diff/Fit/WhatIf out once for text and Markdown;
    handed this object, the same layout makes the HTML page, so the numbers cannot differ.
    ``md`` is True: HTML, like Markdown, shows whole tables and folds the long ones."""

    md = True

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.first_title: str | None = None

    def title(self, text: str) -> None:
        self.first_title = self.first_title or text
        self.parts.append(f"<h1>{esc(text)}</h1>")

    def heading(self, text: str) -> None:
        self.parts.append(f"<h3>{esc(text)}</h3>")

    def gap(self) -> None:
        pass

    def para(self, text: str) -> None:
        self.parts.append(f"<p>{esc(text)}</p>")

    def bullets(self, items: Sequence[str]) -> None:
        self.parts.append(
            '<ul class="findings">' + "".join(f"<li>{esc(x)}</li>" for x in items) + "</ul>"
        )

    def table(self, columns: Sequence[str], rows: Sequence[Sequence[str]], left: int = 1) -> None:
        align = tuple("l" if i < left else "r" for i in range(len(columns)))
        self.parts.append(
            table_html(Table("", tuple(columns), tuple(tuple(r) for r in rows), align))
        )

    def details(self, summary: str, body: Any) -> None:
        self.parts.append(f"<details><summary>{esc(summary)}</summary>")
        body()
        self.parts.append("</details>")

    def text(self) -> str:
        return "\n".join(self.parts)


MAX_CELL = 240  # a generic cell longer than this (a list of 50 batch sizes) is cut


def _cell(v: Any) -> str:
    text = _cell_text(v)
    return text if len(text) <= MAX_CELL else text[: MAX_CELL - 1] + "…"


def _cell_text(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:.4g}" if abs(v) < 1000 else f"{v:,.1f}"
    if isinstance(v, (list, tuple)) and all(not isinstance(x, (dict, list)) for x in v):
        return " → ".join(_cell(x) for x in v) if len(v) == 2 else ", ".join(_cell(x) for x in v)
    if isinstance(v, (dict, list)):
        return json.dumps(v, sort_keys=True, default=str)
    return str(v)


def _flat(record: Mapping[str, Any]) -> dict[str, Any]:
    """One level of nesting flattened ("a.static_gib"); nested lists become their length."""
    out: dict[str, Any] = {}
    for k, v in record.items():
        if isinstance(v, Mapping):
            for k2, v2 in v.items():
                out[f"{k}.{k2}"] = v2 if not isinstance(v2, (Mapping, list)) else _cell(v2)
        elif isinstance(v, list) and any(isinstance(x, (Mapping, list)) for x in v):
            out[k] = f"({len(v)})"
        else:
            out[k] = v
    return out


def _records_table(title: str, records: Sequence[Mapping[str, Any]]) -> Table:
    rows = [_flat(r) for r in records]
    cols: list[str] = []
    for r in rows:
        cols.extend(k for k in r if k not in cols)
    body = tuple(tuple(_cell(r.get(c)) for c in cols) for r in rows)
    numeric = [
        all(isinstance(r.get(c), (int, float)) or r.get(c) is None for r in rows) for c in cols
    ]
    return Table(title, tuple(cols), body, tuple("r" if n else "l" for n in numeric))


def _title(key: str) -> str:
    return key.replace("_", " ").capitalize()


def view_model_html(vm: Mapping[str, Any]) -> list[str]:
    """Any JSON view model as HTML: string lists as bullets, lists of records and dicts as
    tables, the remaining scalars as one summary table first. Used when report.compare
    offers no layout to share."""
    out: list[str] = []
    scalars: list[tuple[str, ...]] = []
    for key, value in vm.items():
        if key in ("schema", "logmem") or key.startswith("_"):
            continue
        if isinstance(value, list) and value and all(isinstance(x, str) for x in value):
            out.append(f"<h3>{esc(_title(key))}</h3>")
            out.append(
                '<ul class="findings">' + "".join(f"<li>{esc(x)}</li>" for x in value) + "</ul>"
            )
        elif isinstance(value, list) and value and all(isinstance(x, Mapping) for x in value):
            out.append(f"<h3>{esc(_title(key))}</h3>")
            out.append(table_html(_records_table("", value)))
        elif isinstance(value, Mapping) and value:
            rows = tuple((str(k), _cell(v)) for k, v in value.items())
            out.append(f"<h3>{esc(_title(key))}</h3>")
            out.append(table_html(Table("", ("key", "value"), rows, ("l", "l"))))
        elif isinstance(value, (list, Mapping)) and not value:
            continue
        else:
            scalars.append((_title(key), _cell(value)))
    if scalars:
        out.insert(
            0, table_html(Table("Summary", ("quantity", "value"), tuple(scalars), ("l", "r")))
        )
    return out


def render_compare_html(view_model: Mapping[str, Any] | Any, kind: str) -> str:
    """diff / fit / whatif as one self-contained page.

    ``view_model`` is report.compare's JSON view model (``to_json(model)``), or an object
    with ``to_json()``. When report.compare provides ``layout(view_model, out)`` (its one
    layout of that dict), it is drawn into :class:`HtmlOut`; otherwise every key of the
    dict is shown as tables. With ``slopes``, the fit plot follows: largest bucket
    against rows, the fitted line and its uncertainty band.
    """
    from logmem.report import plots

    vm: Mapping[str, Any] = view_model.to_json() if hasattr(view_model, "to_json") else view_model
    title = f"logmem {kind}"
    body: list[str] = []
    layout = _compare_layout()
    if layout is not None:
        out = HtmlOut()
        layout(vm, out)
        title = out.first_title or title
        body.append(out.text())
    else:
        body.append(f"<h1>{esc(title)}</h1>")
        body.extend(view_model_html(vm))
    data = plots.fit_data(vm) if vm.get("slopes") else None
    if data is not None and data["slopes"]:
        svg = plots.figure_svg(plots.draw("fit", data), salt="logmem-fit")
        caption = (
            "Largest bucket against rows: the measured points, the fitted line and its uncertainty."
        )
        fig = Figure("fit", svg, caption, ())
        body.append("<h3>Plots</h3>")
        body.append(figure_html(1, fig))
    return page(title, body)


def _compare_layout() -> Any:
    try:
        from logmem.report import compare
    except ImportError:
        return None
    return getattr(compare, "layout", None)
