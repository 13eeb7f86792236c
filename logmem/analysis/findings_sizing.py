"""Findings about KV sizing: SGLang's rule against the pools, and remainders nobody printed.

The records are part of logmem.analysis.findings' ``Finding`` union (re-exported there);
logmem.report.sentences words them. The thresholds are print rounding (rules.py), so a
finding says a figure disagrees only when the printed figures cannot explain the gap.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from enum import Enum
from typing import ClassVar

from logmem.analysis.attribution_pools import KVHint
from logmem.analysis.findings_kinds import FindingKind
from logmem.analysis.ledger import CellSource, Phase, RankLedger, What
from logmem.analysis.mfs_inferred import BackSolvedMfs
from logmem.analysis.post_capture import PostCapture, post_capture
from logmem.analysis.request_table import TableBounds as TableBounds
from logmem.analysis.request_table import table_bounds
from logmem.analysis.sizing import (
    RULE_STEP_SLACK,
    MfsScaling,
    Sizing,
    mfs_scaling,
    req_to_token,
)
from logmem.frozen import frozen
from logmem.model.records import Launch, Rank
from logmem.parse import events as ev
from logmem.parse.server_args import arg_number
from logmem.sglang import rules
from logmem.sglang.eras import printed_on
from logmem.units import GIB

_NOTABLE = 5 * rules.DIFFERENCE_RESOLUTION_BYTES  # below this a gap is not worth a sentence
# A remainder above max(this, 5% of its phase) gets a finding naming its likely cause.
_UNEXPLAINED_MIN = GIB // 2
_UNEXPLAINED_SHARE = 0.05


@frozen
class KVBudget:
    """SGLang's KV rule recomputed, beside what the pools logged (all in the Sizing)."""

    kind: ClassVar[FindingKind] = FindingKind.KV_BUDGET
    sizing: Sizing


@frozen
class NoRuleCheck:
    """The launch has a pool step but SGLang's KV rule cannot be recomputed (no Sizing): the
    inputs the log lacks (rules.RULE_INPUTS), and the server_args line (None: none printed)."""

    kind: ClassVar[FindingKind] = FindingKind.NO_RULE_CHECK
    missing: tuple[str, ...]
    args_line: int | None
    # The server_args line is elided by its author ('...', ev.ServerArgs.elided): a setting it
    # lacks is unknown, not SGLang's default.
    args_elided: bool = False
    # mem_fraction_static solved from the readings and pools the rule uses (analysis.
    # mfs_inferred), where it is the one input missing: an inference, not a printed value.
    inferred: BackSolvedMfs | None = None


@frozen
class PostCaptureKVBudget:
    """Post-capture KV sizing: the pool backed after the graphs, beside the reservation the
    rule sized before them (logmem.analysis.post_capture). ``sizing`` is None where the log
    lacks the rule's after-weights reading (--startup-weight-load-mode overlap prints no
    Load weight end reading); the headroom needs only P and mem_fraction_static."""

    kind: ClassVar[FindingKind] = FindingKind.POST_CAPTURE_KV
    post: PostCapture
    sizing: Sizing | None
    pre_load_bytes: int | None
    mfs: float | None  # the flag's value, as server_args printed it
    factors: tuple[float, ...] = ()  # SGLang's own scaling of it (Sizing.adjustments)


def post_capture_budget(L: Launch, sz: Sizing | None) -> PostCaptureKVBudget | None:
    """The post-capture finding of a launch, with or without the rule's Sizing."""
    if sz is not None:
        if sz.post_capture is None:
            return None
        return PostCaptureKVBudget(
            sz.post_capture,
            sz,
            sz.pre_load_bytes,
            sz.mem_fraction_static,
            tuple(a.factor for a in sz.adjustments),
        )
    mfs = rules.rule_mfs(L.args)
    scaling = mfs_scaling(L)
    pre = rules.budget_readings(L).pre_load_bytes
    pc = post_capture(L, pre, scaling.rule_mfs_for(mfs) if mfs is not None else None)
    if pc is None:
        return None
    return PostCaptureKVBudget(pc, None, pre, mfs, tuple(a.factor for a in scaling.adjustments))


@frozen
class KVLoggedAvailable:
    """The target's own "available for the KV cache" line against the rule's rest."""

    kind: ClassVar[FindingKind] = FindingKind.KV_LOGGED_AVAILABLE
    avail_bytes: int
    line: int
    rest_bytes: int


