"""The public entry points for PyTorch memory snapshots (``logmem snapshot``), re-exported by
logmem.api: reading snapshots safely and lining them up with a log."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from logmem.frozen import frozen
from logmem.model.analysis import Analysis

if TYPE_CHECKING:
    from logmem.api import Source


@frozen
class SnapshotReport:
    """What ``logmem snapshot`` reports: ``analysis`` is logmem.torch_snapshot's SnapshotAnalysis."""

    analysis: Any

    def to_json(self) -> dict[str, Any]:
        """The versioned view model (schema logmem.snapshot/1)."""
        from logmem.report.snapshot.render import to_json

        out: dict[str, Any] = to_json(self.analysis)
        return out

    def render(self, fmt: str = "text") -> str:
        """text, markdown, json or html."""
        from logmem.report.snapshot.render import render

        out: str = render(self.analysis, fmt)
        return out

    def __str__(self) -> str:
        return self.render("text")

    def _repr_markdown_(self) -> str:
        return self.render("markdown")


def snapshot(
    *paths: str,
    log: Source | None = None,
    frames: int = 1,
    top: int = 10,
    max_size_mib: int = 1024,
    rank: str | None = None,
    device: int | None = None,
    launch: int | None = None,
    capture: int | None = None,
) -> SnapshotReport:
    """Read PyTorch memory snapshots safely (as ``logmem snapshot``); with ``log`` (an
    Analysis or a path spec), line the first one up with the log's capture."""
    from logmem.api import read_log
    from logmem.compare.load import split_spec
    from logmem.torch_snapshot.analysis import analyze_snapshots

    if log is not None and not isinstance(log, Analysis):
        log = read_log(*split_spec(os.fspath(log)))
    return SnapshotReport(
        analyze_snapshots(
            paths,
            log=log,
            frames=frames,
            top=top,
            max_bytes=max_size_mib << 20,
            rank=rank,
            device=device,
            launch=launch,
            capture=capture,
        )
    )


def snapshot_frame(source: str | SnapshotReport, frames: int = 1) -> Any:
    """A pandas DataFrame, one row per block: path, device, pool, pool_kind,
    segment_address, address, state, size, requested, site."""
    import pandas as pd

    from logmem.torch_snapshot.analysis import block_records

    report = snapshot(source, frames=frames) if isinstance(source, str) else source
    columns = "path device pool pool_kind segment_address address state size requested site"
    return pd.DataFrame(block_records(report.analysis), columns=columns.split())
