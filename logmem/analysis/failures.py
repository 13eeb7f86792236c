"""Failures stage: a launch -> outcome (ready / crashed / incomplete), where it died, why, and what to change.

Input is the ledger only (ranks, models, graphs, tracebacks grouped per rank). Traceback
frames never reach the events, so the *place* comes from the last memory step each rank
printed before its error, and the *cause* from the exception lines. For memory failures
the fixes are computed from printed readings with SGLang's own rules (reference 12.2):

* KV budget: ``rest = avail_after_weights - P x (1 - mem_fraction_static)``, where P is
  ``pre_model_load_memory``, the minimum over ranks of ``Load weight begin`` avail; so
  lowering mfs by d gives ``P x d`` bytes back to everything that is not KV, and the
  smallest mfs with a pool at all is ``1 - avail_after_weights / P``;
* a KV token costs ``KV bytes / #tokens``, both from the ``KV Cache is allocated`` line;
* a capture bucket costs the drop in free memory between two bar readings.

Every figure a fix quotes is a printed reading or one subtraction/division away from
one, so a person can check it against the log.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import regex

from logmem.model.launch import Graph, Launch, Model, Rank, Traceback
from logmem.parse import events as ev
from logmem.parse.lines import Record, Source
from logmem.sglang import rules
from logmem.units import GIB, Mem

# --- records ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Fix:
    """One change that would fix the failure, with its price in numbers a person can check."""

    flag: str  # a server flag, an environment variable, or an action such as "nvidia-smi"
    value: str | None  # the value to set (None: a switch, or nothing to set)
    effect: str  # what it buys and what it costs, with the arithmetic


@dataclass(frozen=True)
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

    @property
    def shortfall_bytes(self) -> int | None:
        if self.tried_bytes is None or self.free_bytes is None:
            return None
        return max(self.tried_bytes - self.free_bytes, 0)


@dataclass(frozen=True)
class KVSizing:
    """SGLang's "Not enough memory. Please try to increase --mem-fraction-static." (KV pool <= 0)."""

    mem_fraction_static: float | None


@dataclass(frozen=True)
class Unbalanced:
    """ "The memory capacity is unbalanced", raised (a warning is not a failure)."""

    pre_model_load_gib: float | None  # global minimum of free memory after distributed init
    local_gib: float | None  # the raising (healthy) rank's own free memory


@dataclass(frozen=True)
class CaptureError:
    """ "Capture cuda graph failed: <e>" where e is not an out-of-memory error."""

    message: str


@dataclass(frozen=True)
class CommBufferError:
    """A DeepEP / NVSHMEM error that does not say "out of memory" in PyTorch's words."""

    library: str
    exc_type: str | None
    message: str
    memory: bool | None  # allocation wording -> True; unknown -> None


@dataclass(frozen=True)
class OtherRanksUnfinished:
    """ "TP rank N could finish the model loading, but there are other ranks that didn't finish"."""

    tp_rank: int


@dataclass(frozen=True)
class PythonError:
    """Any other exception that ended a traceback (TypeError, ImportError, RuntimeError ...)."""

    exc_type: str
    message: str


@dataclass(frozen=True)
class ChildDied:
    """ "Received sigquit from a child process" with no readable traceback."""


ErrorRecord = (
    OutOfMemory
    | KVSizing
    | Unbalanced
    | CaptureError
    | CommBufferError
    | OtherRanksUnfinished
    | PythonError
    | ChildDied
)


@dataclass(frozen=True)
class RankError:
    """The decisive error of one traceback, with the rank that printed it."""

    rank: str | None
    record: ErrorRecord
    source: Source | None


@dataclass(frozen=True)
class Failure:
    kind: str  # oom | not_enough_memory | imbalance | capture_failed | error | stopped
    memory_related: bool | None  # None: cannot tell (a log that just stops, a lone sigquit)
    phase: str | None  # see PHASES
    ranks: tuple[str, ...]
    graph: str | None  # graph family being captured, when phase is a capture
    size: int | None  # bucket being captured (bs or num_tokens): its last bar sample
    tried_bytes: int | None
    free_bytes: int | None  # the OOM's "is free", else free at the last bar sample
    capacity_bytes: int | None
    message: str
    line: Source | None
    fixes: tuple[Fix, ...] = ()
    headline: str = ""  # the first verdict line
    explanation: str = ""  # the second: why it is (not) memory, or what is missing
    shortfall_bytes: int | None = None  # memory that was missing, when the log shows it
    bucket_free_bytes: int | None = None  # free memory before the bucket being captured
    exc_type: str | None = None
    record: ErrorRecord | None = None
    errors: tuple[RankError, ...] = ()  # the decisive error of every traceback, per rank


@dataclass(frozen=True)
class Outcome:
    status: str  # ready | crashed | incomplete
    failure: Failure | None
    runtime_errors: tuple[Traceback, ...]  # errors after start-up finished


# --- phases -----------------------------------------------------------------------------

# Phase names as they appear in Failure.phase, in start-up order; "<x>" is a graph family.
PHASES = (
    "before distributed init",
    "distributed init",
    "after distributed init",
    "weights",
    "pools",
    "after pools",
    "capture <x>",
    "after capture <x>",
    "serving",
)


def _steps(rank: Rank) -> list[tuple[Source, str]]:
    """The rank's start-up markers, in its own log order (drafts interleave with graphs)."""
    steps: list[tuple[Source, str]] = []
    if rank.init_begin is not None:
        steps.append((rank.init_begin.source, "distributed init"))
    if rank.init_end is not None:
        steps.append((rank.init_end.source, "after distributed init"))
    for m in rank.models:
        label = "" if m.role == "target" else "draft "
        if m.weights_begin:
            steps.append((m.weights_begin.source, f"{label}weights"))
        if m.weights_end:
            steps.append((m.weights_end.source, f"{label}pools"))
        if m.pool_end:
            steps.append((m.pool_end.source, f"after {label}pools"))
    for g in rank.graphs:
        if g.begin:
            steps.append((g.begin.source, f"capture {g.name}"))
        if g.end:
            steps.append((g.end.source, f"after capture {g.name}"))
    if rank.summary is not None:
        steps.append((rank.summary.source, "serving"))
    steps.sort(key=lambda s: (s[0].path, s[0].line_no))
    return steps


def _before(src: Source, limit: Source | None) -> bool:
    return limit is None or src.path != limit.path or src.line_no < limit.line_no


def rank_phase(rank: Rank, before: Source | None = None) -> str:
    """Where a rank's start-up stands (optionally: just before line `before`), from its last memory step."""
    steps = [s for s in _steps(rank) if _before(s[0], before)]
    return steps[-1][1] if steps else "before distributed init"


def _phase_order(phase: str) -> int:
    if phase.startswith("after capture"):
        return 7
    if phase.startswith("capture"):
        return 6
    base = phase.removeprefix("after ").removeprefix("draft ")
    order = {
        "before distributed init": 0,
        "distributed init": 1,
        "weights": 3,
        "pools": 4,
        "serving": 8,
    }
    if phase == "after distributed init":
        return 2
    if phase.startswith("after "):
        return 5  # after (draft) pools
    return order.get(base, 0)


def phase_text(phase: str | None, size: int | None = None, unit: str = "bs") -> str:
    """A phase as a phrase for a sentence: 'while capturing the decode graph at bs 256'."""
    if phase is None:
        return "at an unknown point of start-up"
    if phase.startswith("after capture "):
        return f"after the {phase.removeprefix('after capture ')} graph capture"
    if phase.startswith("capture "):
        where = f" at {unit} {size}" if size is not None else ""
        return f"while capturing the {phase.removeprefix('capture ')} graph{where}"
    draft = "the draft model's " if "draft" in phase else ""
    texts = {
        "before distributed init": "before distributed init",
        "distributed init": "during distributed init",
        "after distributed init": "after distributed init, before weight loading",
        "weights": f"while loading {draft or 'the '}weights",
        "pools": f"while sizing and allocating {draft or 'the '}KV cache",
        "after pools": f"after {draft or 'the '}memory pools (before graph capture)",
        "serving": "after the scheduler started (warm-up or serving)",
    }
    return texts.get(phase.replace("draft ", ""), phase)


