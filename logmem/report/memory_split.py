"""PyTorch's own split of device memory from an OOM message: JSON ``failure.memory_split`` and
the ledger note at the failing step (facts from logmem.parse.oom_split, in bytes)."""

from __future__ import annotations

from typing import Any

from logmem.analysis.failures import OutOfMemory, outcome
from logmem.analysis.platform import math_library
from logmem.model.records import Launch
from logmem.parse.oom_split import Figure, MemorySplit
from logmem.sglang.comm import Library
from logmem.units import format_gib


def split_json(s: MemorySplit | None) -> dict[str, Any] | None:
    """Bytes, null where the message does not print a figure; derived keys say their inputs."""
    if s is None:
        return None

    def b(f: Figure | None) -> int | None:
        return f.bytes if f is not None else None

    return {
        "device": s.device,
        "gpu": s.gpu,
        "tried_bytes": b(s.tried),
        "capacity_bytes": b(s.capacity),
        "free_bytes": b(s.free),
        "pytorch_allocated_bytes": b(s.pytorch_allocated),  # includes private pools
        "private_pools_bytes": b(s.private_pools),
        "reserved_unallocated_bytes": b(s.reserved_unallocated),
        "this_process_bytes": b(s.this_process),
        "outside_pytorch_bytes": s.outside_pytorch_bytes,  # this process - allocated - reserved free
        "outside_pytorch_rounding_bytes": s.outside_pytorch_resolution,
        "other_processes_bytes": s.other_processes_bytes,
        "processes": [{"pid": p.pid, "bytes": p.used.bytes} for p in s.processes],
    }


def _outside_parts(device: str) -> str:
    """What a process holds outside PyTorch's allocator, named for the message's device."""
    hip = device.upper() == "HIP"
    lib = Library.RCCL if hip else Library.NCCL
    return f"{device} context, {lib.value}/DeepEP buffers, {math_library(lib)} workspaces"


def split_sentence(s: MemorySplit, line: int | None) -> str:
    """One note: the figures as the message prints them, and what follows from them."""
    where = f" (line {line})" if line is not None else ""
    gpu = f"GPU {s.gpu}" if s.gpu is not None else "the GPU"
    cap = f" of {s.capacity.text}" if s.capacity is not None else ""
    parts = []
    if s.pytorch_allocated is not None:
        pools = (
            f", {s.private_pools.text} of it in private pools (CUDA graphs)"
            if s.private_pools
            else ""
        )
        parts.append(f"{s.pytorch_allocated.text} allocated by PyTorch{pools}")
    if s.reserved_unallocated is not None:
        parts.append(f"{s.reserved_unallocated.text} reserved by PyTorch but unallocated")
    if s.free is not None:
        parts.append(f"{s.free.text} free")
    out = (
        f"At the failure, PyTorch's out-of-memory message{where} splits {gpu}{cap}: "
        + "; ".join(parts)
        + "."
    )
    outside = s.outside_pytorch_bytes
    if outside is not None and s.this_process is not None:
        out += (
            f" This process uses {s.this_process.text}, so {format_gib(outside)} GiB of it is outside "
            f"PyTorch ({_outside_parts(s.device)}; +-"
            f"{format_gib(s.outside_pytorch_resolution)} GiB from rounding)."
        )
        if s.processes:
            out += f" Other processes use {format_gib(s.other_processes_bytes)} GiB."
    elif s.processes:
        listed = ", ".join(f"process {p.pid} using {p.used.text}" for p in s.processes[:4])
        out += (
            f" It lists {listed} but does not name this process (PyTorch does only when the PIDs "
            "match, which a container often prevents), so the memory outside PyTorch cannot be "
            "told."
        )
    else:
        out += " It prints no per-process use, so the memory outside PyTorch cannot be told."
    return out


def split_notes(L: Launch) -> dict[str, str]:
    """rank label -> the note for that rank's ledger, from its own OOM message."""
    failure = outcome(L).failure
    if failure is None:
        return {}
    notes: dict[str, str] = {}
    for e in failure.errors:
        r = e.record
        if isinstance(r, OutOfMemory) and r.memory_split is not None and e.rank is not None:
            line = e.source.line_no if e.source is not None else None
            notes.setdefault(e.rank, split_sentence(r.memory_split, line))
    return notes


def failure_split(record: object) -> dict[str, Any] | None:
    return split_json(record.memory_split) if isinstance(record, OutOfMemory) else None
