"""The ledger's records: per rank, phases of free memory, each drop split into causes.

A phase runs between two consecutive free-memory readings; its causes are what the log
names (logged), what logmem derives from readings (derived) or from SGLang's rules
(estimated), and an explicit unattributed remainder. ``RankLedger.check()`` asserts both
conservation laws. Built by logmem.analysis.attribution.
"""

from __future__ import annotations

from dataclasses import field, replace
from enum import Enum

from logmem.frozen import frozen, mutable
from logmem.model.records import Graph, Model
from logmem.parse import events as ev
from logmem.sglang import rules
from logmem.sglang.comm import Library


@mutable
class Reading:
    """One free-memory reading of a rank's chain, in print order (what phases run between)."""

    kind: str  # weights_begin | weights_end | pool_end | capture_begin | capture_end | summary | last_sample
    bytes: int
    line: int
    event: ev.Event
    model: Model | None = None
    graph: Graph | None = None


class What(Enum):
    """What a cause is: logmem.report.causes words each one (no label is composed here)."""

    # distributed init
    COMMS = "comms"  # the collective library / gloo / custom all-reduce, as one logged usage
    AR_SYMMETRIC = "ar_symmetric"
    AR_LOCAL = "ar_local"
    OTHER_COMMS = "other_comms"  # the init usage minus the all-reduce buffers
    DRAFT_INIT = "draft_init"  # the draft worker's own distributed init
    # weights and pools
    WEIGHTS = "weights"
    KV_POOL = "kv_pool"  # a KV line
    MAMBA = "mamba"
    KV_FROM_CELL = "kv_from_cell"  # no KV line: tokens x another line's bytes per token
    KV_FROM_RULE = "kv_from_rule"  # no KV line: SGLang's budget rule
    KV_FROM_DROP = "kv_from_drop"  # no KV line: the step's drop minus the table
    REQ_TABLE = "req_table"  # request-to-token table
    # graph captures
    STATIC = "static"  # static buffers before the first bucket
    STATIC_AND_FIRST = "static_and_first"  # static buffers and the first buckets, one reading
    BEFORE_STOP = "before_stop"  # the buckets of a capture that stopped
    LARGEST = "largest"
    OTHER_BUCKETS = "other_buckets"
    SPAN = "span"  # a stretch of buckets between two sparse readings
    REMAINING = "remaining"  # the buckets after a reading, when their count is unknown
    GRAPH_TOTAL = "graph_total"
    RELEASED = "released"  # a negative logged graph usage: released during capture, net of graphs
    # remainders (kind "unattributed")
    ROUNDING = "rounding"
    GIVEN_BACK = "given_back"  # free memory rose beyond the causes: released, not a consumer
    # The rise right after a draft's pool step, where SGLang frees the draft's own copies for
    # the target's (rules.draft_share): its embed_tokens and lm_head, or (EAGLE3) its embedding.
    DRAFT_EMBED_HEAD = "draft_embed_head"
    DRAFT_EMBED = "draft_embed"
    UNATTRIBUTED = "unattributed"
    UNLOGGED = "unlogged"
    SMALL_POOLS = "small_pools"  # small pools and the allocator
    SMALL_POOLS_AND_WORKSPACES = "small_pools_and_workspaces"  # a step with no pool end line
    WEIGHTS_AND_POOLS = "weights_and_pools"  # weights + unlogged pools (no Load weight end)
    DRAFT_POOLS = "draft_pools"  # a draft's pools above 1 GiB, not printed
    BEYOND_TABLE = "beyond_table"  # target pools above 1 GiB beyond the sized table
    LIKELY_TABLE = "likely_table"  # target pools above 1 GiB, the table not sized
    ATTENTION_WORKSPACES = "attention_workspaces"  # before the first capture
    BETWEEN_CAPTURES = "between_captures"
    WORKSPACES_BEFORE = "workspaces_before"  # before a capture that printed no begin line
    # After the graphs, beside a pool backed then (post-capture KV sizing): sampling warm-up
    # buffers, less the pool's first pages, which the reservation backed in the pool step.
    AFTER_CAPTURE_REST = "after_capture_rest"


