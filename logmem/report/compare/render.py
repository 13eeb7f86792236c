"""Reporters of ``logmem diff``, ``fit`` and ``whatif``: one view model, four formats.

``view(model)`` (report.compare.view) decides every figure once; ``layout`` (report.compare.layout)
writes it as text, Markdown (report.compare.out) or HTML (report.compare.html), and
report.compare.jsonout as the versioned JSON documents logmem.diff/1, logmem.fit/1 and
logmem.whatif/1 (docs/compare.md). Text fits 100 columns; Markdown is meant to be pasted
into a ticket.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from logmem.compare.diff import Diff
from logmem.compare.slope import Fit
from logmem.compare.whatif import WhatIf
from logmem.errors import LogmemError
from logmem.report.compare import html as compare_html
from logmem.report.compare import jsonout as compare_json
from logmem.report.compare.layout import layout
from logmem.report.compare.out import TextOut
from logmem.report.compare.views import View, view

Model = Diff | Fit | WhatIf


def to_json(model: Model) -> dict[str, Any]:
    """The JSON document (a dict) of a Diff, Fit or WhatIf."""
    return compare_json.to_json(model)


def render_json(model: Model) -> str:
    return compare_json.render(view(model))


def render_text(model: Model) -> str:
    return layout(view(model), TextOut(md=False))


def render_markdown(model: Model) -> str:
    return layout(view(model), TextOut(md=True))


def render_html(model: Model) -> str:
    return compare_html.render(view(model))


RENDERERS: dict[str, Callable[[Model], str]] = {
    "text": render_text,
    "markdown": render_markdown,
    "json": render_json,
    "html": render_html,
}


def render(model: Model, fmt: str) -> str:
    if fmt not in RENDERERS:
        raise LogmemError(
            f"{fmt} output is not available for this command; use -f text, markdown, json or html"
        )
    return RENDERERS[fmt](model)


__all__ = [
    "RENDERERS",
    "View",
    "render",
    "render_html",
    "render_json",
    "render_markdown",
    "render_text",
    "to_json",
    "view",
]
