"""Options every command shares: the LOGS argument, -f/-o, --launch/--rank, and UserError."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

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
        fn = click.option(
            "--force/--no-force",
            default=True,
            show_default=True,
            help="Overwrite an existing output file.",
        )(fn)
        fn = click.option(
            "-o",
            "--output",
            default=None,
            metavar="FILE",
            help="Write to FILE ('-' is stdout); the extension picks the format.",
        )(fn)
        fn = click.option(
            "-f",
            "--format",
            "fmt",
            type=click.Choice(choices),
            default=None,
            help="Output format (default: text, or from the -o extension).",
        )(fn)
        return fn

    return deco


def select_options(fn: F) -> F:
    """--launch N and --rank R, shared by commands that read one launch."""
    fn = click.option(
        "--rank",
        "ranks",
        multiple=True,
        metavar="R",
        help='Only this rank (as printed, e.g. "TP0" or "DP0 TP0 EP0"); repeatable.',
    )(fn)
    fn = click.option(
        "--launch",
        type=int,
        default=None,
        metavar="N",
        help="Which start-up of a file that holds several (0-based; default: all).",
    )(fn)
    return fn
