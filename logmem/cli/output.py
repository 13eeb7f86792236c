"""Output writer: '-' is stdout, a path is written whole or not at all; formats guessed from extensions."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import click

from logmem.errors import LogmemError

EXTENSIONS = {
    ".json": "json",
    ".md": "markdown",
    ".markdown": "markdown",
    ".txt": "text",
    ".html": "html",
    ".htm": "html",
    ".png": "png",
    ".svg": "svg",
}


def guess_format(
    output: str | None,
    fmt: str | None,
    default: str = "text",
    allowed: tuple[str, ...] | None = None,
) -> str:
    """An explicit --format wins; else the output file's extension; else `default`.

    With `allowed`, an extension that names another format is a usage error (exit 2)."""
    if fmt:
        return fmt
    if output and output != "-":
        guessed = EXTENSIONS.get(Path(output).suffix.lower(), default)
        if allowed is not None and guessed not in allowed:
            raise click.UsageError(
                f"-o {output}: this command writes {', '.join(allowed)}, not {guessed} "
                "(pick a matching extension or --format)"
            )
        return guessed
    return default


def write_output(data: str | bytes, output: str | None, force: bool = True) -> None:
    """Write to stdout ('-' or None) or atomically to a file (no half-written reports)."""
    if output in (None, "-"):
        if isinstance(data, bytes):
            if sys.stdout.isatty():
                raise LogmemError("refusing to write a binary image to a terminal; use -o FILE")
            sys.stdout.buffer.write(data)
            sys.stdout.buffer.flush()
        else:
            click.echo(data, nl=False)
        return
    path = Path(output)
    if path.exists() and not force:
        raise LogmemError(f"{output} exists; use --force to overwrite it")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)
        # mkstemp makes the file 0600; a report is for sharing: give it the usual mode.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except OSError as e:
        raise LogmemError(f"cannot write {output}: {e.strerror or e}") from None
    ctx = click.get_current_context(silent=True)
    quiet = bool(ctx and isinstance(ctx.find_root().obj, dict) and ctx.find_root().obj.get("quiet"))
    if not quiet:
        click.echo(f"Wrote {output}", err=True)
