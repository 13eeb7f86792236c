"""Command-line interface: parse options, call one library function, pick a reporter, write."""

from __future__ import annotations

import sys

import click

from logmem import __version__
from logmem.errors import LogmemError


class _Error(click.ClickException):
    exit_code = 1


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="logmem")
def cli() -> None:
    """Turn SGLang start-up logs into a per-rank GPU-memory ledger."""


@cli.command()
@click.argument("logs", nargs=-1, required=True, type=click.Path(allow_dash=True, dir_okay=False))
@click.option("-f", "--format", "fmt", type=click.Choice(["json"]), default="json", help="Output format.")
def analyze(logs: tuple[str, ...], fmt: str) -> None:
    """Per-rank memory ledger of one launch (LOGS: files, one per rank, or - for stdin)."""
    from logmem.analysis import read_log
    from logmem.report import jsonout

    try:
        a = read_log(*logs)
    except LogmemError as e:
        raise _Error(str(e)) from None
    click.echo(jsonout.render(a), nl=False)


def main(argv: list[str] | None = None) -> int:
    try:
        cli.main(args=argv, prog_name="logmem", standalone_mode=False)
    except click.exceptions.Exit as e:
        return int(e.exit_code or 0)
    except click.ClickException as e:
        e.show()
        return e.exit_code
    except click.exceptions.Abort:
        click.echo("Aborted.", err=True)
        return 1
    except BrokenPipeError:
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
