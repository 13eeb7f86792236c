"""The colours every logmem figure shares (report.figures.plots, report.figures.plot_waterfall, the tables'
kind column in report.page's CSS uses the same hues)."""

from __future__ import annotations

KIND_COLOURS = {
    "logged": "#3b6fb6",  # printed by SGLang
    "derived": "#e08a2c",  # difference of two printed readings
    "estimated": "#8e6bb8",  # from SGLang's sizing rules
    "unattributed": "#9a9a9a",  # what the log does not explain
}
ROSE_COLOUR = "#4c9a5b"  # free memory went up
HIGHLIGHT = "#c8362f"