@frozen
class DraftPool:
    """The draft model's KV pool and where its size came from (rules.draft_pool_rule): the
    target's token count, never a mem_fraction_static budget of the draft's own."""

    kind: ClassVar[FindingKind] = FindingKind.DRAFT_POOL
    bytes: int
    tokens: int | None
    line: int
    target_tokens: int | None  # the target's max_total_num_tokens (its full pool's)
    rule: rules.DraftPoolRule
    algorithm: str | None
    swa: bool  # the target has a sliding-window pool
    # The draft's own "available memory for KV cache" (bytes, line), where a build prints one:
    # computed by the draft runner and not used.
    logged_avail: tuple[int, int] | None = None
    parts: int = 1  # how many printed sizes make up ``bytes`` (K and V print apart)


@frozen
class BudgetNotPositive:
    kind: ClassVar[FindingKind] = FindingKind.BUDGET_NOT_POSITIVE
    rest_bytes: int
    mfs: float  # the --mem-fraction-static the launch ran with
    # The smallest flag value (3 decimals) with a positive budget, by rules.smallest_mfs_with_pool;
    # None when none below 1 gives one: then only fewer weights per GPU help.
    pool_from_mfs: float | None
    step_bytes: int  # what each 0.01 of the flag adds to the budget (rules.mfs_step_bytes)


class GapReason(Enum):
    CELLS_BIGGER = "cells_bigger"  # the pools hold more than the rule gives
    # The pools allocate the round cell print rounding allows, so the gap is in the token count:
    # SGLang allocated more tokens than its budget holds at that cell (019, 036 on Ascend).
    MORE_TOKENS = "more_tokens"
    CAPPED = "capped"  # a cap, rounding, a hybrid split or a draft share held them below
    MAX_TOTAL_TOKENS = "max_total_tokens"  # --max-total-tokens did


@frozen
class RuleFit:
    """The KV rule with one of SGLang's mem_fraction_static adjustments added (``added``) or
    the date-implied ones left out (``added`` None), when the pools match that variant."""

    added: rules.MfsAdjustment | None
    left_out: tuple[rules.MfsAdjustment, ...]
    mfs: float  # the mem_fraction_static the variant runs the rule with
    rest_bytes: int


@frozen
class PoolsVsBudget:
    kind: ClassVar[FindingKind] = FindingKind.POOLS_VS_BUDGET
    gap_bytes: int  # logged pools - rule's rest
    reason: GapReason
    max_total_tokens: int | None = None
    rule_bytes: int = 0  # the rule's rest, as the KV budget finding states it
    pool_bytes: int = 0  # what the pools took
    derived: bool = False  # no KV line: the pool step's drop minus the request-to-token table
    tolerance_bytes: float = 0.0  # what print rounding alone explains
    fits: RuleFit | None = None  # a variant of SGLang's adjustments the pools do match
    # The tokens of a lone KV pool (no Mamba, SWA or derived pool): SGLang sized them as
    # rest // its cell, so rule_bytes / tokens is the cell its sizing assumed.
    tokens: int | None = None
    page_size: int = 1  # the pool holds tokens + page_size slots (rules.bytes_per_token_range)
    cell_bytes: int | None = None  # the round cell the printed sizes allow (Sizing.likely_...)
    # MORE_TOKENS: the budget the tokens are held against (the target's own logged "available
    # memory for KV cache" when it prints one, at ``budget_line``, else the rule's rest) and
    # how many tokens it holds at ``cell_bytes`` (budget // cell, rounded down to the page).
    budget_bytes: int | None = None
    budget_line: int | None = None
    budget_tokens: int | None = None
    # MAX_TOTAL_TOKENS read from the echoed command line (no server_args): the line it is on.
    cap_line: int | None = None
    # The draft model's KV pool (bytes, line) that pool_bytes includes, where this SGLang counts
    # it inside the target's budget (rules.draft_pool_rule); None: the target's pools alone.
    draft: tuple[int, int] | None = None

    @property
    def sizing_cell_bytes(self) -> float | None:
        """The cell SGLang's sizing used, when the pools show it differs from the allocated one
        (CELLS_BIGGER with a lone KV pool): the budget over the tokens it gave, since SGLang
        sizes the pool as budget // its cell. None when the allocated cell is the sizing one."""
        if self.reason is not GapReason.CELLS_BIGGER or self.fits is not None or not self.tokens:
            return None
        return self.rule_bytes / self.tokens

    @property
    def extra_tokens(self) -> int | None:
        """MORE_TOKENS: how many more tokens SGLang allocated than the budget holds at the cell."""
        if self.budget_tokens is None or self.tokens is None:
            return None
        return self.tokens - self.budget_tokens


