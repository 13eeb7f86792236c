"""JSON of what a launch says about itself before any memory line: the model it names (by the
first line that names it) and the echoed command line its flags are read from."""

from __future__ import annotations

from typing import Any

from logmem.analysis.model_name import architecture, model_name
from logmem.model.records import Launch


def command_json(L: Launch) -> dict[str, Any] | None:
    """The echoed command line the launch's flags are read from (model.command), or None."""
    cmd, flags = L.command, L.command_flags
    if cmd is None or flags is None:
        return None
    return {
        "line": flags.line,
        "last_line": flags.last_line,
        "cut_seams": [s.line for s in cmd.seams if s.kind == "cut"],
        "cuts_whole": cmd.cuts_whole,
        "flags": [
            {
                "name": f.name,
                "value": None if f.split else f.value,
                "split": f.split,
                "line": f.line,
            }
            for f in flags.flags
        ],
    }


def model_named_json(L: Launch) -> dict[str, Any]:
    """The model's name and the line that names it (analysis.model_name), and the architecture
    Load weight end printed; nulls for what the log does not give."""
    named = model_name(L)
    return {
        "name": named.name if named else None,
        "named_by": named.by.value if named else None,
        "line": named.line if named else None,
        "architecture": architecture(L),
    }