# --- outcome ----------------------------------------------------------------------------


def _ready_source(launch: Launch) -> Source | None:
    return next((e.source for e in launch.events if isinstance(e, ev.Ready)), None)


def _finished(launch: Launch) -> bool:
    """Start-up finished: the ready line, the HTTP server, or the scheduler summary (offline Engine)."""
    if any(isinstance(e, (ev.Ready, ev.HttpUp)) for e in launch.events):
        return True
    return any(r.summary is not None for r in launch.ranks)


def _after_ready(src: Source | None, ready: Source | None) -> bool:
    """An error is a runtime error when the server was ready and it is not provably earlier."""
    if ready is None:
        return False
    if src is None or src.path != ready.path:
        return True
    return src.line_no > ready.line_no


def outcome(launch: Launch) -> Outcome:
    """Classify a launch: ready, crashed (with the failure) or incomplete (where it stopped).

    Only the ready line ends start-up for errors: a traceback after the scheduler summary
    but before "fired up" (warm-up) is a crash, one after it is a runtime error.
    """
    ready = _ready_source(launch)
    crash_tbs = [
        t
        for t in launch.tracebacks
        if t.errors and not _after_ready(t.errors[0].source, ready) and _fatal(launch, t, ready)
    ]
    runtime = tuple(
        t for t in launch.tracebacks if t.errors and _after_ready(t.errors[0].source, ready)
    )
    sigquit = [
        e for e in launch.events if isinstance(e, ev.SigQuit) and not _after_ready(e.source, ready)
    ]
    if crash_tbs or sigquit:
        return Outcome("crashed", _crash_failure(launch, crash_tbs), runtime)
    if _finished(launch):
        return Outcome("ready", None, runtime)
    return Outcome("incomplete", _stopped(launch), runtime)


def _fatal(launch: Launch, tb: Traceback, ready: Source | None) -> bool:
    """Did this traceback end start-up? A scheduler's crash report or an OOM/KV/imbalance
    error does; a stray exception line, or a caught and printed traceback, does not when
    start-up carried on (the server came up, or a rank printed memory steps after it)."""
    if isinstance(tb.opening, ev.SchedulerException):
        return True
    if any(
        isinstance(e, (ev.TorchOOM, ev.NotEnoughMemory, ev.CaptureFailed, ev.Imbalance))
        for e in tb.errors
    ):
        return True
    if ready is not None:
        return False
    err = tb.errors[-1].source
    later = [
        e
        for r in launch.ranks
        for e in r.events
        if e.source.path == err.path
        and e.source.line_no > err.line_no
        and isinstance(
            e,
            (
                ev.WeightsBegin,
                ev.WeightsEnd,
                ev.PoolEnd,
                ev.CaptureBegin,
                ev.CaptureEnd,
                ev.Summary,
            ),
        )
    ]
    return not later


# --- reading the error records ----------------------------------------------------------

# Wording of an allocation failure outside PyTorch's OOM sentence (cuBLAS, NVSHMEM, DeepEP, NPU).
_MEMORY_WORDS = regex.compile(
    r"out of memory|outofmemory|\bOOM\b|ALLOC_FAILED|failed to allocate|cannot allocate memory|"
    r"insufficient (?:device )?memory|not enough (?:device )?memory|memory allocation failed|"
    r"malloc failed|mspace|unable to allocate",
    regex.IGNORECASE,
)
# Errors that mention memory but are not about capacity.
_NOT_CAPACITY = regex.compile(
    r"illegal memory access|memory access fault|misaligned address", regex.IGNORECASE
)
_COMM = regex.compile(r"\b(DeepEP|deep_ep|NVSHMEM|nvshmem|mooncake|UCCL)\b")
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
    )


def _library(name: str) -> str:
    return {"deep_ep": "DeepEP", "nvshmem": "NVSHMEM"}.get(name.lower(), name)


def _oom_in_text(text: str, source: Source, rank: str | None) -> ev.TorchOOM | None:
    """Parse a PyTorch OOM sentence quoted inside another message (Capture ... failed: CUDA out of memory ...)."""
    m = regex.search(r"(?:CUDA|HIP|NPU|XPU|MUSA) out of memory\.", text)
    if m is None:
        return None
    hit = ev.match_record(
        Record(rank, (), None, "torch.OutOfMemoryError: " + text[m.start() :], source)
    )
    return hit[1] if hit is not None and isinstance(hit[1], ev.TorchOOM) else None


def _record(e: ev.Event) -> ErrorRecord | None:
    """One error event -> its typed record (None for events that are not errors)."""
    if isinstance(e, ev.TorchOOM):
        return _oom_from_event(e)
    if isinstance(e, ev.NotEnoughMemory):
        return KVSizing(e.mem_fraction_static)
    if isinstance(e, ev.Imbalance):
        return Unbalanced(e.pre_model_load_gib, e.local_gib)
    if isinstance(e, ev.OtherRanksFailed):
        return OtherRanksUnfinished(e.tp_rank)
    if isinstance(e, ev.CaptureFailed):
        inner = _oom_in_text(e.message, e.source, e.rank)
        if inner is not None:
            return _oom_from_event(inner, in_capture=True)
        if _MEMORY_WORDS.search(e.message) and not _NOT_CAPACITY.search(e.message):
            return _bare_oom(None, e.message, in_capture=True)
        return CaptureError(e.message)
    if isinstance(e, ev.ExceptionLine):
        text = f"{e.exc_type}: {e.message}"
        lib = _COMM.search(text)
        memory_words = bool(_MEMORY_WORDS.search(text)) and not _NOT_CAPACITY.search(text)
        if memory_words:
            return _bare_oom(e.exc_type, text)
        if lib is not None:
            return CommBufferError(_library(lib.group(1)), e.exc_type, e.message, None)
        return PythonError(e.exc_type, e.message)
    return None


# Figures in allocation failures outside PyTorch's sentence (DeepEP/NVSHMEM, NPU, cuBLAS ...).
_SIZE = r"(\d{1,9}(?:\.\d{1,6})?) ?(B|bytes|KiB|MiB|GiB|TiB|KB|MB|GB)\b"
_ASKED = regex.compile(
    r"(?:allocate|allocating|requested|request of|size of)\D{0,30}?" + _SIZE, regex.IGNORECASE
)
_FREE = regex.compile(
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
    )


def _priority(r: ErrorRecord) -> int:
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
        ChildDied: 8,
    }
    return order[type(r)]


def _merge(records: Sequence[tuple[ErrorRecord, Source]]) -> tuple[ErrorRecord, Source] | None:
    """The decisive record of one traceback; a chained OOM + "Capture failed" keeps both facts."""
    if not records:
        return None
    best = min(records, key=lambda rs: _priority(rs[0]))
    rec, src = best
    if isinstance(rec, OutOfMemory) and not rec.in_capture_error:
        wrapped = any(
            isinstance(r, (CaptureError, OutOfMemory)) and _in_capture(r) for r, _ in records
        )
        if wrapped:
            from dataclasses import replace

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
    if isinstance(r, (CaptureError, PythonError)):
        text = r.message if isinstance(r, CaptureError) else f"{r.exc_type}: {r.message}"
        exc = r.exc_type if isinstance(r, PythonError) else _leading_type(r.message)
        if exc is not None and exc.rsplit(".", 1)[-1] in _NOT_MEMORY_TYPES:
            return False
        # NCCL "unhandled cuda error" can hide an allocation failure: do not rule memory out.
        if regex.search(r"unhandled (?:cuda|system) error|NCCL error", text, regex.IGNORECASE):
            return None
        return False
    return None  # other ranks unfinished, a child that died silently


