"""`logmem analyze`: the ledger of one or more launches."""

from __future__ import annotations

import click

from logmem.cli import format_options, logs_argument, select_options
from logmem.output import guess_format, write_output


@click.command()
@logs_argument()
@select_options
@format_options()
def analyze(
    logs: tuple[str, ...], launch: int | None, ranks: tuple[str, ...], fmt: str | None,
    output: str | None, force: bool,
) -> None:  # fmt: skip
    """Per-rank memory ledger, findings and verdict of each launch in LOGS.

    LOGS are SGLang server logs: one merged file, one file per rank, or - for stdin;
    gzip, bz2, xz and zstd are read by content.
    """
    from logmem.analysis import read_log, select
    from logmem.report import render

    analysis = select(read_log(*logs), launch, ranks)
    fmt = guess_format(output, fmt, default="text")
    write_output(render(analysis, fmt), output, force)
