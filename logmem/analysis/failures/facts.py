"""The verdict's facts: fixes with their price, the notes that explain a failure, the failure.

Every record holds numbers (bytes, counts, fractions) and the names SGLang prints (flags,
ranks, graph families); logmem.report.verdict words them. A fix's flag and value are what
a person types; its effect is the arithmetic that prices it.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from logmem.analysis.failures.records import ErrorRecord, RankError
from logmem.model.records import Traceback
from logmem.parse.lines import Source

# --- what a fix buys and costs -----------------------------------------------------------------


class Purpose(Enum):
    """What the memory a lower mem_fraction_static frees is for."""

    CAPTURE = "capture"
    ACTIVATIONS = "activations"
    COMM = "comm"  # a communication library's buffer (DeepEP, NVSHMEM ...)
    ONE_STEP = "one_step"  # the error printed no figures: one step of mem_fraction_static


@dataclass(frozen=True)
class LowerMfs:
    mfs: float
    to: float
    need_bytes: int
    pre_load_bytes: int
    pre_load_rank: str | None
    freed_bytes: int
    purpose: Purpose
    library: str | None = None  # for Purpose.COMM
    step: float | None = None  # for Purpose.ONE_STEP
    bytes_per_token: float | None = None
    lost_tokens: float | None = None
    kv_share: float = 1.0
    kv_tokens: int | None = None


class Pools(Enum):
    """How a capture's buckets share memory, as the bar readings show it."""

    SHARED = "shared"  # the later buckets cost little: one pool sized by the largest
    ASSUMED_SHARED = "assumed_shared"  # too few readings: assumed
    UNDECIDED = "undecided"  # one measured bucket: the smaller cap of the two models


@dataclass(frozen=True)
class CapDropBuckets:
    """Separate pools: dropping the buckets above the cap returns their measured cost."""

    unit: str
    cap: int
    dropped: tuple[int, ...]
    first_bytes: int  # the bar reading before the largest bucket
    at_cap_bytes: int  # the bar reading before the cap's bucket
    largest: int
    shortfall_bytes: int


@dataclass(frozen=True)
class CapPerRow:
    """One pool: the peak grows with the largest bucket's rows, priced per row."""

    unit: str
    cap: int
    largest: int
    per_row_bytes: float
    saved_bytes: float
    shortfall_bytes: int
    pools: Pools
    shared_limit: float
    additive_limit: float | None  # the cap the measured drops allow, when shown
    # The basis of per row: a measured bucket cost, or what the failed first bucket needed.
    first_bytes: int
    second_bytes: int | None = None  # the next bar reading (measured basis)
    oom_free_bytes: int | None = None  # needed basis: free at the OOM
    tried_bytes: int | None = None  # needed basis: what the OOM asked for


@dataclass(frozen=True)
class ExpandableSegments:
    reserved_unallocated_bytes: int
    shortfall_bytes: int


@dataclass(frozen=True)
class HalveChunk:
    chunk: int
    half: int
    saved_bytes: int
    need_bytes: int


@dataclass(frozen=True)
class DispatchTokensRatio:
    tried_bytes: int
    free_bytes: int
    ratio: float
    at_default: int


@dataclass(frozen=True)
class DispatchTokensHalf:
    half: int


@dataclass(frozen=True)
class DoubleTP:
    """OOM while loading: twice the GPUs halve the weights per rank."""

    tp: int
    mfs: float | None
    rest_bytes: int | None  # the KV budget the ranks that finished leave
    weights_bytes: int | None


@dataclass(frozen=True)
class QuantizeFP8:
    pass


@dataclass(frozen=True)
class CpuOffload:
    gib: int
    need_bytes: int
    budget_lack_bytes: int | None  # set when the KV budget lacks more than the shortfall


@dataclass(frozen=True)
class RaiseMfsNoFigures:
    pass


@dataclass(frozen=True)
class SmallestMfs:
    after_weights_bytes: int
    pre_load_bytes: int
    exact: float  # 1 - A / P
    step: float
    step_bytes: int
    headroom_bytes: int


@dataclass(frozen=True)
class FewerWeights:
    """ "Not enough memory": halve the weights per rank."""

    weights_bytes: int
    quantized: bool
    mfs: float | None
    rest_bytes: int | None


@dataclass(frozen=True)
class FindProcess:
    gap_gib: float
    ranks: tuple[str, ...]  # the occupied GPUs' ranks (empty: not known)


@dataclass(frozen=True)
class SkipImbalanceCheck:
    pre_model_load_gib: float
    mfs: float | None
    gap_gib: float
    loss_bytes: int | None


@dataclass(frozen=True)
class DisableGraph:
    graph: str


