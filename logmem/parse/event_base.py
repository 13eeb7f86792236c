"""The base of every event: its rank and the Source it was read from (logmem.parse.events).

Source is excluded from equality: tests compare meaning, not where a line sat.
"""

from __future__ import annotations

from dataclasses import field

from logmem.frozen import frozen
from logmem.parse.lines import Source


@frozen(kw_only=True)
class Event:
    rank: str | None  # None: no SGLang prefix (tqdm, traceback text); "": untagged prefix
    source: Source = field(compare=False, repr=False)
