"""HTML reporter: the report model + plots -> one self-contained page (inline CSS and SVG, no script).

Numbers come from report.model (the same tables text and Markdown print) and the
figures from report.figures.plots. The page loads nothing: a Content-Security-Policy forbids
scripts and every fetch, so even a string that escaped html.escape could not run or
call out. Every string that came from a log (model paths, rank labels, messages, raw
lines) goes through ``esc``; report.figures.svg escapes the text it writes into a figure.

Order, for a person opening the file from a ticket: verdict and findings, the ledger
tables, the plots, then the raw log lines behind each figure (collapsed).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from logmem.analysis.attribution import LaunchLedger, RankLedger
from logmem.model.records import Launch
from logmem.parse.lines import Source
from logmem.report.fold import Fold, bucket_rank
from logmem.report.model import LaunchReport, Report, analysis_report
from logmem.report.page import Figure, esc, figure_html, page, table_html
from logmem.report.table import rank_name

if TYPE_CHECKING:
    from logmem.model.analysis import Analysis

MAX_LINE_CHARS = 2000  # a raw line longer than this (a glued tqdm render) is cut in the page


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


def _line_index(launch: Launch, rank_label: str | None) -> dict[int, list[Source]]:
    """Line number -> the records read from it, the rank's own file first (per-rank files
    reuse line numbers). A line can hold several records: a rank's line glued behind another
    rank's tqdm render is split by the parser, and the reading a figure plots may be in the
    second one (001 line 63: a bar, then TP1's capture begin), so every record of the line's
    file is kept, in the order read."""
    rank = launch.rank(rank_label) if rank_label is not None else None
    own = list(rank.events) if rank is not None else []
    path: dict[int, str] = {}
    index: dict[int, list[Source]] = {}
    for e in [*own, *launch.all_events()]:
        src = e.source
        where = path.setdefault(src.line_no, src.path)
        parts = index.setdefault(src.line_no, [])
        if src.path == where and src not in parts:
            parts.append(src)
    return index


def _sources(
    launch: Launch, rank_label: str | None, lines: Iterable[int]
) -> tuple[tuple[str, int, str], ...]:
    index = _line_index(launch, rank_label)
    out = []
    for n in sorted(set(lines)):
        parts = index.get(n)
        if parts:
            # A record whose text another one of the line holds (the whole line) adds nothing.
            kept = [x for x in parts if not any(x.text in y.text and x is not y for y in parts)]
            out.append((parts[0].path, n, "".join(x.text for x in kept or parts[:1])))
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
    led: LaunchLedger, leading: Sequence[RankLedger], fold: Fold | None = None
) -> tuple[list[Figure], list[str]]:
    """The analyze plots of one launch, and notes on plots that could not be drawn; with
    `fold`, the ranks plot shows the ranks the page shows in full."""
    from logmem.report.figures import plots

    L = led.launch
    figs: list[Figure] = []
    notes: list[str] = []

    drawn = [rl for rl in leading if rl.phases]
    if drawn:
        data = [plots.waterfall_data(rl) for rl in drawn]
        lines = [n for rl in drawn for n in _rank_lines(rl)]
        who = ", ".join(rank_name(rl.rank) for rl in drawn)
        figs.append(
            Figure(
                "waterfall",
                plots.svg("waterfall", data),
                f"Free memory phase by phase on {who}; each step split into its causes.",
                _sources(L, drawn[0].rank, lines),
            )
        )
    elif leading and any(rl.phases for rl in led.ranks):
        who = ", ".join(rank_name(rl.rank) for rl in leading)
        notes.append(f"No waterfall of {who}: it printed fewer than two free-memory readings.")
    else:
        who = "no rank" if len(led.ranks) == len(L.ranks) else "no rank shown"
        notes.append(f"No waterfall: {who} printed two free-memory readings.")
    rl_main = bucket_rank(led)
    families = plots.buckets_data(rl_main) if rl_main is not None else []
    if families and rl_main is not None:
        lines = [
            n for p in rl_main.phases if p.buckets for n in (*p.lines, *(b.line for b in p.buckets))
        ]
        figs.append(
            Figure(
                "buckets",
                plots.svg("buckets", families),
                f"Free memory at the start of each graph bucket on {rank_name(rl_main.rank)}; "
                "the largest bucket is highlighted.",
                _sources(L, rl_main.rank, lines),
            )
        )
    else:
        # A --rank pick leaves some ranks out: the note speaks of the ranks shown only.
        whose = "this log" if len(led.ranks) == len(L.ranks) else "the ranks shown"
        notes.append(
            f"No bucket plot: the capture progress bars of {whose} print no free memory per bucket."
        )
    if len(led.ranks) >= 2:
        drawn_led = led
        which = "rank by rank"
        if fold is not None:
            drawn_led = replace(led, ranks=tuple(rl for rl in led.ranks if rl.rank in fold.shown))
            which = f"on {len(fold.shown)} of the {len(led.ranks)} ranks (the ranks table has all)"
        lines = [n for rl in drawn_led.ranks for p in rl.phases for n in p.lines]
        binding = (
            f"; the binding rank is {led.binding_rank}" if led.binding_rank is not None else ""
        )
        figs.append(
            Figure(
                "ranks",
                plots.svg("ranks", plots.ranks_data(drawn_led)),
                f"Free memory after each phase, {which}{binding}.",
                _sources(L, None, lines),
            )
        )
    return figs, notes


def communication_figure(lr: LaunchReport) -> Figure:
    """The groups x mechanisms heat map, with the lines the join read (init, All Reduce, DeepEP)."""
    from logmem.report.communication import comm_plot_data
    from logmem.report.figures.comm_plot import comm_scene
    from logmem.report.figures.svg import scene_svg

    c = lr.communication
    assert c is not None
    L = lr.ledger.launch
    lines = [r.line for r in c.ranks if r.rank == c.main_rank]
    lines += [n for cell in c.plan.cells for n in cell.lines]
    if c.deepep is not None:
        lines += list(c.deepep.lines)
    svg = scene_svg(comm_scene(comm_plot_data(c.plan)))
    return Figure(
        "communication",
        svg,
        "Communication cells per rank: darker is larger, hatched has no formula (measure); the "
        "outline says when each is allocated.",
        _sources(L, c.main_rank, lines),
    )


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
    # The ranks whose ledgers the report shows in full (report.fold's rule) get a waterfall.
    shown = set(lr.leading)  # a set: with --all-ranks every rank leads
    leading = [rl for rl in led.ranks if rl.rank in shown]
    figs, notes = launch_figures(led, leading, lr.fold)
    if lr.communication is not None and lr.communication.plan.cells:
        figs.append(communication_figure(lr))
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