class Bound(Enum):
    """How far a figure is a measured cost. SGLang's free-memory readings cannot go below the
    0.00 floor (rules.at_floor), so a drop to the floor is a lower bound and a drop between two
    floored readings is unknown; a capture end line's negative mem usage is the net of the
    graphs' cost and a larger release, so the graphs' own cost is unknown (masked)."""

    EXACT = "exact"
    AT_LEAST = "at_least"  # the after reading is at the floor: the drop may be larger
    FLOOR = "floor"  # both readings at the floor: unknown
    MASKED = "masked"  # a negative logged graph usage: the graphs' cost is unknown

    @property
    def known(self) -> bool:
        return self in (Bound.EXACT, Bound.AT_LEAST)


def floor_bound(before_bytes: int, after_bytes: int) -> Bound:
    """The bound of a difference of two free-memory readings (before - after)."""
    if not rules.at_floor(after_bytes):
        return Bound.EXACT
    return Bound.FLOOR if rules.at_floor(before_bytes) else Bound.AT_LEAST


class KVLabel(Enum):
    """Which KV pool a KV line is (a sliding-window model prints two)."""

    KV = "kv"
    SWA = "swa"
    FULL = "full"


class Lazy(Enum):
    """Lazy allocations the first capture of a kind makes (logmem.analysis.captures.lazy)."""

    DEEPEP = "deepep"
    EP_ALL_TO_ALL = "ep_all_to_all"
    DP_ATTENTION = "dp_attention"
    # The collective library's peer buffers, connected at the first collective (not pre-warmed):
    # the launch's first capture runs it (logmem.sglang.comm.peer_buffers_when).
    PEER_BUFFERS = "peer_buffers"
    # A fragment with no server_args whose rank tags say expert parallelism is on: the first
    # capture allocates something once, but which backend (and so which buffers) is not logged.
    UNNAMED = "unnamed"


@frozen
class Span:
    """A stretch of captured buckets: how many, and the first and last size when known."""

    count: int
    first: int | None = None
    last: int | None = None
    tokens: bool = False  # sized in tokens (prefill-type graphs), else in batch size
    # A target-verify graph's tokens per request: each bs runs bs x per_req tokens
    # (rules.verify_tokens_per_req); None for other graphs.
    per_req: int | None = None


class CellOrigin(Enum):
    """Where a pool step with no KV line got its bytes per token, in order of precedence (a KV
    line on the rank itself needs none)."""

    NONE = "none"
    RANK = "rank"  # another rank of this launch printed a KV line
    LAUNCH = "launch"  # another launch of the input: same model and KV settings
    CONFIG = "config"  # the --model-config estimate for this launch's layout


@frozen
class CellSource:
    """The KV line (rank, line; of another launch: its number, file, printed size and tokens)
    or the --model-config estimate (model, KV dtype, attention TP) a cell comes from."""

    origin: CellOrigin
    rank: str | None = None
    line: int | None = None
    launch: int | None = None
    file: str | None = None  # the other launch's file, when not one of this launch's
    total_bytes: int | None = None
    tokens: int | None = None
    model: str | None = None
    kv_dtype: str | None = None
    attn_tp: int | None = None


