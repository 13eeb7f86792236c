"""`logmem fit`: graph memory per row by least squares over launches that differ in max bs."""

from __future__ import annotations

import click

from logmem.cli.diff import COMPARE_FORMATS
from logmem.cli.options import LAUNCH_SPEC, format_options
from logmem.cli.output import guess_format, write_output


@click.command()
@click.argument("logs", nargs=-1, required=True, metavar="LOG LOG [LOG...]", type=LAUNCH_SPEC)
@click.option(
    "--launch",
    type=int,
    default=None,
    metavar="N",
    help="Which start-up of files that hold several (0-based), for every LOG.",
)
@click.option(
    "--allow-diff",
    "allow",
    multiple=True,
    metavar="KEY",
    help="Fit although this server_args key also differs; repeatable.",
)
@format_options(COMPARE_FORMATS)
def fit(
    logs: tuple[str, ...],
    launch: int | None,
    allow: tuple[str, ...],
    fmt: str | None,
    output: str | None,
    force: bool,
) -> None:
    """Fit largest-bucket and static-buffer memory against rows over two or more launches.

    Each LOG is one launch: a file, '-' (stdin, once) or comma-separated per-rank
    files. The launches must differ only in cuda_graph_max_bs / cuda_graph_bs
    (unless --allow-diff); two launches give exactly the slope of `logmem diff`.
    """
    from logmem.api import fit as fit_launches
    from logmem.report.compare.render import render

    if len(logs) < 2:
        raise click.UsageError("fit needs at least two logs")
    if sum(1 for x in logs if x == "-") > 1:
        raise click.UsageError("only one LOG can be '-' (stdin)")
    result = fit_launches(*logs, launch=launch, allow=allow)
    fmt = guess_format(output, fmt, default="text")
    write_output(render(result.model, fmt), output, force)
