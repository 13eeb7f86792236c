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


def env_options(fn: F) -> F:
    """--env KEY=VALUE (repeatable) and --env-file FILE: the environment SGLang ran with, which
    sizes communication buffers (DeepEP dispatch tokens, custom all-reduce v2, staging) and
    never appears in its own lines. Read with logmem.api.read_environment."""
    fn = click.option(
        "--env-file",
        "env_file",
        default=None,
        metavar="FILE",
        type=click.Path(exists=True, dir_okay=False),
        help="A file of KEY=VALUE lines (# comments, export allowed); --env wins over it.",
    )(fn)
    fn = click.option(
        "--env",
        "env",
        multiple=True,
        metavar="KEY=VALUE",
        help="An environment variable SGLang ran with, e.g. "
        "SGLANG_DEEPEP_NUM_MAX_DISPATCH_TOKENS_PER_RANK=64; repeatable.",
    )(fn)
    return fn


def environment(
    ctx: click.Context, env: tuple[str, ...], env_file: str | None
) -> tuple[tuple[str, str, str], ...]:
    """The --env / --env-file options read; a malformed entry is a usage error (exit 2)."""
    from logmem.api import read_environment
    from logmem.errors import EnvError

    try:
        return read_environment(env, env_file)
    except EnvError as e:
        raise click.BadParameter(str(e), ctx, param_hint="'--env'") from None
