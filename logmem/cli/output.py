"""Output writer: '-' is stdout, a path is written whole or not at all; formats guessed from extensions.

A forensics tool must never destroy its evidence, so a report is never written over one
of the command's inputs (same file through any symlink or hard link, whatever --force
says). The inputs are the paths the command's arguments named: the input parameter types
(logmem.cli.options) note them in the click context as they are parsed. Regular files are
replaced atomically (a temp file renamed over them, removed on any failure); anything
else (a FIFO, /dev/null, a terminal, /dev/stdout or /proc/self/fd/N) is written through,
never replaced by a regular file.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import IO

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

# ctx.meta keys (meta is shared by the group's context and the command's).
INPUTS_KEY = "logmem.inputs"
OUTPUT_KEY = "logmem.output"


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


# --- which inputs the output must not be ------------------------------------------------


def note_inputs(ctx: click.Context | None, paths: Iterable[str]) -> None:
    """Remember paths the command reads; refuse at once if -o (already parsed) is one of them."""
    if ctx is None:
        return
    known: list[str] = ctx.meta.setdefault(INPUTS_KEY, [])
    known.extend(paths)
    output = ctx.meta.get(OUTPUT_KEY)
    if output is not None:
        refuse_inputs(output, known)


def note_output(ctx: click.Context | None, output: str | None) -> None:
    """Remember -o; check it against the inputs parsed so far (the rest check it as they come)."""
    if ctx is None or output is None:
        return
    ctx.meta[OUTPUT_KEY] = output
    check_target(output)
    refuse_inputs(output, ctx.meta.get(INPUTS_KEY, []))


def _identity(path: str) -> tuple[int, int] | None:
    """(device, inode) of what `path` names after every symlink; stdin when '-' is a file."""
    try:
        st = os.fstat(sys.stdin.fileno()) if path == "-" else os.stat(path)
    except (OSError, ValueError, AttributeError):
        return None  # missing, or stdin is not a real file (a test's StringIO)
    if path == "-" and not stat.S_ISREG(st.st_mode):
        return None  # a pipe or terminal cannot be overwritten by -o
    return st.st_dev, st.st_ino


def refuse_inputs(output: str, inputs: Iterable[str]) -> None:
    """Raise when `output` is (through any link) one of `inputs`, whatever --force says."""
    if output == "-":
        return
    target = _identity(output)
    if target is None:
        return
    for path in inputs:
        if path != output and _identity(path) != target:
            continue
        shown = "standard input" if path == "-" else path
        raise LogmemError(
            f"refusing to write the report to {output}: it is the input {shown}, which would be "
            "destroyed (pick another -o file)"
        )


def check_target(output: str) -> None:
    """Errors about -o that need no report: empty, a folder, a folder that does not exist."""
    if output == "-":
        return
    if not output:
        raise click.BadParameter("the output file name is empty", param_hint="'-o'")
    try:
        st = os.stat(output)
    except FileNotFoundError:
        st = None
    except OSError as e:
        raise LogmemError(f"cannot write {output}: {e.strerror or e}") from None
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise LogmemError(f"-o {output} is a folder; give a file name inside it")
    if st is None:
        folder = Path(os.path.realpath(output)).parent
        if not folder.is_dir():
            raise LogmemError(
                f"cannot write {output}: the folder {folder} does not exist (create it first)"
            )


def _through_special_folder(output: str) -> bool:
    """Whether `output` (or a symlink on its way) lies in /proc or /dev: /dev/stdout,
    /proc/self/fd/1 and friends name an open file of this process, which must be written
    through (a rename would detach it from what the shell opened)."""
    p = os.path.abspath(output)
    for _ in range(40):  # the kernel's own symlink limit
        folder = os.path.realpath(os.path.dirname(p))
        if folder in ("/proc", "/dev") or folder.startswith(("/proc/", "/dev/")):
            return True
        full = os.path.join(folder, os.path.basename(p))
        if not os.path.islink(full):
            return False
        p = os.path.join(folder, os.readlink(full))
    return False


# --- writing ----------------------------------------------------------------------------


def _write_error(e: OSError, where: str) -> LogmemError:
    if e.errno == errno.ENOSPC:
        return LogmemError("cannot write the report: no space left on the device")
    return LogmemError(f"cannot write {where}: {e.strerror or e}")


def _silence_stdout() -> None:
    """After a failed write to stdout, point it at /dev/null: the interpreter's final flush
    would otherwise fail again and print a traceback-like warning after our message."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


