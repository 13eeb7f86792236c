"""Log-derived strings made inert for a terminal: text and Markdown reports are printed raw.

A log (or config.json) is untrusted. Its strings reach the reports as model paths, error
messages and server_args values; an escape sequence in them would act on the reader's
terminal (OSC 0 sets the window title, OSC 52 writes the clipboard, OSC 8 hides a link,
``ESC c`` resets the screen, backspaces overwrite what was printed), and an escaped newline
decoded from a server_args string could forge a report line ("Ready: ..."). So:

* :func:`one_line` is for one log-derived string: a newline or carriage return is shown
  escaped (``\\n``, ``\\r``), every other control character is dropped;
* :func:`strip_controls` is the last pass over a whole text or Markdown report: every
  control character except tab and newline is dropped, whatever string carried it.

Control characters are Unicode's Cc class (C0, DEL, C1) plus the bidirectional overrides
and isolates, which reorder what a terminal shows ("Trojan Source").
"""

from __future__ import annotations

from logmem.parse.lazy import lazy

_BIDI = "\u202a-\u202e\u2066-\u2069"
_CONTROLS = lazy(f"[\\x00-\\x08\\x0b-\\x1f\\x7f-\\x9f{_BIDI}]")
_ANY = lazy(f"[\\x00-\\x1f\\x7f-\\x9f{_BIDI}]")


def one_line(text: str) -> str:
    """`text` on one line: newlines escaped, other control characters (tab kept) dropped."""
    if not _ANY.search(text):
        return text
    text = text.replace("\r\n", "\\n").replace("\n", "\\n").replace("\r", "\\r")
    out: str = _CONTROLS.sub("", text)
    return out


def strip_controls(report: str) -> str:
    """A whole report without control characters other than tab and newline."""
    out: str = _CONTROLS.sub("", report) if _CONTROLS.search(report) else report
    return out


def short(text: str, n: int = 80) -> str:
    """A log message on one line, cut to ``n`` characters (its continuation lines joined)."""
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 3].rstrip() + "..."
