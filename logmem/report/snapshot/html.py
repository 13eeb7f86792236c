"""`logmem snapshot -f html`: one self-contained page (inline CSS and SVG, no script, no fetch).

The page reuses the analysis report's frame (report.html.page, its CSP and CSS): tables from
the same sections text and Markdown print, then the figures. Every string from a snapshot
(file names, function names, settings) goes through ``esc`` in the page and XML escaping in
the SVG (report.figures.svg).
"""

from __future__ import annotations

from logmem.report.page import Figure, esc, figure_html, page, table_html
from logmem.report.snapshot.plots import sites_data, svg, timeline_data
from logmem.report.snapshot.render import sections
from logmem.torch_snapshot.analysis import SnapshotAnalysis


def _figures(a: SnapshotAnalysis) -> list[Figure]:
    out: list[Figure] = []
    for f in a.files:
        for d in f.devices:
            data = sites_data(d)
            if data["pools"]:
                out.append(
                    Figure(
                        "sites",
                        svg("sites", data),
                        f"{f.snapshot.path}, device {d.device}: top allocation sites per pool.",
                        (),
                    )
                )
        for t in f.traces:
            data = timeline_data(t)
            if data["pools"]:
                out.append(
                    Figure(
                        "timeline",
                        svg("timeline", data),
                        f"{f.snapshot.path}, device {t.device}: reserved bytes per pool over "
                        "the trace (solid) and bytes allocated since its first entry (dashed).",
                        (),
                    )
                )
    return out


def render_html(a: SnapshotAnalysis) -> str:
    body = ["<h1>PyTorch memory snapshot</h1>"]
    for sec in sections(a):
        body.append(f"<h2>{esc(sec.title)}</h2>")
        body.extend(f"<p>{esc(p)}</p>" for p in sec.paragraphs)
        body.extend(table_html(t) for t in sec.tables)
    figures = _figures(a)
    if figures:
        body.append("<h2>Figures</h2>")
        body.extend(figure_html(i + 1, fig) for i, fig in enumerate(figures))
    title = "logmem snapshot: " + ", ".join(f.snapshot.path for f in a.files)
    return page(title, body)
