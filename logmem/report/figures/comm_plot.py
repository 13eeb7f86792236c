"""The communication table as a heat map: groups (rows) x mechanisms (columns), each cell
coloured by its size per rank (log scale), "measure" cells hatched, outlined by when they are
allocated. Lays out ``report.communication.comm_plot_data`` as a report.figures.scene Scene."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from logmem.report.figures.chart import BLUES, Panel, label_width, legend, ramp
from logmem.report.figures.scene import Rect, Scene

WHEN_EDGE = {"init": "#3b6fb6", "after_kv": "#e08a2c", "first_use": "#c8362f"}
WHEN_LABEL = {
    "init": "init: before KV sizing (costs KV tokens)",
    "after_kv": "after KV sizing (from the reserve)",
    "first_use": "first use, lazy (from the reserve)",
}
CELL_W, CELL_H = 108.0, 40.0


def comm_scene(data: Mapping[str, Any]) -> Scene:
    """One heat map; the darker a cell, the more bytes; hatched: no formula (measure)."""
    groups, mechs, grid = data["groups"], data["mechanisms"], data["grid"]
    sizes = [c["bytes"] for row in grid for c in row if c and c["bytes"]]
    lo, hi = (min(sizes), max(sizes)) if sizes else (1, 2)
    vmin, vmax = math.log(max(1, lo / 2)), math.log(max(hi, lo * 2))

    def norm(b: int) -> float:
        return min(max((math.log(b) - vmin) / ((vmax - vmin) or 1.0), 0.0), 1.0)

    left = 10 + label_width(groups) + 8
    turn = 20.0
    below = label_width(mechs) * math.sin(math.radians(turn)) + 20
    width = max(360.0, left + CELL_W * len(mechs) + 14)
    cells_w = width - left - 14
    top = 26.0
    s = Scene(width, 0)
    p = Panel(
        s,
        left,
        top,
        left + cells_w,
        top + CELL_H * len(groups),
        (0, len(mechs)),
        (0, len(groups)),
        yflip=True,
    )
    for i, row in enumerate(grid):
        for j, c in enumerate(row):
            if c is None:
                continue
            b = c["bytes"]
            face = ramp(BLUES, 0.25 + 0.7 * norm(b)) if b else "#f2f2f2"
            x0, x1 = p.x(j + 0.04), p.x(j + 0.96)
            y0, y1 = p.y(i + 0.06), p.y(i + 0.94)
            s.add(
                Rect(
                    x0,
                    y0,
                    x1 - x0,
                    y1 - y0,
                    face,
                    WHEN_EDGE.get(c["when"], "#555555"),
                    2.0,
                    hatch=b is None,
                )
            )
            dark = b is not None and b > 0 and norm(b) > 0.6
            label = c["label"] + (" (host)" if c["host"] else "")
            # Hatched cells: a plain backing keeps the label readable.
            s.text(
                p.x(j + 0.5),
                p.y(i + 0.5),
                label,
                8.0,
                "middle",
                anchor="middle",
                colour="#ffffff" if dark else "#000000",
                backing=b is None,
            )
    p.xticks([j + 0.5 for j in range(len(mechs))], list(mechs), rotate=turn, marks=False)
    p.yticks([i + 0.5 for i in range(len(groups))], list(groups), marks=False)
    s.text(
        width / 2,
        top - 8,
        "Communication memory per rank: groups x mechanisms",
        10.0,
        "bottom",
        anchor="middle",
    )
    used = list(dict.fromkeys(c["when"] for row in grid for c in row if c))
    entries = [(WHEN_LABEL[w], WHEN_EDGE[w], "outline") for w in used if w in WHEN_EDGE]
    y = p.y1 + below
    y += legend(s, entries, y, 3)
    s.height = y + 6
    return s
