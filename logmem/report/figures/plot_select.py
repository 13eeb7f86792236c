"""Which rank's phases or buckets a waterfall, buckets or ranks plot draws (``logmem plot``
and ``logmem.plot``): the one plot selection, with the errors a user sees when there is none."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from logmem.errors import LogmemError
from logmem.model.analysis import Analysis
from logmem.report.figures.plot_data import buckets_data, ranks_data, waterfall_data


def plot_data(analysis: Analysis, kind: str, wanted: Sequence[str]) -> Any:
    """The data of a `kind` plot of the first launch of `analysis` (already selected)."""
    L = analysis.launches[0]
    led = analysis.shown_ledger(analysis.ledger(L))
    if kind == "ranks":
        return ranks_data(led)
    main = led.used.main_rank  # among the ranks in time order, as the report leads with
    chosen = [
        r
        for r in led.ranks
        if (r.rank in wanted if wanted else main is not None and r.rank == main.label)
    ]
    if not any(r.phases for r in chosen):
        raise LogmemError("no free-memory readings to plot on " + (", ".join(wanted) or "any rank"))
    if kind == "waterfall":
        return [waterfall_data(r) for r in chosen]
    data = [f for r in chosen for f in buckets_data(r)]
    if not data:
        raise LogmemError(
            "no bucket readings: this log's capture progress bars print no free "
            "memory per bucket (try --kind waterfall)"
        )
    return data
