"""`logmem plot`: one figure of a launch (waterfall, buckets, ranks) or of a fit, as PNG or SVG."""

from __future__ import annotations

from typing import Any

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
    from logmem.errors import LogmemError
    from logmem.report import plots

    fmt = guess_format(output, fmt, default="png")
    if fmt not in ("png", "svg"):
        raise click.UsageError(
            f"plot writes PNG or SVG; {output} names a .{fmt} file (use -f png|svg)"
        )
    data: Any
    if kind == "fit":
        data = plots.fit_data(_fit_view(logs, launch))
    else:
        from logmem.analysis.attribution import build_ledger
        from logmem.api import read_log, select
        from logmem.report.model import main_rank

        analysis = select(read_log(*logs), launch, ranks)
        L = analysis.launches[0]
        if len(analysis.launches) > 1:
            click.echo(
                f"The input holds {len(analysis.launches)} launches; plotting launch {L.index} "
                "(--launch N picks another).",
                err=True,
            )
        led = build_ledger(L)
        main = main_rank(L)
        if kind == "ranks":
            data = plots.ranks_data(led)
        else:
            chosen = (
                [r for r in led.ranks if r.rank in ranks]
                if ranks
                else [r for r in led.ranks if main is not None and r.rank == main.label]
            )
            if not chosen or not any(r.phases for r in chosen):
                raise LogmemError(
                    "no free-memory readings to plot on " + (", ".join(ranks) or "any rank")
                )
            if kind == "waterfall":
                data = [plots.waterfall_data(r) for r in chosen]
            else:
                data = [f for r in chosen for f in plots.buckets_data(r)]
                if not data:
                    raise LogmemError(
                        "no bucket readings: this log's capture progress bars print no free "
                        "memory per bucket (try --kind waterfall)"
                    )
    fig = plots.draw(kind, data)
    out = plots.figure_bytes(fig, fmt)
    write_output(out.decode("utf-8") if fmt == "svg" else out, output, force)


def _fit_view(logs: tuple[str, ...], launch: int | None) -> Any:
    """The fit view model of `logmem fit` over LOGS."""
    from logmem.errors import LogmemError

    if len(logs) < 2:
        raise click.UsageError("--kind fit needs two or more LOGS (one launch each)")
    try:
        from logmem.compare.core import fit as fit_launches
        from logmem.compare.core import load_launch
        from logmem.report.compare import to_json
    except ImportError:  # the diff/fit stage is another module's; say so rather than crash
        raise LogmemError(
            "--kind fit needs logmem.compare.core, which this installation lacks"
        ) from None
    loaded = [load_launch(spec, launch, str(i + 1)) for i, spec in enumerate(logs)]
    return to_json(fit_launches([L for L, _ in loaded], [r for _, r in loaded]))
