"""Command-line interface: the `logmem` group, shared options and error handling.

Each command lives in ``logmem/commands/<name>.py`` and follows the same four steps:
parse options, call one library function, pick a reporter, write the output. Library
errors (LogmemError) become "Error: ..." and exit 1; usage errors exit 2.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

from logmem import __version__

F = TypeVar("F", bound=Callable[..., Any])

TEXT_FORMATS = ["text", "markdown", "json", "html"]


class UserError(click.ClickException):
    """A LogmemError shown to the user: message only, exit 1."""

    exit_code = 1


def logs_argument(required: bool = True) -> Callable[[F], F]:
    return click.argument(
        "logs", nargs=-1, required=required, type=click.Path(allow_dash=True, dir_okay=False)
    )


def format_options(formats: list[str] | None = None) -> Callable[[F], F]:
    """-f/--format, -o/--output and --force, shared by every reporting command."""
    choices = formats or TEXT_FORMATS

    def deco(fn: F) -> F:
        fn = click.option("--force/--no-force", default=True, show_default=True,
                          help="Overwrite an existing output file.")(fn)  # fmt: skip
        fn = click.option("-o", "--output", default=None, metavar="FILE",
                          help="Write to FILE ('-' is stdout); the extension picks the format.")(fn)  # fmt: skip
        fn = click.option("-f", "--format", "fmt", type=click.Choice(choices), default=None,
                          help="Output format (default: text, or from the -o extension).")(fn)  # fmt: skip
        return fn

    return deco


def select_options(fn: F) -> F:
    """--launch N and --rank R, shared by commands that read one launch."""
    fn = click.option("--rank", "ranks", multiple=True, metavar="R",
                      help='Only this rank (as printed, e.g. "TP0" or "DP0 TP0 EP0"); repeatable.')(fn)  # fmt: skip
    fn = click.option("--launch", type=int, default=None, metavar="N",
                      help="Which start-up of a file that holds several (0-based; default: all).")(fn)  # fmt: skip
    return fn


class _Group(click.Group):
    """Library errors become "Error: ..." with exit 1, however the CLI is invoked."""

    def invoke(self, ctx: click.Context) -> Any:
        from logmem.errors import LogmemError

        try:
            return super().invoke(ctx)
        except LogmemError as e:
            raise UserError(str(e)) from None


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="logmem")
@click.option("-q", "--quiet", is_flag=True, help="No progress or status messages on stderr.")
@click.pass_context
def cli(ctx: click.Context, quiet: bool) -> None:
    """Turn SGLang start-up logs into a per-rank GPU-memory ledger.

    \b
    logmem analyze tp0.log            the ledger, findings and verdict
    logmem diff a.log b.log           what changed between two launches
    logmem lines tp0.log              every recognised line (debugging)
    """
    ctx.ensure_object(dict)
    ctx.obj["quiet"] = quiet
    from logmem import progress  # the reader draws its bar unless --quiet
    progress.enabled = not quiet


def _register() -> None:
    # Imported here so that each command module can use the helpers above.
    from logmem.commands import COMMANDS

    for command in COMMANDS:
        cli.add_command(command)


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; returns the exit code (0 ok, 1 error, 2 usage)."""
    from logmem.errors import LogmemError

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
    except LogmemError as e:
        click.echo(f"Error: {e}", err=True)
        return 1
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:
        click.echo("Interrupted.", err=True)
        return 130
    return 0


_register()

if __name__ == "__main__":
    sys.exit(main())
