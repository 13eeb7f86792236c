"""Plots: the dicts of report.plot_data -> matplotlib figures -> SVG text or PNG bytes.

Each plot is two functions: ``*_data`` (report.plot_data, re-exported here) turns the ledger
into a plain dict, and ``*_figure`` only draws that dict, on report.canvas (style, colours,
output; figure_bytes and figure_svg are re-exported here). matplotlib is imported lazily, in
nothing the CLI loads for text or JSON."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from logmem.report.canvas import (
    HIGHLIGHT,
    KIND_COLOURS,
    ROSE_COLOUR,
    figure_bytes,
    figure_svg,
    lit,
    new_figure,
    plot_style,
)
from logmem.report.model import rank_name
from logmem.report.plot_data import (
    POINT_ERROR_GIB,
    buckets_data,
    fit_band,
    fit_data,
    milestone,
    ranks_data,
    short,
    step_label,
    waterfall_data,
)
from logmem.sglang.rules import DIFFERENCE_RESOLUTION_GIB

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.text import Text

KINDS = ("waterfall", "buckets", "ranks", "fit")


__all__ = [
    "KINDS",
    "buckets_data",
    "draw",
    "figure_bytes",
    "figure_svg",
    "fit_band",
    "fit_data",
    "milestone",
    "ranks_data",
    "step_label",
    "waterfall_data",
]


_Label = tuple["Text", float, float]


def _waterfall_axes(ax: Axes, data: Mapping[str, Any]) -> list[_Label]:
    labels: list[_Label] = []
    steps = [s for s in data["steps"] if s.get("shown", True)]
    n = len(steps)
    ax.set_title(lit(data["title"]), loc="left")
    if not steps:
        ax.text(
            0.5,
            0.5,
            lit(data.get("note") or "no free-memory readings"),
            ha="center",
            va="center",
            transform=ax.transAxes,
        )
        ax.set_axis_off()
        return labels
    top = max(max(s["before_gib"], s["after_gib"]) for s in steps)
    xmax = top * 1.02 if top > 0 else 1.0
    for i, s in enumerate(steps):
        pos = s["before_gib"]
        rose = s["delta_gib"] < 0
        for j, c in enumerate(s["causes"]):
            width = -c["gib"]
            colour = (
                ROSE_COLOUR if rose and c["gib"] < 0 else KIND_COLOURS.get(c["kind"], "#666666")
            )
            bar = ax.barh(
                i, width, left=pos, height=0.62, color=colour, edgecolor="white", linewidth=0.5
            )
            bar.patches[0].set_gid(f"step-{i}-cause-{j}")
            pos += width
        if i + 1 < n:  # the connector: this phase's end is the next one's start
            ax.plot(
                [s["after_gib"]] * 2,
                [i + 0.31, i + 0.69],
                color="#444444",
                linewidth=0.8,
                linestyle=":",
            )
        lo, hi = sorted((s["before_gib"], s["after_gib"]))
        t = ax.text(hi, i, lit(s["label"]), ha="left", va="center", fontsize=8, gid=f"label-{i}")
        t.set_in_layout(False)  # placed after the layout, by _place_labels
        labels.append((t, lo, hi))
    ax.set_yticks(range(n), [lit(short(s["phase"], 38)) for s in steps])
    ax.set_ylim(n - 0.5, -0.5)
    ax.set_xlim(0, xmax)
    last = steps[-1]["after_gib"]
    ax.axvline(last, color=HIGHLIGHT, linewidth=0.8, linestyle="--")
    ax.set_xlabel(f"free GPU memory (GiB); dashed: {last:.2f} GiB left at the last reading")
    ax.grid(axis="x", color="#e4e4e4", linewidth=0.6)
    ax.set_axisbelow(True)
    return labels


def _place_labels(fig: Figure, ax: Axes, labels: Sequence[_Label]) -> None:
    """Put each step label where it fits, measured after the layout: inside its bar (white),
    else left of the bar, else right of it, else on the roomier side."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    if not labels:
        return
    canvas = fig.canvas if isinstance(fig.canvas, FigureCanvasAgg) else FigureCanvasAgg(fig)
    fig.draw_without_rendering()
    renderer = canvas.get_renderer()  # type: ignore[no-untyped-call]
    box = ax.get_window_extent(renderer)
    to_px = ax.transData
    pad = 4.0
    for t, lo, hi in labels:
        width = t.get_window_extent(renderer).width
        x_lo = to_px.transform((lo, 0))[0]
        x_hi = to_px.transform((hi, 0))[0]
        y = t.get_position()[1]
        inv = to_px.inverted()
        if x_hi - x_lo >= width + 2 * pad:
            t.set_position((inv.transform(((x_lo + x_hi) / 2, 0))[0], y))
            t.set_horizontalalignment("center")
            t.set_color("white")
        elif x_lo - box.x0 >= width + pad:
            t.set_position((inv.transform((x_lo - pad, 0))[0], y))
            t.set_horizontalalignment("right")
        elif box.x1 - x_hi >= width + pad:
            t.set_position((inv.transform((x_hi + pad, 0))[0], y))
            t.set_horizontalalignment("left")
        else:  # fits nowhere: the roomier side, the text cut to the room there
            right = box.x1 - x_hi >= x_lo - box.x0
            room = (box.x1 - x_hi if right else x_lo - box.x0) - pad
            t.set_position((inv.transform((x_hi + pad if right else x_lo - pad, 0))[0], y))
            t.set_horizontalalignment("left" if right else "right")
            text = t.get_text()
            while len(text) > 12 and t.get_window_extent(renderer).width > room:
                text = text[:-4]
                t.set_text(text.rstrip() + "…")


