"""What diff, fit and whatif say beside their tables, as typed facts: the numbers and names
each note or assumption rests on. The English is logmem.report.compare.notes (``note_text``),
so a reporter can restyle every sentence and the compare stage holds no prose."""

from __future__ import annotations

from enum import Enum
from typing import Any

from logmem.compare.diff_notes import AttentionTPChanged as AttentionTPChanged
from logmem.compare.diff_notes import DifferentGpus as DifferentGpus
from logmem.compare.diff_notes import FirstBucketShared as FirstBucketShared
from logmem.compare.diff_notes import MfsNotAllDerived as MfsNotAllDerived
from logmem.compare.diff_notes import MfsSetAside as MfsSetAside
from logmem.compare.diff_notes import NoReserveComparison as NoReserveComparison
from logmem.compare.diff_notes import ReserveFloorBinds as ReserveFloorBinds
from logmem.compare.diff_notes import SameLaunch as SameLaunch
from logmem.compare.diff_notes import SizingModesDiffer as SizingModesDiffer
from logmem.compare.diff_notes import SlopeAcrossModels as SlopeAcrossModels
from logmem.compare.diff_notes import SlopeConfounded as SlopeConfounded
from logmem.compare.diff_notes import SlopeFromOtherLaunches as SlopeFromOtherLaunches
from logmem.compare.diff_notes import SlopeNoArgs as SlopeNoArgs
from logmem.compare.diff_notes import SlopeNoRows as SlopeNoRows
from logmem.compare.diff_notes import SlopeNotAsked as SlopeNotAsked
from logmem.compare.diff_notes import SlopeNotVaried as SlopeNotVaried
from logmem.compare.diff_notes import WeightsUninitializedIn as WeightsUninitializedIn
from logmem.compare.whatif_notes import ActivationReserve as ActivationReserve
from logmem.compare.whatif_notes import BarsSlope as BarsSlope
from logmem.compare.whatif_notes import ContextChange as ContextChange
from logmem.compare.whatif_notes import ContextCheck as ContextCheck
from logmem.compare.whatif_notes import ContextFit as ContextFit
from logmem.compare.whatif_notes import DraftAsMeasured as DraftAsMeasured
from logmem.compare.whatif_notes import FailedBucketSlope as FailedBucketSlope
from logmem.compare.whatif_notes import GivenSlope as GivenSlope
from logmem.compare.whatif_notes import HeadroomDefinition as HeadroomDefinition
from logmem.compare.whatif_notes import HeuristicSlope as HeuristicSlope
from logmem.compare.whatif_notes import HeuristicTerms as HeuristicTerms
from logmem.compare.whatif_notes import KVRuleReplayed as KVRuleReplayed
from logmem.compare.whatif_notes import LargestBecomes as LargestBecomes
from logmem.compare.whatif_notes import LazyInLargest as LazyInLargest
from logmem.compare.whatif_notes import LoggedMfsGiven as LoggedMfsGiven
from logmem.compare.whatif_notes import LowPointBinds as LowPointBinds
from logmem.compare.whatif_notes import MeasuredSlope as MeasuredSlope
from logmem.compare.whatif_notes import MfsMovesKVOnly as MfsMovesKVOnly
from logmem.compare.whatif_notes import NoMeasuredSlope as NoMeasuredSlope
from logmem.compare.whatif_notes import OnlyMainGraph as OnlyMainGraph
from logmem.compare.whatif_notes import PageRounding as PageRounding
from logmem.compare.whatif_notes import RuleDisagrees as RuleDisagrees
from logmem.compare.whatif_notes import SharedBudget as SharedBudget
from logmem.compare.whatif_notes import SizedWithAnotherCell as SizedWithAnotherCell
from logmem.compare.whatif_notes import SlopeFromFailedBucket as SlopeFromFailedBucket
from logmem.compare.whatif_notes import SlopeSource as SlopeSource
from logmem.compare.whatif_notes import SlopeUsed as SlopeUsed
from logmem.compare.whatif_notes import StartupUnfinished as StartupUnfinished
from logmem.compare.whatif_notes import TokensByRule as TokensByRule
from logmem.compare.whatif_notes import TokensCapped as TokensCapped
from logmem.compare.whatif_notes import TokensFromLogged as TokensFromLogged
from logmem.frozen import frozen
from logmem.sglang.eras import EraGuess

# --- where a figure comes from ------------------------------------------------------------


class RowsBasis(Enum):
    """How tokens per request (rows per unit of bs) are known for a graph."""

    TOKENS = "tokens"  # the graph's sizes are tokens: no rows per bs
    BEGIN_LINE = "begin line"  # num_tokens_per_req on the capture begin line
    DRAFT_TOKENS = "draft tokens"  # speculative_num_draft_tokens (the target graph verifies)
    DRAFT_ASSUMED = "draft assumed"  # 1 per request, not printed for draft graphs
    DECODE = "decode"  # 1 per request


@frozen
class RowsSource:
    basis: RowsBasis
    value: int | None = None
    size_from_args: bool = False  # no bs list printed: the largest size is cuda_graph_max_bs
    # This rank printed no list, another rank of the launch did: its label (every rank runs
    # get_batch_sizes_to_capture on the same server_args and request pool).
    size_from_rank: str | None = None


@frozen
class MeasuredGrowth:
    """What a measured per-bs growth adds up: the largest bucket (+ static buffers), x rows."""

    basis: str  # "largest bucket" | "capture total"
    with_static: bool
    rows_per_bs: int


