"""SGLang's default ``mem_fraction_static`` by era (reference 12.3, checked against the released
wheels, docs/sglang-sources.md): which rule derived the value a server_args dump shows, what it
predicts, and whether the dump matches.

``server_args.py`` derives mem_fraction_static only when the user did not pass it:

* era (a), sglang 0.3.6 - 0.4.7 (to Jun 2025; srt/server_args.py, ``__post_init__``): a table
  keyed on ``tp_size`` (tp x pp from 0.4.6.post5); from 0.4.6 a GPU above 81,920 MiB leaves the
  table (logmem.sglang.mfs_versions ``TABLE_FORMS``);
* sglang 0.4.8 - 0.5.2 (Jun - Oct 2025; srt/server_args.py, ``__post_init__``): a reserve by GPU
  tier, ``reserved = (base + tp x pp / d) x 1024`` MiB (``GPU_TIERS``; 32 GiB from 160 GiB),
  + 4096 with DP attention, + 2048 with speculative decoding (STANDALONE 6144 from 0.5.2),
  ``mfs = round((gpu_mem - reserved) / gpu_mem, 3)``. Read in all five releases; it is still
  reported only where its value is the dump's (corpus 011: 81,559 MiB, TP8: 13,824 MiB, 0.831,
  as dumped) and never claims a graph reserve;
* eras (b) and (c), sglang 0.5.3 on (srt/server_args.py ``_handle_gpu_memory_settings``;
  srt/arg_groups/memory_hook.py ``handle_gpu_memory_settings`` from 0.5.20): ``reserved = 512
  + max(chunk, 2048) x 1.5 + tp x pp / 8 x 1024 (a float) + graph terms``, a 10240 floor
  above 60 GiB, the speculative extras, ``mfs = round((gpu_mem - reserved) / gpu_mem, 3)``.
  Its graph and speculative terms changed in 0.5.6, 0.5.7, 0.5.8, 0.5.10, 0.5.14, 0.5.16 and
  0.5.20 (``mfs_versions.FORMULA_FORMS``): the form whose value is the dump's is taken, else
  the one current at the log's date. Era (b) / (c) is the date's label (before / from March
  2026); the form does the arithmetic. The inputs are read under E7's names too
  (``cuda_graph_config``, ``cuda_graph_max_bs_decode``; logmem.sglang.reserve).

Between mid 2025 and Oct 2025 the era is not known by date; the dump then tells which rule
it fits, if any. When the log prints no device capacity, ``capacity_windows`` gives the GPU
sizes (at or above the free memory before loading, P) on which a rule yields the dump's value:
a hint, never a match; where the reserve formula and the GPU-tier rule yield it on no such GPU,
the value was passed (``DefaultMfs.excluded``). A log's date only bounds its SGLang version from
above (an old image can run later). Like rules.py this imports nothing of the package at run time
but the rules.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import date
from enum import Enum
from typing import Any

from logmem.frozen import frozen
from logmem.sglang import rules
from logmem.sglang.mfs_versions import (
    FORMULA_FORMS,
    GPU_TIERS,
    POST_CAPTURE_FORMS,
    TABLE_FORMS,
    TABLE_GPU_LIMIT_MIB,
    TIER_FORM,
    FormulaForm,
    PostCaptureForm,
    TableForm,
    forms_for,
    formula_spec_mib,
    table_form_values,
    tier_reserved_mib,
)
from logmem.sglang.mfs_windows import NO_CAP as _NO_CAP
from logmem.sglang.mfs_windows import capacity_windows as capacity_windows
from logmem.sglang.mfs_windows import merged as _merged
from logmem.sglang.mfs_windows import mfs_of as _mfs
from logmem.sglang.mfs_windows import same as _same
from logmem.sglang.releases import RELEASES
from logmem.sglang.reserve import AFTER_FLOOR, Reserve
from logmem.units import MIB

ERA_A_LAST_RELEASE = "0.4.7"
ERA_A_LAST = RELEASES[ERA_A_LAST_RELEASE]
"""The last date taken as era (a) (the tp_size table): sglang 0.4.7 (2025-06-10) is the last
release read with it; 0.4.8 (2025-06-24) has the GPU-tier rule, so a log printed after 0.4.7
may run either (srt/server_args.py, ``__post_init__``)."""

ERA_B_FIRST_RELEASE = "0.5.3"
ERA_B_FIRST = RELEASES[ERA_B_FIRST_RELEASE]
"""The first date taken as era (b) (the reserve formula): sglang 0.5.3 (2025-10-06), the first
release read with ``_handle_gpu_memory_settings`` (0.5.2, 2025-09-11, has the GPU-tier rule)."""

ERA_C_FIRST = date(2026, 3, 1)
"""The first date labelled era (c): 2026 after Feb (the label only; the arithmetic is the form
of ``mfs_versions.FORMULA_FORMS`` the date allows)."""

TP_TABLE = ((16, 0.79), (8, 0.81), (4, 0.85), (2, 0.87), (1, 0.88))
"""Era (a): ``mem_fraction_static`` by ``tp_size`` (>= 16, >= 8, >= 4, >= 2, otherwise): sglang
0.4.0 - 0.4.7, srt/server_args.py, ``__post_init__`` (0.3.6 gives 0.82 at tp >= 8; the forms are
``mfs_versions.TABLE_FORMS``). An L4 TP4 dump of 2025-03 shows 0.85."""

UNKNOWN_GPU_MEM_MFS = 0.95
"""The value when ``gpu_mem`` is unknown: sglang 0.5.20, 0.5.23 (srt/arg_groups/memory_hook.py,
``handle_gpu_memory_settings``); 0.88 in 0.4.8 - 0.5.16 (srt/server_args.py)."""

BASE_RESERVE_MIB = 512
"""The constant of the reserve (``reserved = 512 + ...``): sglang 0.5.3 - 0.5.23,
srt/server_args.py ``_handle_gpu_memory_settings`` (memory_hook.py from 0.5.20)."""

LARGE_GPU_MIB = 60 * 1024
"""Above this capacity the reserve is at least ``RESERVE_FLOOR_MIB`` (same source, 0.5.3 -
0.5.23)."""

RESERVE_FLOOR_MIB = 10240
"""The reserve's floor on a GPU above 60 GiB (same source, 0.5.3 - 0.5.23)."""


