"""What diff, fit and whatif say beside their tables, as typed facts: the numbers and names
each note or assumption rests on. The English is logmem.report.compare_notes (``note_text``),
so a reporter can restyle every sentence and the compare stage holds no prose."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

# --- where a figure comes from ------------------------------------------------------------


class RowsBasis(Enum):
    """How tokens per request (rows per unit of bs) are known for a graph."""

    TOKENS = "tokens"  # the graph's sizes are tokens: no rows per bs
    BEGIN_LINE = "begin line"  # num_tokens_per_req on the capture begin line
    DRAFT_TOKENS = "draft tokens"  # speculative_num_draft_tokens (the target graph verifies)
    DRAFT_ASSUMED = "draft assumed"  # 1 per request, not printed for draft graphs
    DECODE = "decode"  # 1 per request


@dataclass(frozen=True)
class RowsSource:
    basis: RowsBasis
    value: int | None = None
    size_from_args: bool = False  # no bs list printed: the largest size is cuda_graph_max_bs


@dataclass(frozen=True)
class HeuristicTerms:
    """The terms of SGLang's graph reserve per unit of max bs (rules.graph_reserve_mib_per_bs)."""

    dp_size: int | None  # DP attention on with this dp_size
    large_bs: bool  # max bs above rules.DP_ATTENTION_LARGE_BS (with DP attention)


@dataclass(frozen=True)
class MeasuredGrowth:
    """What a measured per-bs growth adds up: the largest bucket (+ static buffers), x rows."""

    basis: str  # "largest bucket" | "capture total"
    with_static: bool
    rows_per_bs: int


@dataclass(frozen=True)
class MeasuredSlope:
    graph: str
    rank: str
    basis: str
    rows_first: int | None
    rows_last: int | None


@dataclass(frozen=True)
class GivenSlope:
    mib_per_row: float
    static_mib_per_row: float | None


@dataclass(frozen=True)
class HeuristicSlope:
    terms: HeuristicTerms


SlopeSource = MeasuredSlope | GivenSlope | HeuristicSlope


class TermKind(Enum):
    """The terms of d rest = mfs_A dP + P_B d mfs - d(P - after_weights) (logmem diff)."""

    PRE_LOAD = "pre_load"
    MFS = "mfs"
    WEIGHTS = "weights"
    OTHER = "other"


# --- why there is no slope / no split ------------------------------------------------------


@dataclass(frozen=True)
class NoTermSplit:
    bytes_per_token: tuple[int, int] | None  # they differ
    caps: tuple[int | None, int | None] | None  # --max-total-tokens differs


@dataclass(frozen=True)
class SlopeNotAsked:  # --no-slope
    pass


@dataclass(frozen=True)
class SlopeNoArgs:
    missing: tuple[str, ...]  # launches that printed no server_args


@dataclass(frozen=True)
class SlopeNotVaried:
    pass


@dataclass(frozen=True)
class SlopeConfounded:
    parts: tuple[str, ...]  # compare.args.confounder_parts: key (values), shortened
    mfs_hint: bool  # mem_fraction_static differs and SGLang derives it from max bs


@dataclass(frozen=True)
class SlopeNoRows:
    pass


SlopeNote = SlopeNotAsked | SlopeNoArgs | SlopeNotVaried | SlopeConfounded | SlopeNoRows


# --- notes -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class NotInEveryLaunch:
    graph: str
    rank: str


@dataclass(frozen=True)
class SameLargestSize:
    graph: str
    rank: str


@dataclass(frozen=True)
class RanksMatched:
    pairs: tuple[tuple[str, str], ...]  # A's label, B's label


@dataclass(frozen=True)
class AllowDiffUnused:
    key: str


@dataclass(frozen=True)
class WeightsDiffer:
    pass


@dataclass(frozen=True)
class DifferentModels:
    a: str | None
    b: str | None
    same_architecture: str | None  # both load this architecture


@dataclass(frozen=True)
class DifferentWording:
    era_a: str
    era_b: str


@dataclass(frozen=True)
class NoCaptureMeasured:
    captured_unmeasured: bool  # graphs were captured, their memory not printed


@dataclass(frozen=True)
class RuleDisagrees:
    rule_tokens: int
    logged_tokens: int


@dataclass(frozen=True)
class StartupUnfinished:
    headline: str  # the verdict's first line (report.verdict renders it for analyze too)
    in_capture: bool
    shortfall_bytes: int | None  # what the failed allocation lacked, when it was memory


@dataclass(frozen=True)
class CappedAtRequestPool:
    pool: int


@dataclass(frozen=True)
class NoMeasuredSlope:
    pass


# --- assumptions -----------------------------------------------------------------------------


@dataclass(frozen=True)
class GBIsGiB:
    pass


@dataclass(frozen=True)
class PhasesMatchedByKey:
    pass


@dataclass(frozen=True)
class PhaseValueIsDrop:
    pass


@dataclass(frozen=True)
class RowsDefinition:
    pass


@dataclass(frozen=True)
class BucketDefinition:
    pass


@dataclass(frozen=True)
class DifferenceError:
    pass


@dataclass(frozen=True)
class FitErrors:
    pass


@dataclass(frozen=True)
class CaptureTotalSlopes:
    pass


@dataclass(frozen=True)
class HeuristicReserve:
    pass


@dataclass(frozen=True)
class KVRuleReplayed:
    after_weights_bytes: int
    pre_load_bytes: int
    bytes_per_token: int
    pre_load_rank: str


@dataclass(frozen=True)
class MfsMovesKVOnly:
    pass


@dataclass(frozen=True)
class HeadroomDefinition:
    pass


@dataclass(frozen=True)
class LoggedMfsGiven:
    mfs: float


@dataclass(frozen=True)
class SharedBudget:
    share: float


@dataclass(frozen=True)
class PageRounding:
    page: int


@dataclass(frozen=True)
class TokensCapped:
    max_total_tokens: int


@dataclass(frozen=True)
class DraftAsMeasured:
    pass


@dataclass(frozen=True)
class TokensFromLogged:
    bytes_per_token: int
    page: int


@dataclass(frozen=True)
class TokensByRule:
    pass


@dataclass(frozen=True)
class ContextChange:
    logged: int
    new: int


@dataclass(frozen=True)
class LargestBecomes:
    bs: int
    per_bs: bool  # SGLang's heuristic, per unit of bs
    rows_per_bs: int
    static_slope: bool


@dataclass(frozen=True)
class OnlyMainGraph:
    graph: str


@dataclass(frozen=True)
class MfsHeld:
    mfs: float


@dataclass(frozen=True)
class ActivationReserve:
    bytes: int  # 0: none given


@dataclass(frozen=True)
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
    FITS = "fits"


@dataclass(frozen=True)
class ContextCheck:
    fit: ContextFit
    context: int | None = None
    bytes_per_token: int = 0
    lo: float | None = None  # smallest mfs that holds it
    hi: float | None = None  # the window's top
    full_bytes: int = 0  # KV at mfs 1.0
    full_tokens: int = 0


Note = (
    SlopeNote
    | NoTermSplit
    | NotInEveryLaunch
    | SameLargestSize
    | RanksMatched
    | AllowDiffUnused
    | WeightsDiffer
    | DifferentModels
    | DifferentWording
    | NoCaptureMeasured
    | RuleDisagrees
    | StartupUnfinished
    | CappedAtRequestPool
    | NoMeasuredSlope
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
    | MfsHeld
    | ActivationReserve
    | SlopeUsed
)
