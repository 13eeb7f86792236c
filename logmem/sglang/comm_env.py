"""SGLang's parsing of environment values (``srt/environ.py``), for the rules that read the
environment a log echoed (logmem.sglang.comm, logmem.sglang.custom_ar)."""

from __future__ import annotations

from collections.abc import Mapping


def env_int(env: Mapping[str, str], key: str, lo: int, hi: int) -> int | None:
    """An integer environment value in [lo, hi], None when unset or not such a number."""
    v = env.get(key)
    if v is None:
        return None
    try:
        n = int(v.strip())
    except ValueError:
        return None
    return n if lo <= n <= hi else None


def env_flag(env: Mapping[str, str], key: str) -> bool | None:
    """SGLang's boolean environment parsing (``environ.py``: 1/true/yes/on and 0/false/no/off)."""
    v = env.get(key)
    if v is None:
        return None
    s = v.strip().lower()
    if s in ("1", "true", "yes", "on"):
        return True
    if s in ("0", "false", "no", "off", ""):
        return False
    return None
