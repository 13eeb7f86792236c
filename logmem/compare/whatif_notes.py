"""whatif's facts beside its table, and the slope sources every compare command names: where a
slope comes from, the KV rule replayed, the pools and graphs held or moved, the one-full-context
check. Split from logmem.compare.notes for its length; that module re-exports every name here
as part of its Note union, and logmem.report.compare.notes words them."""

from __future__ import annotations

from enum import Enum

from logmem.analysis.context import ContextVsPool
from logmem.analysis.findings_sizing import PoolsVsBudget
from logmem.analysis.ledger import Lazy
from logmem.compare.comparable import Mismatch
from logmem.frozen import frozen
from logmem.sglang.comm import Library

# --- where a slope comes from ---------------------------------------------------------------


@frozen
class HeuristicTerms:
    """The terms of SGLang's graph reserve per unit of max bs (rules.graph_reserve_mib_per_bs)."""

    dp_size: int | None  # DP attention on with this dp_size
    large_bs: bool  # max bs above rules.DP_ATTENTION_LARGE_BS (with DP attention)


@frozen
class MeasuredSlope:
    graph: str
    rank: str
    basis: str
    rows_first: int | None
    rows_last: int | None
    # The launches it was measured on (whatif --slope-from A B): not the launch it prices.
    launches: tuple[str, ...] = ()
    mib_per_row_error: float | None = None  # the fit's printing bound (slope.Line)
    # How the slope's launches differ from the launch it prices (compare.comparable).
    mismatches: tuple[Mismatch, ...] = ()


@frozen
class GivenSlope:
    mib_per_row: float
    static_mib_per_row: float | None


@frozen
class HeuristicSlope:
    terms: HeuristicTerms


@frozen
class FailedBucketSlope:
    """The per-row cost analyze's capture-OOM Fix prices a lower max bs by
    (analysis.failures.effects.CapPerRow): the failed largest bucket's, one shared pool assumed."""

    graph: str
    largest: int  # the bucket that failed
    measured: (
        bool  # from two bar readings; False: what the failed bucket needed (the OOM's figures)
    )


@frozen
class BarsSlope:
    """A larger max bs priced from this launch's own bar readings (whatif_sizes.bars_slope): the
    largest bucket's cost (and the static buffers') per row, scaled to the new top's rows."""

    graph: str
    largest: int  # the launch's largest (first-captured) bucket
    rows: int  # its rows
    largest_bytes: int  # its cost, first bar minus second bar
    largest_lines: tuple[int, int]
    static_bytes: int | None  # capture begin minus the first bar (None: not read)
    static_lines: tuple[int, ...] = ()


SlopeSource = MeasuredSlope | GivenSlope | HeuristicSlope | FailedBucketSlope | BarsSlope


@frozen
class RuleDisagrees:
    rule_tokens: int
    logged_tokens: int
    # analyze's finding when the gap is in the token count (the cell is the round one): the
    # logged budget and the tokens it holds at the page-rounded count, cited as analyze words it.
    beyond: PoolsVsBudget | None = None


@frozen
class SizedWithAnotherCell:
    """analyze's reading of the launch: SGLang sized the pool as budget / a smaller cell than the
    pools allocate (PoolsVsBudget.sizing_cell_bytes); token changes use that cell."""

    finding: PoolsVsBudget
    allocated_cell_bytes: int  # what the pools allocate per slot (the pool's GiB)


@frozen
class StartupUnfinished:
    headline: str  # the verdict's first line (report.verdict renders it for analyze too)
    in_capture: bool
    shortfall_bytes: int | None  # what the failed allocation lacked, when it was memory


@frozen
class NoMeasuredSlope:
    mib_per_bs: float | None = None  # the heuristic slope used (rules.graph_reserve_mib_per_bs)
    # A larger max bs in a version whose buckets keep their own logits (rules.kept_logits_bytes):
    # the sizes the new list captures above the launch's top or between (its new top last;
    # empty: the list is not known) and their rows; the log gives no vocabulary to price them.
    kept_logits: bool = False
    added: tuple[int, ...] = ()
    rows: int | None = None


@frozen
class SlopeFromFailedBucket:
    """No slope measured or given, but the capture failed in its largest bucket: the new max bs
    is priced by the per-row cost analyze's Fix uses, so the two agree; SGLang's reserve
    heuristic (not a measurement) is named beside it."""

    mib_per_row: float
    source: FailedBucketSlope
    heuristic_mib_per_bs: float


