"""Options every command shares: the LOGS argument, -f/-o, --launch/--rank, and UserError.

Input parameters use :class:`InputPath`, which notes each path in the click context so that
``-o`` can never name one of them (logmem.cli.output). Numeric options use bounded types:
NaN, infinities and values outside physical sense are usage errors (exit 2), not tracebacks.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from typing import Any, TypeVar

import click

from logmem.cli.output import note_inputs, note_output

F = TypeVar("F", bound=Callable[..., Any])

TEXT_FORMATS = ["text", "markdown", "json", "html"]

# Bounds of physical sense for numeric options, far beyond any real deployment: past them
# a value is a typo (or an attack), and arithmetic on it would overflow or run for minutes.
MAX_ROWS = 1 << 20  # graph batch size
MAX_TOKENS = 1 << 32  # context length
MAX_GIB = 1 << 14  # memory of one device, GiB
MAX_MIB_PER_ROW = float(1 << 20)  # graph memory per row, MiB


class UserError(click.ClickException):
    """A LogmemError shown to the user: message only, exit 1."""

    exit_code = 1


class InputPath(click.ParamType):  # type: ignore[type-arg]  # generic from click 8.3 on
    """A path (or '-') the command reads. Nothing is checked here: a missing or unreadable
    file is the reader's error (exit 1, as the README says), not a usage error.

    With ``spec=True`` the value may be comma-separated per-rank files of one launch."""

    name = "path"

    def __init__(self, spec: bool = False) -> None:
        self.spec = spec

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        text = str(value)
        parts = [text]
        if self.spec and "," in text:
            parts += [p for p in text.split(",") if p]
        note_inputs(ctx, parts)
        # A model folder's config.json is what is read.
        note_inputs(ctx, [os.path.join(p, "config.json") for p in parts if os.path.isdir(p)])
        return text


INPUT = InputPath()
LAUNCH_SPEC = InputPath(spec=True)


class FiniteFloat(click.ParamType):  # type: ignore[type-arg]  # generic from click 8.3 on
    """A float within [lo, hi] (or (lo, hi] with ``lo_open``); NaN and infinities never pass.
    Without bounds only finiteness is checked (the library checks its own ranges)."""

    name = "float"

    def __init__(
        self, lo: float = -math.inf, hi: float = math.inf, lo_open: bool = False, unit: str = ""
    ) -> None:
        self.lo, self.hi, self.lo_open, self.unit = lo, hi, lo_open, unit

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        try:
            x = float(value)
        except (TypeError, ValueError, OverflowError):
            self.fail(f"{value!r} is not a number", param, ctx)
        if not math.isfinite(x):
            self.fail(f"{value} is not a finite number", param, ctx)
        low_ok = x > self.lo if self.lo_open else x >= self.lo
        if not low_ok or x > self.hi:
            left = "(" if self.lo_open else "["
            unit = f" {self.unit}" if self.unit else ""
            self.fail(f"{value} is outside {left}{self.lo:g}, {self.hi:g}]{unit}", param, ctx)
        return x


class ByteSize(click.ParamType):  # type: ignore[type-arg]  # generic from click 8.3 on
    """A positive byte count: 1000000, or with a binary suffix (64K, 500M, 10G, 1T)."""

    name = "size"
    _UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, int):
            return value
        text = str(value).strip().upper().removesuffix("IB").removesuffix("B")
        unit = text[-1:] if text[-1:] in self._UNITS else ""
        digits = text[: len(text) - len(unit)]
        if not digits.isdigit() or len(digits) > 15 or int(digits) < 1:
            self.fail(f"{value!r} is not a positive size (e.g. 1000000, 500M, 10G)", param, ctx)
        return int(digits) * self._UNITS[unit]


def _dedupe_inputs(
    ctx: click.Context, param: click.Parameter, value: tuple[str, ...]
) -> tuple[str, ...]:
    """The same file twice (by name, or through a link) is read once, with a warning: it is
    one launch, not two. '-' twice is an error (exit 1, as the library says it): standard
    input can be read only once."""
    if value.count("-") > 1:
        from logmem.errors import LogmemError

        raise LogmemError("only one LOG can be '-' (standard input is read once)")
    seen: dict[tuple[int, int] | str, str] = {}
    kept: list[str] = []
    for path in value:
        if path == "-":
            kept.append(path)
            continue
        try:
            st = os.stat(path)
            key: tuple[int, int] | str = (st.st_dev, st.st_ino)
        except OSError:
            key = path
        if key in seen:
            same = "" if seen[key] == path else f" (the same file as {seen[key]})"
            click.echo(f"Warning: {path} is given twice{same}; read once.", err=True)
            continue
        seen[key] = path
        kept.append(path)
    return tuple(kept)


def logs_argument(required: bool = True) -> Callable[[F], F]:
    return click.argument("logs", nargs=-1, required=required, type=INPUT, callback=_dedupe_inputs)


def _output_callback(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    note_output(ctx, value)
    return value


def output_option(help: str = "Write to FILE ('-' is stdout).") -> Callable[[F], F]:
    """-o/--output: checked at once (not a folder, not a missing folder, not an input)."""
    return click.option(
        "-o", "--output", default=None, metavar="FILE", help=help, callback=_output_callback
    )


def force_option(fn: F) -> F:
    return click.option(
        "--force/--no-force",
        default=True,
        show_default=True,
        help="Overwrite an existing output file (never an input).",
    )(fn)


# Short names users type for a format (the -o extensions .md and .txt say the same).
FORMAT_ALIASES = {"md": "markdown", "txt": "text"}


class FormatChoice(click.Choice):  # type: ignore[type-arg]
    """-f's choices, also under their short names (``-f md`` is markdown)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and FORMAT_ALIASES.get(value.lower()) in self.choices:
            value = FORMAT_ALIASES[value.lower()]
        return super().convert(value, param, ctx)


def format_options(formats: list[str] | None = None) -> Callable[[F], F]:
    """-f/--format, -o/--output and --force, shared by every reporting command."""
    choices = formats or TEXT_FORMATS

    def deco(fn: F) -> F:
        fn = force_option(fn)
        fn = output_option("Write to FILE ('-' is stdout); the extension picks the format.")(fn)
        fn = click.option(
            "-f",
            "--format",
            "fmt",
            type=FormatChoice(choices),
            default=None,
            help="Output format (default: text, or from the -o extension); md and txt also work.",
        )(fn)
        return fn

    return deco


def _max_bytes_callback(ctx: click.Context, param: click.Parameter, value: int | None) -> None:
    from logmem.api import byte_limit

    if value is not None:
        # Undone when the command's context closes: in-process callers run many commands.
        ctx.with_resource(byte_limit(value))


def max_bytes_option(fn: F) -> F:
    """--max-bytes N: stop reading each input after N decompressed bytes (the report says so)."""
    return click.option(
        "--max-bytes",
        type=ByteSize(),
        default=None,
        metavar="N",
        expose_value=False,
        callback=_max_bytes_callback,
        help="Read at most N (decompressed) bytes of each input; the report says where it stopped.",
    )(fn)


def select_options(fn: F) -> F:
    """--launch N and --rank R, shared by commands that read one launch."""
    fn = click.option(
        "--rank",
        "ranks",
        multiple=True,
        metavar="R",
        help='Show only this rank (as printed, e.g. "TP0" or "DP0 TP0 EP0"); repeatable. The '
        "verdict, sizing and findings stay the whole launch's.",
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
        type=INPUT,
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
