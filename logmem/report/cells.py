"""Table cells for plain-text tables: one rule for a cell wider than its column."""

from __future__ import annotations

import textwrap


def fold_cell(cell: str, width: int) -> list[str]:
    """A cell as the lines of its column, wrapped at words; an indented label's continuation
    lines are indented two more spaces, so they read as the rest of the same label."""
    if len(cell) <= width:
        return [cell]
    lead = " " * (len(cell) - len(cell.lstrip(" ")))
    return textwrap.wrap(
        cell, width, initial_indent="", subsequent_indent=lead + "  ", break_on_hyphens=False
    ) or [cell[:width]]
