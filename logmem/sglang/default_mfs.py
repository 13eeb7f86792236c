"""SGLang's default ``mem_fraction_static`` by era (reference 12.3): which rule derived the
value a server_args dump shows, what it predicts, and whether the dump matches.

``server_args.py`` derives mem_fraction_static only when the user did not pass it:

* era (a), about <= mid 2025: a table keyed on ``tp_size`` (a later variant on tp x pp);
* about Aug - Oct 2025 (v0.4.10 - v0.5.3): a reserve by GPU tier, ``reserved = (base + tp x pp
  / d) x 1024`` MiB (``GPU_TIERS``; 32 GiB above 160 GiB), + 4096 with DP attention, + the
  speculative extras, ``mfs = round((gpu_mem - reserved) / gpu_mem, 3)``. Its constants are the
  lead's and a reviewer's recollection of ``server_args.py``, not a stored source, so the rule
  is reported only where its value is the dump's (corpus 011: 81,559 MiB, TP8: 13,824 MiB,
  0.831, as dumped); it is tried on logs dated after mid 2025 (a later date may run an
  older image) and never claims a graph reserve;
* era (b), about Oct 2025 - Feb 2026: ``_handle_gpu_memory_settings(gpu_mem)``, a reserve in
  MiB (activation, decode graph, tp x pp, DP attention, piecewise graph; a 10240 floor above
  60 GiB; speculative extras), ``mfs = round((gpu_mem - reserved) / gpu_mem, 3)``;
* era (c), 2026 on: the same reserve with ``reserve_for_graph_mb()`` (an MLA model's prefill
  graph a flat 1536 MiB, a breakable prefill graph with DeepEP + 1024) and
  ``reserve_for_deepep_a2a_mb()``; the tp x pp term inferred to use integer division. The
  inputs are read under E7's names too (``cuda_graph_config``, ``cuda_graph_max_bs_decode``;
  logmem.sglang.reserve).

Between mid 2025 and Oct 2025 the era is not known by date; the dump then tells which rule
it fits, if any. When the log prints no device capacity, ``capacity_windows`` gives the GPU
sizes (at or above the free memory before loading, P) on which a rule yields the dump's value:
a hint, never a match; where the reserve formula and the GPU-tier rule yield it on no such GPU,
the value was passed (``DefaultMfs.excluded``). A log's date only bounds its SGLang version from above (an old image can
run later). Like rules.py this imports nothing of the package at run time but the rules.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace
from datetime import date
from enum import Enum
from typing import Any

from logmem.frozen import frozen
from logmem.sglang import rules
from logmem.sglang.reserve import Reserve, ReserveTerm
from logmem.units import MIB

ERA_A_LAST = date(2025, 6, 30)
"""The last date taken as era (a) (the tp_size table): "about <= mid 2025" (reference 12.3;
checked on logs of 2024-10, 2025-01, 2025-03 and 2025-05)."""

ERA_B_FIRST = date(2025, 10, 1)
"""The first date taken as era (b) (the reserve formula): "about Oct 2025" (reference 12.3)."""

ERA_C_FIRST = date(2026, 3, 1)
"""The first date taken as era (c) (reserve_for_graph_mb, DeepEP term): 2026 after Feb."""

TP_TABLE = ((16, 0.79), (8, 0.81), (4, 0.85), (2, 0.87), (1, 0.88))
"""Era (a): ``mem_fraction_static`` by ``tp_size`` (>= 16, >= 8, >= 4, >= 2, otherwise),
``server_args.py`` about <= mid 2025 (reference 12.3 a; an L4 TP4 dump of 2025-03 shows 0.85)."""

UNKNOWN_GPU_MEM_MFS = 0.95
"""Era (c): the value when ``gpu_mem`` is unknown (reference 12.3 c)."""

BASE_RESERVE_MIB = 512
"""The constant of the reserve (``reserved = 512 + ...``, eras b and c)."""

LARGE_GPU_MIB = 60 * 1024
"""Above this capacity the reserve is at least ``RESERVE_FLOOR_MIB`` (eras b and c)."""

RESERVE_FLOOR_MIB = 10240
"""The reserve's floor on a GPU above 60 GiB (eras b and c)."""

STANDALONE_SPEC_MIB = 6144
"""Extra reserve for ``speculative_algorithm == 'STANDALONE'`` (eras b and c)."""

OTHER_SPEC_MIB = 2048
"""Extra reserve for the other speculative algorithms except NGRAM (eras b and c, and the
GPU-tier rule)."""

