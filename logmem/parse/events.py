"""Events stage: records -> typed, frozen facts with their numbers converted once.

Each event keeps its rank and its Source (excluded from equality: tests compare meaning). A
figure the line does not print is None, never 0. Records only: logmem.parse.builders builds
them from matches, logmem.parse.match picks the patterns, logmem.parse.unmatched the rest.
"""

from __future__ import annotations

from dataclasses import field
from typing import Any

from logmem.frozen import frozen
from logmem.parse import events_pools as _pools
from logmem.parse.event_base import Event as Event
from logmem.parse.server_args import ELIDED_SERVER_ARGS
from logmem.units import Mem

# The pool step's events live in logmem.parse.events_pools; every stage reads them here.
DSv4Plan = _pools.DSv4Plan
KVAvailable = _pools.KVAvailable
KVDtype = _pools.KVDtype
KVPool = _pools.KVPool
KVReserved = _pools.KVReserved
MambaPool = _pools.MambaPool
PostCaptureKV = _pools.PostCaptureKV
PostCaptureNote = _pools.PostCaptureNote
PostCaptureSplit = _pools.PostCaptureSplit
SWAPlan = _pools.SWAPlan
SWASummary = _pools.SWASummary
UnifiedAllocated = _pools.UnifiedAllocated
UnifiedReserved = _pools.UnifiedReserved
UnifiedSubPool = _pools.UnifiedSubPool
WeightsCommitted = _pools.WeightsCommitted


@frozen(kw_only=True)
class ServerArgs(Event):
    args: dict[str, Any] = field(hash=False)
    form: str  # "repr" | "dict"
    error: str | None = None  # why parsing failed (e.g. a line split by a log shipper)

    @property
    def elided(self) -> bool:
        """The author replaced arguments with '...' (017): the keys it lacks are unknown, not
        SGLang's defaults (parse.server_args.ELIDED_SERVER_ARGS)."""
        return self.error is not None and self.error.startswith(ELIDED_SERVER_ARGS)


@frozen(kw_only=True)
class InitBegin(Event):
    wording: str


@frozen(kw_only=True)
class InitEnd(Event):
    usage: Mem
    elapsed_s: float | None


@frozen(kw_only=True)
class WeightsBegin(Event):
    avail: Mem


@frozen(kw_only=True)
class WeightsEnd(Event):
    avail: Mem
    usage: Mem | None
    elapsed_s: float | None
    model_type: str
    details: tuple[tuple[str, str], ...]  # dtype=..., quant=..., fmt=... as printed


@frozen(kw_only=True)
class WeightsUninitialized(Event):
    """ "Some weights are not initialized from checkpoints: [...]": parameters the model
    allocated that no checkpoint tensor filled (printed per rank before its Load weight end).
    The list can hold thousands of names: only counts are kept (logmem.parse.uninitialized)."""

    names: int  # names the list holds (a cut list: the names before the cut)
    complete: bool  # the list closes with ']'; False: cut, so `names` is a lower bound
    # Each name with its layer number written '*', and how many names have that shape; the
    # most frequent first, at most MAX_KINDS of them.
    kinds: tuple[tuple[str, int], ...]
    other_kinds: int  # further shapes, not listed in `kinds`
    layers: int  # distinct layer numbers among the names
    layer_min: int | None
    layer_max: int | None
    experts: int  # names of MoE expert weights ('.experts.' in the name)


@frozen(kw_only=True)
class PoolEnd(Event):
    avail: Mem


@frozen(kw_only=True)
class CaptureBegin(Event):
    name: str  # decode, piecewise, draft, draft extend, target verify, ...
    backend: str  # "cuda graph", "npu graph", "CUDA graph" as printed
    avail: Mem | None
    sizes: tuple[int, ...] | None
    graph_backend: str | None  # E7 backend=full|breakable|...
    tokens_per_req: int | None
    step: int | None


@frozen(kw_only=True)
class CaptureEnd(Event):
    name: str
    backend: str
    avail: Mem | None
    usage: Mem | None
    elapsed_s: float | None
    step: int | None
    sizes: tuple[int, ...] | None = None  # 'bs=[...]' of the end line (sglang 0.5.22 on)


@frozen(kw_only=True)
class CaptureSizes(Event):
    kind: str  # "bs" | "num tokens"
    sizes: tuple[int, ...] | None  # None when elided with "..."


@frozen(kw_only=True)
class BarRender(Event):
    kind: str  # "batches" | "num tokens" | "compile" | "plain" (no description)
    size: int | None
    avail: Mem | None
    count: int | None = None  # tqdm's n/total: which bucket the render belongs to
    total: int | None = None

    @property
    def bucket_index(self) -> int | None:
        """0-based bucket (largest first) this reading starts (tqdm: count = index; total last)."""
        if self.count is None or self.total is None:
            return None
        return min(self.count, self.total - 1) if self.total > 0 else None


