"""The verdict's facts: fixes with their price, the notes that explain a failure, the failure.

Every record holds numbers (bytes, counts, fractions) and the names SGLang prints (flags,
ranks, graph families); logmem.report.verdict words them. A fix's flag and value are what
a person types; its effect is the arithmetic that prices it.
"""

from __future__ import annotations

from enum import Enum

from logmem.analysis.failures.deaths import Death
from logmem.analysis.failures.effects import (  # re-exported: fx.LowerMfs, fx.Fix ...
    AtMostTimes as AtMostTimes,
)
from logmem.analysis.failures.effects import (
    CapDropBuckets as CapDropBuckets,
)
from logmem.analysis.failures.effects import (
    CapPerRow as CapPerRow,
)
from logmem.analysis.failures.effects import (
    CaptureRest as CaptureRest,
)
from logmem.analysis.failures.effects import (
    Change as Change,
)
from logmem.analysis.failures.effects import (
    ChangeComponent as ChangeComponent,
)
from logmem.analysis.failures.effects import (
    CpuOffload as CpuOffload,
)
from logmem.analysis.failures.effects import (
    DecodeWithinT as DecodeWithinT,
)
from logmem.analysis.failures.effects import (
    DisableGraph as DisableGraph,
)
from logmem.analysis.failures.effects import (
    DispatchTokensHalf as DispatchTokensHalf,
)
from logmem.analysis.failures.effects import (
    DispatchTokensRatio as DispatchTokensRatio,
)
from logmem.analysis.failures.effects import (
    DoubleTP as DoubleTP,
)
from logmem.analysis.failures.effects import (
    Effect as Effect,
)
from logmem.analysis.failures.effects import (
    EnvSwitchOff as EnvSwitchOff,
)
from logmem.analysis.failures.effects import (
    ExpandableSegments as ExpandableSegments,
)
from logmem.analysis.failures.effects import (
    FewerWeights as FewerWeights,
)
from logmem.analysis.failures.effects import (
    FindOutside as FindOutside,
)
from logmem.analysis.failures.effects import (
    FindProcess as FindProcess,
)
from logmem.analysis.failures.effects import (
    Fix as Fix,
)
from logmem.analysis.failures.effects import (
    HalveChunk as HalveChunk,
)
from logmem.analysis.failures.effects import (
    LowerByAtLeast as LowerByAtLeast,
)
from logmem.analysis.failures.effects import (
    LowerMfs as LowerMfs,
)
from logmem.analysis.failures.effects import (
    LowerMfsRelative as LowerMfsRelative,
)
from logmem.analysis.failures.effects import (
    NativeImpl as NativeImpl,
)
from logmem.analysis.failures.effects import (
    Pools as Pools,
)
from logmem.analysis.failures.effects import (
    Purpose as Purpose,
)
from logmem.analysis.failures.effects import (
    QuantizeFP8 as QuantizeFP8,
)
from logmem.analysis.failures.effects import (
    RaiseMfsNoFigures as RaiseMfsNoFigures,
)
from logmem.analysis.failures.effects import (
    RaiseMfsUnexplained as RaiseMfsUnexplained,
)
from logmem.analysis.failures.effects import (
    SkipImbalanceCheck as SkipImbalanceCheck,
)
from logmem.analysis.failures.effects import (
    SmallestMfs as SmallestMfs,
)
from logmem.analysis.failures.harness import TestCheck
from logmem.analysis.failures.records import ErrorRecord, RankError
from logmem.analysis.failures.traces import NoiseKind, RaisedIn, Up
from logmem.analysis.weights_loaded import WeightsNotLoaded
from logmem.frozen import frozen
from logmem.model.records import Traceback
from logmem.parse.events import Frame
from logmem.parse.lines import Source

# --- why: the notes a verdict explains itself with --------------------------------------------


@frozen
class Shortfall:
    tried_bytes: int | None
    free_bytes: int | None
    shortfall_bytes: int


@frozen
class PyTorchHeld:
    allocated_bytes: int
    capacity_bytes: int


@frozen
class GpuBusyEarly:
    pass


@frozen
class WeightsBeforePool:
    pass


class FloorCase(Enum):
    FITS = "fits"  # within what was free before loading
    PEAKS = "peaks"  # more than free, less than others finished with: the load peaks
    # More than was free before loading, and no rank finished to compare with (the capacity
    # in PyTorch's OOM text, when printed, says whether it is more than the whole GPU).
    WHOLE_GPU = "whole_gpu"


@frozen
class WeightsFloor:
    rank: str
    begin_bytes: int
    free_bytes: int
    tried_bytes: int
    at_least_bytes: int
    case: FloorCase
    finished_bytes: int | None = None  # PEAKS: what the ranks that finished hold
    fallback: bool = False  # the model runs on the Transformers fallback (said in its own note)
    capacity_bytes: int | None = None  # "GPU 0 has a total capacity of X" (PyTorch's OOM text)

    @property
    def beyond_capacity(self) -> bool | None:
        """More than the GPU's whole capacity; None when the OOM text printed none."""
        cap = self.capacity_bytes
        return None if cap is None else self.at_least_bytes > cap


