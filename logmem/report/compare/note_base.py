"""The one function every compare note's sentence registers on (singledispatch over the note
records of logmem.compare.notes and whatif_facts), so the sentences can live by concern."""

from __future__ import annotations

from functools import singledispatch


@singledispatch
def note_text(n: object) -> str:
    raise TypeError(f"no sentence for {type(n).__name__}")


def texts(ns: tuple[object, ...]) -> tuple[str, ...]:
    return tuple(note_text(n) for n in ns)
