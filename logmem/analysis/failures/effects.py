"""A fix's facts: the flag a person types, its value, and the effect that prices it.

Every effect holds numbers (bytes, fractions, sizes) and the names SGLang prints (flags,
graph families, frames); logmem.report.fixes words them.
"""

from __future__ import annotations

from enum import Enum

from logmem.analysis.capture_lever import CaptureLever
from logmem.frozen import frozen
from logmem.parse import events as ev
from logmem.sglang import rules

# --- what a fix buys and costs -----------------------------------------------------------------


class Purpose(Enum):
    """What the memory a lower mem_fraction_static frees is for."""

    CAPTURE = "capture"
    ACTIVATIONS = "activations"
    COMM = "comm"  # a communication library's buffer (DeepEP, NVSHMEM ...)
    ONE_STEP = "one_step"  # the error printed no figures: one step of mem_fraction_static


@frozen
class CaptureRest:
    """What a failed capture still had to take after the failed bucket, as the readings price it.

    With one shared graph pool the largest bucket sets the pool and each later bucket adds its
    own increment (its outputs, allocator growth): the increments the bars measured between
    later buckets of this capture, averaged, price the buckets still to capture."""

    unit: str  # bs | num_tokens
    failed: int  # the bucket that failed
    remaining: int | None  # buckets still to capture after it (None: the list is not printed)
    per_bucket_bytes: float | None  # mean measured increment of this capture's later buckets
    measured: int  # how many later buckets that mean is over (0: none measured)

    @property
    def rest_bytes(self) -> int | None:
        """The remaining buckets' cost (0 when none remain; None when not priced)."""
        if self.remaining == 0:
            return 0
        if self.remaining is None or self.per_bucket_bytes is None:
            return None
        return round(self.per_bucket_bytes * self.remaining)


def pool_ratio(bytes_per_token: float | None, sizing_cell: float | None) -> float:
    """Bytes of pools per byte of the rule's budget: bytes_per_token / sizing_cell when SGLang
    sized the pool with a smaller cell than it allocates (PoolsVsBudget.sizing_cell_bytes), else 1."""
    if sizing_cell and bytes_per_token and bytes_per_token > sizing_cell:
        return bytes_per_token / sizing_cell
    return 1.0


@frozen
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
    factor: float = 1.0  # SGLang scales the flag by this before the rule (Budget.scaling)
    cell_bytes: float | None = None  # the KV cell inside bytes_per_token (the rest: other pools)
    # SGLang's sizing cell when smaller than bytes_per_token (Budget.sizing_cell): each byte of
    # budget given up shrinks the pools by bytes_per_token / sizing_cell.
    sizing_cell: float | None = None
    # A capture OOM: need_bytes is the shortfall plus rest.rest_bytes when the readings price
    # the buckets still to capture; rest says what is and is not covered.
    rest: CaptureRest | None = None

    @property
    def pool_ratio(self) -> float:
        return pool_ratio(self.bytes_per_token, self.sizing_cell)


class Pools(Enum):
    """How a capture's buckets share memory, as the bar readings show it."""

    SHARED = "shared"  # the later buckets cost little: one pool sized by the largest
    ASSUMED_SHARED = "assumed_shared"  # too few readings: assumed
    UNDECIDED = "undecided"  # one measured bucket: the smaller cap of the two models


@frozen
class CapDropBuckets:
    """Separate pools: dropping the buckets above the cap returns their measured cost."""

    unit: str
    cap: int
    dropped: tuple[int, ...]
    first_bytes: int  # the bar reading before the largest bucket
    at_cap_bytes: int  # the bar reading before the cap's bucket
    largest: int
    shortfall_bytes: int
    lever: CaptureLever | None = None  # which flag shrinks the list (capture_lever)


@frozen
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
    lever: CaptureLever | None = None  # which flag shrinks the list (capture_lever)


@frozen
class ExpandableSegments:
    reserved_unallocated_bytes: int
    shortfall_bytes: int


@frozen
class HalveChunk:
    chunk: int
    half: int
    saved_bytes: int
    need_bytes: int