class MfsEra(Enum):
    A = "a"  # tp_size table
    B = "b"  # _handle_gpu_memory_settings reserve
    C = "c"  # reserve_for_graph_mb + DeepEP term
    BETWEEN = "a_or_b"  # dated mid 2025 - Oct 2025: either
    # The GPU-tier rule's releases (0.4.8 - 0.5.2, Jun - Oct 2025; the value is kept for the
    # JSON): the dump fits it
    TIER = "aug_oct_2025"
    UNKNOWN = "unknown"  # no date


class Rule(Enum):
    """Which rule gave the dumped mem_fraction_static."""

    TP_TABLE = "era_a_tp_table"
    # Era (a) on a GPU above 81,920 MiB (sglang 0.4.6 - 0.4.7): not the table
    LARGE_GPU = "era_a_large_gpu_rule"
    GPU_TIER = "aug_oct_2025_gpu_tier_reserve"  # 0.4.8 - 0.5.2; only where it gives the dump
    RESERVE = "era_bc_reserve_formula"
    # Post-capture KV sizing (sglang 0.5.16 on): no graph reserve (mfs_versions.POST_CAPTURE_FORMS)
    POST_CAPTURE = "post_capture_reserve"
    PASSED = "passed_by_user"
    UNKNOWN = "unknown"


class NoPrediction(Enum):
    """Why a rule's value could not be computed."""

    NO_TP = "no_tp_size"  # the dump has no tp_size
    NO_CAPACITY = "no_device_capacity"  # the log prints no device capacity
    INPUTS = "inputs_missing"  # chunked_prefill_size / cuda_graph_max_bs not in the dump
    MLA_UNKNOWN = "mla_unknown"  # era c with a prefill graph: the log shows no KV pool line
    UNMODELLED = "unmodelled_case"  # VLM, PD disaggregation, symmetric memory: not modelled


