"""A traceback while it is being read: its opening, its error lines, its innermost frames.

The builder (logmem.model.build) gives each frame and error line to the traceback it belongs
to; a line that continues an exception's message (the reader's continuation) extends the
last error's message.
"""

from __future__ import annotations

import dataclasses
from dataclasses import field

from logmem.frozen import mutable
from logmem.model.records import MAX_FRAMES
from logmem.parse import events as ev


@mutable
class TracebackB:
    rank: str | None
    opening: ev.Event | None
    errors: list[ev.Event] = field(default_factory=list)
    frames: list[ev.Frame] = field(default_factory=list)

    def add_frame(self, f: ev.Frame) -> None:
        self.frames.append(f)
        if len(self.frames) > 2 * MAX_FRAMES:  # trimmed in steps: linear, not per frame
            del self.frames[:-MAX_FRAMES]

    def extend_last_error(self, more: ev.MessageMore) -> bool:
        """The last error's message gains a line that continues it (the reader's continuation)."""
        if not self.errors:
            return False
        e = self.errors[-1]
        text = getattr(e, "message", None)
        if not isinstance(text, str) or len(text) >= _MAX_MESSAGE:
            return False
        self.errors[-1] = dataclasses.replace(e, message=(text + "\n" + more.text)[:_MAX_MESSAGE])  # type: ignore[call-arg]
        return True


# An exception's message with its continuation lines is kept up to this many characters.
_MAX_MESSAGE = 4000


def continue_last_error(
    last: tuple[TracebackB, str, int] | None, more: ev.MessageMore
) -> tuple[TracebackB, str, int] | None:
    """The error line a continuation extends (the traceback, its path and its last line),
    after `more`: only a line right after it continues it."""
    if last is None or (last[1], last[2] + 1) != (more.source.path, more.source.line_no):
        return last
    tb = last[0]
    return (tb, last[1], last[2] + 1) if tb.extend_last_error(more) else last
