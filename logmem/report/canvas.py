"""The canvas every logmem figure is drawn on: its style, colours and output.

report.plots (the ledger's figures), report.comm_plot and report.snapshot_plots draw on it.
matplotlib is imported lazily, inside the functions, so importing this module costs nothing
for text or JSON; figures use the object API (``matplotlib.figure.Figure`` on the Agg
canvas), never pyplot, so no global figure state leaks between reports or threads. Output
stamps no date or version, so a figure's bytes are stable across runs."""

from __future__ import annotations

import io
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.figure import Figure

KIND_COLOURS = {
    "logged": "#3b6fb6",  # printed by SGLang
    "derived": "#e08a2c",  # difference of two printed readings
    "estimated": "#8e6bb8",  # from SGLang's sizing rules
    "unattributed": "#9a9a9a",  # what the log does not explain
}
ROSE_COLOUR = "#4c9a5b"  # free memory went up
HIGHLIGHT = "#c8362f"


def lit(text: str) -> str:
    """Log text drawn literally: a '$' pair in a model path must not start mathtext."""
    return text.replace("$", r"\$")


_RC: dict[Any, Any] = {
    "font.size": 9.0,
    "axes.titlesize": 10.0,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "svg.fonttype": "none",  # text stays text: searchable, selectable, small
}


@contextmanager
def plot_style(salt: str = "logmem") -> Iterator[None]:
    """Temporary rcParams (restored on exit); hashsalt keeps SVG ids stable between runs."""
    import matplotlib

    rc: dict[Any, Any] = {**_RC, "svg.hashsalt": salt}
    with matplotlib.rc_context(rc):
        yield


def new_figure(width: float, height: float) -> Figure:
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), dpi=100, layout="constrained")


def figure_bytes(fig: Figure, fmt: str, salt: str = "logmem") -> bytes:
    """Save a figure as "svg" or "png" with no date or version stamped in (stable across runs)."""
    if fmt not in ("svg", "png"):
        raise ValueError(f"unknown image format {fmt!r}")
    buf = io.BytesIO()
    meta: dict[str, Any] = {"Date": None} if fmt == "svg" else {"Software": None}
    with plot_style(salt):
        fig.savefig(buf, format=fmt, metadata=meta)
    return buf.getvalue()


def figure_svg(fig: Figure, salt: str = "logmem") -> str:
    return figure_bytes(fig, "svg", salt).decode("utf-8")
