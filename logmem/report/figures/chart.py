"""Axes on a report.figures.scene Scene: a panel maps data to figure coordinates and draws its ticks,
grid, spines, labels and title; a legend row; the colour ramps the figures use.

The look follows what logmem's matplotlib figures had: left and bottom spines only, a light
grid behind the data, 9 pt tick labels, 10 pt titles on the left, legends below.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from logmem.frozen import mutable
from logmem.report.figures.scene import Line, Mark, Rect, Scene, text_width

GRID = "#e4e4e4"
AXIS = "#333333"
TICK = 9.0
TITLE = 10.0


def nice_ticks(lo: float, hi: float, most: int = 7) -> list[float]:
    """Round tick values (1, 2, 2.5, 5 x 10^k apart) covering [lo, hi], at most `most`."""
    if hi <= lo:
        hi = lo + 1.0
    raw = (hi - lo) / max(most - 1, 1)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step - 1e-9)
    ticks = []
    k = first
    while k * step <= hi + step * 1e-9:
        ticks.append(round(k * step, 10))
        k += 1
    return ticks


def row_span(n: int, least: float = 1.6) -> tuple[float, tuple[float, float]]:
    """Rows to give n horizontal bars (one bar still gets a readable height) and the y range
    that centres them (row i at y = i)."""
    rows = max(float(n), least)
    pad = (rows - n) / 2
    return rows, (-0.5 - pad, n - 0.5 + pad)


def tick_labels(values: Sequence[float]) -> list[str]:
    """Tick values with as many decimals as the finest of them needs (2.0, 2.5, 3.0)."""
    places = 0
    for v in values:
        text = f"{v:.6f}".rstrip("0")
        places = max(places, len(text) - text.index(".") - 1)
    return [f"{v:.{min(places, 6)}f}" for v in values]


def ramp(anchors: Sequence[str], t: float) -> str:
    """The colour at t (0..1) of a ramp given by evenly spaced anchor colours."""
    t = min(max(t, 0.0), 1.0) * (len(anchors) - 1)
    i = min(int(t), len(anchors) - 2)
    f = t - i
    a, b = anchors[i], anchors[i + 1]
    rgb = [round(int(a[k : k + 2], 16) * (1 - f) + int(b[k : k + 2], 16) * f) for k in (1, 3, 5)]
    return "#" + "".join(f"{c:02x}" for c in rgb)


# matplotlib's viridis and Blues, sampled at sixteenths.
VIRIDIS = (
    "#440154", "#48186a", "#472d7b", "#424086", "#3b528b", "#33638d", "#2c728e", "#26828e",
    "#21918c", "#1fa088", "#28ae80", "#3fbc73", "#5ec962", "#84d44b", "#addc30", "#d8e219",
    "#fde725",
)  # fmt: skip
BLUES = (
    "#f7fbff", "#eaf3fb", "#deebf7", "#d2e3f3", "#c6dbef", "#b2d2e8", "#9dcae1", "#84bcdb",
    "#6aaed6", "#56a0ce", "#4191c6", "#3181bd", "#2070b4", "#1460a8", "#08509b", "#084082",
    "#08306b",
)  # fmt: skip
# matplotlib's default line colours, for series with no meaning of their own.
CYCLE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f")


@mutable
class Panel:
    """A plotting box (x0, y0) to (x1, y1) in figure points, over data ranges xlim and ylim;
    xlog: base-2 logarithmic x; y grows upwards unless yflip (rows listed top down)."""

    scene: Scene
    x0: float
    y0: float
    x1: float
    y1: float
    xlim: tuple[float, float]
    ylim: tuple[float, float]
    xlog: bool = False
    yflip: bool = False

    def x(self, v: float) -> float:
        lo, hi = self.xlim
        if self.xlog:
            v, lo, hi = math.log2(max(v, 1e-9)), math.log2(lo), math.log2(hi)
        return self.x0 + (v - lo) / ((hi - lo) or 1.0) * (self.x1 - self.x0)

    def y(self, v: float) -> float:
        lo, hi = self.ylim
        f = (v - lo) / ((hi - lo) or 1.0)
        return (
            self.y0 + f * (self.y1 - self.y0) if self.yflip else self.y1 - f * (self.y1 - self.y0)
        )

    def add(self, item: Rect | Line) -> None:
        self.scene.add(item)

    def grid(self, xs: Sequence[float] = (), ys: Sequence[float] = ()) -> None:
        for v in xs:
            self.scene.add(Line(((self.x(v), self.y0), (self.x(v), self.y1)), GRID, 0.6))
        for v in ys:
            self.scene.add(Line(((self.x0, self.y(v)), (self.x1, self.y(v))), GRID, 0.6))

    def spines(self, left: bool = True, bottom: bool = True) -> None:
        if left:
            self.scene.add(Line(((self.x0, self.y0), (self.x0, self.y1)), AXIS, 0.8))
        if bottom:
            self.scene.add(Line(((self.x0, self.y1), (self.x1, self.y1)), AXIS, 0.8))

    def xticks(
        self,
        values: Sequence[float],
        labels: Sequence[str] | None = None,
        rotate: float = 0.0,
        colours: Sequence[str] | None = None,
        marks: bool = True,
    ) -> None:
        auto = tick_labels(values)
        for i, v in enumerate(values):
            x = self.x(v)
            if marks:
                self.scene.add(Line(((x, self.y1), (x, self.y1 + 3.5)), AXIS, 0.8))
            text = labels[i] if labels is not None else auto[i]
            colour = colours[i] if colours else "#000000"
            bold = colour != "#000000"
            if rotate:  # turned, its end under the tick
                self.scene.text(
                    x + 2,
                    self.y1 + 9,
                    text,
                    TICK,
                    anchor="end",
                    rotate=rotate,
                    colour=colour,
                    bold=bold,
                )
            else:
                self.scene.text(
                    x, self.y1 + 5, text, TICK, "top", anchor="middle", colour=colour, bold=bold
                )

    def yticks(
        self, values: Sequence[float], labels: Sequence[str] | None = None, marks: bool = True
    ) -> None:
        auto = tick_labels(values)
        for i, v in enumerate(values):
            y = self.y(v)
            if marks:
                self.scene.add(Line(((self.x0 - 3.5, y), (self.x0, y)), AXIS, 0.8))
            text = labels[i] if labels is not None else auto[i]
            self.scene.text(self.x0 - 5.5, y, text, TICK, "middle", anchor="end")

    def title(self, text: str, size: float = TITLE) -> None:
        self.scene.text(self.x0, self.y0 - 6, text, size, "bottom")

    def xlabel(self, text: str, below: float = 18.0) -> None:
        mid = (self.x0 + self.x1) / 2
        self.scene.text(mid, self.y1 + below, text, TICK, "top", anchor="middle")

    def ylabel(self, text: str, left: float) -> None:
        """The y label, turned upright, `left` points left of the box; a newline stacks two lines."""
        mid = (self.y0 + self.y1) / 2
        lines = text.split("\n")
        for k, line in enumerate(lines):
            x = self.x0 - left - (len(lines) - 1 - k) * TICK * 1.2  # the first line leftmost
            self.scene.text(x, mid, line, TICK, anchor="middle", rotate=90)


def ytick_width(values: Sequence[float]) -> float:
    """The room the y tick labels of `values` take."""
    return label_width(tick_labels(values))


def label_width(labels: Sequence[str], size: float = TICK) -> float:
    return max((text_width(t, size) for t in labels), default=0.0)


def legend(
    scene: Scene, entries: Sequence[tuple[str, str, str]], y: float, ncols: int, size: float = 8.0
) -> float:
    """Rows of (swatch, label) centred across the figure from y, at most `ncols` a row and
    no row wider than the figure; entry: (label, colour, shape) with shape "box", "outline",
    "line", "dashed" or "dot". Returns the height used."""
    rows: list[list[tuple[str, str, str, float]]] = []
    for label, colour, shape in entries:
        w = 16 + text_width(label, size)
        used = sum(e[3] + 14 for e in rows[-1]) if rows else 0.0
        if not rows or len(rows[-1]) >= ncols or used + w > scene.width - 12:
            rows.append([])
        rows[-1].append((label, colour, shape, w))
    step = size * 1.6
    for r, row in enumerate(rows):
        x = (scene.width - sum(e[3] for e in row) - 14 * (len(row) - 1)) / 2
        x = max(x, 4.0)
        yy = y + r * step + size * 0.6
        for label, colour, shape, w in row:
            swatch(scene, x, yy, colour, shape)
            scene.text(x + 16, yy, label, size, "middle")
            x += w + 14
    return len(rows) * step


def swatch(scene: Scene, x: float, y: float, colour: str, shape: str) -> None:
    """A legend key 11 points wide centred on y."""
    if shape in ("line", "dashed"):
        scene.add(Line(((x, y), (x + 11, y)), colour, 1.5, "dashed" if shape == "dashed" else None))
    elif shape == "dot":
        scene.add(Mark(x + 5.5, y, 3.0, colour))
    elif shape == "outline":
        scene.add(Rect(x, y - 4, 11, 8, "#ffffff", colour, 2))
    else:
        scene.add(Rect(x, y - 4, 11, 8, colour))