@frozen
class DefaultMfs:
    """How the launch's mem_fraction_static came about (reference 12.3)."""

    rule: Rule
    era: MfsEra
    era_from: str  # "date" | "dump" (the dump fits one rule) | "none"
    printed_on: date | None
    passed: bool | None  # the echoed command line passes --mem-fraction-static (None: no line)
    dumped: float | None
    predicted: float | None  # the rule's value (None: passed, unknown, or not computable)
    no_prediction: NoPrediction | None = None
    tp_size: int | None = None
    pp_size: int | None = None
    table_mfs: float | None = None  # era (a)'s table for this tp (any era, to compare)
    capacity_mib: float | None = None  # gpu_mem the formula ran with
    reserved_mib: float | None = None  # the formula's reserve
    # The reserve formula's graph terms (rules.graph_reserve; None: not computable or no such
    # rule): set aside only where ``reserve_applies``.
    reserve_terms: tuple[Reserve, ...] | None = None
    tier_mfs: float | None = None  # the GPU-tier rule's value (to compare; None: not computable)
    tier_reserved_mib: float | None = None  # its reserve
    # With no device capacity printed: the gpu_mem windows (MiB, inclusive) on which each rule
    # gives the dump's value, at or above the free memory before loading (``capacity_windows``;
    # None: not computed, () none: the rule cannot have given the dump on this GPU).
    tier_windows: tuple[tuple[int, int], ...] | None = None
    formula_windows: tuple[tuple[int, int], ...] | None = None
    free_mib: float | None = None  # P, the windows' lower bound (None: not printed)
    # The releases read whose form of the rule gave ``predicted`` ("0.5.8-0.5.9";
    # logmem.sglang.mfs_versions; None: no form computed)
    form: str | None = None
    # capacity_mib is the figure of the GPU the log names, not a printed total: (device name,
    # line of its kernel-config file); None when a line printed the total or none is known.
    capacity_named: tuple[str, int] | None = None

    @property
    def matches(self) -> bool | None:
        """Whether the dump shows the predicted value (to its 3 printed decimals)."""
        if self.predicted is None or self.dumped is None:
            return None
        return abs(self.predicted - self.dumped) < 5e-4

    @property
    def reserve_applies(self) -> bool:
        """Whether SGLang is shown to have set a graph reserve aside for this launch
        (rules.graph_reserve): the era's rule is the reserve formula and its value is the
        dump's. Unconfirmed (no device capacity) or contradicted, the log cannot tell a derived
        value from a passed one, so no reserve is claimed."""
        return self.rule is Rule.RESERVE and self.matches is True

    @property
    def formula_excluded(self) -> bool:
        """With no capacity printed, no GPU holding the free memory before loading (P) gives the
        dump's value by the reserve formula (see ``excluded`` for the verdict)."""
        return (
            self.rule is Rule.RESERVE and self.free_mib is not None and self.formula_windows == ()
        )

    @property
    def excluded(self) -> bool:
        """``formula_excluded``, and the GPU-tier rule of 0.4.8-0.5.2 (an image older than the
        log) gives the dump on no such GPU either: the value was passed (or not modelled)."""
        return self.formula_excluded and self.tier_windows == ()


def mfs_era_of(printed: date | None) -> MfsEra:
    """The default-mfs era of a log printed on ``printed`` (reference 12.3)."""
    if printed is None:
        return MfsEra.UNKNOWN
    if printed <= ERA_A_LAST:
        return MfsEra.A
    if printed < ERA_B_FIRST:
        return MfsEra.BETWEEN
    return MfsEra.B if printed < ERA_C_FIRST else MfsEra.C


def table_mfs(tp_size: int) -> float:
    """Era (a)'s default for ``tp_size`` (``TP_TABLE``)."""
    return next(v for lo, v in TP_TABLE if tp_size >= lo)


