"""COMMANDS: the subcommands of the `logmem` group, one module each, imported when used.

``logmem analyze`` imports logmem/cli/analyze.py and nothing of the other commands (click's
"lazy group" pattern, in logmem.cli.main). ``logmem --help`` lists every command, so it
imports them all, as before.
"""

from __future__ import annotations

import importlib

import click

# name -> module under logmem.cli that defines a click command of the same name, in the
# order the commands were registered (the help lists them sorted, as click does).
COMMANDS: dict[str, str] = {
    "analyze": "analyze",
    "estimate": "estimate",
    "lines": "lines",
    "diff": "diff",
    "fit": "fit",
    "whatif": "whatif",
    "plot": "plot",
    "snapshot": "snapshot",
}


def load_command(name: str) -> click.Command | None:
    """The command `name` (imported now), or None when there is none of that name."""
    module = COMMANDS.get(name)
    if module is None:
        return None
    command = getattr(importlib.import_module(f"logmem.cli.{module}"), name)
    assert isinstance(command, click.Command)
    return command
