"""`logmem plot`: one figure of a launch (waterfall, buckets, ranks) or of a fit, as PNG or SVG."""

from __future__ import annotations

import click

from logmem.cli.options import force_option, logs_argument, output_option, select_options
from logmem.cli.output import guess_format, write_output

KINDS = ["waterfall", "buckets", "ranks", "fit"]


@click.command()
@logs_argument()
@select_options
@click.option(
    "--kind",
    type=click.Choice(KINDS),
    default="waterfall",
    show_default=True,
    help="waterfall: free memory phase by phase per rank; buckets: free memory at each graph "
    "bucket; ranks: ranks side by side; fit: largest bucket against rows over 2+ LOGS.",
)
@click.option(
    "-f",
    "--format",
    "fmt",
    type=click.Choice(["png", "svg"]),
    default=None,
    help="Image format (default: from the -o extension, else png).",
)
@output_option("Write to FILE.png or FILE.svg ('-' is stdout; PNG is refused on a terminal).")
@force_option
def plot(
    logs: tuple[str, ...],
    launch: int | None,
    ranks: tuple[str, ...],
    kind: str,
    fmt: str | None,
    output: str | None,
    force: bool,
) -> None:
    """Draw one figure from LOGS.

    For waterfall, buckets and ranks, LOGS are one launch (one merged file or one file
    per rank); --rank picks the ranks of a waterfall (default: the rank that printed
    the capture bars). For fit, each LOG is one launch (comma-separated per-rank files
    allowed), as for `logmem fit`.
    """
    import warnings

    from logmem.api import PlotNote, plot_svg
    from logmem.api import plot as draw
    from logmem.report.figures.plots import figure_bytes

    fmt = guess_format(output, fmt, default="png")
    if fmt not in ("png", "svg"):
        raise click.UsageError(
            f"plot writes PNG or SVG; {output} names a .{fmt} file (use -f png|svg)"
        )
    if kind == "fit" and len(logs) < 2:
        raise click.UsageError("--kind fit needs two or more LOGS (one launch each)")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", PlotNote)
        # SVG is written by logmem itself; only a PNG needs matplotlib's rasteriser.
        if fmt == "svg":
            out: str | bytes = plot_svg(list(logs), kind, rank=list(ranks), launch=launch)
        else:
            out = figure_bytes(draw(list(logs), kind, rank=list(ranks), launch=launch), "png")
    for w in caught:
        if issubclass(w.category, PlotNote):
            click.echo(str(w.message), err=True)
    write_output(out, output, force)
