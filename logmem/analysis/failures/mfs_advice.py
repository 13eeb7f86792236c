"""SGLang's advice to raise --mem-fraction-static in an error's text: the text says more memory
is the remedy, so the error is memory-related whatever its exception type (sglang 0.5.14+
raises a ValueError for a non-positive KV budget, model_runner_kv_cache_mixin.py
_profile_available_bytes; RuntimeErrors for the Mamba state cache and the unified pool,
0.5.23 mem_cache/kv_cache_configurator.py and unified_memory_pool.py)."""

from __future__ import annotations

import regex

from logmem.parse.lazy import lazy

_ASKS_MORE_MFS = lazy(
    r"(?<!not |n't )\b(?:raise|raising|increase|increasing)\s+(?:the\s+)?"
    r"(?:--mem-fraction-static|mem_fraction_static)\b",
    regex.IGNORECASE,
)
_MFS_IN_TEXT = lazy(
    r"--mem-fraction-static=(\d(?:\.\d{1,9})?)\b|mem_fraction_static=(\d(?:\.\d{1,9})?)\b"
)
_SUGGESTED_MFS = lazy(
    r"(?:raise|increase) --mem-fraction-static (?:above|to(?: at least)?) (\d\.\d{1,9})\b",
    regex.IGNORECASE,
)


def asks_more_mfs(text: str) -> bool:
    """The error's text tells the user to raise --mem-fraction-static (SGLang's own remedy)."""
    return _ASKS_MORE_MFS.search(text) is not None


def asked_values(text: str) -> tuple[float | None, float | None]:
    """The mem_fraction_static the text says was in use, and the value it suggests."""
    at = _MFS_IN_TEXT.search(text)
    suggested = _SUGGESTED_MFS.search(text)
    return (
        float(at.group(1) or at.group(2)) if at else None,
        float(suggested.group(1)) if suggested else None,
    )
