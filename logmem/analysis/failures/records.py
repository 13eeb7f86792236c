"""Typed error records: what each traceback's decisive error says, read from the typed events.

One record type per kind of failure SGLang and PyTorch print (OOM with its figures, KV
sizing's "Not enough memory", the imbalance check, a capture failure, DeepEP/NVSHMEM, other
ranks unfinished, any other Python error, a child that died silently). ``read_errors``
groups a launch's tracebacks per rank and keeps the one error that explains each best.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace

import regex

from logmem.analysis.failures.mfs_advice import asked_values, asks_more_mfs
from logmem.frozen import frozen
from logmem.model.records import Traceback
from logmem.parse import events as ev
from logmem.parse.lazy import lazy
from logmem.parse.lines import Source, strip_wrapper
from logmem.parse.oom_split import Figure, MemorySplit, parse_oom_split
from logmem.units import Mem


@frozen
class OutOfMemory:
    """PyTorch/HIP/NPU "out of memory" (figures when printed) or "CUDA error: out of memory"."""

    exc_type: str | None
    device: str | None  # CUDA | HIP | NPU | XPU | MUSA, as printed
    gpu: int | None
    tried_bytes: int | None
    capacity_bytes: int | None
    free_bytes: int | None
    in_use_bytes: int | None  # "Process N has" / "this process has ... in use"
    allocated_bytes: int | None  # allocated by PyTorch
    reserved_unallocated_bytes: int | None  # reserved by PyTorch but unallocated
    private_pools_bytes: int | None  # allocated in private pools (CUDA graphs)
    in_capture_error: bool  # raised as "Capture cuda graph failed: <OOM>"
    comm_library: str | None  # "DeepEP" / "NVSHMEM" when their buffer asked for it
    memory_split: MemorySplit | None = None  # PyTorch's own split, as the message states it
    # The exception's whole text when it says "out of memory" in other words than PyTorch's
    # one-line sentence (NCCL's "Last error: Cuda failure 'out of memory'" on a later line).
    message: str | None = None

    @property
    def shortfall_bytes(self) -> int | None:
        if self.tried_bytes is None or self.free_bytes is None:
            return None
        return max(self.tried_bytes - self.free_bytes, 0)


@frozen
class KVSizing:
    """SGLang's pool sizing found no room at this --mem-fraction-static and asked to raise it:
    "Not enough memory. Please try to increase --mem-fraction-static.", or one of the newer
    forms (events.KV_SIZING_FORMS: 0.5.14's "Loaded weights leave no GPU memory for the KV
    cache", the Mamba state cache, the unified memory pool ...), or any error whose text says
    to raise --mem-fraction-static."""

    mem_fraction_static: float | None
    form: str = "not_enough"  # events.KV_SIZING_FORMS
    suggested_mfs: float | None = None  # "Raise --mem-fraction-static above X": SGLang's X
    exc_type: str | None = None
    message: str | None = None  # form "asks_mfs": the error's text (no pattern names it)


@frozen
class Unbalanced:
    """ "The memory capacity is unbalanced", raised (a warning is not a failure)."""

    pre_model_load_gib: float | None  # global minimum of free memory after distributed init
    local_gib: float | None  # the raising (healthy) rank's own free memory


@frozen
class CaptureError:
    """ "Capture cuda graph failed: <e>" where e is not an out-of-memory error."""

    message: str


@frozen
class CommBufferError:
    """A DeepEP / NVSHMEM error that does not say "out of memory" in PyTorch's words."""

    library: str
    exc_type: str | None
    message: str
    memory: bool | None  # allocation wording -> True; unknown -> None


@frozen
class OtherRanksUnfinished:
    """ "TP rank N could finish the model loading, but there are other ranks that didn't finish"."""

    tp_rank: int


@frozen
class PythonError:
    """Any other exception that ended a traceback (TypeError, ImportError, RuntimeError ...)."""

    exc_type: str
    message: str
    # The message names memory only in a launcher's hint of possible causes ("potential root
    # causes: (1) ... killed by the OOM killer"): the exception raised is not an OOM, and
    # whether memory ran out cannot be told from it.
    memory_hint: bool = False


@frozen
class CutTraceback:
    """A traceback the log cuts before its exception line: the cause is not in the log."""


@frozen
class ChildDied:
    """A child process died with no readable traceback: "Received sigquit from a child
    process", or the watchdog's "Subprocess NAME ... crashed with exit code C" (deaths.py)."""

    process: str | None = None
    exit_code: int | None = None
    signal: str | None = None
    fatal: str | None = None  # the first fatal-error line before it (faulthandler, ROCm)


ErrorRecord = (
    OutOfMemory
    | KVSizing
    | Unbalanced
    | CaptureError
    | CommBufferError
    | OtherRanksUnfinished
    | PythonError
    | CutTraceback
    | ChildDied
)


@frozen
class RankError:
    """The decisive error of one traceback, with the rank that printed it."""

    rank: str | None
    record: ErrorRecord
    source: Source | None


# --- reading the error records ----------------------------------------------------------

# Wording of an allocation failure outside PyTorch's OOM sentence (cuBLAS, NVSHMEM, DeepEP, NPU).
_MEMORY_WORDS = lazy(
    r"out of memory|outofmemory|\bOOM\b|ALLOC_FAILED|failed to allocate|cannot allocate memory|"
    r"insufficient (?:device )?memory|not enough (?:device |GPU )?memory|memory allocation failed|"
    r"malloc failed|mspace|unable to allocate",
    regex.IGNORECASE,
)
# Errors that mention memory but are not about capacity.
_NOT_CAPACITY = lazy(
    r"illegal memory access|memory access fault|misaligned address", regex.IGNORECASE
)
_COMM = lazy(r"\b(DeepEP|deep_ep|NVSHMEM|nvshmem|mooncake|UCCL)\b")
# A traceback ending with these is a code, install or version problem, never capacity.
_NOT_MEMORY_TYPES = frozenset(
    {
        "TypeError",
        "ImportError",
        "ModuleNotFoundError",
        "AttributeError",
        "NameError",
        "SyntaxError",
        "KeyError",
        "IndexError",
        "AssertionError",
        "NotImplementedError",
        "ValueError",
        "FileNotFoundError",
        "PermissionError",
        "ConnectionError",
        "ConnectionRefusedError",
        "TimeoutError",
        "UnboundLocalError",
        "ZeroDivisionError",
        "RecursionError",
        "JSONDecodeError",
        "OSError",
    }
)


def _b(m: Mem | None) -> int | None:
    return m.bytes if m is not None else None


def _oom_from_event(e: ev.TorchOOM, in_capture: bool = False) -> OutOfMemory:
    lib = _COMM.search(e.message)
    return OutOfMemory(
        exc_type=e.exc_type,
        device=e.device,
        gpu=e.gpu,
        tried_bytes=_b(e.tried),
        capacity_bytes=_b(e.capacity),
        free_bytes=_b(e.free),
        in_use_bytes=_b(e.in_use),
        allocated_bytes=_b(e.allocated),
        reserved_unallocated_bytes=_b(e.reserved_unallocated),
        private_pools_bytes=_b(e.private_pools),
        in_capture_error=in_capture,
        comm_library=_library(lib.group(1)) if lib else None,
        memory_split=parse_oom_split(e.message),
    )


def _library(name: str) -> str:
    return {"deep_ep": "DeepEP", "nvshmem": "NVSHMEM"}.get(name.lower(), name)


# A launcher's list of possible causes: memory named there is a guess, not what was raised.
# From the first such sentence on, the rest of the message is the hint.
_HINT_START = lazy(
    r"(?i)\b(?:potential|possible|probable) (?:root )?(?:causes?|reasons?|solutions?)\b|"
    r"\b(?:is|are|was) (?:likely|probably) (?:due to|caused by)\b|\bmay have been\b|"
    r"\bmight (?:be|have)\b|\bcould be (?:due|caused)\b|\bplease check\b|\b(?:e\.g\.|such as)"
)


def states_memory(text: str) -> bool | None:
    """True: the message says an allocation failed; None: memory is named only in a hint of
    possible causes; False: no memory wording (or only access faults)."""
    hint = _HINT_START.search(text)
    head, tail = (text[: hint.start()], text[hint.start() :]) if hint else (text, "")
    if _MEMORY_WORDS.search(head) and not _NOT_CAPACITY.search(head):
        return True
    return None if _MEMORY_WORDS.search(tail) else False


def _record(e: ev.Event) -> ErrorRecord | None:
    """One error event -> its typed record (None for events that are not errors)."""
    if isinstance(e, ev.TorchOOM):
        return _oom_from_event(e)
    if isinstance(e, ev.NotEnoughMemory):
        return KVSizing(e.mem_fraction_static, e.form, e.suggested_mfs, e.exc_type)
    if isinstance(e, ev.Imbalance):
        return Unbalanced(e.pre_model_load_gib, e.local_gib)
    if isinstance(e, ev.OtherRanksFailed):
        return OtherRanksUnfinished(e.tp_rank)
    if isinstance(e, ev.CaptureFailed):
        if e.oom is not None:
            return _oom_from_event(e.oom, in_capture=True)
        if states_memory(e.message):
            return _bare_oom(None, e.message, in_capture=True)
        return CaptureError(e.message)
    if isinstance(e, ev.ExceptionLine):
        text = f"{e.exc_type}: {e.message}"
        if asks_more_mfs(text):
            at, suggested = asked_values(text)
            return KVSizing(at, "asks_mfs", suggested, e.exc_type, e.message)
        lib = _COMM.search(text)
        memory = states_memory(text)
        if memory:
            return _bare_oom(e.exc_type, text)
        if lib is not None:
            return CommBufferError(_library(lib.group(1)), e.exc_type, e.message, None)
        return PythonError(e.exc_type, e.message, memory_hint=memory is None)
    return None


# Figures in allocation failures outside PyTorch's sentence (DeepEP/NVSHMEM, NPU, cuBLAS ...).
_SIZE = r"(\d{1,9}(?:\.\d{1,6})?) ?(B|bytes|KiB|MiB|GiB|TiB|KB|MB|GB)\b"
_ASKED = lazy(
    r"(?:allocate|allocating|requested|request of|size of)\D{0,30}?" + _SIZE, regex.IGNORECASE
)
_FREE = lazy(
    r"free(?: memory)?(?: is| of|:|=)? ?" + _SIZE + r"|" + _SIZE + r" (?:is )?free",
    regex.IGNORECASE,
)


_UNITS = {
    "b": "B",
    "bytes": "B",
    "kib": "KiB",
    "mib": "MiB",
    "gib": "GiB",
    "tib": "TiB",
    "kb": "KB",
    "mb": "MB",
    "gb": "GB",
}


def _size(number: str | None, unit: str | None) -> int | None:
    if number is None or unit is None:
        return None
    # The pattern ignores case ("Gib", "mb" in hand-written messages): back to the printed forms.
    unit = _UNITS.get(unit.lower(), unit)
    return Mem.parse(number, unit).bytes  # "GB" is read as GiB, as everywhere in SGLang


def _bare_oom(exc_type: str | None, text: str, in_capture: bool = False) -> OutOfMemory:
    """An allocation failure in other words than PyTorch's; keeps the size asked for and the free memory when printed."""
    dev = regex.search(r"\b(CUDA|HIP|NPU|XPU|MUSA|ACL)\b", text)
    lib = _COMM.search(text)
    asked = _ASKED.search(text)
    free = _FREE.search(text)
    free_bytes = None
    if free is not None:
        free_bytes = (
            _size(free.group(1), free.group(2))
            if free.group(1)
            else _size(free.group(3), free.group(4))
        )
    split = parse_oom_split(text)
    if split is not None:
        # PyTorch's sentence quoted inside another message (dynamo's "raised:", a wrapper's
        # text): its own figures, read by the one OOM-split parser.
        oom = _oom_from_split(exc_type, split, in_capture, lib.group(1) if lib else None)
        return replace(oom, message=text)
    return OutOfMemory(
        exc_type=exc_type,
        device=dev.group(1) if dev else None,
        gpu=None,
        tried_bytes=_size(asked.group(1), asked.group(2)) if asked else None,
        capacity_bytes=None,
        free_bytes=free_bytes,
        in_use_bytes=None,
        allocated_bytes=None,
        reserved_unallocated_bytes=None,
        private_pools_bytes=None,
        in_capture_error=in_capture,
        comm_library=_library(lib.group(1)) if lib else None,
        message=text,
    )


def _oom_from_split(
    exc_type: str | None, s: MemorySplit, in_capture: bool, library: str | None
) -> OutOfMemory:
    def b(f: Figure | None) -> int | None:
        return f.bytes if f is not None else None

    return OutOfMemory(
        exc_type=exc_type,
        device=s.device,
        gpu=s.gpu,
        tried_bytes=b(s.tried),
        capacity_bytes=b(s.capacity),
        free_bytes=b(s.free),
        in_use_bytes=b(s.this_process) or (s.processes[0].used.bytes if s.processes else None),
        allocated_bytes=b(s.pytorch_allocated),
        reserved_unallocated_bytes=b(s.reserved_unallocated),
        private_pools_bytes=b(s.private_pools),
        in_capture_error=in_capture,
        comm_library=_library(library) if library else None,
        memory_split=s,
    )


def priority(r: ErrorRecord) -> int:
    """Which error explains a crash best: the specific memory messages before generic ones,
    and a rank's own error before "other ranks didn't finish" (which only points elsewhere)."""
    if isinstance(r, OutOfMemory):
        return 0 if r.tried_bytes is not None else 1
    order: dict[type, int] = {
        KVSizing: 2,
        Unbalanced: 3,
        CommBufferError: 4,
        CaptureError: 5,
        PythonError: 6,
        OtherRanksUnfinished: 7,
        CutTraceback: 8,
        ChildDied: 9,
    }
    return order[type(r)]


def _merge(records: Sequence[tuple[ErrorRecord, Source]]) -> tuple[ErrorRecord, Source] | None:
    """The decisive record of one traceback; a chained OOM + "Capture failed" keeps both facts."""
    if not records:
        return None
    best = min(records, key=lambda rs: priority(rs[0]))
    rec, src = best
    if isinstance(rec, OutOfMemory) and not rec.in_capture_error:
        wrapped = any(
            isinstance(r, (CaptureError, OutOfMemory)) and _in_capture(r) for r, _ in records
        )
        if wrapped:
            rec = replace(rec, in_capture_error=True)
    return rec, src


def _in_capture(r: ErrorRecord) -> bool:
    return isinstance(r, CaptureError) or (isinstance(r, OutOfMemory) and r.in_capture_error)


def read_errors(tracebacks: Iterable[Traceback]) -> tuple[RankError, ...]:
    """The decisive error of each traceback, typed, with its rank.

    A chained exception ("During handling of the above exception ...") prints a second,
    unprefixed traceback right after the first: it belongs to the same rank."""
    groups: list[tuple[str | None, list[tuple[ErrorRecord, Source]]]] = []
    last: Source | None = None
    for t in tracebacks:
        recs = [(r, e.source) for e in t.errors if (r := _record(e)) is not None]
        if not recs:
            continue
        start = t.opening.source if t.opening is not None else recs[0][1]
        chained = (
            t.rank is None
            and groups
            and last is not None
            and start.path == last.path
            and 0 <= start.line_no - last.line_no <= 5
        )
        if chained:
            groups[-1][1].extend(recs)
        else:
            groups.append((t.rank, recs))
        last = recs[-1][1]
    out: list[RankError] = []
    for rank, recs in groups:
        merged = _merge(recs)
        if merged is not None:
            out.append(RankError(rank, merged[0], merged[1]))
    return tuple(out)


def is_memory(r: ErrorRecord) -> bool | None:
    """Memory-related: True (capacity ran out), False (code/install/version), None (cannot tell)."""
    if isinstance(r, (OutOfMemory, KVSizing, Unbalanced)):
        return True
    if isinstance(r, CommBufferError):
        return r.memory
    if isinstance(r, PythonError) and r.memory_hint:
        return None  # a hint names memory as one possible cause: cannot tell
    if isinstance(r, (CaptureError, PythonError)):
        text = r.message if isinstance(r, CaptureError) else f"{r.exc_type}: {r.message}"
        if asks_more_mfs(text):
            return True  # SGLang's own remedy is more memory, whatever the exception type
        exc = r.exc_type if isinstance(r, PythonError) else leading_type(r.message)
        if exc is not None and exc.rsplit(".", 1)[-1] in _NOT_MEMORY_TYPES:
            return False
        # NCCL "unhandled cuda error" can hide an allocation failure: do not rule memory out.
        if regex.search(r"unhandled (?:cuda|system) error|NCCL error", text, regex.IGNORECASE):
            return None
        return False
    return None  # other ranks unfinished, a child that died silently


def leading_type(text: str) -> str | None:
    m = regex.match(r"\s*((?:[a-z_][a-z0-9_]*\.)*[A-Z]\w*(?:Error|Exception))\b", text)
    return m.group(1) if m else None


def kind_of(r: ErrorRecord) -> str:
    if isinstance(r, OutOfMemory):
        return "oom"
    if isinstance(r, KVSizing):
        return "not_enough_memory"
    if isinstance(r, Unbalanced):
        return "imbalance"
    if isinstance(r, CaptureError):
        return "capture_failed"
    return "error"


def message_of(r: ErrorRecord, src: Source | None) -> str:
    if isinstance(r, OutOfMemory) and r.message is not None:
        return r.message.strip()[:4000]
    if isinstance(r, (OutOfMemory, KVSizing, Unbalanced, OtherRanksUnfinished)) and src is not None:
        # The source is the physical line: a wrapper's prefix (docker, journald) is not the message.
        return strip_wrapper(src.text).strip()[:2000]
    if isinstance(r, CaptureError):
        return f"Capture CUDA graph failed: {r.message}".strip()
    if isinstance(r, PythonError):
        return f"{r.exc_type}: {r.message}".strip()
    if isinstance(r, CommBufferError):
        return f"{r.exc_type}: {r.message}" if r.exc_type else r.message
    if isinstance(r, CutTraceback):
        return "a traceback the log cuts before its exception line"
    if isinstance(r, ChildDied) and r.process is not None:
        code = f"exit code {r.exit_code}" + (f", {r.signal}" if r.signal else "")
        return f"{r.process} died ({code})" + (f" after '{r.fatal}'" if r.fatal else "")
    return "a child process died (sigquit) without a readable traceback"


def exc_type_of(r: ErrorRecord) -> str | None:
    if isinstance(r, (OutOfMemory, PythonError, CommBufferError, KVSizing)):
        return r.exc_type
    if isinstance(r, CaptureError):
        return leading_type(r.message)
    return None