@frozen(kw_only=True)
class RegisterGraphs(Event):
    count: int


@frozen(kw_only=True)
class AllReduceConfig(Event):
    symmetric: Mem
    local: Mem
    multicast: bool


@frozen(kw_only=True)
class CustomAllReduce(Event):
    """Custom all-reduce on one group (reference 8.2): state "disabled", "failed", "path" (ROCm
    '[AR] All-reduce call path') or "using" ('[AR] Using X'); text the reason, path or X."""

    state: str
    text: str


@frozen(kw_only=True)
class RocmHint(Event):
    """``Failed to import amdsmi with ...``: only a ROCm build prints it (custom all-reduce
    imports amdsmi under is_hip), so the library is RCCL even when device='cuda'."""

    text: str


@frozen(kw_only=True)
class DeviceName(Event):
    """The ``device_name=X`` of a kernel-config file SGLang looked for: torch's device name with
    spaces as underscores, the one line that says which GPU a log ran on."""

    name: str


@frozen(kw_only=True)
class DeviceTotal(Event):
    """``Reported total GPU memory per device (MiB): [124546], using min: 124546 MiB.``: the
    capacity SGLang's heuristics read (12.3) when nvidia-smi gave none; one figure per device."""

    per_device: tuple[Mem, ...]  # as listed; () when the list cannot be read
    used: Mem | None  # the "using min" figure: what the heuristics take as gpu_mem
    nvidia_smi_failed: bool  # "Failed to get GPU memory capacity from nvidia-smi" led the line


@frozen(kw_only=True)
class NSABackends(Event):
    """``Set NSA backends for fp8_e4m3 KV Cache: prefill=flashmla_auto, decode=flashmla_kv.``:
    the launcher's NSA (DSA) backends for the KV dtype (corpus 003, Feb 2026)."""

    kv: str  # the KV cache dtype it was chosen for, as printed
    prefill: str
    decode: str


@frozen(kw_only=True)
class LaunchEnv(Event):
    """An environment variable a test harness printed (``ENV_VAR_CASE K:V``, ``Setting ENV_VAR K=V``)."""

    key: str
    value: str


@frozen(kw_only=True)
class ModelSnapshot(Event):
    """``Found local HF snapshot for NAME at PATH``: the model a rank loads, by its hub name."""

    name: str


@frozen(kw_only=True)
class Seam:
    """Where a command's next physical line joins on (logmem.parse.command_lines.join_command)."""

    at: int  # the offset in LaunchCommand.argv where the line's text begins
    line: int  # its line number
    kind: str  # "shell" (after a backslash), "space" (a blank either side), "cut" (inside a word)


@frozen(kw_only=True)
class LaunchCommand(Event):
    """The command line that started SGLang, as a shell or harness echoed it: its first line is
    ``source``; a command that runs on over more lines spans them up to ``last_line``."""

    program: str  # "python3 -m sglang.launch_server", "... sglang.bench_one_batch" as printed
    argv: str  # everything after the program, its continuation lines joined on (see seams)
    env: tuple[tuple[str, str], ...]  # KEY=VALUE words before the program
    last_line: int | None = None  # the last line it spans (None: its first only)
    seams: tuple[Seam, ...] = ()
    # Every "cut" seam is a terminal's wrap at a width all its rows share: nothing was lost
    # there, so a word across it is whole (command_lines._wrapped_rows).
    cuts_whole: bool = False


@frozen(kw_only=True)
class MiscMemory(Event):
    """A memory figure we recognise but that is not part of the start-up chain."""

    what: str  # symm_prealloc | deepgemm_budget | hicache_host | runtime_reading | kv_not_allocated
    amount: Mem
    text: str


@frozen(kw_only=True)
class Summary(Event):
    max_total_num_tokens: int
    fields: tuple[tuple[str, str], ...]
    available: Mem | None

    def get_int(self, key: str) -> int | None:
        for k, v in self.fields:
            if k == key:
                try:
                    return int(v)
                except ValueError:
                    return None
        return None


@frozen(kw_only=True)
class Imbalance(Event):
    pre_model_load_gib: float | None
    local_gib: float | None
    exc_type: str | None