class LikelyCause(Enum):
    REQUEST_TABLE = "request_table"  # a pool step whose request-to-token table is not sized
    BEYOND_TABLE = "beyond_table"  # a pool step that holds more than pools and table
    GIVEN_BACK = "given_back"  # free memory rose beyond the phase's causes
    UNLOGGED = "unlogged"  # an unlogged stretch (warm-up, before the draft, a gap)


@frozen
class Unexplained:
    """An unattributed remainder above max(0.5 GiB, 5% of its phase), with its likely cause."""

    kind: ClassVar[FindingKind] = FindingKind.UNEXPLAINED
    rank: str
    phase: Phase
    bytes: int  # negative: free memory rose by this much beyond the causes
    likely: LikelyCause
    lines: tuple[int, int]
    table: TableBounds | None = None
    device: str = "unknown"  # the platform kind (analysis.platform): may it be unified memory?


@frozen
class KVSourcesDisagree:
    """A pool step with no KV line that cannot hold max_total_num_tokens cells of the bytes
    per token known elsewhere (another rank's or launch's KV line, or --model-config): the
    ledger keeps the step's own derived figure and this says the two disagree."""

    kind: ClassVar[FindingKind] = FindingKind.KV_SOURCES_DISAGREE
    rank: str
    tokens: int
    cell_bytes: float
    cell_source: CellSource  # where the cell came from (rank, launch and line, or the config)
    kv_bytes: int  # tokens x cell
    room_bytes: int  # the step's drop minus the request-to-token table (when known)
    table_known: bool
    lines: tuple[int, int]


def kv_sources_disagree(
    hint: KVHint, main: Rank, L: Launch, rl: RankLedger | None
) -> KVSourcesDisagree | None:
    """The main rank's pool step with no KV line against the hint's KV cache (the test the
    ledger made: KVHint.misfit of the same room)."""
    t = main.target
    if rl is None or t is None or t.kv_pools or t.mamba_pools:
        return None
    p = rl.phase("target_pools") or rl.phase("target_weights_and_pools")
    kv = hint.kv_bytes
    if p is None or kv is None or not hint.tokens or not hint.cell_bytes:
        return None
    req = req_to_token(L)
    room = p.delta_bytes - (req[2] if req is not None else 0)
    if not hint.misfit(room):
        return None
    return KVSourcesDisagree(
        rl.rank,
        hint.tokens,
        hint.cell_bytes,
        hint.source,
        kv,
        room,
        req is not None,
        p.lines,
    )


SizingFinding = (
    KVBudget
    | PostCaptureKVBudget
    | KVLoggedAvailable
    | DraftPool
    | BudgetNotPositive
    | PoolsVsBudget
    | Unexplained
)


def sizing_findings(
    sz: Sizing, main: Rank, L: Launch, rl: RankLedger | None
) -> list[SizingFinding]:
    """SGLang's KV rule recomputed, beside what the pools took, and why they differ. Under
    post-capture KV sizing the rule sized only the reservation before the graphs: the finding
    is the sizing after them (PostCaptureKVBudget), and the pools are not held to the rule."""
    post = post_capture_budget(L, sz)
    if post is not None:
        return [post]
    out: list[SizingFinding] = [KVBudget(sz)]
    for m in main.models:
        for kva in (p for p in m.pools if isinstance(p, ev.KVAvailable)):
            if m.role == "target":
                out.append(KVLoggedAvailable(kva.avail.bytes, kva.source.line_no, sz.rest_bytes))
    draft = draft_pool(sz, main, L)
    if draft is not None:
        out.append(draft)
    if sz.rest_bytes <= 0:
        out.append(_not_positive(sz))
        return out
    gap = pools_vs_budget(sz, main, L, rl)
    if gap is not None:
        out.append(gap)
    return out


