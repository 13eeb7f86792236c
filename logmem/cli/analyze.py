"""`logmem analyze`: the ledger of one or more launches."""

from __future__ import annotations

import click

from logmem.cli.options import (
    INPUT,
    format_options,
    logs_argument,
    max_bytes_option,
    select_options,
)
from logmem.cli.output import guess_format, write_output


@click.command()
@logs_argument()
@select_options
@click.option(
    "--model-config",
    "model_config",
    type=INPUT,
    default=None,
    metavar="PATH",
    help="A config.json (or model folder): show expected sizes beside measured ones.",
)
@max_bytes_option
@format_options()
def analyze(
    logs: tuple[str, ...],
    launch: int | None,
    ranks: tuple[str, ...],
    model_config: str | None,
    fmt: str | None,
    output: str | None,
    force: bool,
) -> None:
    """Per-rank memory ledger, findings and verdict of each launch in LOGS.

    LOGS are SGLang server logs: one merged file, one file per rank, or - for stdin;
    gzip, bz2, xz and zstd are read by content.
    """
    from dataclasses import replace

    from logmem.api import read_log, select
    from logmem.report import render

    analysis = select(read_log(*logs), launch, ranks)
    if model_config is not None:
        from logmem.errors import LogmemError
        from logmem.estimate.model import EstimateError, load_model_config

        try:
            analysis = replace(analysis, model_config=load_model_config(model_config))
        except EstimateError as e:
            raise LogmemError(str(e)) from None
    from logmem.report import FORMATS

    fmt = guess_format(output, fmt, default="text", allowed=tuple(FORMATS))
    write_output(render(analysis, fmt), output, force)
