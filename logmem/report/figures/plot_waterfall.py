"""The free-memory waterfall as a report.figures.scene Scene: one panel per rank, each step a bar
from the free memory before the phase to after it, split into its causes and coloured by
kind, with a label placed where it fits (measured with report.figures.scene.text_width)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from logmem.report.figures.canvas import HIGHLIGHT, KIND_COLOURS, ROSE_COLOUR
from logmem.report.figures.chart import TICK, Panel, label_width, legend, nice_ticks, row_span
from logmem.report.figures.plot_data import shorten
from logmem.report.figures.scene import Line, Rect, Scene, fit_text, text_width

WIDTH = 612.0  # 8.5 inches
ROW = 24.5  # points per step
TOP, BOTTOM = 24.0, 44.0  # title above a panel; ticks and the x label below it
LABEL = 8.0  # point size of the step labels
PAD = 4.0


def _place(s: Scene, p: Panel, i: int, label: str, lo: float, hi: float, bar: bool) -> None:
    """Put a step label where it fits: inside its bar (white), else left of the bar, else
    right of it; if it fits nowhere, where there is most room, cut to that room."""
    y = p.y(i)
    x_lo, x_hi = p.x(lo), p.x(hi)
    rooms = {
        "inside": x_hi - x_lo - 2 * PAD if bar else 0.0,
        "left": x_lo - p.x0 - PAD,
        "right": p.x1 - x_hi - PAD,
    }
    width = text_width(label, LABEL)
    where = next((k for k, room in rooms.items() if room >= width), None)
    if where is None:
        where = max(rooms, key=lambda k: rooms[k])
        label = fit_text(label, LABEL, rooms[where])
    gid = f"label-{i}"
    if where == "inside":
        mid = (x_lo + x_hi) / 2
        s.text(mid, y, label, LABEL, "middle", anchor="middle", colour="#ffffff", gid=gid)
    elif where == "left":
        s.text(x_lo - PAD, y, label, LABEL, "middle", anchor="end", gid=gid)
    else:
        s.text(x_hi + PAD, y, label, LABEL, "middle", gid=gid)


def _panel(s: Scene, top: float, data: Mapping[str, Any], left: float) -> float:
    """One rank's panel from `top`; returns its height."""
    steps = [st for st in data["steps"] if st.get("shown", True)]
    n = len(steps)
    if not steps:
        s.text(left, top + TOP - 6, data["title"], 10.0, "bottom")
        s.text(
            WIDTH / 2,
            top + TOP + 20,
            data.get("note") or "no free-memory readings",
            TICK,
            "middle",
            anchor="middle",
        )
        return TOP + 48
    rows, ylim = row_span(n)
    height = TOP + ROW * rows + BOTTOM
    top_gib = max(max(st["before_gib"], st["after_gib"]) for st in steps)
    xmax = top_gib * 1.02 if top_gib > 0 else 1.0
    xt = [v for v in nice_ticks(0, xmax, most=9) if v <= xmax]
    p = Panel(
        s,
        left,
        top + TOP,
        WIDTH - 8,
        top + TOP + ROW * rows,
        (0.0, xmax),
        ylim,
        yflip=True,
    )
    p.grid(xs=xt)
    labels = []
    for i, st in enumerate(steps):
        pos = st["before_gib"]
        rose = st["delta_gib"] < 0
        y0, y1 = p.y(i - 0.31), p.y(i + 0.31)
        for j, c in enumerate(st["causes"]):
            end = pos - c["gib"]
            colour = (
                ROSE_COLOUR if rose and c["gib"] < 0 else KIND_COLOURS.get(c["kind"], "#666666")
            )
            a, b = sorted((p.x(pos), p.x(end)))
            s.add(Rect(a, y0, b - a, y1 - y0, colour, "#ffffff", 0.5, gid=f"step-{i}-cause-{j}"))
            pos = end
        if i + 1 < n:  # the connector: this phase's end is the next one's start
            x = p.x(st["after_gib"])
            s.add(Line(((x, p.y(i + 0.31)), (x, p.y(i + 0.69))), "#444444", 0.8, "dotted"))
        lo, hi = sorted((st["before_gib"], st["after_gib"]))
        labels.append((i, st["label"], lo, hi, bool(st["causes"])))
    for i, label, lo, hi, coloured in labels:
        _place(s, p, i, label, lo, hi, coloured)
    last = steps[-1]["after_gib"]
    x = p.x(last)
    s.add(Line(((x, p.y0), (x, p.y1)), HIGHLIGHT, 0.8, "dashed"))
    p.spines()
    p.xticks(xt)
    p.yticks(list(range(n)), [shorten(st["phase"], 38) for st in steps])
    p.title(data["title"])
    p.xlabel(f"free GPU memory (GiB); dashed: {last:.2f} GiB left at the last reading")
    return height


def waterfall_scene(data: Mapping[str, Any] | Sequence[Mapping[str, Any]]) -> Scene:
    """Free-memory waterfall, one panel per rank; each step split into its causes, coloured by kind."""
    panels = [data] if isinstance(data, Mapping) else list(data)
    names = [
        shorten(st["phase"], 38) for pn in panels for st in pn["steps"] if st.get("shown", True)
    ]
    left = 10 + label_width(names) + 8
    s = Scene(WIDTH, 0)
    y = 0.0
    for pn in panels:
        y += _panel(s, y, pn, left)
    kinds = {c["kind"] for pn in panels for st in pn["steps"] for c in st["causes"]}
    entries = [(k, KIND_COLOURS[k], "box") for k in KIND_COLOURS if k in kinds]
    if any(st["delta_gib"] < 0 for pn in panels for st in pn["steps"]):
        entries.append(("freed", ROSE_COLOUR, "box"))
    y += legend(s, entries, y, len(entries) or 1)
    s.height = y + 6
    return s