@frozen
class Facts:
    """The numbers and flags a cause's label and note are worded from (all optional)."""

    draft: bool = False  # the draft model's (weights, pools)
    second: bool = False  # a second model's, not known to be a draft (Model.role "second")
    kv_label: KVLabel = KVLabel.KV
    one_buffer: bool = False  # a KV line with one KV size (MLA), not K and V
    tokens: int | None = None
    summary_tokens: bool = False  # `tokens` is the summary's, not the KV line's
    slots: int | None = None  # Mamba state slots
    n_req: int | None = None  # request-to-token table: request slots and context length
    pad_row: bool = True  # the table has one row more than n_req (rules.req_to_token_padding_row)
    ctx: int | None = None
    cell_bytes: float | None = None  # bytes per token of the full pool, from elsewhere
    cell_source: CellSource | None = None
    after_weights_bytes: int | None = None  # the budget rule's inputs
    pre_load_bytes: int | None = None
    mfs: float | None = None
    per_token: tuple[int, int] | None = None  # bytes per token, range (derived)
    table_known: bool = True  # the request-to-token table is sized (estimated)
    workspaces: bool = False  # the remainder also holds workspaces
    static_buffers: bool = False  # the remainder also holds a capture's static buffers
    span: Span | None = None
    size: int | None = None  # the largest bucket's size
    count: int | None = None  # buckets: the other ones, or the first ones in one reading
    lazy: tuple[Lazy, ...] = ()
    ep_size: int | None = None
    library: Library | None = None  # the collective library: comms, peer buffers
    no_custom_ar: bool = False  # the launch has no custom all-reduce (TP 1, disabled, platform)
    assumed: bool = False  # bar renders carried no bucket count: consecutive assumed
    not_bar_rank: bool = False  # a capture total on a rank that prints no bar
    bound_bytes: int | None = None  # rounding: what the printed figures can be off by
    after_capture: bool = False  # a KV pool backed after the graphs (post-capture KV sizing)
    # Its sliding-window tokens ('Post-capture KV sizing: ... swa_layer_tokens=S'): `tokens` are
    # then the full layers', and the KV size holds both pools.
    swa_tokens: int | None = None
    kv_deferred: bool = False  # a pool step whose KV pool is only reserved (backed after capture)
    # A unified pool's one buffer (--enable-unified-memory): its sub-pools' names, full first.
    unified: tuple[str, ...] = ()
    # A stretch of buckets measured from a bar reading to the capture's end line: the end line
    # empties the allocator's cache first and bars do not (rules.END_LINE_EMPTIES_CACHE).
    to_end: bool = False


@frozen
class Cause:
    what: What
    bytes: int
    kind: str  # logged | derived | estimated | unattributed
    lines: tuple[int, ...] = ()
    facts: Facts = Facts()
    # For graph captures, which part this is: static | largest | other | buckets | mixed | total.
    part: str = ""
    # Whether `bytes` is a cost the log supports: with a floored or masked reading it is a lower
    # bound or unknown (bytes is then the readings' difference, kept for conservation only).
    bound: Bound = Bound.EXACT


@frozen
class Bucket:
    """One captured batch size: free memory at its start and what it kept."""

    size: int | None
    avail_bytes: int
    cost_bytes: int | None  # this reading minus the next one (or the end line)
    line: int
    covers: int = 1  # how many buckets lie between this reading and the next
    bound: Bound = Bound.EXACT  # the cost's: readings at the 0.00 floor (floor_bound)
    # cost_bytes runs to the capture's end line, whose reading empties the allocator's cache
    # first (rules.END_LINE_EMPTIES_CACHE): not a per-bucket cost.
    to_end: bool = False

    @property
    def bucket_cost_bytes(self) -> int | None:
        """The cost when it is this bucket's own (bar to bar), else None."""
        return None if self.to_end else self.cost_bytes

    # Where ``size`` comes from (Graph.sample_size): "progress bar", the sizes list's line
    # ("bs line", "begin line", ...), or None when the size is unknown.
    size_from: str | None = None


class PhaseWhat(Enum):
    """What a phase is: logmem.report.causes words each one."""

    INIT = "init"  # distributed init
    WEIGHTS = "weights"
    WEIGHTS_AND_POOLS = "weights_and_pools"  # no Load weight end: one step
    POOLS = "pools"  # KV and other pools
    PRE_CAPTURE = "pre_capture"
    PRE_WEIGHTS = "pre_weights"
    WARMUP = "warmup"  # after capture, until the summary
    KV_AFTER_CAPTURE = "kv_after_capture"  # post-capture KV sizing: the pool backed then
    TO_SUMMARY = "to_summary"  # until the scheduler summary, no capture before it
    GAP = "gap"  # between two readings no other phase names
    CAPTURE = "capture"


class CaptureStart(Enum):
    """Where a capture phase begins when not at its begin line."""

    NO_BEGIN = "no_begin"  # the capture printed no begin line
    MID_CAPTURE = "mid_capture"  # the log starts inside it
    FIRST_BAR = "first_bar"  # at its first bar reading


class CaptureEnd(Enum):
    """Where a capture phase ends when not at its end line."""

    STOPPED = "stopped"  # the capture did not finish
    LAST_BAR = "last_bar"  # at its last bar reading
    NO_END = "no_end"  # the capture printed no end line