# The forms of SGLang's "no room for the pools at this --mem-fraction-static" errors, each
# raised while the KV / state pools are sized, each asking to raise --mem-fraction-static:
#   not_enough   "Not enough memory. Please try to increase --mem-fraction-static." (all eras;
#                from 0.5.14 only when the budget is positive but the pools get no token)
#   no_kv_memory "Loaded weights leave no GPU memory for the KV cache ... Raise
#                --mem-fraction-static above X" (0.5.14+: the budget is not positive)
#   state_cache  "Not enough GPU memory for hybrid (mamba/linear-attention) state cache" (0.5.13+)
#   unified_pool "[unified-memory-pool] ...: byte budget N cannot fit ONE worst-case request" (0.5.20+)
#   swa_cap      "SWA pool cap ... leaves no room for the full KV pool" (0.5.14+)
#   asks_mfs     any other error whose text says to raise/increase --mem-fraction-static
KV_SIZING_FORMS = (
    "not_enough",
    "no_kv_memory",
    "state_cache",
    "unified_pool",
    "swa_cap",
    "asks_mfs",
)


@frozen(kw_only=True)
class NotEnoughMemory(Event):
    mem_fraction_static: float | None
    exc_type: str | None
    form: str = "not_enough"  # one of KV_SIZING_FORMS
    # The value SGLang's own message suggests ("Raise --mem-fraction-static above 0.863").
    suggested_mfs: float | None = None


@frozen(kw_only=True)
class TorchOOM(Event):
    exc_type: str
    device: str
    message: str
    # PyTorch's split of the OOM (torch-snapshot.md); None where the message does not print
    # it (a HIP or NPU line without the split): unknown, never 0.
    tried: Mem | None = None
    gpu: int | None = None
    capacity: Mem | None = None
    free: Mem | None = None
    in_use: Mem | None = None
    allocated: Mem | None = None
    reserved_unallocated: Mem | None = None
    private_pools: Mem | None = None


@frozen(kw_only=True)
class CaptureFailed(Event):
    message: str
    # The PyTorch OOM the message quotes ("Capture cuda graph failed: CUDA out of memory.
    # Tried to allocate ..."), read with torch_oom's own field patterns; None: not an OOM.
    oom: TorchOOM | None = None


@frozen(kw_only=True)
class SchedulerException(Event):
    text: str


@frozen(kw_only=True)
class TracebackStart(Event):
    pass


@frozen(kw_only=True)
class ExceptionLine(Event):
    exc_type: str
    message: str


@frozen(kw_only=True)
class MessageMore(Event):
    """A line after an exception line that continues its message (the reader yields up to
    read.MAX_CONTINUATION_LINES of them): NCCL's "Last error:" block, dynamo's inner error."""

    text: str


@frozen(kw_only=True)
class Frame(Event):
    """A traceback frame, ``File "PATH", line N, in FUNC``: where an exception was raised."""

    path: str
    line: int
    func: str


@frozen(kw_only=True)
class ExceptionIgnored(Event):
    """Python's "Exception ignored in ...": an unraisable error (a destructor, an atexit
    callback) printed with its traceback; it never ends the program."""

    what: str


@frozen(kw_only=True)
class BenchResult(Event):
    """A benchmark printed its results: "offline" (bench_one_batch's latencies,
    bench_offline_throughput's table) or "serving" (a bench_serving client's table)."""

    kind: str


@frozen(kw_only=True)
class Serving(Event):
    """A "Decode batch" / "Prefill batch" line: the scheduler served. The reader yields the
    first one of each file and of each start-up after a summary (not every one)."""

    kind: str  # "decode" | "prefill"


@frozen(kw_only=True)
class ModelBackend(Event):
    """ "Using Transformers backend.": the model runs on the Transformers fallback, not on
    SGLang's own implementation of its architecture."""

    backend: str


@frozen(kw_only=True)
class OtherRanksFailed(Event):
    tp_rank: int


@frozen(kw_only=True)
class SigQuit(Event):
    pass


@frozen(kw_only=True)
class ProcessDied(Event):
    """The launcher's watchdog saw a child process end: 'Subprocess NAME (pid=P) crashed with
    exit code C' (a negative C is the signal that ended it, as multiprocessing reports it)."""

    process: str
    pid: int | None
    exit_code: int | None


@frozen(kw_only=True)
class SigTerm(Event):
    """'SIGTERM received': the server was asked to stop; deaths after it are its shutdown."""


@frozen(kw_only=True)
class FatalError(Event):
    """A process died by a signal without a Python traceback: faulthandler's 'Fatal Python
    error: X' (kind 'python'), or the ROCm runtime's 'HSA_STATUS_ERROR_...' abort ('hsa')."""

    kind: str
    text: str


@frozen(kw_only=True)
class Ready(Event):
    pass


@frozen(kw_only=True)
class HttpUp(Event):
    pass


@frozen(kw_only=True)
class GraphDisabled(Event):
    which: str
    why: str


@frozen(kw_only=True)
class Summarised(Event):
    """Printed by no one: where logmem.model.cap left launches of an input out, as briefs
    (logmem.model.records.LaunchBrief); the builder opens the next launch after it."""

    briefs: tuple[Any, ...] = field(hash=False)
