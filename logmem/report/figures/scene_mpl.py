"""A report.figures.scene Scene replayed on a matplotlib Figure: the same layout as the SVG, for PNG
output and for notebooks that want a Figure object.

matplotlib is imported here only, when a Figure is asked for; the object API (no pyplot
state), an Agg canvas. One axes spans the figure, in the scene's own coordinates (points, y
down), so every item lands where the SVG writer puts it.
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING, Any

from logmem.report.figures.scene import Area, Line, Mark, Rect, Scene

if TYPE_CHECKING:
    from matplotlib.figure import Figure

_DASH = {None: "-", "dashed": "--", "dotted": ":"}
_HA = {"start": "left", "middle": "center", "end": "right"}


def scene_figure(scene: Scene) -> Figure:
    from matplotlib.figure import Figure
    from matplotlib.patches import Circle, Polygon, Rectangle

    fig = Figure(figsize=(scene.width / 72, scene.height / 72), dpi=100)
    ax = fig.add_axes((0.0, 0.0, 1.0, 1.0))
    ax.set_xlim(0, scene.width)
    ax.set_ylim(scene.height, 0)
    ax.set_axis_off()
    for it in scene.items:
        if isinstance(it, Rect):
            ax.add_patch(
                Rectangle(
                    (it.x, it.y),
                    it.w,
                    it.h,
                    facecolor=it.fill,
                    alpha=it.opacity if it.opacity < 1 else None,
                    edgecolor=it.stroke or "none",
                    linewidth=it.stroke_width,
                    hatch="//" if it.hatch else None,
                    gid=it.gid,
                )
            )
        elif isinstance(it, Line):
            xs, ys = zip(*it.points)
            ax.plot(
                xs, ys, color=it.colour, linewidth=it.width, linestyle=_DASH[it.dash], gid=it.gid
            )
        elif isinstance(it, Area):
            ax.add_patch(
                Polygon(it.points, facecolor=it.fill, alpha=it.opacity, linewidth=0, gid=it.gid)
            )
        elif isinstance(it, Mark):
            ax.add_patch(Circle((it.x, it.y), it.r, facecolor=it.fill, linewidth=0, gid=it.gid))
        else:
            box: dict[str, Any] | None = (
                {"facecolor": "white", "edgecolor": "none", "pad": 1} if it.backing else None
            )
            ax.text(
                it.x,
                it.y,
                # Log text drawn literally: a '$' pair in a model path must not start mathtext.
                it.text.replace("$", r"\$"),
                fontsize=it.size,
                ha=_HA[it.anchor],
                va="baseline",
                color=it.colour,
                fontweight="bold" if it.bold else "normal",
                rotation=it.rotate,
                rotation_mode="anchor",
                bbox=box,
                gid=it.gid,
            )
    return fig


def figure_bytes(fig: Figure, fmt: str) -> bytes:
    """A Figure as "png" or "svg" with no date or software stamped in (stable across runs)."""
    import matplotlib

    if fmt not in ("svg", "png"):
        raise ValueError(f"unknown image format {fmt!r}")
    buf = io.BytesIO()
    meta: dict[str, Any] = {"Date": None} if fmt == "svg" else {"Software": None}
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "logmem"}):
        fig.savefig(buf, format=fmt, metadata=meta)
    return buf.getvalue()
