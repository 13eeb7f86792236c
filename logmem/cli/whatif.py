"""`logmem whatif`: SGLang's KV rule replayed on one launch for other settings, and the mfs window."""

from __future__ import annotations

import click

from logmem.cli.diff import COMPARE_FORMATS
from logmem.cli.options import (
    LAUNCH_SPEC,
    MAX_GIB,
    MAX_MIB_PER_ROW,
    MAX_ROWS,
    MAX_TOKENS,
    FiniteFloat,
    format_options,
)
from logmem.cli.output import guess_format, write_output


@click.command()
@click.argument("log", metavar="LOG", type=LAUNCH_SPEC)
@click.option(
    "--launch", type=int, default=None, metavar="N", help="Which start-up of LOG (0-based)."
)
@click.option(
    "--mem-fraction-static",
    "mfs",
    type=FiniteFloat(),
    default=None,
    metavar="X",
    help="Predict for this mem_fraction_static (default: the launch's).",
)
@click.option(
    "--cuda-graph-max-bs",
    "max_bs",
    type=click.IntRange(1, MAX_ROWS),
    default=None,
    metavar="N",
    help="Predict for this largest captured batch size.",
)
@click.option(
    "--mib-per-row",
    type=FiniteFloat(-MAX_MIB_PER_ROW, MAX_MIB_PER_ROW, unit="MiB per row"),
    default=None,
    metavar="M",
    help="Largest-bucket growth per row (from `logmem diff`/`fit`).",
)
@click.option(
    "--static-mib-per-row",
    type=FiniteFloat(-MAX_MIB_PER_ROW, MAX_MIB_PER_ROW, unit="MiB per row"),
    default=None,
    metavar="M",
    help="Static-buffer growth per row, with --mib-per-row.",
)
@click.option(
    "--slope-from",
    nargs=2,
    type=LAUNCH_SPEC,
    default=None,
    metavar="A B",
    help="Measure the slope from two launches that differ only in max bs.",
)
@click.option(
    "--allow-diff",
    "allow",
    multiple=True,
    metavar="KEY",
    help="With --slope-from: fit although this key also differs; repeatable.",
)
@click.option(
    "--activation-reserve",
    type=FiniteFloat(0, MAX_GIB, unit="GiB"),
    default=0.0,
    show_default=True,
    metavar="GIB",
    help="Free memory to keep after capture (the end of start-up) for activations; a low "
    "point earlier in start-up only has to stay >= 0.",
)
@click.option(
    "--context-length",
    type=click.IntRange(1, MAX_TOKENS),
    default=None,
    metavar="L",
    help="Context length for the one-full-context check (default: the launch's).",
)
@click.option(
    "--logged-mem-fraction-static",
    "logged_mfs",
    type=FiniteFloat(),
    default=None,
    metavar="X",
    help="The mem_fraction_static LOG ran with, when its log prints no server_args.",
)
@format_options(COMPARE_FORMATS)
def whatif(
    log: str,
    launch: int | None,
    mfs: float | None,
    max_bs: int | None,
    mib_per_row: float | None,
    static_mib_per_row: float | None,
    slope_from: tuple[str, str] | None,
    allow: tuple[str, ...],
    activation_reserve: float,
    context_length: int | None,
    logged_mfs: float | None,
    fmt: str | None,
    output: str | None,
    force: bool,
) -> None:
    """Predict KV tokens, graph memory and headroom at other settings, and the feasible
    mem_fraction_static window, from one launch's ledger and SGLang's own KV rule.

    LOG is a file, '-' for stdin, or comma-separated per-rank files of one launch.
    """
    from logmem.api import whatif as predict
    from logmem.report.compare.render import render

    if mib_per_row is not None and slope_from:
        raise click.UsageError("give --mib-per-row or --slope-from, not both")
    if static_mib_per_row is not None and mib_per_row is None:
        raise click.UsageError("--static-mib-per-row needs --mib-per-row")
    if [log, *(slope_from or ())].count("-") > 1:
        raise click.UsageError("only one input can be '-' (stdin)")
    if activation_reserve < 0:
        raise click.UsageError("--activation-reserve cannot be negative")
    result = predict(
        log,
        launch=launch,
        mem_fraction_static=mfs,
        cuda_graph_max_bs=max_bs,
        mib_per_row=mib_per_row,
        static_mib_per_row=static_mib_per_row,
        slope_from=slope_from,
        allow=allow,
        activation_reserve_gib=activation_reserve,
        context_length=context_length,
        logged_mem_fraction_static=logged_mfs,
    )
    fmt = guess_format(output, fmt, default="text")
    write_output(render(result.model, fmt), output, force)
