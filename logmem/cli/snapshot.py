"""`logmem snapshot`: what a PyTorch memory snapshot holds, and with --log what the log cannot show."""

from __future__ import annotations

import click

from logmem.cli.options import TEXT_FORMATS, format_options
from logmem.cli.output import guess_format, write_output


@click.command()
@click.argument(
    "snapshots", nargs=-1, required=True, type=click.Path(allow_dash=True, dir_okay=False)
)
@click.option(
    "--log",
    "logs",
    multiple=True,
    metavar="LOG",
    help="An SGLang log of the same launch (repeat for per-rank files): compare its capture "
    "drop with the first SNAPSHOT's graph pool; the rest is memory outside PyTorch.",
)
@click.option(
    "--frames",
    type=click.IntRange(1, 64),
    default=1,
    show_default=True,
    metavar="N",
    help="Frames per allocation site (the first outside PyTorch and N-1 callers).",
)
@click.option(
    "--top",
    type=click.IntRange(1, 1000),
    default=10,
    show_default=True,
    metavar="N",
    help="Sites and blocks listed per table.",
)
@click.option("--rank", default=None, metavar="R", help="With --log: the rank to compare.")
@click.option("--device", type=int, default=None, metavar="D", help="With --log: the device.")
@click.option("--launch", type=int, default=None, metavar="N", help="With --log: the launch.")
@click.option(
    "--capture",
    type=int,
    default=None,
    metavar="N",
    help="With --log: which complete capture of the rank (0-based; default the first).",
)
@click.option(
    "--max-size",
    "max_mib",
    type=click.IntRange(1, 1 << 20),
    default=1024,
    show_default=True,
    metavar="MIB",
    help="Refuse a snapshot larger than this once decompressed.",
)
@format_options(TEXT_FORMATS)
def snapshot(
    snapshots: tuple[str, ...],
    logs: tuple[str, ...],
    frames: int,
    top: int,
    rank: str | None,
    device: int | None,
    launch: int | None,
    capture: int | None,
    max_mib: int,
    fmt: str | None,
    output: str | None,
    force: bool,
) -> None:
    """Summarize PyTorch memory snapshots (pickles from torch.cuda.memory._dump_snapshot).

    Per device and pool: reserved, allocated, active and requested bytes, the top
    allocation sites and the largest blocks; from the trace, bytes over time per pool.
    A snapshot is untrusted input: it is read as plain data and nothing in it is run.
    gzip and zstd are read by content.
    """
    from logmem.api import read_log
    from logmem.api import snapshot as read_snapshots

    fmt = guess_format(output, fmt, default="text", allowed=tuple(TEXT_FORMATS))
    report = read_snapshots(
        *snapshots,
        log=read_log(*logs) if logs else None,
        frames=frames,
        top=top,
        max_size_mib=max_mib,
        rank=rank,
        device=device,
        launch=launch,
        capture=capture,
    )
    write_output(report.render(fmt), output, force)