def _int(args: Mapping[str, Any], key: str) -> int | None:
    v = args.get(key)
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def reserved_mib(
    args: Mapping[str, Any],
    form: FormulaForm,
    gpu_mem_mib: float,
    terms: tuple[Reserve, ...] | None,
) -> float | None:
    """The reserve (MiB) of the formula's ``form`` from resolved server_args, or None when an
    input is missing (sglang 0.5.3 - 0.5.23, srt/server_args.py ``_handle_gpu_memory_settings``;
    srt/arg_groups/memory_hook.py from 0.5.20). ``terms``: the form's graph terms
    (``rules.graph_reserve`` with ``form``; None: not computable). The tp x pp term is a float
    in every release read (not integer division)."""
    chunk, tp, pp = _int(args, "chunked_prefill_size"), _int(args, "tp_size"), _int(args, "pp_size")
    if chunk is None or tp is None or terms is None:
        return None
    tokens = chunk if chunk > 0 else _int(args, "max_prefill_tokens")
    if tokens is None:
        return None
    pp = pp or 1
    reserved = BASE_RESERVE_MIB + max(tokens, rules.ACTIVATION_MIN_TOKENS) * (
        rules.ACTIVATION_MIB_PER_TOKEN
    )
    reserved += tp * pp / 8 * 1024
    after = sum(t.bytes for t in terms if t.term in AFTER_FLOOR) / MIB
    reserved += sum(t.bytes for t in terms if t.term not in AFTER_FLOOR) / MIB
    if gpu_mem_mib > LARGE_GPU_MIB:
        reserved = max(reserved, RESERVE_FLOOR_MIB)
    return reserved + after + formula_spec_mib(form, args)


def _unmodelled(args: Mapping[str, Any], multimodal: bool) -> bool:
    pd = args.get("disaggregation_mode")
    return multimodal or pd not in (None, "null") or bool(args.get("enable_symm_mem"))


def tier_bands(args: Mapping[str, Any]) -> tuple[tuple[float, float, float], ...]:
    """``capacity_windows``'s bands of the GPU-tier rule (empty without tp_size)."""
    edges = [0.0] + [float(b) for b, _, _ in GPU_TIERS] + [_NO_CAP]
    out = []
    for lo, hi in zip(edges, edges[1:]):
        res = tier_reserved_mib(args, lo)
        if res is None:
            return ()
        out.append((lo, hi, res))
    return tuple(out)


def formula_bands(
    args: Mapping[str, Any], form: FormulaForm, terms: tuple[Reserve, ...] | None
) -> tuple[tuple[float, float, float], ...]:
    """``capacity_windows``'s bands of the reserve formula's ``form``: up to 60 GiB, and above it
    (the 10240 floor); empty when an input is missing."""
    small = reserved_mib(args, form, LARGE_GPU_MIB, terms)
    large = reserved_mib(args, form, LARGE_GPU_MIB + 1, terms)
    if small is None or large is None:
        return ()
    return ((0.0, LARGE_GPU_MIB + 1.0, small), (LARGE_GPU_MIB + 1.0, _NO_CAP, large))


def _tier_windows(
    args: Mapping[str, Any], dumped: float | None, free_mib: float | None, multimodal: bool
) -> tuple[tuple[int, int], ...] | None:
    """The GPU-tier rule's capacity windows for a dump with no capacity printed (None: none)."""
    if dumped is None or _unmodelled(args, multimodal):
        return None
    tb = tier_bands(args)
    floor = max((free_mib or 0.0) - rules.PRINT_RESOLUTION_GIB * 1024, 0.0)
    return capacity_windows(tb, dumped, floor) if tb else None


def _table(
    args: Mapping[str, Any],
    printed: date | None,
    capacity_mib: float | None,
    free_mib: float | None,
    dumped: float | None,
) -> tuple[TableForm, float | None, bool]:
    """The era-a form and its value: the first form the date allows (the current one first)
    whose values hold the dump; else the current form with its value, None unless every form
    the date allows is settled by the log (none needs an unprinted capacity)."""
    forms: tuple[TableForm, ...] = forms_for(TABLE_FORMS, printed) or TABLE_FORMS[-1:]
    settled = True
    for t in forms:
        vals, complete = table_form_values(t, args, capacity_mib, free_mib)
        settled = settled and complete
        hit = next((v for v in vals if dumped is not None and _same(v, dumped)), None)
        if hit is not None:
            return t, hit, True
    vals, complete = table_form_values(forms[0], args, capacity_mib, free_mib)
    return forms[0], vals[0] if settled and vals else None, settled


