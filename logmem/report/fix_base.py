"""The one function every fix's words register on (singledispatch over the effects of
logmem.analysis.failures.effects), so the words can live by concern."""

from __future__ import annotations

from functools import singledispatch


@singledispatch
def effect_text(e: object) -> str:
    """What a fix buys and what it costs, with the arithmetic."""
    raise TypeError(f"no words for {type(e).__name__}")
