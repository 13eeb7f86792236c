"""One module per subcommand; COMMANDS is the list the `logmem` group registers."""

from __future__ import annotations

import click

from logmem.commands.analyze import analyze
from logmem.commands.estimate import estimate
from logmem.commands.lines import lines

COMMANDS: list[click.Command] = [analyze, estimate, lines]