def _table_rule(t: TableForm, capacity_mib: float | None, free_mib: float | None) -> Rule:
    over = (capacity_mib if capacity_mib is not None else free_mib or 0.0) > TABLE_GPU_LIMIT_MIB
    return Rule.LARGE_GPU if t.large_gpu is not None and over else Rule.TP_TABLE


def default_mfs(
    args: Mapping[str, Any],
    printed: date | None,
    passed: bool | None,
    capacity_mib: float | None,
    multimodal: bool = False,
    mla: bool | None = None,
    free_mib: float | None = None,
    post_capture: bool = False,
) -> DefaultMfs:
    """Which rule gave the dump's mem_fraction_static (reference 12.3, checked against the
    released wheels: docs/sglang-sources.md).

    ``passed``: whether the echoed command line passes --mem-fraction-static (None: the log
    echoes none); ``capacity_mib``: the device capacity SGLang's gpu_mem is (None: not printed);
    ``mla``: whether the model's KV pool is MLA's (None: not known; the flat MLA prefill term);
    ``free_mib``: the free memory before loading (P), a lower bound of the capacity for
    ``capacity_windows`` and the era-a large-GPU test when none is printed; ``post_capture``:
    the log shows post-capture KV sizing, whose rule skips the graph reserve (``_post_capture``).
    """
    mfs = args.get("mem_fraction_static")
    dumped = float(mfs) if isinstance(mfs, (int, float)) and not isinstance(mfs, bool) else None
    tp, pp = _int(args, "tp_size"), _int(args, "pp_size")
    table = table_mfs(tp) if tp is not None and tp >= 1 else None
    era = mfs_era_of(printed)
    seed = DefaultMfs(
        Rule.UNKNOWN,
        era,
        "none" if era is MfsEra.UNKNOWN else "date",
        printed,
        passed,
        dumped,
        None,
        tp_size=tp,
        pp_size=pp,
        table_mfs=table,
    )
    if passed:
        return replace(seed, rule=Rule.PASSED)
    if post_capture and era is MfsEra.C:
        return _post_capture(seed, args, printed, capacity_mib, free_mib, multimodal)
    if era in (MfsEra.A, MfsEra.BETWEEN):
        t, pred, settled = _table(args, printed, capacity_mib, free_mib, dumped)
        as_table = replace(
            seed,
            rule=_table_rule(t, capacity_mib, free_mib),
            predicted=pred,
            capacity_mib=capacity_mib,
            form=t.form.versions,
            no_prediction=(
                None
                if pred is not None
                else NoPrediction.NO_TP
                if tp is None
                else NoPrediction.NO_CAPACITY
            ),
        )
        if era is MfsEra.A:
            return as_table
        if pred is not None and _same(pred, dumped):
            return replace(as_table, era=MfsEra.A, era_from="dump")
    if era is MfsEra.UNKNOWN:
        return seed
    why: NoPrediction | None = None
    if capacity_mib is None:
        why = NoPrediction.NO_CAPACITY
    elif _unmodelled(args, multimodal):
        why = NoPrediction.UNMODELLED
    tier_res = tier_reserved_mib(args, capacity_mib) if capacity_mib and why is None else None
    tier = _mfs(capacity_mib, tier_res) if capacity_mib and tier_res is not None else None
    seed = replace(seed, capacity_mib=capacity_mib, tier_mfs=tier, tier_reserved_mib=tier_res)
    as_tier = replace(
        seed,
        rule=Rule.GPU_TIER,
        era=MfsEra.TIER,
        era_from="dump",
        predicted=tier,
        form=TIER_FORM.versions,
    )
    if era is MfsEra.BETWEEN and _same(tier, dumped):
        return as_tier
    formula_era = MfsEra.B if era is MfsEra.BETWEEN else era
    forms: tuple[FormulaForm, ...] = forms_for(FORMULA_FORMS, printed)
    if not forms:
        # Printed before any build could have the formula (0.5.2 is 2025-09-11): not tried.
        if capacity_mib is not None:
            return seed
        wins = _tier_windows(args, dumped, free_mib, multimodal)
        return replace(seed, free_mib=free_mib, tier_windows=wins)
    tried = []
    for f in forms:
        terms = rules.graph_reserve(args, mla=mla, form=f)
        res = None
        if why is None and capacity_mib is not None:
            res = reserved_mib(args, f, capacity_mib, terms)
        tried.append((f, terms, res, _mfs(capacity_mib, res) if capacity_mib and res else None))
    form, terms, reserved, pred = next((x for x in tried if _same(x[3], dumped)), tried[0])
    if why is None and capacity_mib is not None and reserved is None:
        missing_mla = terms is None and rules.decode_max_bs(args) is not None
        why = NoPrediction.MLA_UNKNOWN if missing_mla else NoPrediction.INPUTS
    if why is NoPrediction.NO_CAPACITY and dumped is not None and not _unmodelled(args, multimodal):
        # P is printed to +-0.005 GiB: a capacity that much below the reading is not excluded.
        floor = max((free_mib or 0.0) - rules.PRINT_RESOLUTION_GIB * 1024, 0.0)
        bands = [fb for f, t, _, _ in tried if (fb := formula_bands(args, f, t))]
        seed = replace(
            seed,
            free_mib=free_mib,
            tier_windows=_tier_windows(args, dumped, free_mib, multimodal),
            formula_windows=(
                _merged([w for fb in bands for w in capacity_windows(fb, dumped, floor)])
                if bands
                else None
            ),
        )
    fits = _same(pred, dumped)
    if era is MfsEra.BETWEEN and not fits:
        return seed  # no rule is shown to apply: the era stays unknown
    if pred is not None and not fits and _same(tier, dumped):
        return as_tier  # dated later, an older image: its value is the tier rule's
    return replace(
        seed,
        rule=Rule.RESERVE,
        era=formula_era,
        era_from="dump" if era is MfsEra.BETWEEN else "date",
        predicted=pred,
        no_prediction=why,
        reserved_mib=reserved,
        reserve_terms=terms,
        form=form.form.versions,
    )