def draft_pool(sz: Sizing, main: Rank, L: Launch) -> DraftPool | None:
    """The main rank's draft KV pool, sized from the target's tokens (rules.draft_pool_rule)."""
    d = main.draft
    kv = d.kv_pools if d is not None else ()
    if d is None or not kv:
        return None
    kva = next((p for p in d.pools if isinstance(p, ev.KVAvailable)), None)
    algo = rules.speculative_algorithm(L.args)
    swa = any(label == "SWA" for label, _, _ in sz.pools)
    return DraftPool(
        sum(p.total_bytes for p in kv),
        kv[0].tokens,
        kv[0].source.line_no,
        sz.kv_tokens,
        rules.draft_pool_rule(algo, swa, printed_on(L)),
        algo,
        swa,
        (kva.avail.bytes, kva.source.line_no) if kva is not None else None,
        sum(1 if p.kv is not None else 2 for p in kv),
    )


def pools_vs_budget(
    sz: Sizing, main: Rank, L: Launch, rl: RankLedger | None
) -> PoolsVsBudget | None:
    """The pools against the rule's budget, when they differ beyond print rounding, and why
    (never under post-capture KV sizing: the pool is not the rule's)."""
    if sz.rest_bytes <= 0 or sz.post_capture is not None:
        return None
    pool, derived = sz.logged_pool_bytes, False
    if pool is None and rl is not None:
        pool = _derived_pool(rl.phase("target_pools"))
        derived = pool is not None
    if pool is None:
        return None
    d = draft_pool(sz, main, L)
    counted = d if d is not None and d.rule.in_budget else None
    if counted is not None:
        pool += counted.bytes  # the rule's rest is split between the target's and the draft's
    gap = pool - sz.rest_bytes
    tol = _rule_tolerance(sz, derived, counted.parts if counted is not None else 0)
    if abs(gap) <= tol:
        return None
    reason = GapReason.CELLS_BIGGER if gap > 0 else GapReason.CAPPED
    cap = arg_number(L.args, "max_total_tokens", 1, 1e15)
    capped = (
        gap < 0 and cap is not None and sz.kv_tokens is not None and 0 <= cap - sz.kv_tokens < 4096
    )
    # With the draft counted the sizing cell is the target's scaled by the draft's layers, not
    # the allocated one: no per-token explanation is drawn from it.
    lone = not derived and counted is None and sz.kv_bytes == sz.logged_pool_bytes
    tokens = sz.kv_tokens if lone else None
    cell = sz.likely_bytes_per_token
    fit = None if capped else _fit(sz, pool, tol)
    budget = line = held = None
    if reason is GapReason.CELLS_BIGGER and fit is None and tokens and cell:
        # The allocated cell is the round one a KV cell is: the gap is in the token count.
        reason = GapReason.MORE_TOKENS
        budget, line = sz.rest_bytes, None
        logged = _logged_budget(main)
        if logged is not None:
            budget, line = logged
        held = max(budget, 0) // cell // sz.page_size * sz.page_size
    return PoolsVsBudget(
        gap,
        GapReason.MAX_TOTAL_TOKENS if capped else reason,
        int(cap) if capped and cap is not None else None,
        sz.rest_bytes,
        pool,
        derived,
        tol,
        fit,
        tokens,
        sz.page_size,
        cell,
        budget,
        line,
        held,
        _cap_line(L) if capped else None,
        (counted.bytes, counted.line) if counted is not None else None,
    )


def _cap_line(L: Launch) -> int | None:
    """The echoed command line's line that passed --max-total-tokens, when the launch's args
    come from that command (no server_args)."""
    flags = L.command_flags
    f = flags.get("--max-total-tokens") if flags is not None else None
    return f.line if f is not None and L.args_from == "command" else None


def _logged_budget(main: Rank) -> tuple[int, int] | None:
    """The target's own "The available memory for KV cache is X GB" line (bytes, line)."""
    t = main.target
    kva = next((p for p in t.pools if isinstance(p, ev.KVAvailable)), None) if t else None
    return (kva.avail.bytes, kva.source.line_no) if kva is not None else None


def _rule_tolerance(sz: Sizing, derived: bool, draft_parts: int = 0) -> float:
    """How far pools and rule may differ before a finding says so: print rounding of every
    figure involved (rules.kv_rule_tolerance_bytes; ``draft_parts``: the draft pool's printed
    sizes, when it is counted), at least _NOTABLE; a pool derived from a drop also holds the
    small unlogged pools."""
    parts = sz.printed_parts + draft_parts
    tol = rules.kv_rule_tolerance_bytes(sz.rule_mfs, parts, sz.full_cell_bytes)
    return max(tol, RULE_STEP_SLACK if derived else _NOTABLE)


