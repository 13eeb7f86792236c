"""Reporters: one model rendered as text, Markdown, JSON or HTML; each is `render(model) -> str`."""

from __future__ import annotations

import importlib
from typing import Any

# format name -> module holding `render(analysis) -> str` (imported only when used, so
# that `logmem --help` and JSON output never import pandas or matplotlib).
FORMATS: dict[str, str] = {
    "text": "logmem.report.text",
    "markdown": "logmem.report.markdown",
    "json": "logmem.report.jsonout",
    "html": "logmem.report.html",
}


def render(model: Any, fmt: str) -> str:
    """Render an Analysis in the named format."""
    module = importlib.import_module(FORMATS[fmt])
    out: str = module.render(model)
    return out