def _to_stdout(data: str | bytes) -> None:
    try:
        if isinstance(data, bytes):
            if sys.stdout.isatty():
                raise LogmemError("refusing to write a binary image to a terminal; use -o FILE")
            sys.stdout.buffer.write(data)
            sys.stdout.buffer.flush()
        else:
            enc = getattr(sys.stdout, "encoding", None) or "utf-8"
            # A lone surrogate, or a character the terminal's encoding lacks: a mark, not a crash.
            click.echo(data.encode(enc, "replace").decode(enc), nl=False)
            sys.stdout.flush()
    except BrokenPipeError:
        raise
    except OSError as e:
        _silence_stdout()
        raise _write_error(e, "the report to standard output") from None


def _encoded(chunk: str | bytes) -> bytes:
    return chunk if isinstance(chunk, bytes) else chunk.encode("utf-8", "backslashreplace")


def _write_all(f: IO[bytes], chunks: Iterable[bytes], output: str) -> None:
    """Write each chunk as it comes; only the writes' own errors are write errors (an error
    of the code producing the chunks goes up as it is)."""
    for chunk in chunks:
        try:
            f.write(chunk)
        except OSError as e:
            raise _write_error(e, output) from None


def _atomic_replace(path: Path, chunks: Iterable[bytes], output: str) -> None:
    """Write the chunks to a temp file beside `path`, then rename it over `path`."""
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        # mkstemp makes the file 0600; a new report is for sharing: give it the usual mode.
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    tmp: str | None = None
    try:
        import tempfile  # only -o needs it; with shutil, lzma and bz2 it costs ~5 ms to import

        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            _write_all(f, chunks, output)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
        tmp = None
    except OSError as e:
        raise _write_error(e, output) from None
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def write_output(data: str | bytes, output: str | None, force: bool = True) -> None:
    """Write to stdout ('-' or None) or to a file: never over an input, never half-written."""
    # Encoded before any file is touched: an unencodable string cannot leave an empty file.
    write_chunks([_encoded(data) if output not in (None, "-") else data], output, force)


def write_chunks(chunks: Iterable[str | bytes], output: str | None, force: bool = True) -> None:
    """write_output for a report made piece by piece: each chunk is written as it is made
    (stdout sees it at once), and a file is still replaced whole or not at all: the chunks
    go to a temp file renamed over the target when the last is written, and an error before
    then removes the temp file and leaves the target as it was."""
    if output in (None, "-"):
        for chunk in chunks:
            _to_stdout(chunk)
        return
    assert output is not None
    check_target(output)
    ctx = click.get_current_context(silent=True)
    refuse_inputs(output, ctx.meta.get(INPUTS_KEY, []) if ctx else [])
    payload = (_encoded(c) for c in chunks)
    try:
        st: os.stat_result | None = os.stat(output)
    except OSError:
        st = None
    if st is not None and stat.S_ISREG(st.st_mode) and not force:
        raise LogmemError(f"{output} exists; use --force to overwrite it")
    if st is not None and (not stat.S_ISREG(st.st_mode) or _through_special_folder(output)):
        # Append mode: /dev/stdout redirected with >> must keep what is already there.
        try:
            with open(output, "ab") as f:
                _write_all(f, payload, output)
        except OSError as e:
            raise _write_error(e, output) from None
    else:
        # Through symlinks to the real file: the link stays a link.
        _atomic_replace(Path(os.path.realpath(output)), payload, output)
    quiet = bool(ctx and isinstance(ctx.find_root().obj, dict) and ctx.find_root().obj.get("quiet"))
    if not quiet:
        click.echo(f"Wrote {output}", err=True)