GPU_TIERS = (
    (20 * 1024, 2.8, 10),
    (35 * 1024, 2.8, 10),
    (90 * 1024, 9.5, 2),
    (100 * 1024, 12.0, 2),
    (160 * 1024, 12.0, 2),
)
"""The GPU-tier rule of about Aug - Oct 2025 (v0.4.10 - v0.5.3, ``ServerArgs.
_handle_gpu_memory_settings``): below each capacity (MiB), ``reserved = (base + tp x pp / d) x
1024`` MiB. Recollection of ``server_args.py`` by the lead and a reviewer, not a stored source
(unverified): used only where its value is the dump's."""

GPU_TIER_TOP_MIB = 32 * 1024
"""The GPU-tier rule's reserve at or above 160 GiB (same recollection, unverified)."""

GPU_TIER_DP_ATTENTION_MIB = 4096
"""The GPU-tier rule's extra reserve with ``enable_dp_attention`` (same recollection,
unverified)."""


class MfsEra(Enum):
    """The era of SGLang's default mem_fraction_static rule (reference 12.3 a/b/c), by the
    date a log was printed; not the era of its wording (logmem.sglang.eras.Era, E0-E7)."""

    A = "a"  # tp_size table
    B = "b"  # _handle_gpu_memory_settings reserve
    C = "c"  # reserve_for_graph_mb + DeepEP term
    BETWEEN = "a_or_b"  # dated mid 2025 - Oct 2025: either
    TIER = "aug_oct_2025"  # the GPU-tier rule's version (v0.4.10 - v0.5.3): the dump fits it
    UNKNOWN = "unknown"  # no date