Effect = (
    LowerMfs
    | CapDropBuckets
    | CapPerRow
    | ExpandableSegments
    | HalveChunk
    | DispatchTokensRatio
    | DispatchTokensHalf
    | DoubleTP
    | QuantizeFP8
    | CpuOffload
    | RaiseMfsNoFigures
    | SmallestMfs
    | FewerWeights
    | FindProcess
    | SkipImbalanceCheck
    | DisableGraph
)


@dataclass(frozen=True)
class Fix:
    """One change that would fix the failure, with its price in numbers a person can check."""

    flag: str  # a server flag, an environment variable, or an action such as "nvidia-smi"
    value: str | None  # the value to set (None: a switch, or nothing to set)
    effect: Effect  # what it buys and what it costs (worded by logmem.report.verdict)


# --- why: the notes a verdict explains itself with --------------------------------------------


@dataclass(frozen=True)
class Shortfall:
    tried_bytes: int | None
    free_bytes: int | None
    shortfall_bytes: int


@dataclass(frozen=True)
class PyTorchHeld:
    allocated_bytes: int
    capacity_bytes: int


@dataclass(frozen=True)
class GpuBusyEarly:
    pass


@dataclass(frozen=True)
class WeightsBeforePool:
    pass


class FloorCase(Enum):
    FITS = "fits"  # within what was free before loading
    PEAKS = "peaks"  # more than free, less than others finished with: the load peaks
    WHOLE_GPU = "whole_gpu"  # more than the whole GPU had


@dataclass(frozen=True)
class WeightsFloor:
    rank: str
    begin_bytes: int
    free_bytes: int
    tried_bytes: int
    at_least_bytes: int
    case: FloorCase
    finished_bytes: int | None = None  # PEAKS: what the ranks that finished hold


@dataclass(frozen=True)
class LoadedBudget:
    """OOM while loading: the KV budget the ranks that finished leave."""

    weights_bytes: int
    after_weights_bytes: int
    pre_load_bytes: int
    mfs: float
    rest_bytes: int


@dataclass(frozen=True)
class DeepEPLazy:
    pass


@dataclass(frozen=True)
class NoKVTokensLeft:
    to: float


@dataclass(frozen=True)
class BelowPoolFloor:
    to: float
    smallest: float | None


Blocker = NoKVTokensLeft | BelowPoolFloor


@dataclass(frozen=True)
class MfsCannotFix:
    blocker: Blocker


@dataclass(frozen=True)
class NoServerArgs:
    pass


@dataclass(frozen=True)
class BudgetCameOut:
    after_weights_bytes: int
    pre_load_bytes: int
    mfs: float
    rest_bytes: int


@dataclass(frozen=True)
class NoMfsGivesPool:
    after_weights_bytes: int


@dataclass(frozen=True)
class ImbalanceGap:
    ranks: tuple[str, ...]
    gap_gib: float
    pre_model_load_gib: float
    local_gib: float


@dataclass(frozen=True)
class OwnReading:
    rank: str
    bytes: int


@dataclass(frozen=True)
class ImbalanceNoFigures:
    ranks: tuple[str, ...]


# The notes below are whole explanations of their own (a phrase, not a list of sentences).


@dataclass(frozen=True)
class RanksLagging:
    ranks: tuple[str, ...]  # printed no Load weight end


@dataclass(frozen=True)
class NoTraceback:
    pass


@dataclass(frozen=True)
class NotMemory:
    exc_type: str | None
    bucket_free_bytes: int | None


@dataclass(frozen=True)
class CommUnknown:
    library: str


@dataclass(frozen=True)
class LogStops:
    pass


Note = (
    Shortfall
    | PyTorchHeld
    | GpuBusyEarly
    | WeightsBeforePool
    | WeightsFloor
    | LoadedBudget
    | DeepEPLazy
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
    | CommUnknown
    | LogStops
)
PHRASES = (RanksLagging, NoTraceback, NotMemory, CommUnknown, LogStops)


# --- the failure ---------------------------------------------------------------------------------


@dataclass(frozen=True)
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

    @property
    def headline(self) -> str:
        """The first verdict line (worded by logmem.report.verdict; kept for compare/)."""
        from logmem.report.verdict import headline_text

        return headline_text(self)


@dataclass(frozen=True)
class Outcome:
    status: str  # ready | crashed | incomplete
    failure: Failure | None
    runtime_errors: tuple[Traceback, ...]  # errors after start-up finished


@dataclass(frozen=True)
class Verdict:
    """What every report says first: the outcome, the failure with its fixes, later errors."""

    outcome: Outcome
    ranks_printing: int  # ranks that print memory lines
    world: int | None  # tp x pp from server_args
    first_runtime_error: RankError | None
