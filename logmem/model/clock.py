"""When an event was printed: the timestamp of its record's own SGLang prefix.

The prefix is kept in the event's Source text (``[2026-04-14 16:08:49 TP0] ...``); SGLang
prints local time at one-second resolution, dated from about Nov 2024 and time-only before
(reference 1.1).
"""

from __future__ import annotations

import functools
from datetime import datetime

from logmem.parse import events as ev
from logmem.parse.lines import PREFIX


def printed_at(e: ev.Event) -> datetime | None:
    """The dated timestamp of the event's prefix (None: time-only, or no prefix)."""
    if e.rank is None:
        return None
    m = PREFIX.match(e.source.text)
    if m is None or len(m.group("ts")) != 19:
        return None
    return _dated(m.group("ts"))


# At one-second resolution a busy log repeats its timestamps: strptime (~15 us) runs once
# per second of the log, not once per event (17 thousand events of 626 seconds in the bench).
@functools.lru_cache(maxsize=1024)
def _dated(ts: str) -> datetime | None:
    try:
        return datetime.strptime(ts, "%Y-%m-%d %H:%M:%S")
    except ValueError:
        return None


def dated_prefix(e: ev.Event) -> bool | None:
    """True for a dated prefix, False for a time-only one (E0), None without a prefix."""
    if e.rank is None:
        return None
    m = PREFIX.match(e.source.text)
    return None if m is None else len(m.group("ts")) == 19
