"""A report.figures.scene Scene written as SVG text, with no plotting library.

Every string is XML-escaped (text and attributes) and kept to one line without control
characters (report.safe_text.one_line: XML 1.0 allows none of them, and bidirectional
overrides would reorder what is shown), text stays <text> (searchable, selectable), numbers are printed with two decimals, and nothing depends on the time, a
random id or a hash: the same scene gives the same bytes. The only id the writer makes
itself is the hatch pattern's; an item's gid becomes its id, repeated ones numbered
("largest-bucket", "largest-bucket-2"), so ids stay unique within the figure.
"""

from __future__ import annotations

from xml.sax.saxutils import escape, quoteattr

from logmem.report.figures.scene import FONT, Area, Item, Line, Mark, Rect, Scene, Text, text_width
from logmem.report.safe_text import one_line

_DASH = {"dashed": "3.7,1.6", "dotted": "1,1.65"}
_HATCH = (
    '<defs><pattern id="hatch" patternUnits="userSpaceOnUse" width="6" height="6">'
    '<path d="M-1,1 l2,-2 M0,6 l6,-6 M5,7 l2,-2" stroke="#555555" stroke-width="0.8"/>'
    "</pattern></defs>"
)


def _n(v: float) -> str:
    s = f"{v:.2f}".rstrip("0").rstrip(".")
    return "0" if s == "-0" else s


def _points(pts: tuple[tuple[float, float], ...]) -> str:
    return " ".join(f"{_n(x)},{_n(y)}" for x, y in pts)


class _Ids:
    def __init__(self) -> None:
        self.seen: dict[str, int] = {}

    def attr(self, gid: str | None) -> str:
        if gid is None:
            return ""
        k = self.seen[gid] = self.seen.get(gid, 0) + 1
        return f" id={quoteattr(gid if k == 1 else f'{gid}-{k}')}"


def _item(it: Item, ids: _Ids) -> str:
    gid = ids.attr(it.gid)
    if isinstance(it, Rect):
        stroke = f' stroke="{it.stroke}" stroke-width="{_n(it.stroke_width)}"' if it.stroke else ""
        alpha = f' fill-opacity="{_n(it.opacity)}"' if it.opacity < 1 else ""
        box = f'x="{_n(it.x)}" y="{_n(it.y)}" width="{_n(it.w)}" height="{_n(it.h)}"'
        rect = f'<rect{gid} {box} fill="{it.fill}"{alpha}{stroke}/>'
        return rect + (f'<rect {box} fill="url(#hatch)"/>' if it.hatch else "")
    if isinstance(it, Line):
        dash = f' stroke-dasharray="{_DASH[it.dash]}"' if it.dash else ""
        return (
            f'<polyline{gid} points="{_points(it.points)}" fill="none" stroke="{it.colour}" '
            f'stroke-width="{_n(it.width)}" stroke-linejoin="round"{dash}/>'
        )
    if isinstance(it, Area):
        alpha = f' fill-opacity="{_n(it.opacity)}"' if it.opacity < 1 else ""
        return f'<polygon{gid} points="{_points(it.points)}" fill="{it.fill}"{alpha}/>'
    if isinstance(it, Mark):
        return f'<circle{gid} cx="{_n(it.x)}" cy="{_n(it.y)}" r="{_n(it.r)}" fill="{it.fill}"/>'
    return _text(it, gid)


def _text(t: Text, gid: str) -> str:
    turn = f' transform="rotate({_n(-t.rotate)} {_n(t.x)} {_n(t.y)})"' if t.rotate else ""
    weight = ' font-weight="bold"' if t.bold else ""
    back = ""
    if t.backing:
        w = text_width(t.text, t.size, t.bold)
        x0 = t.x - {"start": 0.0, "middle": w / 2, "end": w}[t.anchor]
        back = (
            f'<rect x="{_n(x0 - 1)}" y="{_n(t.y - 0.8 * t.size)}" width="{_n(w + 2)}" '
            f'height="{_n(1.05 * t.size)}" fill="#ffffff"{turn}/>'
        )
    return (
        f'{back}<text{gid} x="{_n(t.x)}" y="{_n(t.y)}" font-size="{_n(t.size)}" '
        f'text-anchor="{t.anchor}" fill="{t.colour}"{weight}{turn}>{escape(one_line(t.text))}</text>'
    )


def scene_svg(scene: Scene) -> str:
    """The scene as a standalone SVG document (an XML prolog, sized in points)."""
    ids = _Ids()
    w, h = _n(scene.width), _n(scene.height)
    out = [
        '<?xml version="1.0" encoding="utf-8" standalone="no"?>',
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}pt" height="{h}pt" '
        f'viewBox="0 0 {w} {h}" font-family={quoteattr(FONT)}>',
    ]
    if any(isinstance(it, Rect) and it.hatch for it in scene.items):
        out.append(_HATCH)
    out.append(f'<rect width="{w}" height="{h}" fill="#ffffff"/>')
    out.extend(_item(it, ids) for it in scene.items)
    out.append("</svg>")
    return "\n".join(out) + "\n"
