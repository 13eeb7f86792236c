"""What a log says about the platform it ran on: the device kind and its collective library.

The reports name the collective library (NCCL, RCCL on ROCm, HCCL on Ascend, MCCL on MUSA) in
the ledger and the communication table, and mention unified memory (system RAM read as free
device memory) only where the device could be a unified-memory one. Both come from here, so
the ledger and the table cannot disagree. Facts only: logmem.report words them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from logmem.frozen import frozen
from logmem.parse import events as ev
from logmem.sglang import comm

# Devices whose memory is the device's own (HBM): free memory is never system RAM there.
# CUDA (GB10, Jetson) and ROCm (MI300A, APUs) have unified-memory parts; "unknown" may be either.
_DISCRETE = ("npu", "musa", "xpu", "hpu")


@frozen
class Platform:
    device: str  # "cuda" | "rocm" | "npu" | "musa" | another server_args device | "unknown"
    library: comm.Library  # the collective library behind torch.distributed

    @property
    def math_library(self) -> str:
        """The BLAS library whose workspaces a first forward allocates (math_library)."""
        return math_library(self.library)

    @property
    def unified_possible(self) -> bool:
        """Whether the device could read system RAM as free memory (a GB10-like device)."""
        return unified_possible(self.device)


# The math library whose workspaces a device's first matmuls allocate, by the collective
# library that names the platform: an Ascend or MUSA log must not be told about cuBLAS.
_MATH_LIBRARY = {
    comm.Library.NCCL: "cuBLAS",
    comm.Library.RCCL: "hipBLASLt / rocBLAS",
    comm.Library.HCCL: "CANN operator",
    comm.Library.MCCL: "muBLAS",
}


def math_library(library: comm.Library | None) -> str:
    """cuBLAS on CUDA, hipBLASLt / rocBLAS on ROCm, CANN's operators on Ascend, muBLAS on
    MUSA; a neutral name where the platform is not known."""
    return _MATH_LIBRARY.get(library, "math-library") if library is not None else "math-library"


def unified_possible(device: str) -> bool:
    """Whether a platform kind (``Platform.device``) has unified-memory parts."""
    return device not in _DISCRETE


def is_hip(events: Iterable[ev.Event], args: Mapping[str, Any]) -> bool:
    """ROCm evidence in a log: the aiter custom all-reduce, a HIP OOM, an aiter backend, an
    AMD device name (torch.cuda.get_device_name in a kernel-config file name) or the amdsmi
    import that only ROCm builds attempt."""
    if args.get("attention_backend") in ("aiter", "wave"):
        return True
    for e in events:
        if isinstance(e, ev.DeviceName) and e.name.startswith("AMD_"):
            return True
        if isinstance(e, ev.RocmHint):
            return True
        if isinstance(e, ev.CustomAllReduce) and e.state == "using" and "aiter" in e.text.lower():
            return True
        if isinstance(e, ev.TorchOOM) and e.device == "HIP":
            return True
    return False


def platform_events(launch: Any) -> list[ev.Event]:
    """A launch's events and its tracebacks' errors: a HIP OOM inside a traceback is ROCm
    evidence too (duck-typed: all_events(), tracebacks)."""
    out = list(launch.all_events())
    for tb in getattr(launch, "tracebacks", ()):
        out.extend(tb.errors)
    return out


def platform(launch: Any) -> Platform:
    """The platform of a Launch (duck-typed: args, all_events(), tracebacks, ranks' graphs)."""
    args = launch.args
    device = args.get("device") if isinstance(args.get("device"), str) else None
    events = platform_events(launch)
    hip = is_hip(events, args)
    if device is None:
        # No server_args device: a printed backend ("npu graph") or OOM device still tells.
        backends = {g.backend.split(" ", 1)[0].lower() for r in launch.ranks for g in r.graphs}
        ooms = {e.device.lower() for e in events if isinstance(e, ev.TorchOOM)}
        known = (backends | ooms) & {"npu", "musa", "xpu"}
        device = next(iter(sorted(known)), None)
    kind = "rocm" if hip and device in (None, "cuda") else device or "unknown"
    return Platform(kind, comm.Library(comm.collective_library(device, hip)))