@frozen
class PhaseFacts:
    """What a phase's name is worded from."""

    draft: bool = False
    graph: str = ""
    second: bool = False  # a second model's phase, not known to be a draft  # the capture's label (pre_capture, capture)
    from_kind: str = ""  # reading kinds (Reading.kind) around a gap, or where pools end
    to_kind: str = ""
    first_bar: bool = False  # pre_capture: runs to the capture's first bar reading
    start: CaptureStart | None = None
    end: CaptureEnd | None = None
    kv_deferred: bool = False  # pools: the KV pool is reserved here, backed after capture
    committed: bool = False  # the weights' real values were committed after capture (overlap)
    verify_per_req: int | None = None  # capture: a target-verify graph's tokens per request


@frozen
class Phase:
    key: str  # stable id, e.g. "init", "weights", "pools", "pre_capture:decode", "capture:decode"
    what: PhaseWhat
    before_bytes: int
    after_bytes: int
    causes: tuple[Cause, ...]
    lines: tuple[int, int]
    graph: Graph | None = field(default=None, compare=False, repr=False)
    buckets: tuple[Bucket, ...] = ()
    facts: PhaseFacts = PhaseFacts()

    @property
    def delta_bytes(self) -> int:
        """Drop in free memory over the phase (negative when free memory rose)."""
        return self.before_bytes - self.after_bytes

    @property
    def bound(self) -> Bound:
        """How far the phase's drop is measured (its readings at the 0.00 floor)."""
        return floor_bound(self.before_bytes, self.after_bytes)

    def part(self, name: str) -> Cause | None:
        """A graph capture's cause by part: static, largest, other, buckets, mixed, total."""
        return next((c for c in self.causes if c.part == name), None)

    @property
    def unattributed_bytes(self) -> int:
        return sum(c.bytes for c in self.causes if c.kind == "unattributed")


@frozen
class NoLedger:
    """Why a rank has no phases: it printed one reading (a ledger needs two) or none."""

    reading: tuple[str, int, int] | None  # the one reading: its kind, bytes and line
    tp0_only: bool = False  # none, on a rank of an era whose model-runner lines are TP0's only


