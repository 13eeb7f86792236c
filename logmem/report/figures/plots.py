"""Plots: the dicts of report.figures.plot_data -> figure scenes -> SVG text, or a matplotlib Figure.

Each plot is two functions: ``*_data`` (report.figures.plot_data, re-exported here) turns the ledger
into a plain dict, and ``*_scene`` lays that dict out once, as a report.figures.scene Scene (panels
from report.figures.chart). ``svg`` writes a scene with report.figures.svg (no plotting library: the HTML
reports import neither matplotlib nor numpy); logmem.plot replays a scene on matplotlib
(report.figures.scene_mpl) for PNG output and notebooks."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from logmem.report.figures.canvas import HIGHLIGHT, KIND_COLOURS
from logmem.report.figures.chart import (
    TICK,
    VIRIDIS,
    Panel,
    label_width,
    legend,
    nice_ticks,
    ramp,
    swatch,
    ytick_width,
)
from logmem.report.figures.plot_data import (
    POINT_ERROR_GIB,
    buckets_data,
    fit_band,
    fit_data,
    milestone,
    ranks_data,
    short,
    shorten,
    step_label,
    waterfall_data,
)
from logmem.report.figures.plot_waterfall import waterfall_scene
from logmem.report.figures.scene import Area, Line, Mark, Rect, Scene

# A scene replayed on matplotlib (logmem.plot) saved as PNG; matplotlib loads when it is called.
from logmem.report.figures.scene_mpl import figure_bytes
from logmem.report.figures.svg import scene_svg
from logmem.report.table import rank_name
from logmem.sglang.rules import DIFFERENCE_RESOLUTION_GIB

KINDS = ("waterfall", "buckets", "ranks", "fit")


__all__ = [
    "KINDS",
    "buckets_data",
    "figure_bytes",
    "fit_band",
    "fit_data",
    "milestone",
    "ranks_data",
    "scene",
    "step_label",
    "svg",
    "waterfall_data",
]


def _empty(width: float, height: float, note: str) -> Scene:
    s = Scene(width, height)
    s.text(width / 2, height / 2, note, TICK, "middle", anchor="middle")
    return s


def _pad(lo: float, hi: float, frac: float = 0.05) -> tuple[float, float]:
    d = (hi - lo) * frac or max(abs(hi) * frac, 0.05)
    return lo - d, hi + d


def _bucket_panel(s: Scene, top: float, height: float, d: Mapping[str, Any]) -> None:
    sizes = d["sizes"]
    by_size = all(v is not None for v in sizes)
    xs = [float(v) for v in sizes] if by_size else [float(i) for i in range(1, len(sizes) + 1)]
    ys = d["avail_gib"]
    refs = [(d.get("begin_gib"), "capture begin", "dashed")]
    if not d.get("stopped"):
        refs.append((d.get("end_gib"), "capture end", "dotted"))
    span = [*ys, *(v for v, _, _ in refs if v is not None)]
    lo, hi = min(span), max(span)
    pad = max((hi - lo) * 0.15, 0.05)
    ylim = (lo - pad, hi + pad)
    yt = [v for v in nice_ticks(*ylim, most=6) if ylim[0] <= v <= ylim[1]]
    xlog = by_size and len(set(xs)) > 1 and max(xs) / max(min(xs), 1) >= 16
    if xlog:
        a, b = math.log2(max(min(xs), 1)), math.log2(max(xs))
        m = (b - a) * 0.05
        xlim = (2 ** (a - m), 2 ** (b + m))
        powers = range(math.ceil(a - m), math.floor(b + m) + 1)
        stride = math.ceil(len(powers) / 12)  # at most a dozen labels
        xt = [2.0**k for k in powers if k % stride == 0]
    else:
        xlim = _pad(min(xs), max(xs)) if len(set(xs)) > 1 else (xs[0] - 1, xs[0] + 1)
        few = sorted(set(xs))
        xt = few if len(few) <= 12 else [v for v in nice_ticks(*xlim) if xlim[0] <= v <= xlim[1]]
    left = 22 + ytick_width(yt) + 8
    p = Panel(s, left, top + 22, s.width - 14, top + height - 40, xlim, ylim, xlog=xlog)
    p.grid(xt, yt)
    p.spines()
    p.xticks(xt)
    p.yticks(yt)
    title = d["title"] + (" — log stops during capture" if d.get("stopped") else "")
    p.title(title)
    unit = "tokens (num_tokens)" if d.get("unit") == "num_tokens" else "batch size (bs)"
    p.xlabel(f"bucket size: {unit}" if by_size else "bucket (capture order)")
    p.ylabel("free at bucket start (GiB)", left - 12)
    for value, name, style in refs:
        if value is not None:
            y = p.y(value)
            s.add(Line(((p.x0, y), (p.x1, y)), "#666666", 0.8, style, gid=name.replace(" ", "-")))
            s.text(
                p.x1, y - 2, f"{name} {value:.2f}", 7.0, "bottom", anchor="end", colour="#555555"
            )
    pts = tuple((p.x(x), p.y(y)) for x, y in zip(xs, ys))
    s.add(Line(pts, KIND_COLOURS["logged"], 1.0, gid="bucket-line"))
    for x, y in pts:
        s.add(Mark(x, y, 1.75, KIND_COLOURS["logged"]))
    li = d["largest"]
    lx, ly = pts[li]
    s.add(Mark(lx, ly, 4.5, HIGHLIGHT, gid="largest-bucket"))
    cost = d["cost_gib"][li]
    labels = d.get("size_labels") or [None] * len(sizes)
    what = labels[li] or (f"bs {sizes[li]}" if sizes[li] is not None else "first bucket")
    note = (
        f"largest bucket ({what}): {cost:.2f} GiB"
        if cost is not None
        else f"largest bucket ({what})"
    )
    # Left of the point when there is room there, else right of it.
    right = lx - p.x0 < label_width([note], 8.0) + 10
    s.text(
        lx + (8 if right else -8),
        ly + 4,
        note,
        8.0,
        "top",
        anchor="start" if right else "end",
        colour=HIGHLIGHT,
    )


def buckets_scene(families: Sequence[Mapping[str, Any]]) -> Scene:
    """One panel per graph family: free memory at each bucket's start against its size."""
    if not families:
        return _empty(576, 194, "no bucket readings in this log")
    s = Scene(576, 194 * len(families) + 14)
    for k, d in enumerate(families):
        _bucket_panel(s, 194 * k, 194, d)
    return s


