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


def stamp(t: datetime) -> str:
    """``t`` as the log prints it, "YYYY-MM-DD HH:MM:SS": the year zero-padded, which
    strftime's %Y is not on every platform (a damaged "0025-03-08" would read back as "25-...")."""
    return f"{t.year:04d}-{t.month:02d}-{t.day:02d} {t:%H:%M:%S}"


def printed_at(e: ev.Event) -> datetime | None:
    """The dated timestamp of the event's prefix (None: time-only, or no prefix)."""
    ts = _prefix_ts(e)
    return None if ts is None or len(ts) != 19 else _dated(ts)


def _prefix_ts(e: ev.Event) -> str | None:
    """The prefix's timestamp as printed: the one the lines stage read (Source.ts), else
    matched from the text (a Source built by hand). The model dates every step several times
    (launch boundaries, order checks, eras): 385 thousand calls for 4,096 ranks, where the
    match was a quarter of the model's time."""
    if e.rank is None:
        return None
    if e.source.ts is not None:
        return e.source.ts
    m = PREFIX.match(e.source.text)
    return None if m is None else str(m.group("ts"))


# At one-second resolution a busy log repeats its timestamps: this runs once per second of
# the log, not once per event (17 thousand events of 626 seconds in the bench).
@functools.lru_cache(maxsize=1024)
def _dated(ts: str) -> datetime | None:
    # `ts` is PREFIX's dated form, "YYYY-MM-DD HH:MM:SS" in ASCII digits, so the fields are
    # at fixed places and datetime() rejects what strptime("%Y-%m-%d %H:%M:%S") would
    # (month 00 or 13, Feb 30, hour 24, second 60; tests/test_inputs.py compares the two).
    # strptime's first call imports _strptime and builds its locale tables: 5 ms of a
    # small log's analyze.
    try:
        return datetime(
            int(ts[0:4]),
            int(ts[5:7]),
            int(ts[8:10]),
            int(ts[11:13]),
            int(ts[14:16]),
            int(ts[17:19]),
        )
    except ValueError:
        return None


def dated_prefix(e: ev.Event) -> bool | None:
    """True for a dated prefix, False for a time-only one (E0), None without a prefix."""
    ts = _prefix_ts(e)
    return None if ts is None else len(ts) == 19