@frozen
class LoadedBudget:
    """OOM while loading: the KV budget the ranks that finished leave."""

    weights_bytes: int
    after_weights_bytes: int
    pre_load_bytes: int
    mfs: float
    rest_bytes: int
    factor: float = 1.0  # SGLang scales the flag by this before the rule (Budget.factor)


@frozen
class DeepEPLazy:
    pass


@frozen
class LibraryHeapLimit:
    """A communication library's failed allocation asked for less than the free memory SGLang
    read just before it: the message's 'free' is the library's own heap, not the device's."""

    library: str
    reading_bytes: int  # the last bar reading before the failure
    line: int
    tried_bytes: int
    free_bytes: int | None  # the message's own free figure


@frozen
class NoKVTokensLeft:
    to: float


@frozen
class BelowPoolFloor:
    to: float
    smallest: float | None


Blocker = NoKVTokensLeft | BelowPoolFloor


@frozen
class MfsCannotFix:
    blocker: Blocker


@frozen
class NoServerArgs:
    pass


@frozen
class BudgetCameOut:
    after_weights_bytes: int
    pre_load_bytes: int
    mfs: float
    rest_bytes: int
    factor: float = 1.0  # SGLang scales the flag by this before the rule (Budget.factor)


@frozen
class NoMfsGivesPool:
    after_weights_bytes: int


@frozen
class ImbalanceGap:
    ranks: tuple[str, ...]
    gap_gib: float
    pre_model_load_gib: float
    local_gib: float


@frozen
class OwnReading:
    rank: str
    bytes: int


@frozen
class ImbalanceNoFigures:
    ranks: tuple[str, ...]


@frozen
class OutsidePyTorch:
    """PyTorch's OOM text: the GPU's used memory (capacity - free) against what PyTorch holds
    (allocated + reserved but unallocated); the difference is outside PyTorch."""

    capacity_bytes: int
    used_bytes: int
    pytorch_bytes: int
    outside_bytes: int
    this_process_bytes: int | None  # "Including non-PyTorch memory, this process has M"
    fits: bool  # what is outside PyTorch covers the shortfall: freeing it would fit the model
    device: str | None = None  # the OOM's device as printed (CUDA, HIP, NPU): whose library


@frozen
class LargerThanGpu:
    """One allocation asked for more than the GPU's whole capacity."""

    tried_bytes: int
    capacity_bytes: int


@frozen
class RuleDoesNotExplain:
    """ "Not enough memory" although SGLang's KV rule leaves a positive budget."""

    after_weights_bytes: int
    pre_load_bytes: int
    mfs: float
    rest_bytes: int
    draft: bool  # speculative decoding is on: a draft model takes part of the budget
    multimodal: bool  # server_args says multimodal: SGLang reserves for it, some eras scale mfs
    factor: float = 1.0  # SGLang scales the flag by this before the rule (Budget.factor)


@frozen
class PostCaptureResize:
    """An OOM while SGLang backed the KV pool after the graphs (post-capture KV sizing,
    sglang 0.5.17-0.5.23 kv_pool_runtime.py compute_post_capture_kv_resize): it read free
    memory after them (min over ranks), kept P x (1 - mfs) and backed the rest as KV pages."""

    rank: str
    free_bytes: int | None  # the failing rank's last reading: free memory after the graphs
    free_line: int | None
    headroom_bytes: int | None  # P x (1 - rule mfs); None without P or mem_fraction_static
    pre_load_bytes: int | None
    mfs: float | None


@frozen
class PostCaptureBudgetShort:
    """SGLang's pool-sizing error raised in the post-capture resize (e.g. 0.5.22-0.5.23
    unified_memory_pool.py UnifiedKVPool.finalize_backing's bs=1 floor): its budget is the free
    memory after the graphs less P x (1 - mfs), not the rule's rest (PostCaptureResize's)."""

    figures: PostCaptureResize


@frozen
class TransformersFallback:
    """ "Using Transformers backend." on the failing rank's log."""

    whole_gpu: bool  # the load needed more than the GPU had free: it does not shard
    beyond_capacity: bool | None = None  # more than the GPU's whole capacity (WeightsFloor)


# The notes below are whole explanations of their own (a phrase, not a list of sentences).


@frozen
class RanksLagging:
    ranks: tuple[str, ...]  # printed no Load weight end


@frozen
class NoTraceback:
    pass


@frozen
class NotMemory:
    exc_type: str | None
    bucket_free_bytes: int | None
    raised: RaisedIn | None = None  # where the frames say it was raised


@frozen
class TracebackCut:
    """The log ends inside a traceback, before its exception line."""

    frame: Frame | None  # the last frame printed that names a component


@frozen
class MemoryHint:
    """The exception's text names memory only among possible causes (a launcher's hint)."""

    exc_type: str


@frozen
class CommUnknown:
    library: str


@frozen
class LogStops:
    # The line the next launch of the same file begins at (Launch.next_start): the launch
    # did not just stop, another start-up followed it without an error line before.
    next_launch_line: int | None = None
    # The last line of this launch read before it (Launch.next_after): unread lines between
    # may hold the next launch's first line.
    next_launch_after: int | None = None