def _grouped_bars(
    p: Panel, n: int, series: Sequence[Mapping[str, Any]], field: str, gid: str
) -> None:
    m = max(len(series), 1)
    group = 0.84
    width = group / m
    for j, se in enumerate(series):
        colour = ramp(VIRIDIS, 0.1 + 0.8 * j / max(m - 1, 1))
        for i, v in enumerate(se[field]):
            if v is None:
                continue
            x = i - group / 2 + width * j + width * 0.04
            x0, x1 = p.x(x), p.x(x + width * 0.92)
            y0, y1 = p.y(max(v, 0.0)), p.y(min(v, 0.0))
            p.add(Rect(x0, y0, x1 - x0, y1 - y0, colour, gid=f"{gid}-{i}-phase-{j}"))


def ranks_scene(data: Mapping[str, Any]) -> Scene:
    """Grouped bars: per rank, free memory after each phase; below, how far each rank is above
    the least-free rank at that moment (imbalance is a few hundred MiB on a scale of 80 GiB,
    invisible on the first panel). The binding rank is shaded and named."""
    ranks, series = data["ranks"], data["series"]
    n, m = len(ranks), max(len(series), 1)
    spread = max((v for se in series for v in se["above_min_gib"] if v is not None), default=0.0)
    two = n >= 2 and spread >= DIFFERENCE_RESOLUTION_GIB
    labels = [rank_name(r) if r else "(untagged)" for r in ranks]
    turn = 45.0 if n > 6 else 0.0
    tick_room = label_width(labels) * 0.72 + 14 if turn else 18.0
    width = min(max(6.0, 0.1 * n * m + 1.5), 11.0) * 72
    s = Scene(width, 0)
    entries = [
        (shorten(se["phase"], 40), ramp(VIRIDIS, 0.1 + 0.8 * j / max(m - 1, 1)), "box")
        for j, se in enumerate(series)
    ]
    top = max((v for se in series for v in se["gib"] if v is not None), default=1.0) or 1.0
    binding = data.get("binding")
    b = ranks.index(binding) if binding is not None and binding in ranks else None
    h_top, h_low = (216.0, 130.0) if two else (230.0, 0.0)
    ylim_top = (0.0, top * (1.14 if b is not None else 1.05))
    panels = [("gib", "rank", ylim_top, h_top, "free GPU memory (GiB)", data["title"])]
    if two:
        panels.append(
            (
                "above_min_gib",
                "spread",
                (0.0, spread * 1.08),
                h_low,
                "above the least-free\nrank (GiB)",
                "Imbalance: free memory minus the least-free rank's, after each phase",
            )
        )
    ticks = [[v for v in nice_ticks(*lim, most=6) if v <= lim[1]] for _, _, lim, _, _, _ in panels]
    left = 34 + max(ytick_width(t) for t in ticks) + 8
    y = 0.0
    drawn: list[Panel] = []
    for (field, gid, lim, h, ylab, title), yt in zip(panels, ticks):
        p = Panel(s, left, y + 24, width - 14, y + h, (-0.6, n - 0.4), lim)
        if b is not None:
            s.add(
                Rect(
                    p.x(b - 0.5),
                    p.y0,
                    p.x(b + 0.5) - p.x(b - 0.5),
                    p.y1 - p.y0,
                    HIGHLIGHT,
                    opacity=0.08,
                    gid="binding-rank",
                )
            )
        p.grid(ys=yt)
        _grouped_bars(p, n, series, field, gid)
        p.spines()
        p.yticks(yt)
        p.title(title, 10.0 if field == "gib" else 9.0)
        p.ylabel(ylab, left - 22)
        drawn.append(p)
        y += h + 8
    bottom = drawn[-1]
    colours = ["#000000"] * n
    if b is not None:
        colours[b] = HIGHLIGHT
        s.text(
            drawn[0].x(b),
            drawn[0].y(top * 1.04),
            "binding rank",
            8.0,
            "bottom",
            anchor="middle",
            colour=HIGHLIGHT,
        )
    bottom.xticks(list(range(n)), labels, rotate=turn, colours=colours)
    y = bottom.y1 + tick_room + 6
    y += legend(s, entries, y, min(m, 3))
    s.height = y + 6
    return s


