"""The communication table as a heat map: groups (rows) x mechanisms (columns), each cell
coloured by its size per rank (log scale), "measure" cells hatched, outlined by when they are
allocated. Draws ``report.communication.comm_plot_data``; matplotlib is imported only when a
page is drawn (report.canvas' style and output)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from logmem.report.canvas import lit, new_figure, plot_style

if TYPE_CHECKING:
    from matplotlib.figure import Figure

WHEN_EDGE = {"init": "#3b6fb6", "after_kv": "#e08a2c", "first_use": "#c8362f"}
WHEN_LABEL = {
    "init": "init: before KV sizing (costs KV tokens)",
    "after_kv": "after KV sizing (from the reserve)",
    "first_use": "first use, lazy (from the reserve)",
}


def comm_figure(data: Mapping[str, Any]) -> Figure:
    """One heat map; the darker a cell, the more bytes; hatched: no formula (measure)."""
    from matplotlib import colormaps
    from matplotlib.colors import LogNorm
    from matplotlib.patches import Patch, Rectangle

    groups, mechs, grid = data["groups"], data["mechanisms"], data["grid"]
    sizes = [c["bytes"] for row in grid for c in row if c and c["bytes"]]
    lo, hi = (min(sizes), max(sizes)) if sizes else (1, 2)
    norm = LogNorm(vmin=max(1, lo / 2), vmax=max(hi, lo * 2))
    cmap = colormaps["Blues"]
    with plot_style():
        fig = new_figure(max(5.0, 1.5 * len(mechs) + 1.5), max(1.6, 0.55 * len(groups) + 1.2))
        ax = fig.add_subplot()
        for i, row in enumerate(grid):
            for j, c in enumerate(row):
                if c is None:
                    continue
                b = c["bytes"]
                face = cmap(0.25 + 0.7 * norm(b)) if b else "#f2f2f2"
                ax.add_patch(
                    Rectangle(
                        (j + 0.04, i + 0.06),
                        0.92,
                        0.88,
                        facecolor=face,
                        edgecolor=WHEN_EDGE.get(c["when"], "#555"),
                        linewidth=2,
                        hatch="//" if b is None else None,
                    )
                )
                dark = b is not None and b > 0 and norm(b) > 0.6
                label = c["label"] + (" (host)" if c["host"] else "")
                ax.text(
                    j + 0.5,
                    i + 0.5,
                    label,
                    ha="center",
                    va="center",
                    fontsize=8,
                    color="white" if dark else "black",
                    # Hatched cells: a plain backing keeps the label readable.
                    bbox={"facecolor": "white", "edgecolor": "none", "pad": 1}
                    if b is None
                    else None,
                )
        ax.set_xlim(0, len(mechs))
        ax.set_ylim(len(groups), 0)
        ax.set_xticks(
            [j + 0.5 for j in range(len(mechs))], [lit(m) for m in mechs], rotation=20, ha="right"
        )
        ax.set_yticks([i + 0.5 for i in range(len(groups))], [lit(g) for g in groups])
        ax.tick_params(length=0)
        for side in ("left", "bottom"):
            ax.spines[side].set_visible(False)
        ax.set_title("Communication memory per rank: groups x mechanisms")
        used = list(dict.fromkeys(c["when"] for row in grid for c in row if c))
        handles = [
            Patch(facecolor="white", edgecolor=WHEN_EDGE[w], linewidth=2, label=WHEN_LABEL[w])
            for w in used
            if w in WHEN_EDGE
        ]
        if handles:
            fig.legend(
                handles=handles,
                loc="outside lower center",
                ncols=min(3, len(handles)),
                frameon=False,
                fontsize=8,
            )
    return fig