Note = (
    Shortfall
    | PyTorchHeld
    | GpuBusyEarly
    | WeightsBeforePool
    | WeightsFloor
    | LoadedBudget
    | DeepEPLazy
    | LibraryHeapLimit
    | MfsCannotFix
    | NoServerArgs
    | BudgetCameOut
    | NoMfsGivesPool
    | ImbalanceGap
    | OwnReading
    | ImbalanceNoFigures
    | RanksLagging
    | NoTraceback
    | NotMemory
    | TracebackCut
    | MemoryHint
    | OutsidePyTorch
    | LargerThanGpu
    | RuleDoesNotExplain
    | PostCaptureResize
    | PostCaptureBudgetShort
    | TransformersFallback
    | CommUnknown
    | LogStops
)
PHRASES = (RanksLagging, NoTraceback, NotMemory, TracebackCut, MemoryHint, CommUnknown, LogStops)


# --- the failure ---------------------------------------------------------------------------------


@frozen
class Failure:
    kind: str  # oom | not_enough_memory | imbalance | capture_failed | error | stopped
    memory_related: bool | None  # None: cannot tell (a log that just stops, a lone sigquit)
    phase: str | None  # see place.PHASES
    ranks: tuple[str, ...]
    graph: str | None  # graph family being captured, when phase is a capture
    size: int | None  # bucket being captured (bs or num_tokens): its last bar sample
    tried_bytes: int | None
    free_bytes: int | None  # the OOM's "is free", else free at the last bar sample
    capacity_bytes: int | None
    message: str
    line: Source | None
    fixes: tuple[Fix, ...] = ()
    notes: tuple[Note, ...] = ()  # why it is (not) memory, or what is missing
    shortfall_bytes: int | None = None  # memory that was missing, when the log shows it
    bucket_free_bytes: int | None = None  # free memory before the bucket being captured
    exc_type: str | None = None
    record: ErrorRecord | None = None
    errors: tuple[RankError, ...] = ()  # the decisive error of every traceback, per rank
    # For the headline: how many ranks the launch has, the rank whose bars were read (when
    # not the failing one), and the state of a capture the log stops in.
    ranks_total: int = 0
    bar_rank: str | None = None
    compiling_size: int | None = None  # a piecewise bar stopped while compiling this size
    capture_begin_bytes: int | None = None
    offline: str | None = None  # the offline tool (bench_one_batch ...), which has no ready line
    # A log that stops: the last line the stopped rank printed, when another rank printed
    # later lines (``line`` is the last line read in its file).
    rank_line: Source | None = None

    @property
    def headline(self) -> str:
        """The first verdict line (worded by logmem.report.verdict; kept for compare/)."""
        from logmem.report.verdict import headline_text

        return headline_text(self)


@frozen
class Noise:
    """A traceback that is not the server's error: printed at interpreter exit, or by a test
    harness (traces.noise_kind), with its decisive error when it has one."""

    kind: NoiseKind
    traceback: Traceback
    error: RankError | None
    # A harness's failed comparison (harness.test_check), the benchmark results printed
    # before it, and whether start-up had ended: what the test found, not the server's error.
    check: TestCheck | None = None
    results: Source | None = None
    after_up: bool = False


@frozen
class Outcome:
    status: str  # ready | crashed | incomplete
    failure: Failure | None
    runtime_errors: tuple[Traceback, ...]  # errors after start-up finished
    up: Up | None = None  # where start-up ended (the ready line, or what stands for it)
    noise: tuple[Noise, ...] = ()  # tracebacks that are not the server's errors
    offline: str | None = None  # the offline tool this launch is, when the log names one
    # Child processes that died after start-up without a Python traceback (deaths.py).
    runtime_deaths: tuple[Death, ...] = ()


@frozen
class Verdict:
    """What every report says first: the outcome, the failure with its fixes, later errors."""

    outcome: Outcome
    ranks_printing: int  # ranks that print memory lines
    world: int | None  # tp x pp from server_args
    first_runtime_error: RankError | None
    nodes: int | None = None  # nnodes from server_args: other nodes' ranks are in other logs
    rank_labels: tuple[str, ...] = ()  # the ranks this log holds
    # The first runtime error is the collective library's "a peer exited or the network
    # failed" (NCCL's ncclRemoteError): the cause is on another rank or node, not this one.
    peer_lost: bool = False
    # Weights the checkpoint did not fill ("Some weights are not initialized from checkpoints"):
    # a start-up can finish with them, so the verdict says so (logmem.analysis.weights_loaded).
    not_loaded: tuple[WeightsNotLoaded, ...] = ()
    # Ranks whose lines run back in time (findings_order): their figures are not used, the
    # other ranks' are (set_aside); or no rank is in order and the figures are theirs all the
    # same (unreliable).
    set_aside: tuple[str, ...] = ()
    unreliable: tuple[str, ...] = ()
    shared: tuple[str, ...] = ()  # of those, the ranks two processes print as (SharedLabel)