class TermKind(Enum):
    """The terms of d rest = mfs_A dP + P_B d mfs - d(P - after_weights) (logmem diff)."""

    PRE_LOAD = "pre_load"
    MFS = "mfs"
    WEIGHTS = "weights"
    OTHER = "other"


# --- why there is no slope / no split ------------------------------------------------------


@frozen
class NoTermSplit:
    bytes_per_token: tuple[int, int] | None  # they differ
    caps: tuple[int | None, int | None] | None  # --max-total-tokens differs
    # The bytes per token each printed pool allows, when known: they do not overlap.
    ranges: tuple[tuple[int, int], tuple[int, int]] | None = None
    # ("A" / "B", printed a server_args line, the inputs it lacks): the rule's inputs are
    # missing on that side (analysis.sizing is None); the inputs are rules.RULE_INPUTS' names.
    no_args: tuple[tuple[str, bool, tuple[str, ...]], ...] = ()
    # "A" / "B": that launch backs its KV pool after capture (post-capture KV sizing) and the
    # other sizes it in its pool step: one rule's terms do not split the change.
    post_capture: str | None = None
    # "A" / "B" whose server_args line its author elided with '...' (ev.ServerArgs.elided).
    elided: tuple[str, ...] = ()


SlopeNote = (
    SlopeNotAsked | SlopeNoArgs | SlopeNotVaried | SlopeConfounded | SlopeNoRows | SlopeAcrossModels
)


# --- notes -----------------------------------------------------------------------------------


@frozen
class NotInEveryLaunch:
    graph: str
    rank: str


@frozen
class SameLargestSize:
    graph: str
    rank: str
    size: int | None = None  # the largest captured size, the same in every launch
    per_bs: bool = True  # a batch size (False: tokens, piecewise / prefill graphs)
    launches: int = 0  # how many launches capture it


@frozen
class RanksMatched:
    pairs: tuple[tuple[str, str], ...]  # A's label, B's label
    same_tags: tuple[str, ...] = ()  # tags (TP, EP, ...) equal in every pair
    differ_tags: tuple[str, ...] = ()  # tags that differ in some pair
    one_sided_tags: tuple[str, ...] = ()  # tags only one label of some pair carries
    sizes: tuple[tuple[str, Any, Any], ...] = ()  # e.g. ("dp_size", 4, 16) when it differs


@frozen
class AllowDiffUnused:
    key: str


@frozen
class WeightsDiffer:
    pass


@frozen
class DifferentModels:
    a: str | None
    b: str | None
    same_architecture: str | None  # both load this architecture


@frozen
class DifferentWording:
    era_a: EraGuess
    era_b: EraGuess


@frozen
class BucketsNotCompared:
    """Sizes of a graph whose bucket in one launch was that capture's first (pool + lazy
    allocations) and in the other a later one (its increment only): no change is given."""

    rank: str
    graph: str
    sizes: tuple[tuple[int, str], ...]  # (size, the launch whose capture began with it)
    launch_first: str | None = None  # "A" / "B": only there the graph was the launch's first


@frozen
class CaptureOrderDiffers:
    """The launches captured in a different order: buckets (descending / ascending) of a
    graph, or the graphs themselves (e.g. prefill before decode)."""

    rank: str
    buckets: tuple[tuple[str, str, str], ...]  # (graph, order in A, order in B)
    graphs: tuple[tuple[str, ...], tuple[str, ...]] | None  # each launch's graph order


@frozen
class NoCaptureMeasured:
    captured_unmeasured: bool  # graphs were captured, their memory not printed


# --- assumptions -----------------------------------------------------------------------------


@frozen
class GBIsGiB:
    pass


@frozen
class PhasesMatchedByKey:
    pass


@frozen
class PhaseValueIsDrop:
    pass


@frozen
class RowsDefinition:
    pass


@frozen
class BucketDefinition:
    pass


@frozen
class DifferenceError:
    pass


@frozen
class FitErrors:
    pass


@frozen
class CaptureTotalSlopes:
    pass


@frozen
class HeuristicReserve:
    pass


Note = (
    SlopeNote
    | NoTermSplit
    | NotInEveryLaunch
    | SameLargestSize
    | RanksMatched
    | AllowDiffUnused
    | WeightsDiffer
    | FirstBucketShared
    | AttentionTPChanged
    | NoReserveComparison
    | ReserveFloorBinds
    | WeightsUninitializedIn
    | MfsNotAllDerived
    | MfsSetAside
    | DifferentModels
    | DifferentGpus
    | SameLaunch
    | SizingModesDiffer
    | SlopeFromOtherLaunches
    | DifferentWording
    | BucketsNotCompared
    | CaptureOrderDiffers
    | NoCaptureMeasured
    | RuleDisagrees
    | StartupUnfinished
    | NoMeasuredSlope
    | SizedWithAnotherCell
    | SlopeFromFailedBucket
    | LazyInLargest
    | GBIsGiB
    | PhasesMatchedByKey
    | PhaseValueIsDrop
    | RowsDefinition
    | BucketDefinition
    | DifferenceError
    | FitErrors
    | CaptureTotalSlopes
    | HeuristicReserve
    | KVRuleReplayed
    | MfsMovesKVOnly
    | HeadroomDefinition
    | LowPointBinds
    | LoggedMfsGiven
    | SharedBudget
    | PageRounding
    | TokensCapped
    | DraftAsMeasured
    | TokensFromLogged
    | TokensByRule
    | ContextChange
    | LargestBecomes
    | OnlyMainGraph
    | ActivationReserve
    | SlopeUsed
)