@frozen
class DecodeWithinT:
    """What has to shrink with DeepEP's dispatch tokens T: its low-latency dispatch takes at most
    T tokens per rank (DeepEP ``low_latency_dispatch`` asserts it; sglang 0.5.23
    srt/arg_groups/moe_hook.py makes "graph bs x tokens per request > T" a start-up error), and
    nothing in SGLang lowers the decode batch or its graphs to T."""

    new_tokens: int  # the T the fix proposes
    per_request: int  # tokens per request in a decode step (spec decoding: draft tokens)
    flag: str  # the flag that caps the decode graph (rules.graph_cap_flag)
    graph_max_bs: int | None  # the decode graph's max bs now (None: not in server_args)
    graph_bs: int | None  # the capture list's largest bs whose tokens fit the new T
    dp: int  # DP-attention ranks: each runs its own decode batch
    max_running: int | None  # --max-running-requests now (None: not in server_args)
    auto: bool  # deepep_mode 'auto': the buffer is the larger of normal and low-latency sizes
    lever: CaptureLever | None = None  # which flag shrinks the decode list (capture_lever)

    @property
    def bs_limit(self) -> int:
        """The largest decode batch per rank whose tokens fit in the new T."""
        return max(1, self.new_tokens // max(1, self.per_request))

    @property
    def graph_too_big(self) -> bool:
        return self.graph_max_bs is not None and self.graph_max_bs > self.bs_limit

    @property
    def running_limit(self) -> int:
        """--max-running-requests whose share per DP rank (max_running_requests // dp, sglang
        0.5.9 model_executor/model_runner.py) fits the new T."""
        return self.bs_limit * self.dp

    @property
    def running_too_big(self) -> bool:
        return self.max_running is not None and self.max_running > self.running_limit


@frozen
class DispatchTokensRatio:
    tried_bytes: int
    free_bytes: int
    ratio: float
    at_current: int  # floor(ratio x T), T the launch's own (set in its environment or the default)
    tokens: int  # T this launch ran with
    set_on_line: int | None  # the log line that set T; None: SGLang's default
    low_latency_only: bool  # deepep_mode='low_latency': the whole buffer scales with T
    within: DecodeWithinT | None = None


@frozen
class DispatchTokensHalf:
    half: int
    tokens: int  # T this launch ran with
    set_on_line: int | None  # the log line that set T; None: SGLang's default
    within: DecodeWithinT | None = None


@frozen
class DoubleTP:
    """OOM while loading: twice the GPUs halve the weights per rank."""

    tp: int
    mfs: float | None
    rest_bytes: int | None  # the KV budget the ranks that finished leave
    weights_bytes: int | None


@frozen
class QuantizeFP8:
    pass


@frozen
class CpuOffload:
    gib: int
    need_bytes: int
    budget_lack_bytes: int | None  # set when the KV budget lacks more than the shortfall


@frozen
class RaiseMfsNoFigures:
    suggested: float | None = None  # SGLang's own "Raise --mem-fraction-static above X"


@frozen
class SmallestMfs:
    after_weights_bytes: int
    pre_load_bytes: int
    exact: float  # 1 - A / P
    step: float
    step_bytes: int
    headroom_bytes: int
    factor: float = 1.0  # SGLang scales the flag by this before the rule: mfs > exact / factor
    suggested: float | None = None  # SGLang's own "Raise --mem-fraction-static above X"
    # The failing pool needs a fixed part on top of a positive budget (records.KVSizing.form
    # "state_cache", "unified_pool", "swa_cap"): the value is a lower bound.
    form: str = "not_enough"


@frozen
class FewerWeights:
    """ "Not enough memory": halve the weights per rank."""

    weights_bytes: int
    quantized: bool
    mfs: float | None
    rest_bytes: int | None
    gpus: int | None = None  # --tp-size's new value: the GPUs it needs (None: no TP known)


@frozen
class FindProcess:
    gap_gib: float
    ranks: tuple[str, ...]  # the occupied GPUs' ranks (empty: not known)


@frozen
class SkipImbalanceCheck:
    pre_model_load_gib: float
    mfs: float | None
    gap_gib: float
    loss_bytes: int | None  # rule(mfs) x gap: the rule runs with the flag times factor
    factor: float = 1.0  # SGLang scales the flag by this before the rule (MfsScaling)


@frozen
class DisableGraph:
    """Skip the failing family's capture: a diagnostic that tells whether capture itself fails."""

    graph: str
    machinery: bool  # the frames show the capture machinery raised (not just "in capture")


@frozen
class ChangeComponent:
    """The component that raised, named from the traceback's frames: it would fail the same
    way without graphs (eager decode runs the same code)."""

    where: str  # traces.Where value: attention | kernel | model
    component: str | None  # backend / library / model file as the path names it
    path: str | None  # the innermost frame that names it
    line: int | None
    func: str | None
    graph: str | None  # the capture it failed in, when it did
    in_use: str | None  # server_args' value for the flag (attention_backend='triton')
    # The launcher set NSA (DSA) backends for this model ("Set NSA backends for ... KV Cache")
    # while another attention backend was passed: the model's own family is a thing to try.
    nsa: ev.NSABackends | None = None


@frozen
class EnvSwitchOff:
    """The raising function runs only when an environment switch is on (rules.env_gate): the
    launch's environment set it; turning it off takes SGLang's default path."""

    gate: rules.EnvGate
    path: str | None  # the frame's file
    line: int | None
    graph: str | None  # the capture it failed in, when it did
    # The launch passed another attention backend than the NSA ones its DSA model was set up
    # for: with it the model's sparse indexer is skipped (dense attention), switch or not.
    dense_attention: bool = False


@frozen
class LowerMfsRelative:
    """Lower mem_fraction_static by at least need / P when the value in use is not printed."""

    need_bytes: int
    pre_load_bytes: int
    pre_load_rank: str | None
    delta: float  # need / (P x factor), rounded up to SGLang's 0.001 steps
    factor: float = 1.0  # SGLang scales the flag by this before the rule (Budget.scaling)


@frozen
class RaiseMfsUnexplained:
    """ "Not enough memory" although the KV rule gives a positive budget: raise it (SGLang's
    advice), by an amount the rule cannot give."""

    mfs: float
    suggested: float | None = None  # SGLang's own "Raise --mem-fraction-static above X"
    # Post-capture KV sizing: what each 0.01 adds to the budget after the graphs (P x 0.01).
    step_bytes: int | None = None


@frozen
class FindOutside:
    """Find what holds the memory outside PyTorch (another process, or non-PyTorch allocations)."""

    outside_bytes: int
    gpu: int | None
    # Used memory minus what "this process has" (the OOM message): other processes' share;
    # None when the message does not say what this process has.
    others_bytes: int | None = None


@frozen
class NativeImpl:
    """The model runs on the Transformers fallback: SGLang's own implementation shards it."""

    architecture: str | None  # Load weight end's type=; None: no rank printed one
    # model_impl was 'auto' (or not dumped): SGLang falls back to Transformers only for an
    # architecture this build does not implement, so the fix is another SGLang version.
    auto: bool = True
    model: str | None = None  # server_args' model_path: the checkpoint, not the architecture


Effect = (
    LowerMfs
    | LowerMfsRelative
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
    | RaiseMfsUnexplained
    | SmallestMfs
    | FewerWeights
    | FindProcess
    | FindOutside
    | SkipImbalanceCheck
    | DisableGraph
    | ChangeComponent
    | EnvSwitchOff
    | NativeImpl
)


@frozen
class LowerByAtLeast:
    """The value in use is unknown: lower the flag by at least ``delta`` from it."""

    delta: float


@frozen
class AtMostTimes:
    """Set the value to at most ``ratio`` times the one in use."""

    ratio: float


Change = LowerByAtLeast | AtMostTimes


@frozen
class Fix:
    """One change that would fix the failure, with its price in numbers a person can check."""

    flag: str  # a server flag, an environment variable, or an action such as "nvidia-smi"
    value: str | None  # the value to set (None: a switch, a change, or nothing to set)
    effect: Effect  # what it buys and what it costs (worded by logmem.report.verdict)
    change: Change | None = None  # relative to the value in use, when no value can be given