def _leading_type(text: str) -> str | None:
    m = regex.match(r"\s*((?:[a-z_][a-z0-9_]*\.)*[A-Z]\w*(?:Error|Exception))\b", text)
    return m.group(1) if m else None


def _kind(r: ErrorRecord) -> str:
    if isinstance(r, OutOfMemory):
        return "oom"
    if isinstance(r, KVSizing):
        return "not_enough_memory"
    if isinstance(r, Unbalanced):
        return "imbalance"
    if isinstance(r, CaptureError):
        return "capture_failed"
    return "error"


def _message(r: ErrorRecord, src: Source | None) -> str:
    if isinstance(r, (OutOfMemory, KVSizing, Unbalanced, OtherRanksUnfinished)) and src is not None:
        return src.text.strip()[:2000]
    if isinstance(r, CaptureError):
        return f"Capture CUDA graph failed: {r.message}".strip()
    if isinstance(r, PythonError):
        return f"{r.exc_type}: {r.message}".strip()
    if isinstance(r, CommBufferError):
        return f"{r.exc_type}: {r.message}" if r.exc_type else r.message
    return "a child process died (sigquit) without a readable traceback"


def _exc_type(r: ErrorRecord) -> str | None:
    if isinstance(r, (OutOfMemory, PythonError, CommBufferError)):
        return r.exc_type
    if isinstance(r, CaptureError):
        return _leading_type(r.message)
    return None


# --- the place --------------------------------------------------------------------------


def _rank_key(r: Rank) -> tuple[int, ...]:
    return tuple(n for _, n in r.tags)


def _furthest_rank(launch: Launch) -> Rank:
    """The rank whose start-up got furthest; ties go to the rank that prints the bars, then the lowest."""

    def key(r: Rank) -> tuple[int, int, int, tuple[int, ...]]:
        phase = rank_phase(r)
        printed_sizes = any(isinstance(e, ev.CaptureSizes) for e in r.events)
        return (
            -_phase_order(phase),
            0 if (r.prints_bars or printed_sizes) else 1,
            -len(_steps(r)),
            _rank_key(r),
        )

    return min(launch.ranks, key=key)


def _bar_rank(launch: Launch) -> Rank | None:
    return next((r for r in launch.ranks if r.prints_bars), None)


def _graph_at(rank: Rank, phase: str) -> Graph | None:
    """The graph a 'capture <x>' phase refers to: the rank's last open capture of that family."""
    if not phase.startswith("capture "):
        return None
    name = phase.removeprefix("capture ")
    return next((g for g in reversed(rank.graphs) if g.name == name and g.begin is not None), None)


@dataclass(frozen=True)
class _Place:
    rank: Rank | None
    phase: str | None
    graph: Graph | None  # the capture on the failing rank
    bar_graph: Graph | None  # the same capture on the rank that prints bars (has the samples)
    bar_rank: str | None

    @property
    def sample(self) -> tuple[int | None, int | None]:
        g = self.bar_graph
        if g is None or not g.samples:
            return None, None
        return g.samples[-1].size, g.samples[-1].avail.bytes


def _place(launch: Launch, rank: Rank | None, at: Source | None) -> _Place:
    if rank is None and launch.ranks:
        rank = _furthest_rank(launch)
    if rank is None:
        return _Place(None, None, None, None, None)
    phase = rank_phase(rank, at)
    # Under the rank-zero filter (mid 2025) other ranks print no memory lines: take the
    # phase of the rank that does, as of the same line.
    if not _steps(rank):
        main = _furthest_rank(launch)
        phase = rank_phase(
            main,
            at
            if at is not None and main.events and at.path == main.events[0].source.path
            else None,
        )
    graph = _graph_at(rank, phase)
    bar = _bar_rank(launch)
    bar_graph = None
    if phase.startswith("capture ") and bar is not None:
        bar_graph = _graph_at(bar, phase)
    if bar_graph is None:
        bar_graph = graph
    bar_label = (
        bar.label if bar is not None and bar_graph is not None and bar_graph is not graph else None
    )
    return _Place(rank, phase, graph, bar_graph, bar_label)


# --- the budget behind the fixes -----------------------------------------------------------


@dataclass(frozen=True)
class _Budget:
    """SGLang's KV-sizing inputs as this launch printed them (reference 12.2)."""

    mfs: float | None
    pre_load_bytes: int | None  # P: min over ranks of Load weight begin avail
    pre_load_rank: str | None
    post_load_bytes: int | None  # A: min over ranks of the reading the pools were sized from
    weights_bytes: int | None  # Load weight end mem usage (the largest rank)
    kv_bytes: int | None
    kv_tokens: int | None
    mamba_bytes: int | None
    tp_size: int | None
    ranks_seen: int
    cell_bytes: int | None = (
        None  # the round cell size the printed KV sizes allow (attribution.Sizing)
    )

    @property
    def bytes_per_token(self) -> float | None:
        """The cell size the ledger's findings quote (Sizing.likely_bytes_per_token), else the
        printed KV bytes / #tokens."""
        if self.cell_bytes:
            return self.cell_bytes
        if self.kv_bytes is None or not self.kv_tokens:
            return None
        return self.kv_bytes / self.kv_tokens

    @property
    def rest_bytes(self) -> int | None:
        """SGLang's KV budget from these readings (rules.kv_budget_bytes), when all are printed."""
        if self.mfs is None or self.pre_load_bytes is None or self.post_load_bytes is None:
            return None
        return rules.kv_budget_bytes(self.post_load_bytes, self.pre_load_bytes, self.mfs)

    @property
    def kv_share(self) -> float:
        """Share of the budget that goes to KV (hybrid models give the rest to Mamba state)."""
        if self.mamba_bytes and self.kv_bytes:
            return self.kv_bytes / (self.kv_bytes + self.mamba_bytes)
        return 1.0


def _model(rank: Rank, draft: bool) -> Model | None:
    return rank.draft if draft else rank.target


def _budget(launch: Launch, draft: bool = False, mfs: float | None = None) -> _Budget:
    models = [m for r in launch.ranks if (m := _model(r, draft)) is not None]
    readings = rules.budget_readings(launch, draft)
    usage = [m.weights_end.usage.bytes for m in models if m.weights_end and m.weights_end.usage]
    kv = next((p for m in models for p in m.kv_pools if p.tokens), None)
    mamba_owner = next((m for m in models if m.mamba_pools), None)
    mamba = sum(p.total_bytes for p in mamba_owner.mamba_pools) if mamba_owner else None
    arg_mfs = launch.args.get("mem_fraction_static")
    tp = launch.args.get("tp_size")
    cell = None
    if not draft and kv is not None:
        from logmem.analysis.attribution import build_ledger

        sz = build_ledger(launch).sizing
        # The same pool the findings price (a sliding-window model's full pool may differ).
        if sz is not None and sz.kv_tokens == kv.tokens and sz.kv_bytes == kv.total_bytes:
            cell = sz.likely_bytes_per_token
    return _Budget(
        mfs=mfs
        if mfs is not None
        else (float(arg_mfs) if isinstance(arg_mfs, (int, float)) else None),
        pre_load_bytes=readings.pre_load_bytes,
        pre_load_rank=readings.pre_load_rank,
        post_load_bytes=readings.after_weights_bytes,
        weights_bytes=max(usage) if usage else None,
        kv_bytes=kv.total_bytes if kv else None,
        kv_tokens=kv.tokens if kv else None,
        mamba_bytes=mamba,
        tp_size=tp if isinstance(tp, int) else None,
        ranks_seen=readings.ranks_seen,
        cell_bytes=cell,
    )