@frozen
class LazyInLargest:
    """The graph being resized: its largest bucket also holds lazy allocations whose size does
    not follow the bucket's (DeepEP's buffer, the collective library's peer buffers): a new max
    bs moves only the graph's part, which is what the prediction scales."""

    graph: str
    bucket_bytes: int
    lazy: tuple[Lazy, ...]
    library: Library | None


@frozen
class KVRuleReplayed:
    after_weights_bytes: int
    pre_load_bytes: int
    bytes_per_token: float  # the cell SGLang's sizing divides by (PoolProjection.sizing_bpt)
    pre_load_rank: str
    # How many ranks P was read on, of how many the log should hold (Sizing.pre_load_coverage).
    ranks_printed: int | None = None
    ranks_expected: int | None = None
    # The full pool's share of the budget when SWA / Mamba pools split it (1.0: the KV alone).
    share: float = 1.0


@frozen
class MfsMovesKVOnly:
    pass


@frozen
class HeadroomDefinition:
    pass


@frozen
class LowPointBinds:
    """Free memory fell lower after the KV pool than at the end (a later phase gave memory
    back): the headroom is checked at that low point as well, where a larger pool must fit."""

    rank: str
    low_bytes: int
    line: int
    final_bytes: int
    after_capture: bool = False  # it comes after the resized graph's capture ended
    # The capture (its label) the low reading borders, when the log has no readings inside it
    # (whatif_facts.unsampled_low): the headroom figures are then upper bounds.
    unsampled: str | None = None


@frozen
class LoggedMfsGiven:
    mfs: float


@frozen
class SharedBudget:
    share: float
    of_rest: bool = False  # PoolProjection.share_of_rest


@frozen
class PageRounding:
    page: int


@frozen
class TokensCapped:
    max_total_tokens: int


@frozen
class DraftAsMeasured:
    pass


@frozen
class TokensFromLogged:
    bytes_per_token: float  # the sizing cell (PoolProjection.sizing_bpt)
    page: int
    share: float = 1.0  # the full pool's share of rest (PoolProjection.share)


@frozen
class TokensByRule:
    pass


@frozen
class ContextChange:
    logged: int
    new: int


@frozen
class LargestBecomes:
    bs: int
    per_bs: bool  # SGLang's heuristic, per unit of bs
    rows_per_bs: int
    static_slope: bool
    adds: bool = False  # the new list adds buckets below its top, priced apart (AddedBuckets)


@frozen
class OnlyMainGraph:
    graph: str
    others: tuple[str, ...] = ()  # the other batch-sized graphs on that rank
    raised: bool | None = None  # max bs goes up (None: not said)


@frozen
class ActivationReserve:
    bytes: int  # 0: none given
    low_point: bool = False  # a low point before the end is checked too (at >= 0, not the reserve)


@frozen
class SlopeUsed:
    mib_per_row: float
    per_bs: bool
    source: SlopeSource


# --- whatif's one-full-context check ---------------------------------------------------------


class ContextFit(Enum):
    UNKNOWN = "unknown"  # no context length
    IMPOSSIBLE = "impossible"  # even mfs 1.0 holds less than one context
    ABOVE_TOP = "above top"  # needs more than the window's top
    BOUNDED = "bounded"  # the pool holds it; the capture did not finish
    # The pool holds it only at a setting that leaves less outside the pool than the launch
    # used there after sizing (analysis.context.ContextVsPool.fit_leaves_too_little).
    TOO_LITTLE_OUTSIDE = "too_little_outside"
    FITS = "fits"


@frozen
class ContextCheck:
    fit: ContextFit
    context: int | None = None
    bytes_per_token: int = 0
    lo: float | None = None  # smallest mfs that holds it
    hi: float | None = None  # the window's top
    full_bytes: int = 0  # KV at mfs 1.0
    full_tokens: int = 0
    masked: bool = False  # BOUNDED because a capture's low point is unknown (not unfinished)
    # BOUNDED because the window's top is only a lower bound (graphs an upper bound) and the
    # context needs more than it: above that top nothing is ruled out.
    top_at_least: bool = False
    outside_at_fit_bytes: int | None = None  # TOO_LITTLE_OUTSIDE: P x (1 - lo)
    used_outside_bytes: int | None = None  # TOO_LITTLE_OUTSIDE: what the launch used there
    # analyze's fact, when memory was released after sizing (ContextVsPool.released): the
    # readings the check is priced from held it, so it is this launch's verdict, not the GPU's.
    fact: ContextVsPool | None = None
