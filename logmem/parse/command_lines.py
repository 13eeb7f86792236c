"""An echoed launch command that runs over several physical lines: which lines continue it (the
reader's stop rule) and how they join into one command (its seams).

A shell prints a command as the user typed it: lines that end with ``\\`` continue it (the
shell drops the backslash and the newline). A command copied from a terminal is cut wherever
the terminal wrapped it, inside a word or a number as well (corpus 018: ``--load-f`` /
``ormat``, ``0.1`` / ``2``). The reader takes a line after a command line when it is not a
line of something else (a log record, a prompt, a warning, a blank) and it either follows a
``\\`` or reads as arguments (it holds a ``--flag``), at most MAX_COMMAND_LINES lines and
MAX_COMMAND_BYTES bytes.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from logmem.parse.patterns import COMMAND_NOT, COMMAND_PROGRAM

if TYPE_CHECKING:
    from logmem.parse import events as ev
    from logmem.parse.continuation import Pending

COMMAND = 2  # Segment.continuation: a line that continues an echoed command
MAX_COMMAND_LINES = 64
MAX_COMMAND_BYTES = 64 << 10

# The launch_command pattern's program and exclusion (patterns.py), on bytes: the reader and
# the pattern agree on what a command line is.
_HEAD = re.compile(COMMAND_PROGRAM.encode() + rb"(?:\s|$)")
_NOT_HEAD = re.compile(COMMAND_NOT.encode())
# Lines that are something else: blank, a record with a prefix ("[2025-", "[Gloo]", "[rank0]"),
# a logging level ("WARNING:sglang...", vLLM's "INFO 03-07"), a traceback, argparse's usage or
# error, a Python warning ("x.py:54: UserWarning"), a shell prompt.
_STOP = re.compile(
    rb"^(?:[ \t]*$|[ \t]*\[|[ \t]*(?:INFO|WARNING|WARN|ERROR|DEBUG|CRITICAL|FATAL)\b"
    rb"|Traceback \(most|usage: |[^ \t]{1,400}\.py:(?:[0-9]{1,9}:| error:)"
    rb"|(?:\([\w.-]{1,64}\) )?[\w.-]{1,64}@[\w.-]{1,128}:[^ \t]{0,400}[$#] |[$#>] )"
)
_FLAG = re.compile(rb"(?:^|[ \t])--[A-Za-z]")


def is_command_head(data: bytes) -> bool:
    """A segment that echoes a launch command (the launch_command pattern's program)."""
    return (
        (b"sglang.launch_server" in data or b"sglang.bench_" in data)
        and _NOT_HEAD.match(data) is None
        and _HEAD.search(data) is not None
    )


def asks_more(line: bytes) -> bool:
    """A line that ends with a shell line continuation (trailing blanks a copy added aside)."""
    return line.rstrip(b" \t").endswith(b"\\")


def command_goes_on(line: bytes, state: Pending) -> bool:
    """Whether `line` continues the command `state` has taken so far (see the module's rule)."""
    if state.nbytes + len(line) > MAX_COMMAND_BYTES or _STOP.match(line) is not None:
        return False
    return state.more or _FLAG.search(line) is not None


def join_command(
    cmd: ev.LaunchCommand, head: bytes, lines: list[tuple[int, bytes]]
) -> ev.LaunchCommand:
    """`cmd` (read from its first line, `head`) with the continuation `lines` (line number,
    bytes) joined on: after a ``\\`` the backslash and newline go, as the shell drops them; a
    line boundary with a blank on either side is a word boundary; any other was cut by the
    terminal inside a word (a "cut" seam, where the parts join with no separator)."""
    from logmem.parse import events as ev  # the reader imports this module: events would cycle

    if not lines:
        return cmd
    head_text = head.decode("utf-8", "replace").rstrip("\r\n")
    argv = cmd.argv + (" " if head_text[-1:].isspace() else "")
    rows = [head_text]
    seams = []
    for line_no, raw in lines:
        text = raw.decode("utf-8", "replace")
        rows.append(text)
        if argv.rstrip(" \t").endswith("\\"):
            argv, kind = argv.rstrip(" \t")[:-1], "shell"
        elif argv[-1:].isspace() or text[:1].isspace():
            kind = "space"
        else:
            kind = "cut"
        seams.append(ev.Seam(at=len(argv), line=line_no, kind=kind))
        argv += text
    return ev.LaunchCommand(
        rank=cmd.rank,
        source=cmd.source,
        program=cmd.program,
        argv=argv.strip(),
        env=cmd.env,
        last_line=lines[-1][0],
        seams=tuple(
            ev.Seam(at=s.at - (len(argv) - len(argv.lstrip())), line=s.line, kind=s.kind)
            for s in seams
        ),
        cuts_whole=_wrapped_rows(rows),
    )


def _wrapped_rows(rows: list[str]) -> bool:
    """Whether the rows before the last are a terminal's wrap of one line at a width they all
    share: each is a multiple of the shortest (at least 40 columns, two rows or more, ASCII with
    no tab, so a character is a column). A terminal cuts at its width and loses nothing there;
    a copy that dropped a blank at a row's end leaves that row short of the width."""
    wrapped = rows[:-1]
    if len(wrapped) < 2 or not all(r.isascii() and "\t" not in r for r in wrapped):
        return False
    width = min(len(r) for r in wrapped)
    return width >= 40 and all(len(r) % width == 0 for r in wrapped)
