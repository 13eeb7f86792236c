"""logmem: SGLang start-up logs -> per-rank GPU-memory ledger.

Pipeline, one module per stage:

    parse/     bytes -> records -> typed events (read, lines, patterns, events)
    model/     events -> launches, ranks, graphs (records, build, inputs)
    sglang/    SGLang's own rules and formulas, each once (rules, eras)
    analysis/  attribution of every drop, sizing, findings, failures
    compare/   diff, slope fit and what-if over launches
    estimate/  expected sizes from a config.json, and the cross-check
    torch_snapshot/  PyTorch memory snapshots (logmem snapshot), joined with the log
    report/    text, Markdown, HTML, JSON, plots, pandas frames
    cli/       one module per command, over ``logmem.api``

Shared by all stages: ``frozen`` (the records' ``@frozen``: dataclasses made on first use),
``units`` and ``errors``.

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
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from logmem.analysis.attribution import LaunchLedger, build_ledger
    from logmem.api import (
        analyze,
        communication_table,
        diff,
        expected_sizes,
        fit,
        plot,
        plot_svg,
        read_environment,
        read_log,
        snapshot,
        snapshot_frame,
        whatif,
    )
    from logmem.model.analysis import Analysis

__all__ = [
    "Analysis",
    "LaunchLedger",
    "__version__",
    "analyze",
    "build_ledger",
    "communication_table",
    "diff",
    "expected_sizes",
    "fit",
    "plot",
    "plot_svg",
    "read_environment",
    "read_log",
    "snapshot",
    "snapshot_frame",
    "whatif",
]

_LAZY = {
    "read_log": "logmem.api",
    "analyze": "logmem.api",
    "Analysis": "logmem.model.analysis",
    "build_ledger": "logmem.analysis.attribution",
    "LaunchLedger": "logmem.analysis.attribution",
    "diff": "logmem.api",
    "expected_sizes": "logmem.api",
    "fit": "logmem.api",
    "whatif": "logmem.api",
    "plot": "logmem.api",
    "plot_svg": "logmem.api",
    "communication_table": "logmem.api",
    "read_environment": "logmem.api",
    "snapshot": "logmem.api",
    "snapshot_frame": "logmem.api",
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
