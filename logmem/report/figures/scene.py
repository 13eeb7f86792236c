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

from collections.abc import Callable
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


_UNITS = frozenset({"GiB", "GiB:", "MiB", "MiB:", "GiB;", "MiB;", "GiB,", "MiB,"})


def _kept(word: str) -> bool:
    """A word a shortened label never drops: a number (with its unit) is what a label carries."""
    return any(ch.isdigit() for ch in word) or word in _UNITS


def elide(text: str, fits: Callable[[str], bool]) -> str:
    """`text` shortened until `fits` says so by dropping words of its names, never a number:
    the longest stretch of words loses a word first, the one farthest from the number it names
    (the head and tail of a label lose their last), the dropped words shown as "…" (with the
    closing brackets a label's tail held). A label that cannot fit with its
    numbers is returned with them, longer than asked."""
    if fits(text):
        return text
    runs: list[list[str]] = []  # alternating: kept words (numbers) and droppable ones
    for w in text.split(" "):
        if not runs or _kept(w) != _kept(runs[-1][0]):
            runs.append([])
        runs[-1].append(w)
    keep = [len(r) for r in runs]

    def render() -> str:
        out = []
        for i, (r, k) in enumerate(zip(runs, keep)):
            if k == len(r) or _kept(r[0]):
                out.extend(r)
            elif 0 < i < len(runs) - 1:
                # Words between numbers name the one after them: the ones nearest it stay
                # (a label's head names the thing and its tail words trail: both lose their last).
                out.extend(["…", *r[len(r) - k :]])
            else:
                gone = " ".join(r[k:])
                shut = ")" * max(gone.count(")") - gone.count("("), 0)
                out.extend([*r[:k], "…" + shut])
        return " ".join(out)

    best = render()
    while not fits(best):
        open_ = [i for i, r in enumerate(runs) if not _kept(r[0]) and keep[i] > 0]
        if not open_:
            break
        i = max(open_, key=lambda j: (len(" ".join(runs[j][: keep[j]])), j))  # widest first
        keep[i] -= 1
        best = render()
    return best


def fit_text(text: str, size: float, room: float) -> str:
    """`text` fitted to `room` points by elide: words of names dropped, numbers kept."""
    return elide(text, lambda t: text_width(t, size) <= room)


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