class Rule(Enum):
    """Which rule gave the dumped mem_fraction_static."""

    TP_TABLE = "era_a_tp_table"
    GPU_TIER = "aug_oct_2025_gpu_tier_reserve"  # only where its value is the dump's
    RESERVE = "era_bc_reserve_formula"
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
        """``formula_excluded``, and the GPU-tier rule of Aug-Oct 2025 (an image older than the
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


def _spec_mib(args: Mapping[str, Any]) -> int:
    spec = args.get("speculative_algorithm")
    if spec == "STANDALONE":
        return STANDALONE_SPEC_MIB
    return OTHER_SPEC_MIB if spec not in (None, "NGRAM", "None") else 0


def reserved_mib(
    args: Mapping[str, Any],
    era: MfsEra,
    gpu_mem_mib: float,
    terms: tuple[Reserve, ...] | None,
) -> float | None:
    """The reserve (MiB) of eras (b) and (c) from resolved server_args, or None when an input
    is missing (reference 12.3 b, c). ``terms``: the era's graph terms (``rules.graph_reserve``
    with ``newest`` for era c; None: not computable)."""
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
    reserved += (tp * pp // 8) * 1024 if era is MfsEra.C else tp * pp / 8 * 1024
    deepep = sum(t.bytes for t in terms if t.term is ReserveTerm.DEEPEP) / MIB
    reserved += sum(t.bytes for t in terms if t.term is not ReserveTerm.DEEPEP) / MIB
    if gpu_mem_mib > LARGE_GPU_MIB:
        reserved = max(reserved, RESERVE_FLOOR_MIB)
    return reserved + deepep + _spec_mib(args)


def tier_reserved_mib(args: Mapping[str, Any], gpu_mem_mib: float) -> float | None:
    """The GPU-tier rule's reserve (MiB, ``GPU_TIERS``, about Aug - Oct 2025), None without
    tp_size."""
    tp, pp = _int(args, "tp_size"), _int(args, "pp_size") or 1
    if tp is None:
        return None
    world = tp * pp
    reserved: float = GPU_TIER_TOP_MIB
    for below, base, div in GPU_TIERS:
        if gpu_mem_mib < below:
            reserved = (base + world / div) * 1024
            break
    if args.get("enable_dp_attention"):
        reserved += GPU_TIER_DP_ATTENTION_MIB
    return reserved + _spec_mib(args)


def _unmodelled(args: Mapping[str, Any], multimodal: bool) -> bool:
    pd = args.get("disaggregation_mode")
    return multimodal or pd not in (None, "null") or bool(args.get("enable_symm_mem"))


def _mfs(capacity_mib: float, reserved: float) -> float:
    return round((capacity_mib - reserved) / capacity_mib, 3)


def _same(a: float | None, b: float | None) -> bool:
    return a is not None and b is not None and abs(a - b) < 5e-4


_NO_CAP = float(1 << 24)  # MiB: above any GPU (16 TiB)


def capacity_windows(
    bands: tuple[tuple[float, float, float], ...], dumped: float, at_least: float
) -> tuple[tuple[int, int], ...]:
    """The gpu_mem values (integer MiB, inclusive windows) at or above ``at_least`` on which
    ``round((gpu_mem - reserved) / gpu_mem, 3)`` is ``dumped``, for ``bands`` of
    ``(from, below, reserved)``: a rule whose reserve is constant within each band."""
    out: list[tuple[int, int]] = []
    for lo_band, hi_band, res in bands:
        if res <= 0 or not 0 < dumped < 1:
            continue
        lo = res / (1 - dumped + 5e-4)
        hi = res / (1 - dumped - 5e-4) if dumped + 5e-4 < 1 else _NO_CAP
        a = max(math.ceil(lo) - 1, math.ceil(lo_band), math.ceil(at_least), 1)
        b = min(math.floor(hi) + 1, math.ceil(hi_band) - 1)
        # Exact ends by the rule's own rounding: the float bounds are off by at most one.
        while a <= b and not _same(_mfs(a, res), dumped):
            a += 1
        while b >= a and not _same(_mfs(b, res), dumped):
            b -= 1
        if a <= b:
            out.append((a, b))
    return tuple(out)


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
    args: Mapping[str, Any], era: MfsEra, terms: tuple[Reserve, ...] | None
) -> tuple[tuple[float, float, float], ...]:
    """``capacity_windows``'s bands of the reserve formula: up to 60 GiB, and above it (the
    10240 floor); empty when an input is missing."""
    small = reserved_mib(args, era, LARGE_GPU_MIB, terms)
    large = reserved_mib(args, era, LARGE_GPU_MIB + 1, terms)
    if small is None or large is None:
        return ()
    return ((0.0, LARGE_GPU_MIB + 1.0, small), (LARGE_GPU_MIB + 1.0, _NO_CAP, large))


def default_mfs(
    args: Mapping[str, Any],
    printed: date | None,
    passed: bool | None,
    capacity_mib: float | None,
    multimodal: bool = False,
    mla: bool | None = None,
    free_mib: float | None = None,
) -> DefaultMfs:
    """Which rule gave the dump's mem_fraction_static (reference 12.3).

    ``passed``: whether the echoed command line passes --mem-fraction-static (None: the log
    echoes none); ``capacity_mib``: the device capacity SGLang's gpu_mem is (None: not printed);
    ``mla``: whether the model's KV pool is MLA's (None: not known; era c's prefill-graph term);
    ``free_mib``: the free memory before loading (P), a lower bound of the capacity for
    ``capacity_windows`` when none is printed.
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
    if era is MfsEra.A:
        world = tp * pp if tp is not None and pp is not None and pp > 1 else None
        # The later tp x pp variant: the dump tells which when pp > 1.
        pred = table_mfs(world) if world is not None and dumped == table_mfs(world) else table
        return replace(
            seed,
            rule=Rule.TP_TABLE,
            predicted=pred,
            no_prediction=NoPrediction.NO_TP if pred is None else None,
        )
    if era is MfsEra.BETWEEN and table is not None and dumped is not None and dumped == table:
        return replace(seed, rule=Rule.TP_TABLE, era=MfsEra.A, era_from="dump", predicted=table)
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
    as_tier = replace(seed, rule=Rule.GPU_TIER, era=MfsEra.TIER, era_from="dump", predicted=tier)
    if era is MfsEra.BETWEEN and _same(tier, dumped):
        return as_tier
    formula_era = MfsEra.B if era is MfsEra.BETWEEN else era
    terms = rules.graph_reserve(args, newest=formula_era is MfsEra.C, mla=mla)
    pred, reserved = None, None
    if why is None and capacity_mib is not None:
        reserved = reserved_mib(args, formula_era, capacity_mib, terms)
        if reserved is not None:
            pred = _mfs(capacity_mib, reserved)
        elif terms is None and rules.decode_max_bs(args) is not None:
            why = NoPrediction.MLA_UNKNOWN
        else:
            why = NoPrediction.INPUTS
    if why is NoPrediction.NO_CAPACITY and dumped is not None and not _unmodelled(args, multimodal):
        # P is printed to +-0.005 GiB: a capacity that much below the reading is not excluded.
        floor = max((free_mib or 0.0) - rules.PRINT_RESOLUTION_GIB * 1024, 0.0)
        tb, fb = tier_bands(args), formula_bands(args, formula_era, terms)
        seed = replace(
            seed,
            free_mib=free_mib,
            tier_windows=capacity_windows(tb, dumped, floor) if tb else None,
            formula_windows=capacity_windows(fb, dumped, floor) if fb else None,
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
    )
