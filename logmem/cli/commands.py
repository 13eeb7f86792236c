"""COMMANDS: the subcommands the `logmem` group registers, one module each."""

from __future__ import annotations

import click

from logmem.cli.analyze import analyze
from logmem.cli.diff import diff
from logmem.cli.estimate import estimate
from logmem.cli.fit import fit
from logmem.cli.lines import lines
from logmem.cli.plot import plot
from logmem.cli.snapshot import snapshot
from logmem.cli.whatif import whatif

COMMANDS: list[click.Command] = [analyze, estimate, lines, diff, fit, whatif, plot, snapshot]
