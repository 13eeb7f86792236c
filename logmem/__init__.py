"""logmem: SGLang start-up logs -> per-rank GPU-memory ledger.

Pipeline, one module per stage:

    read (bytes) -> lines (records) -> events (typed facts) -> ledger (launches,
    ranks, phases) -> attribution (causes) -> fit (diff, slopes, what-if) -> report

Library use::

    import logmem
    a = logmem.read_log("server.log")      # an Analysis: .launches, .ranks, .findings
    a.ledger_frame()                        # pandas: launch, rank, phase, cause, gib, bytes, kind, first_line
    fig = logmem.plot(a, "waterfall")      # a matplotlib Figure (also "buckets", "ranks")

The names below are imported on first use, so ``import logmem`` (and ``logmem --help``)
loads neither the parser nor pandas nor matplotlib.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from logmem.analysis import Analysis, read_log
    from logmem.api import diff, fit, plot, whatif
    from logmem.attribution import LaunchLedger, build_ledger

__all__ = [
    "Analysis",
    "LaunchLedger",
    "__version__",
    "build_ledger",
    "diff",
    "fit",
    "plot",
    "read_log",
    "whatif",
]

_LAZY = {
    "read_log": "logmem.analysis",
    "Analysis": "logmem.analysis",
    "build_ledger": "logmem.attribution",
    "LaunchLedger": "logmem.attribution",
    "diff": "logmem.api",
    "fit": "logmem.api",
    "whatif": "logmem.api",
    "plot": "logmem.api",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'logmem' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


class _Package(types.ModuleType):
    """``logmem.fit`` is both a stage module and the public ``fit(*analyses)``. Importing
    the module makes Python bind it as the package attribute; bind the function instead,
    so ``logmem.fit(a, b)`` works whenever the module happened to be imported first.
    (``from logmem.fit import X`` reads sys.modules and is unaffected.)"""

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "fit" and isinstance(value, types.ModuleType):
            from logmem.api import fit as value
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
