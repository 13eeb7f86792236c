"""Snapshot files -> their summaries, traces and (with a log) the join: what reports render."""

from __future__ import annotations

from collections.abc import Sequence

from logmem.frozen import frozen
from logmem.model.analysis import Analysis
from logmem.torch_snapshot.join import LogJoin, join
from logmem.torch_snapshot.load import DEFAULT_MAX_BYTES, SnapshotError, load
from logmem.torch_snapshot.model import Snapshot, from_data
from logmem.torch_snapshot.summary import DeviceSummary, summarize
from logmem.torch_snapshot.trace import DeviceTrace, replay


@frozen
class SnapshotFile:
    snapshot: Snapshot
    devices: tuple[DeviceSummary, ...]
    traces: tuple[DeviceTrace, ...]


@frozen
class SnapshotAnalysis:
    files: tuple[SnapshotFile, ...]
    join: LogJoin | None
    frames: int  # frames shown per site (--frames)
    top: int


def read_snapshot(
    path: str, frames: int = 1, top: int = 10, max_bytes: int = DEFAULT_MAX_BYTES
) -> SnapshotFile:
    try:
        snap = from_data(load(path, max_bytes), path, frames)
    except SnapshotError as e:
        msg = str(e)
        raise SnapshotError(msg if msg.startswith(f"{path}: ") else f"{path}: {msg}") from None
    devices = summarize(snap, frames, top)
    return SnapshotFile(snap, devices, replay(snap, devices, frames, top))


def analyze_snapshots(
    paths: Sequence[str],
    *,
    log: Analysis | None = None,
    frames: int = 1,
    top: int = 10,
    max_bytes: int = DEFAULT_MAX_BYTES,
    rank: str | None = None,
    device: int | None = None,
    launch: int | None = None,
    capture: int | None = None,
) -> SnapshotAnalysis:
    """Read each snapshot; with `log` (what read_log returns), line the first snapshot up
    with the log's capture."""
    files = tuple(read_snapshot(p, frames, top, max_bytes) for p in paths)
    joined = None
    if log is not None:
        first = files[0]
        joined = join(
            log,
            first.devices,
            first.traces,
            device=device,
            rank=rank,
            launch=launch,
            capture=capture,
        )
    return SnapshotAnalysis(files, joined, frames, top)


def block_records(a: SnapshotAnalysis) -> list[dict[str, object]]:
    """One row per block of every snapshot: what ``snapshot_frame()`` holds."""
    from logmem.torch_snapshot.summary import pool_kind, site

    rows: list[dict[str, object]] = []
    kinds = {
        (f.snapshot.path, d.device, p.pool_id): p.kind
        for f in a.files
        for d in f.devices
        for p in d.pools
    }
    for f in a.files:
        for s in f.snapshot.segments:
            kind = kinds.get((f.snapshot.path, s.device, s.pool_id)) or pool_kind(s.pool_id)[0]
            for b in s.blocks:
                rows.append(
                    {
                        "path": f.snapshot.path,
                        "device": s.device,
                        "pool": None if s.pool_id is None else f"({s.pool_id[0]}, {s.pool_id[1]})",
                        "pool_kind": kind,
                        "segment_address": s.address,
                        "address": b.address,
                        "state": b.state,
                        "size": b.size,
                        "requested": b.requested_size,
                        "site": site(b.frames, a.frames),
                    }
                )
    return rows
