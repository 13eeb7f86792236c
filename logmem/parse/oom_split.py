"""PyTorch's own split of device memory, read from its out-of-memory message (torch >= 2.1).

Since 2.1 the caching allocator's OOM text (CUDA and HIP builds alike) says, in this order:

    CUDA out of memory. Tried to allocate X. GPU 0 has a total capacity of T of which F is
    free. Process 12 has P memory in use. Including non-PyTorch memory, this process has M
    memory in use. Of the allocated memory A is allocated by PyTorch, with G allocated in
    private pools (e.g., CUDA Graphs), and R is reserved by PyTorch but unallocated.

"Process N has ..." lists the other processes NVML sees; the process itself is named "this
process" only when its PID matches, which a container's PID namespace often prevents (then
it is one of the "Process N" entries and cannot be told apart). ROCm builds print no process
list. The private-pool clause appears only when some memory sits in a private pool, and only
in later versions, so its absence is "not printed", never zero. Every figure is rounded by
PyTorch's format_size: "N bytes" up to 1 KiB, then KiB/MiB/GiB with two decimals.

`parse_oom_split` is pure: text in, typed facts in bytes out, None where a figure is not
printed. Derived figures (reserved, outside PyTorch) are properties naming their inputs.
"""

from __future__ import annotations

from logmem.frozen import frozen
from logmem.parse.lazy import lazy
from logmem.units import GIB, KIB, MIB

# format_size's units; a figure is known to half its last printed digit.
_UNIT = {"bytes": 1, "B": 1, "KiB": KIB, "MiB": MIB, "GiB": GIB, "TiB": GIB * 1024}
_NUM = r"(\d{1,12}(?:\.\d{1,6})?) (bytes|B|KiB|MiB|GiB|TiB)"

_HEAD = lazy(r"\b(CUDA|HIP) out of memory\.")
_TRIED = lazy(r"\GTried to allocate " + _NUM + r"\.")
_GPU = lazy(r"GPU (\d{1,4}) has a total capacity of " + _NUM + r" of which " + _NUM + r" is free\.")
_PROCESS = lazy(r"Process (\d{1,10}) has " + _NUM + r" memory in use\.")
_THIS = lazy(r"Including non-PyTorch memory, this process has " + _NUM + r" memory in use\.")
_ALLOCATED = lazy(r"Of the allocated memory " + _NUM + r" is allocated by PyTorch,")
_PRIVATE = lazy(r"\G with " + _NUM + r" allocated in private pools")
_RESERVED = lazy(_NUM + r" is reserved by PyTorch but unallocated")
_NEXT_HEAD = lazy(r"\b(?:CUDA|HIP) out of memory\.")

# More "Process N has" entries than this in one message is not a real GPU's process list.
MAX_PROCESSES = 256


@frozen
class Figure:
    """One printed size: its bytes and the half-unit it is known to (print rounding)."""

    bytes: int
    resolution: int
    text: str  # as printed, e.g. "77.62 GiB"


@frozen
class ProcessUse:
    pid: int
    used: Figure


@frozen
class MemorySplit:
    """What one OOM message states about the device's memory, each figure as printed."""

    device: str  # "CUDA" | "HIP"
    gpu: int | None
    tried: Figure | None
    capacity: Figure | None
    free: Figure | None
    processes: tuple[ProcessUse, ...]  # "Process N has X memory in use", in printed order
    this_process: Figure | None  # "Including non-PyTorch memory, this process has M"
    pytorch_allocated: Figure | None  # "A is allocated by PyTorch" (includes private pools)
    private_pools: Figure | None  # "with G allocated in private pools (e.g., CUDA Graphs)"
    reserved_unallocated: Figure | None  # "R is reserved by PyTorch but unallocated"

    @property
    def pytorch_reserved_bytes(self) -> int | None:
        """A + R: everything the caching allocator holds from the driver."""
        if self.pytorch_allocated is None or self.reserved_unallocated is None:
            return None
        return self.pytorch_allocated.bytes + self.reserved_unallocated.bytes

    @property
    def outside_pytorch_bytes(self) -> int | None:
        """M - A - R: this process's memory outside the caching allocator (CUDA context,
        NCCL/DeepEP buffers, cuBLAS workspaces); None unless "this process" is printed."""
        reserved = self.pytorch_reserved_bytes
        if self.this_process is None or reserved is None:
            return None
        return self.this_process.bytes - reserved

    @property
    def outside_pytorch_resolution(self) -> int | None:
        """How far M - A - R can be off from print rounding alone (the three halves added)."""
        if self.outside_pytorch_bytes is None:
            return None
        parts = (self.this_process, self.pytorch_allocated, self.reserved_unallocated)
        return sum(p.resolution for p in parts if p is not None)

    @property
    def other_processes_bytes(self) -> int | None:
        """The "Process N" entries added up, when the message names this process apart
        (else one of those entries may be this process and the sum is not "other")."""
        if self.this_process is None:
            return None
        return sum(p.used.bytes for p in self.processes)


def _figure(number: str, unit: str) -> Figure:
    scale = _UNIT[unit]
    decimals = len(number.partition(".")[2])
    resolution = scale // 2 if decimals == 0 else round(scale * 0.5 * 10**-decimals)
    return Figure(round(float(number) * scale), max(resolution, 0), f"{number} {unit}")


def parse_oom_split(text: str) -> MemorySplit | None:
    """The split stated by the first CUDA/HIP out-of-memory message in `text`, or None
    when `text` holds no such message or the message states no split (torch before 2.1
    printed "(GPU 0; X total capacity; ...)" instead). Clauses not printed stay None."""
    head = _HEAD.search(text)
    if head is None:
        return None
    start = head.end()
    # One message only: a second OOM quoted later in the same text is another message.
    nxt = _NEXT_HEAD.search(text, start)
    body = text[start : nxt.start() if nxt else len(text)]
    body_start = len(body) - len(body.lstrip())
    tried = _TRIED.match(body, body_start)
    gpu = _GPU.search(body)
    processes: list[ProcessUse] = []
    for m in _PROCESS.finditer(body):
        if len(processes) == MAX_PROCESSES:
            break
        processes.append(ProcessUse(int(m.group(1)), _figure(m.group(2), m.group(3))))
    this = _THIS.search(body)
    allocated = _ALLOCATED.search(body)
    private = _PRIVATE.match(body, allocated.end()) if allocated else None
    reserved = _RESERVED.search(body, allocated.end() if allocated else 0)
    if not (allocated or reserved or this or processes):
        return None
    return MemorySplit(
        device=head.group(1),
        gpu=int(gpu.group(1)) if gpu else None,
        tried=_figure(tried.group(1), tried.group(2)) if tried else None,
        capacity=_figure(gpu.group(2), gpu.group(3)) if gpu else None,
        free=_figure(gpu.group(4), gpu.group(5)) if gpu else None,
        processes=tuple(processes),
        this_process=_figure(this.group(1), this.group(2)) if this else None,
        pytorch_allocated=_figure(allocated.group(1), allocated.group(2)) if allocated else None,
        private_pools=_figure(private.group(1), private.group(2)) if private else None,
        reserved_unallocated=_figure(reserved.group(1), reserved.group(2)) if reserved else None,
    )
