"""Regexes compiled on first use.

The `regex` module compiles in Python: the package's module-level patterns cost about a
sixth of a small log's `analyze -f json` when compiled at import, and most runs use a few of
them (a clean launch never meets the traceback, OOM-split or failure patterns). ``lazy()``
returns a stand-in typed as the compiled pattern; the first attribute looked up compiles it
and keeps the looked-up attribute on the stand-in, so a hot loop pays a plain attribute read,
the same as for a module-level pattern.
"""

from __future__ import annotations

from typing import Any, AnyStr, cast

import regex


class _Lazy:
    __slots__ = ("__dict__", "pattern", "flags", "_compiled")

    def __init__(self, pattern: str | bytes, flags: int) -> None:
        # pattern and flags are set, not compiled: matcher_for reads them to build hyperscan's
        # database without the Python engine's compile.
        self.pattern = pattern
        self.flags = flags
        self._compiled: Any = None

    def __getattr__(self, name: str) -> Any:
        # Only called for names not yet on the stand-in (search, match, groupindex ...).
        if name.startswith("__"):
            raise AttributeError(name)
        if self._compiled is None:
            self._compiled = regex.compile(self.pattern, self.flags)
        value = getattr(self._compiled, name)
        setattr(self, name, value)
        return value

    def __repr__(self) -> str:
        return f"lazy({self.pattern!r})"


def lazy(pattern: AnyStr, flags: int = 0) -> regex.Pattern[AnyStr]:
    """`regex.compile(pattern, flags)`, done when the pattern is first used."""
    return cast("regex.Pattern[AnyStr]", _Lazy(pattern, flags))
