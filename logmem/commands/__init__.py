"""One module per subcommand; COMMANDS is the list the `logmem` group registers."""

from __future__ import annotations

import click

from logmem.commands.analyze import analyze
from logmem.commands.diff import diff
from logmem.commands.estimate import estimate
from logmem.commands.fit import fit
from logmem.commands.lines import lines
from logmem.commands.plot import plot
from logmem.commands.whatif import whatif

COMMANDS: list[click.Command] = [analyze, estimate, lines, diff, fit, whatif, plot]
