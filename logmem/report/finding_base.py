"""The root of the findings' sentences: finding_text (one implementation per finding type,
registered by logmem.report.sentences, budget_words and capture_sentences) and the words both use."""

from __future__ import annotations

from functools import singledispatch

from logmem.units import format_gib


def g(n: int | None) -> str:
    """A GiB figure as SGLang prints it (two decimals)."""
    return format_gib(n)


def graphs_name(backend: str) -> str:
    """The graphs' name as the log prints their backend: "cuda graph" -> "CUDA graphs",
    "npu graph" -> "NPU graphs"; an unknown word is kept as printed."""
    word, _, rest = backend.partition(" ")
    return f"{word.upper() if len(word) <= 4 else word} {rest or 'graph'}s"


def about(n: int) -> str:
    """A token count to the nearest hundred from 1,000 up: an estimate, not a printed figure."""
    return f"{round(n, -2):,}" if n >= 1000 else f"{n:,}"


def lines_text(lines: tuple[int, ...]) -> str:
    """ "line 12" or "lines 11-13" for the first and last of ``lines``."""
    first, last = min(lines, default=0), max(lines, default=0)
    return f"line {first}" if first == last else f"lines {first}-{last}"


@singledispatch
def finding_text(f: object) -> str:
    """A finding as one sentence."""
    raise TypeError(f"no sentence for {type(f).__name__}")