def _kind_legend(fig: Figure, kinds: Sequence[str], rose: bool) -> None:
    from matplotlib.patches import Patch

    handles = [Patch(color=KIND_COLOURS[k], label=k) for k in KIND_COLOURS if k in kinds]
    if rose:
        handles.append(Patch(color=ROSE_COLOUR, label="freed"))
    if handles:
        fig.legend(
            handles=handles,
            loc="outside lower center",
            ncols=len(handles),
            frameon=False,
            fontsize=8,
        )


def waterfall_figure(data: Mapping[str, Any] | Sequence[Mapping[str, Any]]) -> Figure:
    """Free-memory waterfall, one panel per rank; each step split into its causes, coloured by kind."""
    panels = [data] if isinstance(data, Mapping) else list(data)
    rows = [max(sum(1 for s in p["steps"] if s.get("shown", True)), 1) for p in panels]
    fig = new_figure(8.5, sum(0.34 * r + 1.0 for r in rows) + 0.4)
    axes = fig.subplots(len(panels), 1, squeeze=False, height_ratios=[0.34 * r + 1.0 for r in rows])
    placed = [(ax, _waterfall_axes(ax, panel)) for ax, panel in zip(axes[:, 0], panels)]
    kinds = {c["kind"] for p in panels for s in p["steps"] for c in s["causes"]}
    rose = any(s["delta_gib"] < 0 for p in panels for s in p["steps"])
    _kind_legend(fig, sorted(kinds), rose)
    for ax, labels in placed:
        _place_labels(fig, ax, labels)
    # The layout is settled now; keep the labels where they were measured to fit.
    fig.set_layout_engine("none")
    return fig


def _buckets_axes(ax: Axes, d: Mapping[str, Any]) -> None:
    sizes = d["sizes"]
    by_size = all(s is not None for s in sizes)
    xs = list(sizes) if by_size else list(range(1, len(sizes) + 1))
    ys = d["avail_gib"]
    ax.plot(
        xs,
        ys,
        color=KIND_COLOURS["logged"],
        marker="o",
        markersize=3.5,
        linewidth=1.0,
        gid="bucket-line",
    )
    li = d["largest"]
    ax.plot(
        [xs[li]],
        [ys[li]],
        marker="o",
        markersize=9,
        color=HIGHLIGHT,
        linestyle="none",
        gid="largest-bucket",
    )
    cost = d["cost_gib"][li]
    what = f"bs {sizes[li]}" if sizes[li] is not None else "first bucket"
    note = (
        f"largest bucket ({what}): {cost:.2f} GiB"
        if cost is not None
        else f"largest bucket ({what})"
    )
    ax.annotate(
        note,
        (xs[li], ys[li]),
        xytext=(-8, -4),
        textcoords="offset points",
        ha="right",
        va="top",
        color=HIGHLIGHT,
        fontsize=8,
    )
    # The readings either side of the buckets: what the static buffers and the end line say.
    refs = [(d.get("begin_gib"), "capture begin", "--")]
    if not d.get("stopped"):
        refs.append((d.get("end_gib"), "capture end", ":"))
    for value, name, style in refs:
        if value is not None:
            ax.axhline(
                value, color="#666666", linewidth=0.8, linestyle=style, gid=name.replace(" ", "-")
            )
            ax.annotate(
                f"{name} {value:.2f}",
                (1.0, value),
                xycoords=("axes fraction", "data"),
                xytext=(0, 2),
                textcoords="offset points",
                ha="right",
                va="bottom",
                fontsize=7,
                color="#555555",
            )
    if by_size and len(set(xs)) > 1 and max(xs) / max(min(xs), 1) >= 16:
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_formatter("{x:g}")
    elif len(set(xs)) <= 12:
        ax.set_xticks(sorted(set(xs)))
    ax.set_xlabel("bucket size (batch size or tokens)" if by_size else "bucket (capture order)")
    ax.set_ylabel("free at bucket start (GiB)")
    title = d["title"] + (" — log stops during capture" if d.get("stopped") else "")
    ax.set_title(lit(title), loc="left")
    ax.grid(color="#e4e4e4", linewidth=0.6)
    ax.set_axisbelow(True)
    span = [*ys, *(v for v, _, _ in refs if v is not None)]
    lo, hi = min(span), max(span)
    pad = max((hi - lo) * 0.15, 0.05)
    ax.set_ylim(lo - pad, hi + pad)


