"""The input `logmem analyze` is about to read, guessed from the command line before the CLI
is imported, so that a big file's read-ahead child starts at once (logmem.parse.ahead).

Importing click and logmem's stages takes about a quarter of a second on a small machine; a
1 GiB log's reader needs about two seconds on its own core. Started first, the child has that
quarter of a second done when the parent arrives. The guess is deliberately narrow: only
``logmem [-q] analyze PATH ...`` where PATH is the first word after the command and names a
file, and no ``--max-bytes`` (the child would read past the limit). Anything else reads as
before, and a wrong guess costs nothing but the child's start: logmem.parse.ahead hands the
child over only to a read of the same file with the same parameters, and ends it otherwise.
"""

from __future__ import annotations

import contextlib
import os


def first_input(argv: list[str]) -> tuple[str, bool] | None:
    """(PATH, quiet) of ``logmem [-q|--quiet] analyze PATH ...``, or None."""
    quiet = False
    i = 0
    while i < len(argv) and argv[i] in ("-q", "--quiet"):
        quiet, i = True, i + 1
    if argv[i : i + 1] != ["analyze"] or i + 1 >= len(argv):
        return None
    path = argv[i + 1]
    if path.startswith("-") or any(a.startswith("--max-bytes") for a in argv):
        return None
    return (path, quiet) if os.path.isfile(path) else None


def start(argv: list[str]) -> None:
    """Start reading ahead the input `argv` names, if it is a big file (see first_input)."""
    guess = first_input(argv)
    if guess is None:
        return
    from logmem.parse.sizes import may_read_ahead

    if not may_read_ahead(guess[0]):
        return  # a small file: the read-ahead machinery is not even imported
    from logmem.parse import ahead, progress

    path, quiet = guess
    progress.enabled = not quiet  # the child draws the reading bar; the CLI would set this
    # No pipe or no fork: the reader starts one as usual, or reads in this process.
    with contextlib.suppress(OSError):
        ahead.start_early(path)
