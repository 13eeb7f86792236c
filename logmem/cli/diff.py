"""`logmem diff`: what changed between two launches, and the graph slope when only max bs did."""

from __future__ import annotations

import click

from logmem.cli.options import LAUNCH_SPEC, format_options
from logmem.cli.output import guess_format, write_output

COMPARE_FORMATS = ["text", "markdown", "json", "html"]


@click.command()
@click.argument("a", metavar="A", type=LAUNCH_SPEC)
@click.argument("b", metavar="B", type=LAUNCH_SPEC)
@click.option(
    "--launch",
    type=int,
    default=None,
    metavar="N",
    help="Which start-up of a file that holds several (0-based), for A and B.",
)
@click.option(
    "--launch-b",
    type=int,
    default=None,
    metavar="M",
    help="A different start-up for B (e.g. `diff x.log x.log --launch 0 --launch-b 1`).",
)
@click.option(
    "--allow-diff",
    "allow",
    multiple=True,
    metavar="KEY",
    help="Fit a slope although this server_args key also differs; repeatable.",
)
@click.option("--no-slope", is_flag=True, help="Compare only; do not check for or fit a slope.")
@format_options(COMPARE_FORMATS)
def diff(
    a: str,
    b: str,
    launch: int | None,
    launch_b: int | None,
    allow: tuple[str, ...],
    no_slope: bool,
    fmt: str | None,
    output: str | None,
    force: bool,
) -> None:
    """Compare launch A with launch B: settings, SGLang wording, phases, KV tokens and graphs.

    A and B are SGLang logs ('-' is stdin, for one of them), or comma-separated
    per-rank files of one launch (tp0.log,tp1.log). Any two launches are compared.
    When the memory-relevant settings differ only in cuda_graph_max_bs / cuda_graph_bs,
    the graph memory per row is fitted too; otherwise the report says which keys stand
    in the way (--allow-diff KEY fits anyway).
    """
    from logmem.api import diff as compare
    from logmem.report.compare.render import render

    if a == "-" and b == "-":
        raise click.UsageError("only one of A and B can be '-' (stdin)")
    result = compare(a, b, launch=launch, launch_b=launch_b, allow=allow, slope=not no_slope)
    fmt = guess_format(output, fmt, default="text")
    write_output(render(result.model, fmt), output, force)