def _fit_panel(s: Scene, top: float, height: float, sl: Mapping[str, Any]) -> None:
    rows, ys = sl["rows"], sl["largest_bucket_gib"]
    hi_x = max(rows) * 1.1 if rows else 1.0
    xs = [hi_x * i / 50 for i in range(51)]
    mid, lo_band, hi_band = fit_band(sl, xs)
    span = [
        *lo_band,
        *hi_band,
        *(y - POINT_ERROR_GIB for y in ys),
        *(y + POINT_ERROR_GIB for y in ys),
    ]
    ylim = _pad(min(span), max(span))
    yt = [v for v in nice_ticks(*ylim, most=6) if ylim[0] <= v <= ylim[1]]
    xt = [v for v in nice_ticks(0, hi_x) if v <= hi_x]
    left = 22 + ytick_width(yt) + 8
    p = Panel(s, left, top + 22, s.width - 14, top + height - 40, (0.0, hi_x), ylim)
    p.grid(xt, yt)
    p.spines()
    p.xticks(xt)
    p.yticks(yt)
    basis = sl.get("basis", "largest bucket")
    where = f" on {sl['rank']}" if sl["rank"] else ""
    p.title(f"{sl['graph']}{where}: {basis} against rows")
    p.xlabel("rows (largest batch size × tokens per request)")
    p.ylabel(f"{basis} (GiB)", left - 12)
    blue = KIND_COLOURS["logged"]
    band = [(p.x(x), p.y(v)) for x, v in zip(xs, hi_band)] + [
        (p.x(x), p.y(v)) for x, v in zip(xs[::-1], lo_band[::-1])
    ]
    s.add(Area(tuple(band), blue, 0.25, gid="fit-band"))
    s.add(Line(tuple((p.x(x), p.y(v)) for x, v in zip(xs, mid)), blue, 1.2, gid="fit-line"))
    for k, (x, y) in enumerate(zip(rows, ys)):
        px, lo, up = p.x(x), p.y(y - POINT_ERROR_GIB), p.y(y + POINT_ERROR_GIB)
        s.add(Line(((px, lo), (px, up)), HIGHLIGHT, 1.0, gid="fit-points" if k == 0 else None))
        for cap in (lo, up):
            s.add(Line(((px - 3, cap), (px + 3, cap)), HIGHLIGHT, 1.0))
        s.add(Mark(px, p.y(y), 3.0, HIGHLIGHT))
    for x, y, lab in zip(rows, ys, sl["labels"]):
        # Names of the launches, shortened; the right-most sit left of their point.
        right = x > hi_x * 0.6
        name = short(re.sub(r"(\.log)? \(launch 0\)$|\.log$", "", lab), 28)
        s.text(
            p.x(x) + (-6 if right else 6),
            p.y(y) + 12,
            name,
            7.0,
            anchor="end" if right else "start",
        )
    err = f" ± {sl['mib_per_row_error']:.2f}" if sl["mib_per_row_error"] else ""
    keys = [
        ("uncertainty of the fit", "#cedbed", "box"),  # the band's colour on white
        (
            f"{sl['mib_per_row']:.2f}{err} MiB/row, intercept {sl['intercept_gib']:.2f} GiB",
            blue,
            "line",
        ),
        (f"measured (±{POINT_ERROR_GIB:g} GiB: two printed readings)", HIGHLIGHT, "dot"),
    ]
    for k, (label, colour, shape) in enumerate(keys):
        yy = p.y0 + 9 + 12 * k
        swatch(s, p.x0 + 8, yy, colour, shape)
        s.text(p.x0 + 24, yy, label, 8.0, "middle", backing=True)


def fit_scene(data: Mapping[str, Any]) -> Scene:
    """Largest bucket against rows, per graph family: the points, the fitted line, its band."""
    slopes = data["slopes"]
    if not slopes:
        return _empty(504, 230, "no slope: the launches share no graph family with bucket readings")
    s = Scene(504, 230 * len(slopes) + 14)
    for k, sl in enumerate(slopes):
        _fit_panel(s, 230 * k, 230, sl)
    return s


def scene(kind: str, data: Any) -> Scene:
    """Lay out a view model made by the matching ``*_data`` function."""
    if kind == "waterfall":
        return waterfall_scene(data)
    if kind == "buckets":
        return buckets_scene(data)
    if kind == "ranks":
        return ranks_scene(data)
    if kind == "fit":
        return fit_scene(data)
    raise ValueError(f"unknown plot kind {kind!r}; one of {', '.join(KINDS)}")


def svg(kind: str, data: Any) -> str:
    """The plot as SVG text (no plotting library imported)."""
    return scene_svg(scene(kind, data))