def buckets_figure(families: Sequence[Mapping[str, Any]]) -> Figure:
    """One panel per graph family: free memory at each bucket's start against its size."""
    n = max(len(families), 1)
    fig = new_figure(8.0, 2.7 * n + 0.2)
    axes = fig.subplots(n, 1, squeeze=False)
    if not families:
        axes[0, 0].text(0.5, 0.5, "no bucket readings in this log", ha="center", va="center")
        axes[0, 0].set_axis_off()
    for ax, d in zip(axes[:, 0], families):
        _buckets_axes(ax, d)
    return fig


def _grouped_bars(
    ax: Axes, n: int, series: Sequence[Mapping[str, Any]], field: str, gid: str
) -> None:
    from matplotlib import colormaps

    cmap = colormaps["viridis"]
    m = max(len(series), 1)
    group = 0.84
    width = group / m
    for j, s in enumerate(series):
        xs = [i - group / 2 + width * (j + 0.5) for i in range(n)]
        values = s[field]
        colour = cmap(0.1 + 0.8 * j / max(m - 1, 1))
        label = lit(short(s["phase"], 40)) if field == "gib" else None
        bars = ax.bar(
            xs,
            [v if v is not None else 0.0 for v in values],
            width=width * 0.92,
            color=colour,
            label=label,
        )
        for i, (bar, v) in enumerate(zip(bars.patches, values)):
            bar.set_gid(f"{gid}-{i}-phase-{j}")
            if v is None:
                bar.set_visible(False)
    ax.set_xlim(-0.6, n - 0.4)
    ax.grid(axis="y", color="#e4e4e4", linewidth=0.6)
    ax.set_axisbelow(True)


def ranks_figure(data: Mapping[str, Any]) -> Figure:
    """Grouped bars: per rank, free memory after each phase; below, how far each rank is above
    the least-free rank at that moment (imbalance is a few hundred MiB on a scale of 80 GiB,
    invisible on the first panel). The binding rank is shaded and named."""
    ranks = data["ranks"]
    series = data["series"]
    n, m = len(ranks), max(len(series), 1)
    spread = max((v for s in series for v in s["above_min_gib"] if v is not None), default=0.0)
    two = n >= 2 and spread >= DIFFERENCE_RESOLUTION_GIB
    height = (6.4 if two else 4.2) + 0.17 * math.ceil(m / 3)
    fig = new_figure(min(max(6.0, 0.1 * n * m + 1.5), 11.0), height)
    axes = fig.subplots(
        2 if two else 1, 1, squeeze=False, sharex=True, height_ratios=[3, 2] if two else [1]
    )
    ax = axes[0, 0]
    ax.set_title(lit(data["title"]), loc="left")
    _grouped_bars(ax, n, series, "gib", "rank")
    ax.set_ylabel("free GPU memory (GiB)")
    if two:
        low = axes[1, 0]
        _grouped_bars(low, n, series, "above_min_gib", "spread")
        low.set_ylabel("above the least-free\nrank (GiB)")
        low.set_title(
            "Imbalance: free memory minus the least-free rank's, after each phase",
            loc="left",
            fontsize=9,
        )
    bottom = axes[-1, 0]
    labels = [lit(rank_name(r) if r else "(untagged)") for r in ranks]
    bottom.set_xticks(
        range(n), labels, rotation=45 if n > 6 else 0, ha="right" if n > 6 else "center"
    )
    binding = data.get("binding")
    if binding is not None and binding in ranks:
        b = ranks.index(binding)
        for a in axes[:, 0]:
            a.axvspan(
                b - 0.5, b + 0.5, color=HIGHLIGHT, alpha=0.08, linewidth=0, gid="binding-rank"
            )
        bottom.get_xticklabels()[b].set_color(HIGHLIGHT)
        bottom.get_xticklabels()[b].set_fontweight("bold")
        top = max((v for s in series for v in s["gib"] if v is not None), default=1.0)
        ax.text(
            b, top * 1.04, "binding rank", ha="center", va="bottom", color=HIGHLIGHT, fontsize=8
        )
        ax.set_ylim(0, top * 1.14)
    if series:
        fig.legend(loc="outside lower center", ncols=min(m, 3), frameon=False, fontsize=8)
    return fig


