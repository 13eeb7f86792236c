"""`logmem analyze`: the ledger of one or more launches."""

from __future__ import annotations

import click

from logmem.cli.options import (
    INPUT,
    env_options,
    environment,
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
@env_options
@max_bytes_option
@format_options()
@click.pass_context
def analyze(
    ctx: click.Context,
    logs: tuple[str, ...],
    launch: int | None,
    ranks: tuple[str, ...],
    model_config: str | None,
    env: tuple[str, ...],
    env_file: str | None,
    fmt: str | None,
    output: str | None,
    force: bool,
) -> None:
    """Per-rank memory ledger, findings and verdict of each launch in LOGS.

    LOGS are SGLang server logs: one merged file, one file per rank, or - for stdin;
    gzip, bz2, xz and zstd are read by content.
    """
    from logmem.api import analyze as read_and_select
    from logmem.report import FORMATS, render

    analysis = read_and_select(
        *logs,
        launch=launch,
        ranks=ranks,
        model_config=model_config,
        env=environment(ctx, env, env_file),
    )
    fmt = guess_format(output, fmt, default="text", allowed=tuple(FORMATS))
    write_output(render(analysis, fmt), output, force)
