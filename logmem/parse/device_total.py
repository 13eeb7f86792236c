"""Builder of the device-total line (pattern ``device_total``): SGLang's list of device
capacities in MiB, one per visible device, and the minimum its heuristics use (12.3).

Kept apart from logmem.parse.builders (at its size limit); registered in its BUILDERS.
"""

from __future__ import annotations

import regex

from logmem.parse.events import DeviceTotal, Event
from logmem.parse.lines import Record
from logmem.units import Mem

_NUMBER = regex.compile(r"\d{1,9}(?:\.\d{1,9})?", regex.ASCII)


def build_device_total(m: regex.Match[str], r: Record) -> Event:
    items = [x.strip() for x in m.group("list").split(",")]
    # A list that is not all numbers (cut, elided) says nothing per device: () rather than guess.
    ok = all(_NUMBER.fullmatch(x) for x in items) and items != [""]
    per = tuple(Mem.parse(x, "MiB") for x in items) if ok else ()
    low = m.group("min")
    return DeviceTotal(
        rank=r.rank,
        source=r.source,
        per_device=per,
        used=Mem.parse(low, "MiB") if low is not None else None,
        nvidia_smi_failed=m.group("smi") is not None,
    )