def _g(n_bytes: float | None) -> str:
    return "?" if n_bytes is None else f"{n_bytes / GIB:.2f}"


# mem_fraction_static is suggested in steps of 0.001 (SGLang rounds its own default to 3
# decimals); "one step" of a fix that has no figures to size it is 0.01.
_MFS_STEP = 0.01


def _floor3(x: float) -> float:
    # The tiny epsilon keeps an exact result (e.g. 0.808) from dropping to 0.807 by float error.
    return math.floor(x * 1000 + 1e-9) / 1000


def _ceil3(x: float) -> float:
    return math.ceil(x * 1000 - 1e-9) / 1000


def _fmt_mfs(x: float) -> str:
    return f"{x:.3f}".rstrip("0").rstrip(".") if x != 0 else "0"


def _tokens(n: float) -> str:
    return f"{n:,.0f}"


def min_mfs_for_pool(b: _Budget) -> float | None:
    """Smallest mem_fraction_static with rest > 0: mfs > 1 - avail_after_weights / P (rounded up)."""
    if b.pre_load_bytes is None or b.post_load_bytes is None:
        return None
    exact = rules.smallest_mfs_with_pool(b.post_load_bytes, b.pre_load_bytes)
    if exact is None:
        return None
    x = _ceil3(exact)
    if x <= exact:  # strictly positive pool
        x = round(x + 0.001, 3)
    return x


def _lower_mfs_fix(b: _Budget, need_bytes: int, why: str) -> tuple[Fix | None, str | None]:
    """Lower mfs so that P x (mfs - X) >= need_bytes; price it in KV tokens. Returns (fix, blocker)."""
    if b.mfs is None or b.pre_load_bytes is None:
        return None, None
    p = b.pre_load_bytes
    delta = need_bytes / p
    x = _floor3(b.mfs - delta)
    freed = rules.mfs_step_bytes(p, b.mfs - x)
    on = f", on {b.pre_load_rank}" if b.pre_load_rank else ""
    where = f"P = {_g(p)} GiB, the smallest Load weight begin avail{on}"
    text = (
        f"lowers mem_fraction_static from {_fmt_mfs(b.mfs)} by at least {_g(need_bytes)} / {_g(p)} = {delta:.4f} "
        f"({where}), so {_g(freed)} GiB more stays outside the KV pool {why}"
    )
    bpt = b.bytes_per_token
    lowest = min_mfs_for_pool(b)
    blocker = None
    if bpt:
        lost = freed * b.kv_share / bpt
        share = f" (KV's {b.kv_share:.0%} share of it)" if b.kv_share < 1 else ""
        pct = f", {lost / b.kv_tokens:.1%} of {_tokens(b.kv_tokens)}" if b.kv_tokens else ""
        text += f"; costs about {_tokens(math.ceil(lost))} KV tokens{share}{pct} at {bpt:,.0f} bytes per token"
        if b.kv_tokens and lost >= b.kv_tokens:
            blocker = f"lowering mem_fraction_static to {_fmt_mfs(x)} would leave no KV tokens"
    if x <= 0 or (lowest is not None and x < lowest):
        floor_txt = f"; below {_fmt_mfs(lowest)} the KV pool is empty" if lowest is not None else ""
        blocker = f"mem_fraction_static would have to drop to {_fmt_mfs(x)}{floor_txt}"
    return Fix("--mem-fraction-static", _fmt_mfs(x), text), blocker


def _graph_flag(launch: Launch, graph: str) -> tuple[str, str]:
    """The flag that caps a graph family's largest bucket, and the bucket unit."""
    return rules.graph_cap_flag(graph, launch.args), _unit(graph)


def _unit(graph: str | None) -> str:
    return "num_tokens" if graph is not None and rules.graph_sized_in_tokens(graph) else "bs"


