"""Builders of SGLang's pool-sizing errors (events.KV_SIZING_FORMS): "Not enough memory" and the
newer forms of sglang 0.5.13+, each asking to raise --mem-fraction-static; the value in use and
the value SGLang suggests, when the message prints them."""

from __future__ import annotations

from collections.abc import Callable

import regex

from logmem.parse.events import Event, NotEnoughMemory
from logmem.parse.lines import Record


def _float(text: str | None) -> float | None:
    return float(text) if text is not None else None


def kv_sizing_builder(form: str) -> Callable[[regex.Match[str], Record], Event]:
    """The builder of one form: the exception type before the message, mfs and SGLang's value."""

    def build(m: regex.Match[str], r: Record) -> Event:
        head = r.message[: m.start()]
        exc = regex.search(r"([A-Za-z_.]{0,60}Error): ?$", head)
        groups = m.groupdict()
        return NotEnoughMemory(
            rank=r.rank,
            source=r.source,
            mem_fraction_static=_float(groups.get("mfs")),
            exc_type=exc.group(1) if exc else None,
            form=form,
            suggested_mfs=_float(groups.get("suggest")),
        )

    return build
