"""A figure as a backend-neutral scene: rectangles, lines, areas, marks and text placed in
figure coordinates (points, y down, origin top left).

Every logmem figure is laid out once, as a Scene (report.figures.plots, report.figures.comm_plot,
report.snapshot.plots); report.figures.svg writes a scene as SVG text with no plotting library,
and report.figures.scene_mpl replays it on a matplotlib Figure where a raster or a Figure object is
needed (``logmem plot --format png``, ``logmem.plot`` in a notebook). Text is measured with
an advance-width table of DejaVu Sans (matplotlib's default sans font, the widest of the
common ones), so a label found to fit here fits in any of them.
"""

from __future__ import annotations

from dataclasses import field

from logmem.frozen import frozen, mutable

# Advance widths of DejaVu Sans, in em, for ASCII 32..126 (read from the font's metrics).
_ADVANCE = (
    0.318, 0.401, 0.46, 0.838, 0.636, 0.95, 0.78, 0.275, 0.39, 0.39, 0.5, 0.838, 0.318, 0.361,
    0.318, 0.337, 0.636, 0.636, 0.636, 0.636, 0.636, 0.636, 0.636, 0.636, 0.636, 0.636, 0.337,
    0.337, 0.838, 0.838, 0.838, 0.531, 1.0, 0.684, 0.686, 0.698, 0.77, 0.632, 0.575, 0.775,
    0.752, 0.295, 0.295, 0.656, 0.557, 0.863, 0.748, 0.787, 0.603, 0.787, 0.695, 0.635, 0.611,
    0.732, 0.684, 0.989, 0.685, 0.611, 0.685, 0.39, 0.337, 0.39, 0.838, 0.5, 0.5, 0.613, 0.635,
    0.55, 0.635, 0.615, 0.352, 0.635, 0.634, 0.278, 0.278, 0.579, 0.278, 0.974, 0.634, 0.612,
    0.635, 0.635, 0.411, 0.521, 0.392, 0.634, 0.592, 0.818, 0.592, 0.592, 0.525, 0.636, 0.337,
    0.636, 0.838,
)  # fmt: skip
_BOLD = 1.1  # DejaVu Sans Bold is at most about a tenth wider
# Glyphs hinted to whole pixels (a PNG at 100 dpi) come out up to a few percent wider.
_HINTING = 1.05
# The fonts a figure asks for, DejaVu Sans first; the others are narrower.
FONT = "DejaVu Sans, Bitstream Vera Sans, Arial, Helvetica, sans-serif"


# The non-ASCII characters logmem itself writes into figures.
_OTHER = {"−": 0.838, "±": 0.838, "×": 0.838, "…": 1.0, "—": 1.0, "≈": 0.838, "µ": 0.636}


def text_width(text: str, size: float, bold: bool = False) -> float:
    """The width of `text` at `size` points: ASCII and logmem's own symbols from the table,
    any other character one em (East Asian ideographs are one em wide; most others less)."""
    em = 0.0
    for ch in text:
        o = ord(ch)
        em += _ADVANCE[o - 32] if 32 <= o < 127 else _OTHER.get(ch, 1.0)
    return em * size * _HINTING * (_BOLD if bold else 1.0)


def fit_text(text: str, size: float, room: float) -> str:
    """`text` cut (with an ellipsis) to fit `room` points; at least 12 characters are kept."""
    if text_width(text, size) <= room:
        return text
    cut = text
    while len(cut) > 12 and text_width(cut + "…", size) > room:
        cut = cut[:-1]
    return cut.rstrip() + "…"


@frozen
class Rect:
    x: float
    y: float
    w: float
    h: float
    fill: str
    stroke: str | None = None
    stroke_width: float = 0.0
    opacity: float = 1.0
    hatch: bool = False  # diagonal lines over the fill: "no formula" cells
    gid: str | None = None


@frozen
class Line:
    """A polyline; dash is None (solid), "dashed" or "dotted"."""

    points: tuple[tuple[float, float], ...]
    colour: str
    width: float = 1.0
    dash: str | None = None
    gid: str | None = None


@frozen
class Area:
    """A filled polygon (an uncertainty band)."""

    points: tuple[tuple[float, float], ...]
    fill: str
    opacity: float = 1.0
    gid: str | None = None


@frozen
class Mark:
    """A round marker of radius r."""

    x: float
    y: float
    r: float
    fill: str
    gid: str | None = None


@frozen
class Text:
    """One line of text; y is its baseline; anchor "start", "middle" or "end"; rotate in
    degrees, counter-clockwise about (x, y); backing: a white box behind it."""

    x: float
    y: float
    text: str
    size: float = 9.0
    anchor: str = "start"
    colour: str = "#000000"
    bold: bool = False
    rotate: float = 0.0
    backing: bool = False
    gid: str | None = None


Item = Rect | Line | Area | Mark | Text

# Where the baseline sits for a line of text centred on / hanging from / standing on y.
_BASELINE = {"baseline": 0.0, "middle": 0.35, "top": 0.76, "bottom": -0.24}


@mutable
class Scene:
    """A figure: its size in points and what is drawn on it, in drawing order."""

    width: float
    height: float
    items: list[Item] = field(default_factory=list)

    def add(self, item: Item) -> None:
        self.items.append(item)

    def text(
        self,
        x: float,
        y: float,
        text: str,
        size: float = 9.0,
        valign: str = "baseline",
        anchor: str = "start",
        colour: str = "#000000",
        bold: bool = False,
        rotate: float = 0.0,
        backing: bool = False,
        gid: str | None = None,
    ) -> Text:
        """Add a line of text aligned vertically on y ("baseline", "middle", "top", "bottom")."""
        y += _BASELINE[valign] * size
        t = Text(x, y, text, size, anchor, colour, bold, rotate, backing, gid)
        self.items.append(t)
        return t