def _post_capture(
    seed: DefaultMfs,
    args: Mapping[str, Any],
    printed: date | None,
    capacity_mib: float | None,
    free_mib: float | None,
    multimodal: bool,
) -> DefaultMfs:
    """The post-capture reserve (mfs_versions.POST_CAPTURE_FORMS): the form whose value is the
    dump's, else the one current at the log's date. A VLM's further adjustment (8 GiB / gpu_mem
    under post-capture sizing, 0.5.2x ``adjust_mem_fraction_for_vlm``) is not modelled."""
    tp, pp = _int(args, "tp_size"), _int(args, "pp_size") or 1
    forms: tuple[PostCaptureForm, ...] = forms_for(POST_CAPTURE_FORMS, printed)
    out = replace(seed, rule=Rule.POST_CAPTURE, era=MfsEra.C, reserve_terms=(), free_mib=free_mib)
    if tp is None or not forms:
        return replace(out, no_prediction=NoPrediction.NO_TP)
    if multimodal:
        return replace(out, no_prediction=NoPrediction.UNMODELLED)
    tried = [(f, f.base_mib + tp * pp / 8 * 1024) for f in forms]
    if capacity_mib is None:
        floor = max((free_mib or 0.0) - rules.PRINT_RESOLUTION_GIB * 1024, 0.0)
        d = seed.dumped
        wins = [capacity_windows(((0.0, _NO_CAP, r),), d, floor) if d else () for _, r in tried]
        f, res = next((x for x, w in zip(tried, wins) if w), tried[0])
        return replace(
            out,
            no_prediction=NoPrediction.NO_CAPACITY,
            reserved_mib=res,
            formula_windows=_merged([x for w in wins for x in w]) if d is not None else None,
            form=f.form.versions,
        )
    f, res = next((x for x in tried if _same(_mfs(capacity_mib, x[1]), seed.dumped)), tried[0])
    return replace(
        out,
        capacity_mib=capacity_mib,
        predicted=_mfs(capacity_mib, res),
        reserved_mib=res,
        form=f.form.versions,
    )