def fit_figure(data: Mapping[str, Any]) -> Figure:
    """Largest bucket against rows, per graph family: the points, the fitted line, its band."""
    slopes = data["slopes"]
    n = max(len(slopes), 1)
    fig = new_figure(7.0, 3.2 * n + 0.2)
    axes = fig.subplots(n, 1, squeeze=False)
    if not slopes:
        axes[0, 0].text(
            0.5,
            0.5,
            "no slope: the launches share no graph family with bucket readings",
            ha="center",
            va="center",
        )
        axes[0, 0].set_axis_off()
    for ax, s in zip(axes[:, 0], slopes):
        rows, ys = s["rows"], s["largest_bucket_gib"]
        hi = max(rows) * 1.1 if rows else 1.0
        xs = [hi * i / 50 for i in range(51)]
        mid, lo_band, hi_band = fit_band(s, xs)
        ax.fill_between(
            xs,
            lo_band,
            hi_band,
            color=KIND_COLOURS["logged"],
            alpha=0.25,
            linewidth=0,
            label="uncertainty of the fit",
            gid="fit-band",
        )
        err = f" ± {s['mib_per_row_error']:.2f}" if s["mib_per_row_error"] else ""
        ax.plot(
            xs,
            mid,
            color=KIND_COLOURS["logged"],
            linewidth=1.2,
            gid="fit-line",
            label=f"{s['mib_per_row']:.2f}{err} MiB/row, intercept {s['intercept_gib']:.2f} GiB",
        )
        points = ax.errorbar(
            rows,
            ys,
            yerr=POINT_ERROR_GIB,
            fmt="o",
            color=HIGHLIGHT,
            markersize=6,
            capsize=3,
            label=f"measured (±{POINT_ERROR_GIB:g} GiB: two printed readings)",
        )
        points.lines[0].set_gid("fit-points")
        for x, y, lab in zip(rows, ys, s["labels"]):
            # Names of the launches, shortened; the right-most sit left of their point.
            right = x > hi * 0.6
            name = short(re.sub(r"(\.log)? \(launch 0\)$|\.log$", "", lab), 28)
            t = ax.annotate(
                lit(name),
                (x, y),
                xytext=(-6 if right else 6, -12),
                textcoords="offset points",
                fontsize=7,
                ha="right" if right else "left",
            )
            t.set_in_layout(False)
        ax.set_xlim(0, hi)
        ax.set_xlabel("rows (largest batch size × tokens per request)")
        basis = s.get("basis", "largest bucket")
        ax.set_ylabel(f"{basis} (GiB)")
        where = f" on {s['rank']}" if s["rank"] else ""
        ax.set_title(lit(f"{s['graph']}{where}: {basis} against rows"), loc="left")
        ax.grid(color="#e4e4e4", linewidth=0.6)
        ax.legend(loc="upper left", frameon=False, fontsize=8)
    return fig


def draw(kind: str, data: Any) -> Figure:
    """Draw a view model made by the matching ``*_data`` function."""
    with plot_style():
        if kind == "waterfall":
            return waterfall_figure(data)
        if kind == "buckets":
            return buckets_figure(data)
        if kind == "ranks":
            return ranks_figure(data)
        if kind == "fit":
            return fit_figure(data)
    raise ValueError(f"unknown plot kind {kind!r}; one of {', '.join(KINDS)}")