def _cap_fix(
    launch: Launch, g: Graph, shortfall: int, oom_free: int | None, tried: int | None
) -> Fix | None:
    """Cap the family's largest bucket at M so that what the capture no longer needs covers the shortfall.

    Buckets are captured largest first; each bar reading is the free memory before a bucket,
    so bucket i cost (reading i - reading i+1). Two models, chosen by the samples:
    * shared pool (the later buckets cost ~0, user needs A): the peak is set by the largest
      bucket, cost ~ rows, so capping at M saves per_row x (largest - M);
    * separate pools (later buckets cost as much): dropping the buckets above M returns
      their measured cost, first reading - reading before M.
    With one measured bucket we cannot tell and take the smaller M. When the first bucket
    itself failed, its need (reading - free at the OOM + tried) gives per_row."""
    samples = [x for x in g.samples if x.size is not None]
    if not samples or not samples[0].size:
        return None
    flag, unit = _graph_flag(launch, g.name)
    b0, a0 = samples[0].size, samples[0].avail.bytes
    costs = [x.avail.bytes - y.avail.bytes for x, y in zip(samples, samples[1:])]
    if costs and costs[0] > 0:
        per_row = costs[0] / b0
        basis = f"{unit} {b0} cost {_g(a0)} - {_g(samples[1].avail.bytes)} = {_g(costs[0])} GiB"
    elif tried is not None and oom_free is not None:
        need = a0 - oom_free + tried  # taken before the failed allocation, plus it
        if need <= 0:
            return None
        per_row = need / b0
        basis = (
            f"{unit} {b0} needed at least {_g(a0)} - {_g(oom_free)} + {_g(tried)} = {_g(need)} GiB"
        )
    else:
        return None
    shared_limit = b0 - shortfall / per_row
    shared: bool | None = None
    if len(costs) >= 2:
        shared = all(c <= 0.25 * costs[0] for c in costs[1:])
    additive = [x.size for x in samples[1:] if x.size and a0 - x.avail.bytes >= shortfall]
    additive_limit = float(additive[0]) if additive else None
    if shared is False:
        limit, how = (
            additive_limit,
            "the later buckets cost as much as the first (no shared pool), so dropping the ones above M returns their measured cost",
        )
    elif shared or additive_limit is None:
        limit = shared_limit
        how = (
            "the later buckets cost little (one shared pool)"
            if shared
            else "assuming one shared pool"
        )
    else:
        limit = min(shared_limit, additive_limit)
        how = "one measured bucket cannot tell a shared pool from separate ones: the smaller M of the two"
    if limit is None or limit < 1:
        return None
    listed = sorted(set(g.sizes or ()) | {x.size for x in samples if x.size})
    fits = [x for x in listed if x <= limit and x < b0]
    cap = fits[-1] if fits else (int(limit) // 8 * 8 if limit >= 8 else int(limit))
    if cap < 1:
        return None
    cost = f"costs: batches above {cap} run without a graph (slower), KV is unchanged"
    if shared is False:
        at = next(x for x in samples if x.size == cap)
        dropped = [x.size for x in samples if x.size and x.size > cap]
        return Fix(
            flag,
            str(cap),
            (
                f"{how}: dropping {unit} {_sizes_text(dropped)} returns {_g(a0)} - {_g(at.avail.bytes)} = "
                f"{_g(a0 - at.avail.bytes)} GiB (bar readings before {unit} {b0} and {cap}) against the "
                f"{_g(shortfall)} GiB shortfall; {cost}"
            ),
        )
    saved = per_row * (b0 - cap)
    measured = (
        f", measured drops allow {additive_limit:.0f}"
        if additive_limit is not None and not shared
        else ""
    )
    return Fix(
        flag,
        str(cap),
        (
            f"{basis}, {per_row / (1 << 20):.2f} MiB per row; capping at {cap} saves about "
            f"{per_row / (1 << 20):.2f} MiB x ({b0} - {cap}) = {_g(saved)} GiB against the {_g(shortfall)} GiB shortfall "
            f"({how}; M <= {b0} - {_g(shortfall)} GiB / per row = {shared_limit:.0f}{measured}); {cost}"
        ),
    )


def _sizes_text(sizes: Sequence[int]) -> str:
    if len(sizes) <= 4:
        return ", ".join(str(s) for s in sizes)
    return f"{sizes[0]}, {sizes[1]} ... {sizes[-1]}"


# --- fixes per failure --------------------------------------------------------------------


def _oom_fixes(launch: Launch, r: OutOfMemory, place: _Place) -> tuple[tuple[Fix, ...], str]:
    phase = place.phase or ""
    shortfall = r.shortfall_bytes
    fixes: list[Fix] = []
    notes: list[str] = []
    if shortfall is not None:
        notes.append(
            f"{_g(r.tried_bytes)} GiB was asked for with {_g(r.free_bytes)} GiB free: {_g(shortfall)} GiB short"
        )
    if r.capacity_bytes is not None and r.allocated_bytes is not None:
        notes.append(
            f"PyTorch held {_g(r.allocated_bytes)} GiB of the {_g(r.capacity_bytes)} GiB GPU"
        )
    if phase in ("before distributed init", "distributed init", "after distributed init"):
        notes.append(
            "nothing of SGLang's own size was allocated yet, so the GPU was already busy: "
            "check other processes on it (nvidia-smi); memory flags do not apply"
        )
    elif phase.endswith("weights"):
        notes.append(
            "weights load before the KV pool is sized, so --mem-fraction-static does not help here"
        )
        floor_note = _weights_floor(launch, place.rank, r)
        if floor_note:
            notes.append(floor_note)
        more, note = _fewer_weights_fixes(launch, shortfall)
        fixes.extend(more)
        if note:
            notes.append(note)
    else:
        more, blocker = _budget_fixes(launch, r, place, shortfall)
        fixes.extend(more)
        notes.extend(blocker)
    # PyTorch's own hint, last: it only helps when the free blocks are the caching allocator's.
    frag = r.reserved_unallocated_bytes
    if frag is not None and shortfall is not None and frag >= shortfall > 0:
        fixes.append(
            Fix(
                "PYTORCH_CUDA_ALLOC_CONF",
                "expandable_segments:True",
                (
                    f"{_g(frag)} GiB is reserved by PyTorch but unallocated (fragmentation), more than the {_g(shortfall)} "
                    f"GiB shortfall; expandable segments may let PyTorch use it; costs nothing in KV"
                ),
            )
        )
    return tuple(fixes), _sentences(notes)


def _budget_fixes(
    launch: Launch, r: OutOfMemory, place: _Place, need: int | None
) -> tuple[list[Fix], list[str]]:
    """OOM after the weights: give memory back from the KV budget, or shrink what asked for it."""
    phase = place.phase or ""
    fixes: list[Fix] = []
    notes: list[str] = []
    draft = "draft" in phase and not phase.startswith("capture")
    b = _budget(launch, draft=draft)
    if need is None:
        # "CUDA error: out of memory" prints no figures: price one step instead.
        if b.pre_load_bytes is not None and b.mfs is not None:
            # Rounded down (mfs_step_bytes), so the suggested value is exactly one step lower.
            step = rules.mfs_step_bytes(b.pre_load_bytes, _MFS_STEP)
            fx, _ = _lower_mfs_fix(
                b, step, f"(no figures in the error: this is one {_MFS_STEP:g} step)"
            )
            if fx is not None:
                fixes.append(fx)
        return fixes, notes
    label = "for the capture" if phase.startswith("capture") else "for activations and buffers"
    if r.comm_library is not None:
        label = f"for the {r.comm_library} buffer"
    mfs_fix, blocker = _lower_mfs_fix(b, need, label)
    if mfs_fix is not None and blocker is None:
        fixes.append(mfs_fix)
    # A communication buffer does not shrink with the graph's batch sizes: no cap for it.
    if phase.startswith("capture") and place.bar_graph is not None and r.comm_library is None:
        cap = _cap_fix(launch, place.bar_graph, need, r.free_bytes, r.tried_bytes)
        if cap is not None:
            fixes.append(cap)
    chunk = launch.args.get("chunked_prefill_size")
    if phase == "serving" and isinstance(chunk, int) and chunk > 2048:
        fixes.append(_chunk_fix(chunk, need))
    deepep_on = str(launch.args.get("moe_a2a_backend", "")).lower() == "deepep"
    if r.comm_library is not None or (deepep_on and phase.startswith("capture")):
        # DeepEP allocates its low-latency buffer at the first dispatch, which is usually
        # inside the first capture bucket: the OOM may be that buffer, not the graph.
        if r.comm_library is None:
            notes.append(
                "DeepEP is on (moe_a2a_backend='deepep') and allocates its buffer lazily at the "
                "first dispatch, inside the capture: the failed allocation may be that buffer"
            )
        fixes.append(_dispatch_tokens_fix(r))
    if mfs_fix is not None and blocker is not None:
        notes.append(f"lowering --mem-fraction-static alone cannot fix it: {blocker}")
    if b.mfs is None:
        notes.append(
            "the server_args dump (mem_fraction_static) is missing, so no new value can be computed"
        )
    return fixes, notes


def _dispatch_tokens_fix(r: OutOfMemory) -> Fix:
    """Fewer DeepEP dispatch tokens: its low-latency buffer is proportional to them (reference 12.5)."""
    env = "SGLANG_DEEPEP_NUM_MAX_DISPATCH_TOKENS_PER_RANK"
    if (
        r.comm_library is not None
        and r.tried_bytes
        and r.free_bytes is not None
        and r.free_bytes < r.tried_bytes
    ):
        ratio = r.free_bytes / r.tried_bytes
        at_default = math.floor(rules.DEEPEP_DEFAULT_DISPATCH_TOKENS * ratio)
        return Fix(
            env,
            f"<= {ratio:.2f} x the current value",
            (
                f"the buffer asked for {_g(r.tried_bytes)} GiB with {_g(r.free_bytes)} GiB free and is proportional to "
                f"the dispatch tokens per rank T, so T must drop to at most {_g(r.free_bytes)} / {_g(r.tried_bytes)} = "
                f"{ratio:.2f} of its value ({at_default} at the default {rules.DEEPEP_DEFAULT_DISPATCH_TOKENS}); "
                "costs: decode batches per rank are capped at T"
            ),
        )
    half = rules.DEEPEP_DEFAULT_DISPATCH_TOKENS // 2
    return Fix(
        env,
        str(half),
        (
            "the DeepEP low-latency buffer is proportional to the dispatch tokens per rank (default "
            f"{rules.DEEPEP_DEFAULT_DISPATCH_TOKENS}, reference 12.5), so {half} halves it; costs: decode "
            f"batches per rank are capped at {half}"
        ),
    )


def _chunk_fix(chunk: int, need: int) -> Fix:
    """Halve the prefill chunk; priced with SGLang's own 1.5 MiB per chunk token (reference 12.3)."""
    half = chunk // 2
    saved = rules.activation_reserve_bytes(chunk) - rules.activation_reserve_bytes(half)
    enough = "covers" if saved >= need else "does not cover"
    per, floor = rules.ACTIVATION_MIB_PER_TOKEN, rules.ACTIVATION_MIN_TOKENS
    return Fix(
        "--chunked-prefill-size",
        str(half),
        (
            f"prefill activations grow with the chunk; SGLang's default sizing assumes {per:g} MiB per chunk token, "
            f"so {chunk} -> {half} needs about ({chunk} - {max(half, floor)}) x {per:g} MiB = {_g(saved)} GiB less, which "
            f"{enough} the {_g(need)} GiB shortfall (an estimate); costs: long prompts take more prefill steps"
        ),
    )


def _weights_floor(launch: Launch, rank: Rank | None, r: OutOfMemory) -> str:
    """What the failing rank's weights took so far plus the failed request: a floor for its share."""
    if rank is None or rank.target is None or rank.target.weights_begin is None:
        return ""
    if r.free_bytes is None or r.tried_bytes is None:
        return ""
    begin = rank.target.weights_begin.avail.bytes
    at_least = begin - r.free_bytes + r.tried_bytes
    text = (
        f"{rank.label or 'the GPU'} needed at least {_g(begin)} - {_g(r.free_bytes)} + {_g(r.tried_bytes)} = "
        f"{_g(at_least)} GiB while loading"
    )
    if at_least <= begin:
        return f"{text}, with {_g(begin)} GiB free before"
    done = [
        m.weights_end.usage.bytes
        for x in launch.ranks
        if (m := x.target) and m.weights_end and m.weights_end.usage
    ]
    if done:
        # Others finished below that: the load peaks above the final size (conversion temporaries).
        return (
            f"{text}, more than the {_g(begin)} GiB it had free: loading peaks above the final size "
            f"(the ranks that finished hold {_g(max(done))} GiB)"
        )
    return (
        f"{text}, more than the whole GPU had ({_g(begin)} GiB free before). If the model should fit, "
        "check that it shards (e.g. a fallback implementation that does not split the experts)"
    )


def _quantized(launch: Launch) -> str | None:
    """The weight quantisation already in use (server_args or Load weight end), if any."""
    q = launch.args.get("quantization")
    if isinstance(q, str) and q:
        return q
    for r in launch.ranks:
        we = r.target.weights_end if r.target else None
        if we is not None:
            for k, v in we.details:
                if k == "quant" and v and v != "None":
                    return v
    # A checkpoint quantised by its publisher says so in its name (GLM-5-FP8, ...-AWQ, ...-INT4),
    # and a crash during load leaves no Load weight end to tell.
    path = launch.args.get("model_path")
    if isinstance(path, str):
        for tag in (
            "fp8",
            "fp4",
            "nvfp4",
            "mxfp4",
            "awq",
            "gptq",
            "int4",
            "int8",
            "w4a8",
            "w8a8",
            "gguf",
        ):
            if regex.search(rf"(?i)(?<![a-z0-9]){tag}(?![a-z0-9])", path.rsplit("/", 1)[-1]):
                return tag
    return None


def _fewer_weights_fixes(launch: Launch, need: int | None) -> tuple[list[Fix], str]:
    """OOM while loading: fewer weights per rank. Ranks that did finish show whether the KV
    pool would have fitted at all (rest = A - P x (1 - mfs), reference 12.2)."""
    fixes: list[Fix] = []
    b = _budget(launch)
    w = b.weights_bytes
    rest = None
    note = ""
    if b.rest_bytes is not None and b.mfs is not None and w is not None:
        rest = b.rest_bytes
        note = (
            f"after loading {_g(w)} GiB of weights, the ranks that finished leave rest = {_g(b.post_load_bytes)} - "
            f"{_g(b.pre_load_bytes)} x (1 - {_fmt_mfs(b.mfs)}) = {_g(rest)} GiB for the KV pool"
            + (
                ". Even without this OOM there would be no KV pool, so the weights per rank must shrink"
                if rest <= 0
                else ""
            )
        )
    tp = b.tp_size
    if tp is not None:
        gain = ""
        if rest is not None and w is not None:
            gain = f"; the KV budget at mfs {_fmt_mfs(b.mfs or 0)} becomes about {_g(rest)} + {_g(w / 2)} = {_g(rest + w / 2)} GiB"
        fixes.append(
            Fix(
                "--tp-size",
                str(tp * 2),
                (f"halves the weights per rank if they shard evenly; needs {tp * 2} GPUs{gain}"),
            )
        )
    quant = _quantized(launch)
    if quant is None:
        fixes.append(
            Fix(
                "--quantization",
                "fp8",
                (
                    "8-bit weights take half the memory of 16-bit ones (if the checkpoint is 16-bit); may change accuracy"
                ),
            )
        )
    if need is not None:
        short = max(need, -rest if rest is not None and rest < 0 else 0)
        n = max(1, math.ceil(short / GIB))
        why = (
            f"{_g(-rest)} GiB is what the KV budget lacks, rounded up: that only makes the pool positive, each "
            f"further GiB adds a GiB of KV"
            if rest is not None and rest < 0 and -rest > need
            else f"the {_g(need)} GiB shortfall, rounded up; the rest of the model was not loaded, so it may need more"
        )
        fixes.append(
            Fix(
                "--cpu-offload-gb",
                str(n),
                f"keeps at least {n} GiB of weights in CPU memory ({why}); costs speed",
            )
        )
    return fixes, note


def _kv_fixes(launch: Launch, r: KVSizing, phase: str) -> tuple[tuple[Fix, ...], str]:
    b = _budget(launch, draft="draft" in phase, mfs=r.mem_fraction_static)
    if b.pre_load_bytes is None or b.post_load_bytes is None:
        return (
            Fix(
                "--mem-fraction-static",
                None,
                "raise it: the KV pool came out empty (no Load weight lines "
                "to compute by how much)",
            ),
        ), ""
    p, a = b.pre_load_bytes, b.post_load_bytes
    notes = []
    rest = b.rest_bytes
    if b.mfs is not None and rest is not None:
        notes.append(
            f"the KV budget came out as rest = {_g(a)} - {_g(p)} x (1 - {_fmt_mfs(b.mfs)}) = {_g(rest)} GiB "
            f"(smallest Load weight end avail minus P x (1 - mfs), P = the smallest Load weight begin avail)"
        )
    fixes: list[Fix] = []
    lowest = min_mfs_for_pool(b)
    if lowest is not None and lowest < 1:
        headroom = rules.outside_budget_bytes(p, lowest)
        fixes.append(
            Fix(
                "--mem-fraction-static",
                _fmt_mfs(lowest),
                (
                    f"the smallest value with a KV pool at all: mfs > 1 - {_g(a)} / {_g(p)} = {1 - a / p:.4f}; each further "
                    f"{_MFS_STEP:g} adds {_g(rules.mfs_step_bytes(p, _MFS_STEP))} GiB of KV; costs headroom: {_g(headroom)} GiB is left outside the budget "
                    f"for activations and CUDA graphs, so too high a value fails later in capture"
                ),
            )
        )
    else:
        notes.append(
            f"no mem_fraction_static below 1 gives a pool: only {_g(a)} GiB is free after the weights"
        )
    w = b.weights_bytes
    tp = b.tp_size
    if w is not None:
        gain = ""
        if b.mfs is not None and rest is not None:
            # Halving W raises the after-weights reading by W/2 and leaves P alone: rest grows by W/2.
            gain = f", so at mfs {_fmt_mfs(b.mfs)} the KV pool gets about {_g(rest + w / 2)} GiB"
        also = (
            ""
            if _quantized(launch)
            else ", as would 8-bit instead of 16-bit weights (--quantization fp8)"
        )
        fixes.append(
            Fix(
                "--tp-size" if tp else "fewer weights per rank",
                str(tp * 2) if tp else None,
                (
                    f"halves the weights per rank ({_g(w)} GiB now) if they shard evenly{also}: about {_g(w / 2)} GiB "
                    f"more per rank{gain}"
                ),
            )
        )
    return tuple(fixes), _sentences(notes)


def _imbalance_fixes(
    launch: Launch, r: Unbalanced, raising: Sequence[str]
) -> tuple[tuple[Fix, ...], str]:
    heavy = _heavy_ranks(launch, raising)
    who = ", ".join(heavy) if heavy else "the rank that did not raise it"
    notes: list[str] = []
    fixes: list[Fix] = []
    if r.pre_model_load_gib is not None and r.local_gib is not None:
        short = r.local_gib - r.pre_model_load_gib
        notes.append(
            f"{who} has {short:.2f} GiB less free memory than the others (pre_model_load_memory={r.pre_model_load_gib:.2f} "
            f"GiB, the minimum over ranks, vs local_gpu_memory={r.local_gib:.2f} GiB on a rank that raised it). "
            f"The check runs after distributed init, before the weights load, so the memory was taken before SGLang "
            f"allocated anything of size: usually another process on that GPU"
        )
        # The occupied rank keeps going; its own first reading confirms the minimum.
        for label in heavy:
            hr = launch.rank(label)
            wb = hr.target.weights_begin if hr is not None and hr.target is not None else None
            if wb is not None:
                notes.append(f"{label}'s own Load weight begin reads {wb.avail.gib:.2f} GiB")
        mfs = launch.args.get("mem_fraction_static")
        loss = (
            f"{float(mfs):.3g} x {short:.2f} = "
            f"{_g(rules.imbalance_budget_loss_bytes(round(short * GIB), float(mfs)))} GiB"
            if isinstance(mfs, (int, float))
            else "mem_fraction_static x the gap"
        )
        fixes.append(
            Fix(
                "nvidia-smi",
                "--query-compute-apps=pid,used_memory --format=csv",
                (
                    f"find the process holding about {short:.2f} GiB on {who}'s GPU and stop it (or use free GPUs); costs nothing"
                ),
            )
        )
        # SGLang's rule (reference 12.2) takes both P and the after-weights reading as minimums over
        # ranks: a GPU with g less of both lowers rest = after - P x (1 - mfs) by mfs x g.
        fixes.append(
            Fix(
                "SGLANG_ENABLE_TP_MEMORY_INBALANCE_CHECK",
                "0",
                (
                    f"starts anyway; every rank then sizes its KV pool from the tightest GPU ({r.pre_model_load_gib:.2f} GiB) "
                    f"and the other ranks leave the difference unused. SGLang's rule rest = after-weights - P x (1 - mfs) "
                    f"takes both readings as minimums over ranks, so a gap g lowers it by mfs x g: each rank's KV budget "
                    f"shrinks by {loss}"
                ),
            )
        )
    else:
        notes.append(
            f"{who} had less free memory than the others before the weights loaded: usually another process"
        )
    return tuple(fixes), _sentences(notes)


def _heavy_ranks(launch: Launch, raising: Sequence[str]) -> list[str]:
    """The occupied GPU is the rank that did *not* raise it (only healthy ranks fail the 0.9 test)."""
    seen = [r.label for r in launch.ranks if r.label not in raising]
    tp = launch.args.get("tp_size")
    raising_tp = {n for label in raising for t, n in _tags(label) if t == "TP"}
    if isinstance(tp, int) and all(
        _tags(x) and all(t == "TP" for t, _ in _tags(x)) for x in raising
    ):
        missing = [f"TP{i}" for i in range(tp) if i not in raising_tp]
        return missing or seen
    return seen


def _tags(label: str) -> tuple[tuple[str, int], ...]:
    from logmem.parse.lines import rank_tags

    return rank_tags(label)


# --- building failures ------------------------------------------------------------------------


def _crash_failure(launch: Launch, tbs: list[Traceback]) -> Failure:
    errors = read_errors(tbs)
    if not errors:
        errors = (RankError(None, ChildDied(), None),)
    principal = min(
        errors, key=lambda e: (_priority(e.record), e.source.line_no if e.source else 0)
    )
    rec = principal.record
    same = [e for e in errors if type(e.record) is type(rec)]
    ranks = _order_ranks(launch, [e.rank for e in same if e.rank is not None])
    rank = launch.rank(principal.rank) if principal.rank is not None else None
    place = _place(launch, rank, principal.source)
    size, bucket_free = place.sample
    phase = place.phase
    memory = is_memory(rec)
    fixes: tuple[Fix, ...] = ()
    explanation = ""
    if isinstance(rec, OutOfMemory):
        fixes, explanation = _oom_fixes(launch, rec, place)
    elif isinstance(rec, KVSizing):
        fixes, explanation = _kv_fixes(launch, rec, phase or "pools")
    elif isinstance(rec, Unbalanced):
        fixes, explanation = _imbalance_fixes(launch, rec, ranks)
    elif isinstance(rec, OtherRanksUnfinished):
        lagging = [
            r.label for r in launch.ranks if r.target is not None and r.target.weights_end is None
        ]
        explanation = (
            (f"{', '.join(lagging)} printed no Load weight end: " if lagging else "")
            + "a rank failed while loading or is slow, and its own error is not in this log (often an OOM)"
        )
    elif isinstance(rec, ChildDied):
        explanation = "no traceback reached the log; the child's own output may be elsewhere"
    elif memory is False:
        fixes, explanation = _not_memory(rec, place, bucket_free)
    elif isinstance(rec, CommBufferError):
        explanation = f"{rec.library} failed without saying whether memory ran out"
    free = (
        rec.free_bytes
        if isinstance(rec, OutOfMemory) and rec.free_bytes is not None
        else bucket_free
    )
    failure = Failure(
        kind=_kind(rec),
        memory_related=memory,
        phase=phase,
        ranks=ranks,
        graph=place.graph.name
        if place.graph
        else (place.bar_graph.name if place.bar_graph else None),
        size=size if phase and phase.startswith("capture") else None,
        tried_bytes=rec.tried_bytes if isinstance(rec, OutOfMemory) else None,
        free_bytes=free,
        capacity_bytes=rec.capacity_bytes if isinstance(rec, OutOfMemory) else None,
        message=_message(rec, principal.source),
        line=principal.source,
        fixes=fixes,
        explanation=explanation,
        shortfall_bytes=rec.shortfall_bytes
        if isinstance(rec, OutOfMemory)
        else _kv_shortfall(launch, rec),
        bucket_free_bytes=bucket_free if phase and phase.startswith("capture") else None,
        exc_type=_exc_type(rec),
        record=rec,
        errors=errors,
    )
    return _with_headline(launch, failure, place)


def _kv_shortfall(launch: Launch, rec: ErrorRecord) -> int | None:
    """For "Not enough memory": how far below zero the KV budget came out."""
    if not isinstance(rec, KVSizing):
        return None
    rest = _budget(launch, mfs=rec.mem_fraction_static).rest_bytes
    if rest is None:
        return None
    return -rest if rest < 0 else 0


def _not_memory(
    rec: ErrorRecord, place: _Place, bucket_free: int | None
) -> tuple[tuple[Fix, ...], str]:
    exc = _exc_type(rec)
    free = (
        f" ({_g(bucket_free)} GiB was still free at that bucket)" if bucket_free is not None else ""
    )
    text = (
        f"{_a(exc) if exc else 'the error'} points to a code, install or version mismatch{free}; "
        f"do not change --mem-fraction-static or --cuda-graph-max-bs for it"
    )
    fixes: tuple[Fix, ...] = ()
    phase = place.phase or ""
    if phase.startswith("capture "):
        name = phase.removeprefix("capture ")
        flag = rules.graph_disable_flag(name)
        fixes = (
            Fix(
                flag,
                None,
                (
                    f"skips the {name} graph capture that fails, to confirm the cause and get a server up; "
                    f"costs speed (no graphs for that phase); the real fix is a matching SGLang/kernel version"
                ),
            ),
        )
    return fixes, text


def _a(word: str) -> str:
    return ("an " if word[:1].lower() in "aeiou" else "a ") + word


def _order_ranks(launch: Launch, labels: Sequence[str]) -> tuple[str, ...]:
    order = {r.label: i for i, r in enumerate(launch.ranks)}
    return tuple(sorted(dict.fromkeys(labels), key=lambda x: (order.get(x, len(order)), x)))


def _stopped(launch: Launch) -> Failure | None:
    if not launch.ranks:
        return None
    rank = _furthest_rank(launch)
    place = _place(launch, rank, None)
    size, free = place.sample
    last = _last_source(launch, rank)
    f = Failure(
        kind="stopped",
        memory_related=None,
        phase=place.phase,
        ranks=(rank.label,),
        graph=place.graph.name if place.graph else None,
        size=size,
        tried_bytes=None,
        free_bytes=free,
        capacity_bytes=None,
        message="the log stops before start-up finished (no error, no ready line)",
        line=last,
        explanation=(
            "no error is in the log: it was cut, or the process hung or was killed (a kill leaves no traceback; "
            "the kernel log shows the OOM killer); memory cannot be judged from it"
        ),
        bucket_free_bytes=free,
    )
    return _with_headline(launch, f, place)


def _last_source(launch: Launch, rank: Rank) -> Source | None:
    """The last line read in the rank's file: where the log stops."""
    path = rank.last_event.source.path if rank.last_event else None
    srcs = [e.source for e in launch.all_events() if path is None or e.source.path == path]
    return max(srcs, key=lambda s: s.line_no) if srcs else None


# --- verdict --------------------------------------------------------------------------------


def _ranks_text(launch: Launch, ranks: Sequence[str]) -> str:
    if not ranks:
        return ""
    if len(ranks) == 1:
        return ranks[0] or "the GPU"
    total = len(launch.ranks)
    if len(ranks) == total == 2:
        return f"both ranks ({ranks[0]}, {ranks[1]})"
    if len(ranks) == total and total > 2:
        return f"all {total} ranks"
    return f"{len(ranks)} ranks ({_compress(ranks)})"


def _compress(labels: Sequence[str]) -> str:
    """TP0, TP3, TP4, TP5 -> TP0, TP3-TP5 (only for plain TP labels)."""
    nums = []
    for x in labels:
        m = regex.fullmatch(r"TP(\d+)", x)
        if m is None:
            return ", ".join(labels)
        nums.append(int(m.group(1)))
    out: list[str] = []
    i = 0
    nums.sort()
    while i < len(nums):
        j = i
        while j + 1 < len(nums) and nums[j + 1] == nums[j] + 1:
            j += 1
        out.append(
            f"TP{nums[i]}"
            if i == j
            else (f"TP{nums[i]}, TP{nums[j]}" if j == i + 1 else f"TP{nums[i]}-TP{nums[j]}")
        )
        i = j + 1
    return ", ".join(out)


def _what(rec: ErrorRecord | None) -> str:
    if isinstance(rec, OutOfMemory):
        dev = rec.device or "GPU"
        if rec.comm_library:
            return f"{rec.comm_library} could not allocate its buffer"
        return f"{dev} out of memory"
    if isinstance(rec, KVSizing):
        at = (
            f" at mem_fraction_static={_fmt_mfs(rec.mem_fraction_static)}"
            if rec.mem_fraction_static
            else ""
        )
        return f'"Not enough memory" for the KV cache{at}'
    if isinstance(rec, Unbalanced):
        return '"The memory capacity is unbalanced"'
    if isinstance(rec, CaptureError):
        return f"CUDA graph capture failed ({_short(rec.message)})"
    if isinstance(rec, CommBufferError):
        return f"{rec.library} error ({_short(rec.message)})"
    if isinstance(rec, PythonError):
        return f"{rec.exc_type} ({_short(rec.message)})" if rec.message else rec.exc_type
    if isinstance(rec, OtherRanksUnfinished):
        return f"TP rank {rec.tp_rank} finished loading but other ranks did not"
    return "a child process died without a traceback"


def _short(text: str, n: int = 80) -> str:
    text = text.strip()
    return text if len(text) <= n else text[: n - 3].rstrip() + "..."


def _memory_word(m: bool | None) -> str:
    if m is None:
        return "Memory-related or not: cannot tell."
    return "Memory-related." if m else "Not memory-related."


def _with_headline(launch: Launch, f: Failure, place: _Place) -> Failure:
    from dataclasses import replace

    unit = _unit(f.graph)
    where = phase_text(f.phase, f.size, unit)
    if f.kind == "stopped":
        rank = f.ranks[0] if f.ranks else "?"
        extra = ""
        if f.phase and f.phase.startswith("capture "):
            extra = _capture_state(place, f)
        line = f" (last line {f.line.line_no})" if f.line else ""
        head = (
            f"Incomplete: the log stops {where}{extra} on {rank or 'the GPU'}{line}; "
            f"this is not a complete start-up."
        )
        return replace(f, headline=head)
    figures = ""
    if f.tried_bytes is not None and f.free_bytes is not None:
        figures = f" (tried {_g(f.tried_bytes)} GiB, {_g(f.free_bytes)} GiB free)"
    elif f.phase and f.phase.startswith("capture") and f.bucket_free_bytes is not None:
        on = f" on {place.bar_rank}" if place.bar_rank else ""
        figures = f" ({_g(f.bucket_free_bytes)} GiB free at that bucket{on})"
    on_ranks = _ranks_text(launch, f.ranks)
    head = f"Crashed: {_what(f.record)}{' on ' + on_ranks if on_ranks else ''} {where}{figures}. {_memory_word(f.memory_related)}"
    return replace(f, headline=head)


def _capture_state(place: _Place, f: Failure) -> str:
    if f.bucket_free_bytes is not None:
        return f" ({_g(f.bucket_free_bytes)} GiB free)"
    g = place.bar_graph or place.graph
    if g is None:
        return ""
    rank = place.rank
    bars = [e for e in (rank.events if rank else ()) if isinstance(e, ev.BarRender)]
    if bars and bars[-1].kind == "compile" and bars[-1].size is not None:
        return f" (compiling num_tokens {bars[-1].size})"
    if g.begin_bytes is not None:
        return f" (before the first bucket; {_g(g.begin_bytes)} GiB free at capture begin)"
    return ""


def _sentences(notes: Sequence[str]) -> str:
    """Notes as short sentences, one after the other (a verdict is read, not parsed)."""
    return " ".join(_sentence(n) for n in notes if n.strip())


def _sentence(text: str) -> str:
    text = text.strip()
    if not text:
        return text
    text = text[0].upper() + text[1:]
    return text if text.endswith(".") else text + "."


def verdict(launch: Launch) -> list[str]:
    """The plain-sentence verdict every report prints first: the outcome, why, and each fix."""
    oc = outcome(launch)
    lines: list[str] = []
    if oc.status == "ready":
        n = len(launch.ranks)
        world = _world(launch)
        count = (
            f"{world} ranks ({n} print memory lines)"
            if world and world > n
            else f"{n} rank{'s' if n != 1 else ''}"
        )
        lines.append(f"Ready: start-up finished on {count}.")
    elif oc.failure is not None:
        f = oc.failure
        lines.append(f.headline)
        if f.explanation:
            lines.append(_sentence(f.explanation))
        lines.extend(
            _sentence(f"Fix: {x.flag}{' ' + x.value if x.value else ''}: {x.effect}")
            for x in f.fixes
        )
        if f.memory_related and not f.fixes:
            lines.append("No fix can be computed from this log (figures missing).")
    else:
        lines.append("Incomplete: the log holds no rank lines, so start-up cannot be judged.")
    if oc.runtime_errors:
        first = read_errors(oc.runtime_errors[:1])
        what = _short(_message(first[0].record, first[0].source)) if first else "an error"
        at = (
            f" (first at line {first[0].source.line_no}: {what})"
            if first and first[0].source
            else ""
        )
        lines.append(
            f"{len(oc.runtime_errors)} error(s) after start-up{at}; they are not start-up failures."
        )
    return lines


def _world(launch: Launch) -> int | None:
    tp, pp = launch.args.get("tp_size"), launch.args.get("pp_size")
    if not isinstance(tp, int):
        return None
    return tp * (pp if isinstance(pp, int) and pp > 0 else 1)
