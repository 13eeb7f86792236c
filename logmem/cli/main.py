"""Command-line interface: the `logmem` group, shared options and error handling.

Each command lives in ``logmem/cli/<name>.py`` and follows the same four steps:
parse options, call one function of ``logmem.api``, pick a reporter, write the output. Library
errors (LogmemError) become "Error: ..." and exit 1; usage errors exit 2.
"""

from __future__ import annotations

import gc
import sys
import warnings
from typing import Any

import click

from logmem import __version__
from logmem.cli import GC_THRESHOLDS
from logmem.cli.commands import COMMANDS, load_command
from logmem.cli.options import UserError


def _print_version(ctx: click.Context) -> None:
    if ctx.resilient_parsing:
        return
    from logmem.api import reader_summary

    click.echo(f"logmem {__version__}\n{reader_summary()}")
    ctx.exit()


class _Group(click.Group):
    """Library errors become "Error: ..." with exit 1, however the CLI is invoked.

    Subcommands are imported on first use (logmem.cli.commands): a run of one command does
    not import the others' modules."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(COMMANDS) | set(self.commands))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        command = self.commands.get(cmd_name)
        if command is None:
            command = load_command(cmd_name)
            if command is not None:
                self.commands[cmd_name] = command  # later look-ups need no import
        return command

    def invoke(self, ctx: click.Context) -> Any:
        from logmem.errors import LogmemError

        try:
            return super().invoke(ctx)
        except LogmemError as e:
            # An error that names a Python parameter (launch=N) says the option instead (--launch N).
            cli_message = getattr(e, "cli_message", None)
            raise UserError(cli_message() if callable(cli_message) else str(e)) from None


@click.group(
    cls=_Group, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100}
)
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=lambda ctx, _p, value: _print_version(ctx) if value else None,
    help="Show the version, the matcher the reader uses and zstd support, and exit.",
)
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
    from logmem.parse import progress as progress  # the reader draws its bar unless --quiet

    progress.enabled = not quiet


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; returns the exit code (0 ok, 1 error, 2 usage)."""
    # Rarer cycle collections (see GC_THRESHOLDS), restored afterwards: tests and library
    # callers run main() in their own process.
    thresholds = gc.get_threshold()
    gc.set_threshold(*GC_THRESHOLDS)
    try:
        return _run(argv)
    finally:
        gc.set_threshold(*thresholds)


def _run(argv: list[str] | None) -> int:
    from logmem.errors import InputWarning, LogmemError

    def show(message: Warning | str, category: type[Warning], *rest: object) -> None:
        click.echo(f"Warning: {message}", err=True)

    try:
        with warnings.catch_warnings():
            # What the reader warns about (an input read only in part) reaches every command.
            warnings.simplefilter("always", InputWarning)
            warnings.showwarning = show  # type: ignore[assignment]
            cli.main(args=argv, prog_name="logmem", standalone_mode=False)
    except click.exceptions.Exit as e:
        return int(e.exit_code or 0)
    except click.ClickException as e:
        e.show()
        return e.exit_code
    except click.exceptions.Abort as e:
        # click turns Ctrl-C into Abort; the shell's convention for SIGINT is 128 + 2.
        interrupted = isinstance(e.__cause__ or e.__context__, KeyboardInterrupt)
        click.echo("Interrupted." if interrupted else "Aborted.", err=True)
        return 130 if interrupted else 1
    except LogmemError as e:
        click.echo(f"Error: {e}", err=True)
        return 1
    except BrokenPipeError:
        return 0
    except MemoryError:
        click.echo(
            "Error: out of memory: the input is too large to analyse in the memory available "
            "(--max-bytes N reads only the first N bytes of each input)",
            err=True,
        )
        return 1
    except KeyboardInterrupt:
        click.echo("Interrupted.", err=True)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
