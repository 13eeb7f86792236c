"""Builder of the NSA-backends line (pattern ``nsa_backends``): the attention backends the
launcher chose for a DSA model's KV dtype. Kept apart from logmem.parse.builders (at its size
limit); registered in its BUILDERS.
"""

from __future__ import annotations

import regex

from logmem.parse.events import Event, NSABackends
from logmem.parse.lines import Record


def build_nsa_backends(m: regex.Match[str], r: Record) -> Event:
    return NSABackends(
        rank=r.rank,
        source=r.source,
        kv=m.group("kv"),
        prefill=m.group("prefill"),
        decode=m.group("decode"),
    )