@frozen
class RankLedger:
    rank: str
    phases: tuple[Phase, ...]
    empty: NoLedger | None = None
    # Its start-up lines run back in time (logmem.analysis.findings_order): the ledger pairs
    # readings in the wrong order and is not reliable.
    out_of_order: bool = False
    # Two processes print its label (findings_order.SharedLabel): the ledger mixes their
    # readings and is not reliable.
    shared_label: bool = False

    @property
    def first_bytes(self) -> int | None:
        return self.phases[0].before_bytes if self.phases else None

    @property
    def last_bytes(self) -> int | None:
        return self.phases[-1].after_bytes if self.phases else None

    def phase(self, key: str) -> Phase | None:
        return next((p for p in self.phases if p.key == key), None)

    def _pool_step(self) -> int | None:
        """The index of the target's pool step (with or without its weights), if any."""
        keys = [p.key for p in self.phases]
        return next(
            (i for i, k in enumerate(keys) if k in ("target_pools", "target_weights_and_pools")),
            None,
        )

    def phases_after_pools(self) -> tuple[Phase, ...]:
        """The phases after the target's pool step (SGLang sized the KV pool at its start, so
        all of them come after sizing); () without a pool step."""
        start = self._pool_step()
        return () if start is None else self.phases[start + 1 :]

    def least_free_from_pools(self) -> tuple[int, int] | None:
        """(bytes, line) of the least free reading from the target's pool step on, a capture's
        bar included (lowest_reading): what the pool left, less whatever came after it
        (workspaces, graphs, a draft model); a later phase may give memory back, so this can sit
        below the last reading. None without a pool step."""
        start = self._pool_step()
        low = self.lowest_reading(start) if start is not None else None
        return (low[0], low[1]) if low is not None else None

    def lowest_reading(self, start: int = 0) -> tuple[int, int, Phase, Bucket | None] | None:
        """(bytes, line, phase, bucket) of the least free reading of the chain from phase
        ``start`` on: a phase's end or a capture's bucket reading, whose bars can dip below the
        capture's end line (021: 5.62 GiB at num_tokens 8 of the prefill capture, which ends at
        7.27). The first such reading on a tie; None without phases."""
        best: tuple[int, int, Phase, Bucket | None] | None = None
        for p in self.phases[start:]:
            for x in (
                *((b.avail_bytes, b.line, p, b) for b in p.buckets),
                (p.after_bytes, p.lines[1], p, None),
            ):
                if best is None or x[0] < best[0]:
                    best = x
        return best

    def unsampled_capture_at(self, line: int) -> Phase | None:
        """The capture that the reading on ``line`` begins, ends or lies in, when the log has at
        most one bar reading inside it (grep-filtered logs print none, some only the 100% bar):
        free memory inside it is unknown, and may have been lower than any reading."""
        return next(
            (
                p
                for p in self.phases
                if p.what is PhaseWhat.CAPTURE
                and p.lines[0] <= line <= p.lines[1]
                and len(p.buckets) <= 1
            ),
            None,
        )

    def free_after_pools(self) -> tuple[int, int] | None:
        """(bytes, line) of the reading that ends the target's pool step, or the draft's pool
        step when it follows at once (E7 sizes both before any capture): the room everything
        allocated after KV sizing (workspaces, lazy communication buffers, graphs) had to fit
        in. None without a pool step."""
        start = self._pool_step()
        if start is None:
            return None
        p = self.phases[start]
        nxt = self.phases[start + 1] if start + 1 < len(self.phases) else None
        if nxt is not None and nxt.key.split("#")[0] == "draft_pools":
            p = nxt
        return p.after_bytes, p.lines[1]

    def check(self) -> None:
        """Conservation: phases chain and add up; causes add up to each phase's drop."""
        for a, b in zip(self.phases, self.phases[1:]):
            if a.after_bytes != b.before_bytes:
                raise AssertionError(
                    f"{self.rank}: phase {a.key} ends where {b.key} does not begin"
                )
        if self.phases:
            total = sum(p.delta_bytes for p in self.phases)
            assert self.first_bytes is not None and self.last_bytes is not None
            if total != self.first_bytes - self.last_bytes:
                raise AssertionError(f"{self.rank}: phase drops do not add up")
        for p in self.phases:
            if sum(c.bytes for c in p.causes) != p.delta_bytes:
                raise AssertionError(f"{self.rank}: causes of {p.key} do not add up to its drop")


def remainder(
    delta: int,
    causes: list[Cause],
    what: What,
    lines: tuple[int, ...],
    facts: Facts = Facts(),
    tolerance: float = rules.DIFFERENCE_RESOLUTION_BYTES,
) -> list[Cause]:
    """Close a phase's causes with what they leave of its drop: print rounding (+-0.01 GiB, or
    a negative remainder within `tolerance`, what the phase's printed figures can be off by),
    What.GIVEN_BACK when free memory rose beyond that (memory was released: temporaries freed,
    another process, unified memory; never a consumer's name), else `what`."""
    rest = delta - sum(c.bytes for c in causes)
    if rest != 0 or not causes:
        # A positive remainder always has real, small consumers (allocator rounding, unlogged
        # buffers), so only +-0.01 GiB of it is rounding; a negative one within what every
        # printed figure of the phase can be off by is rounding too, beyond it given back.
        rounding = abs(rest) <= rules.DIFFERENCE_RESOLUTION_BYTES or -tolerance <= rest < 0
        if rounding and causes:
            bound = rules.DIFFERENCE_RESOLUTION_BYTES
            if abs(rest) > bound:
                bound = round(tolerance)
            what, facts = What.ROUNDING, Facts(bound_bytes=bound)
        elif rest < -tolerance and what is not What.UNATTRIBUTED:
            what = What.GIVEN_BACK
        causes.append(Cause(what, rest, "unattributed", lines, facts))
    return causes


def bound_remainders(causes: list[Cause], before_bytes: int, after_bytes: int) -> list[Cause]:
    """Mark a phase's remainders (not its rounding) with the bound of its readings: a remainder
    that only reaches the 0.00 floor is a lower bound, one between floored readings unknown."""
    bound = floor_bound(before_bytes, after_bytes)
    if bound is Bound.EXACT:
        return causes
    return [
        replace(c, bound=bound)
        if c.kind == "unattributed" and c.what is not What.ROUNDING and c.bound is Bound.EXACT
        else c
        for c in causes
    ]
