"""The flags of an echoed launch command (parse.command_lines joins its lines), read so that a
word the terminal cut is never taken for what it may not be.

A word across a "cut" seam (a line boundary inside a word) is whole when the command's rows
show a terminal wrap (LaunchCommand.cuts_whole); else a flag name across it counts only when
the rejoined name is one of SGLang's (sglang.flags.FLAG_NAMES), and a value across it is
"possibly split": unknown, never the part before the cut (``0.1`` of ``0.1`` / ``2``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from logmem.frozen import frozen
from logmem.parse import events as ev
from logmem.sglang.flags import CONFIG_FLAG, FLAG_NAMES, TYPED_FLAGS, canonical_flag

# Quotes and list punctuation a harness wraps words in (``['--tp-size', '2']``).
_PUNCT = "'\",[]"


@frozen
class CommandFlag:
    name: str  # "--mem-fraction-static": as written, rejoined across a cut into an SGLang flag
    value: str | None  # the word after it, or after its "="; None: none
    split: bool  # the value may be cut (a cut seam inside it the rows do not show whole)
    line: int  # the line the name is on


@frozen
class CommandFlags:
    flags: tuple[CommandFlag, ...]
    config: bool  # a --config file may set flags the line does not show
    line: int  # the command's first line
    last_line: int  # and its last

    def get(self, name: str) -> CommandFlag | None:
        """The flag's last occurrence (argparse keeps the last)."""
        return next((f for f in reversed(self.flags) if f.name == name), None)

    def passed(self, *names: str) -> bool | None:
        """Whether any of `names` is on the command line; None: not, but a --config may set it."""
        if any(self.get(n) is not None for n in names):
            return True
        # A word cut into no flag of SGLang's may have been one of them.
        unsure = any(f.split and f.name not in FLAG_NAMES for f in self.flags)
        return None if self.config or unsure else False

    def args(self) -> dict[str, Any]:
        """The server_args fields of sglang.flags.TYPED_FLAGS the command gives, each a value
        of the field's type; a possibly split value, or one that is not of the type, is left out."""
        out: dict[str, Any] = {}
        for f in self.flags:
            typed = TYPED_FLAGS.get(f.name)
            if typed is None or f.split or f.value is None:
                continue
            field, kind = typed
            value = _typed(f.value, kind)
            if value is not None:
                out[field] = value
        return out


def last_command(events: Iterable[ev.Event], before: int | None) -> ev.LaunchCommand | None:
    """The command line echoed last before line `before` (the server_args dump; None: any)."""
    cmds = [
        e
        for e in events
        if isinstance(e, ev.LaunchCommand) and (before is None or e.source.line_no < before)
    ]
    return cmds[-1] if cmds else None


def command_flags(cmd: ev.LaunchCommand) -> CommandFlags:
    """The flags of `cmd`'s joined argv (see the module's rule for cut words)."""
    words = _words(cmd.argv)
    cuts = [] if cmd.cuts_whole else [s.at for s in cmd.seams if s.kind == "cut"]
    flags: list[CommandFlag] = []
    config = False
    i = 0
    while i < len(words):
        start, word = words[i]
        i += 1
        bare = word.strip(_PUNCT)
        if not bare.startswith("--") or len(bare) < 3:
            continue
        lead = word.index(bare[0])
        name, eq, value = bare.partition("=")
        cut = next((at for at in cuts if start < at < start + len(word)), None)
        line = _line_of(cmd, start)
        split = False
        if cut is not None and cut < start + lead + len(name):
            left = bare[: cut - start - lead]
            if canonical_flag(name) is not None:
                name = canonical_flag(name) or name  # rejoined: the halves make an SGLang flag
            elif canonical_flag(left) is not None:
                # The blank after a whole flag lost at the cut: its value is the rest, unsure.
                name, value, eq, split = canonical_flag(left) or left, bare[len(left) :], "=", True
            else:
                name, split = bare, True  # neither: an unknown word
        else:
            name = canonical_flag(name) or name  # argparse reads a unique prefix as the flag
            split = cut is not None  # a cut inside the value after "="
        if name == CONFIG_FLAG:
            config = True
        if not eq and i < len(words) and not words[i][1].strip(_PUNCT).startswith("--"):
            vstart, vword = words[i]
            value = vword.strip(_PUNCT)
            split = split or any(vstart < at < vstart + len(vword) for at in cuts)
            i += 1
        flags.append(CommandFlag(name, value if (eq or value) else None, split, line))
    last = cmd.last_line if cmd.last_line is not None else cmd.source.line_no
    return CommandFlags(tuple(flags), config, cmd.source.line_no, last)


def _words(text: str) -> list[tuple[int, str]]:
    """The shell words of `text` with their offsets: blanks separate, except inside quotes."""
    out: list[tuple[int, str]] = []
    start, quote = -1, ""
    for i, c in enumerate(text):
        if quote:
            if c == quote:
                quote = ""
        elif c.isspace():
            if start >= 0:
                out.append((start, text[start:i]))
                start = -1
            continue
        elif c in "'\"":
            quote = c
        if start < 0:
            start = i
    if start >= 0:
        out.append((start, text[start:]))
    return out


def _line_of(cmd: ev.LaunchCommand, at: int) -> int:
    """The line a word at offset `at` of the argv begins on."""
    line = cmd.source.line_no
    for s in cmd.seams:
        if s.at <= at:
            line = s.line
    return line


def _typed(text: str, kind: type) -> Any:
    """`text` as a finite number of `kind` (or the string), None when it is not one."""
    if kind is str:
        return text or None
    try:
        n = float(text) if kind is float else int(text)
    except (ValueError, OverflowError):
        return None
    return n if math.isfinite(n) else None