def _derived_pool(p: Phase | None) -> int | None:
    """The KV cache of a pool step with no KV line: its drop minus the request-to-token table."""
    if p is None or any(c.kind == "logged" for c in p.causes):
        return None
    table = next((c.bytes for c in p.causes if c.what is What.REQ_TABLE), None)
    return p.delta_bytes - table if table is not None else None


def _fit(sz: Sizing, pool: int, tol: float) -> RuleFit | None:
    """The variant of SGLang's adjustments (rules.MFS_ADJUSTMENTS) the pools do match: without
    the ones the log's date implied, or with one it did not."""
    variants: list[tuple[rules.MfsAdjustment | None, tuple[rules.MfsAdjustment, ...]]] = []
    if sz.adjustments:
        variants.append((None, sz.adjustments))
    variants += [(c, ()) for c in sz.candidates]
    for added, left_out in variants:
        applied = tuple(
            a for a in sz.adjustments + ((added,) if added else ()) if a not in left_out
        )
        m = MfsScaling(applied).rule_mfs_for(sz.mem_fraction_static)
        rest = rules.kv_budget_bytes(sz.after_weights_bytes, sz.pre_load_bytes, m)
        if abs(pool - rest) <= tol:
            return RuleFit(added, left_out, m, rest)
    return None


def unexplained(rl: RankLedger, launch: Launch, device: str = "unknown") -> list[Unexplained]:
    """Every phase whose unattributed remainder is above max(0.5 GiB, 5% of the phase), with
    its likely cause (captures have their own findings; the Workspaces finding names the
    attention workspaces before the first capture)."""
    out: list[Unexplained] = []
    for p in rl.phases:
        rest = sum(
            c.bytes for c in p.causes if c.kind == "unattributed" and c.what is not What.ROUNDING
        )
        if p.graph is not None or p.key.startswith(("init", "target_weights_and")):
            continue
        if abs(rest) <= max(_UNEXPLAINED_MIN, _UNEXPLAINED_SHARE * abs(p.delta_bytes)):
            continue
        target_pools = p.key.split("#")[0] == "target_pools"
        table = None
        if rest < 0:
            likely = LikelyCause.GIVEN_BACK
        elif p.key.startswith("pre_capture:") and p.causes[0].what is What.ATTENTION_WORKSPACES:
            continue
        elif target_pools and any(c.what is What.REQ_TABLE for c in p.causes):
            likely = LikelyCause.BEYOND_TABLE
        elif target_pools:
            likely, table = LikelyCause.REQUEST_TABLE, table_bounds(rest, launch)
        else:
            likely = LikelyCause.UNLOGGED
        out.append(Unexplained(rl.rank, p, rest, likely, p.lines, table, device))
    return out


def _not_positive(sz: Sizing) -> BudgetNotPositive:
    """Where the budget turns positive: rest = A - P x (1 - mfs) is zero at 1 - A / P (in the
    rule's units; the flag is that over SGLang's own factor), strictly above it rounded to the
    three decimals a flag is given with."""
    zero = rules.smallest_mfs_with_pool(sz.after_weights_bytes, sz.pre_load_bytes)
    at: float | None = None
    if zero is not None:
        flag = sz.flag_mfs_for(zero)
        at = round(math.floor(flag * 1000 + 1e-9) / 1000 + 0.001, 3)
        if at >= 1:
            at = None
    step = rules.mfs_step_bytes(sz.pre_load_bytes, sz.rule_mfs_for(0.01))
    return BudgetNotPositive(sz.rest_bytes, sz.mem_fraction_static, at, step)


def budget_sizing_cell(
    launch: Launch, sz: Sizing | None, ranks: Sequence[RankLedger]
) -> float | None:
    """The cell SGLang's sizing used, when the pools show it differs from the allocated one
    (PoolsVsBudget.sizing_cell_bytes); None: the allocated cell is the price."""
    main = launch.main_rank
    if sz is None or main is None:
        return None
    rl = next((r for r in ranks if r.rank == main.label), None)
    gap = pools_vs_budget(sz, main, launch, rl)
    return gap.sizing_cell_bytes if gap is not None else None
