"""A snapshot lined up with the log: how much of a capture's drop is outside PyTorch.

The log gives driver-level free memory (``avail mem=``) around a capture; the snapshot gives
what PyTorch's allocator took in the same time. The difference is memory outside PyTorch in
the process (DeepEP and NCCL buffers, cuBLAS workspaces, the graphs themselves).

Which interval: SGLang starts recording memory history inside the graph runner's capture(),
after the runner's static buffers are allocated and before the first bucket, and dumps right
after the last one. So the log interval that matches is the first bucket's reading (the
capture bar's ``avail_mem``) to the end line. The figure is *measured* when the trace holds
the CUDA-graph pool from empty (its whole growth is in the trace) and the log prints both of
those readings. Otherwise it is computed under assumptions that are listed with it:

* no bucket reading: the begin line is used, so the static buffers count as outside;
* no trace: the graph pool's size in the snapshot is taken as its growth (SGLang makes
  the pool at capture), and the other pools are taken not to have grown;
* a trace that does not start with the pool empty: only the growth it saw is subtracted.

Readings are printed to 0.01 GiB, so the log's drop is known to +-0.01 GiB.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from logmem.errors import SelectionError
from logmem.frozen import frozen
from logmem.model.analysis import Analysis
from logmem.model.records import Graph, Launch, Rank
from logmem.sglang import comm
from logmem.sglang.rules import DIFFERENCE_RESOLUTION_BYTES
from logmem.torch_snapshot.summary import DeviceSummary
from logmem.torch_snapshot.trace import DeviceTrace

# Two readings, each printed to two decimals: the drop's resolution, SGLang's rule.
LOG_ROUNDING_BYTES = DIFFERENCE_RESOLUTION_BYTES


@frozen
class LogJoin:
    log_paths: tuple[str, ...]
    rank: str
    device: int
    graph: str  # the capture's label as logmem names it
    start_label: str  # "first bucket reading" | "capture begin"
    start_line: int
    end_line: int
    start_bytes: int
    end_bytes: int
    graph_pool_bytes: int  # growth of the CUDA-graph pool(s) over the trace, or their size
    other_pools_bytes: int | None  # growth of every other pool over the trace (None: no trace)
    measured: bool
    assumptions: tuple[str, ...]
    other_captures: tuple[str, ...]  # captures on the rank not used
    # The GPU the rank's process ran on by SGLang's rule (None: the log does not say).
    rank_device: int | None = None
    peers: bool | None = None  # the launch has NCCL peers (more than one rank); None: unknown
    deepep: bool = False  # moe_a2a_backend='deepep'

    @property
    def device_differs(self) -> bool:
        """The snapshot's device is not the GPU this rank ran on: another process's memory."""
        return self.rank_device is not None and self.rank_device != self.device

    @property
    def mismatch(self) -> str | None:
        """Why the snapshot and the capture do not describe one process and capture:
        "device" (another rank's GPU), "pool_beyond_drop"; None when they can be split."""
        if self.device_differs:
            return "device"
        return "pool_beyond_drop" if self.pool_beyond_drop else None

    @property
    def pool_beyond_drop(self) -> bool:
        """PyTorch grew by more than free memory fell, beyond the log's rounding: the snapshot
        is not of this capture (another run, rank or capture), so there is no split."""
        return self.outside_bytes < -LOG_ROUNDING_BYTES

    @property
    def drop_bytes(self) -> int:
        return self.start_bytes - self.end_bytes

    @property
    def pytorch_bytes(self) -> int:
        return self.graph_pool_bytes + (self.other_pools_bytes or 0)

    @property
    def outside_bytes(self) -> int:
        return self.drop_bytes - self.pytorch_bytes


def rank_gpu(args: Mapping[str, Any], label: str) -> int | None:
    """The CUDA device a TP rank's process uses, on one node: base_gpu_id + tp_rank x
    gpu_id_step (sglang 0.5.8, srt/entrypoints/engine.py, _launch_subprocesses; the PP term
    is 0 at pp_size 1). None when server_args does not say, or on several nodes / PP stages."""
    base, step = args.get("base_gpu_id"), args.get("gpu_id_step")
    if not isinstance(base, int) or not isinstance(step, int):
        return None
    if args.get("nnodes") not in (None, 1) or args.get("pp_size") not in (None, 1):
        return None
    m = re.search(r"\bTP(\d+)\b", label)
    if m is None and label:
        return None
    return base + (int(m.group(1)) if m else 0) * step


def _rank(a: Analysis, launch: int | None, rank: str | None) -> Rank:
    launches = a.launches if launch is None else [L for L in a.launches if L.index == launch]
    if rank is not None:
        found = next((r for L in launches for r in L.ranks if r.label == rank), None)
        if found is None:
            known = ", ".join(sorted({r.label for L in launches for r in L.ranks})) or "none"
            raise SelectionError(f"--rank {rank!r} is not in the log; ranks seen: {known}")
        return found
    for L in launches:
        main = L.main_rank
        if main is not None and any(g.begin_bytes is not None for g in main.graphs):
            return main
    raise SelectionError("the log shows no CUDA-graph capture with a free-memory reading")


def _capture(r: Rank, capture: int | None) -> Graph:
    usable = [g for g in r.graphs if g.end_bytes is not None and g.begin_bytes is not None]
    if not usable:
        raise SelectionError(
            f"{r.label} prints no capture with both a begin and an end reading to compare"
        )
    if capture is None:
        return usable[0]
    if not 0 <= capture < len(usable):
        raise SelectionError(
            f"--capture {capture}: {r.label} has {len(usable)} complete capture(s), "
            f"numbered 0 to {len(usable) - 1}"
        )
    return usable[capture]


def join(
    a: Analysis,
    summaries: Sequence[DeviceSummary],
    traces: Sequence[DeviceTrace],
    *,
    device: int | None = None,
    rank: str | None = None,
    launch: int | None = None,
    capture: int | None = None,
) -> LogJoin:
    """Line one device of the snapshot up with one capture of one rank of the log."""
    if not summaries:
        raise SelectionError("the snapshot holds no segments to compare with the log")
    devices = [s.device for s in summaries]
    if device is None:
        device = devices[0]
    summary = next((s for s in summaries if s.device == device), None)
    if summary is None:
        raise SelectionError(f"--device {device}: the snapshot has device(s) {devices}")
    r = _rank(a, launch, rank)
    L = _launch_of(a, r)
    g = _capture(r, capture)
    assumptions: list[str] = []
    assert g.end is not None and g.begin is not None and g.end_bytes is not None
    if g.samples and g.static_measured:
        start_label, start_line, start = (
            "first bucket reading",
            g.samples[0].source.line_no,
            g.samples[0].avail.bytes,
        )
    else:
        assert g.begin_bytes is not None
        start_label, start_line, start = "capture begin", g.begin.source.line_no, g.begin_bytes
        assumptions.append(
            "the log prints no reading at the first bucket, so its drop starts at the begin "
            "line: the graph runner's static buffers, allocated before recording starts, "
            "count as outside PyTorch"
        )
    trace = next((t for t in traces if t.device == device), None)
    graph_pools = [p for p in summary.pools if p.kind == "cuda_graph"]
    if trace is None:
        graph_bytes = sum(p.reserved_bytes for p in graph_pools)
        other: int | None = None
        assumptions.append(
            "the snapshot has no trace: the CUDA-graph pool's size is taken as its growth "
            "during capture and the other pools as unchanged"
        )
    else:
        graph_traces = [p for p in trace.pools if p.kind == "cuda_graph"]
        graph_bytes = sum(p.reserved_growth for p in graph_traces)
        other = sum(p.reserved_growth for p in trace.pools if p.kind != "cuda_graph")
        if not graph_traces or not all(p.covers_from_empty for p in graph_traces):
            assumptions.append(
                "the trace does not hold the CUDA-graph pool from empty (recording started "
                "late or dropped old entries): only the growth it saw is subtracted"
            )
    if not graph_pools:
        assumptions.append("no pool in the snapshot is recognised as a CUDA-graph pool")
    return LogJoin(
        log_paths=a.paths,
        rank=r.label,
        device=device,
        graph=g.label,
        start_label=start_label,
        start_line=start_line,
        end_line=g.end.source.line_no,
        start_bytes=start,
        end_bytes=g.end_bytes,
        graph_pool_bytes=graph_bytes,
        other_pools_bytes=other,
        measured=not assumptions,
        assumptions=tuple(assumptions),
        other_captures=tuple(x.label for x in r.graphs if x is not g),
        rank_device=rank_gpu(L.args, r.label),
        peers=_peers(L),
        deepep=comm.deepep_on(L.args),
    )


def _launch_of(a: Analysis, r: Rank) -> Launch:
    return next(L for L in a.launches if any(x is r for x in L.ranks))


def _peers(L: Launch) -> bool | None:
    """More than one rank in the launch (NCCL peers): by server_args' sizes, else by ranks."""
    if isinstance(L.args.get("tp_size"), int):
        sizes = [L.args.get(k) for k in ("tp_size", "pp_size", "dp_size")]
        return any(isinstance(n, int) and n > 1 for n in sizes)
    return True if len(L.ranks) > 1 else None
