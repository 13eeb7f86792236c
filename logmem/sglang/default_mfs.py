"""SGLang's default ``mem_fraction_static`` by era (reference 12.3): which rule derived the
value a server_args dump shows, what it predicts, and whether the dump matches.

``server_args.py`` derives mem_fraction_static only when the user did not pass it:

* era (a), about <= mid 2025: a table keyed on ``tp_size`` (a later variant on tp x pp);
* era (b), about Oct 2025 - Feb 2026: ``_handle_gpu_memory_settings(gpu_mem)``, a reserve in
  MiB (activation, decode graph, tp x pp, DP attention, piecewise graph; a 10240 floor above
  60 GiB; speculative extras), ``mfs = round((gpu_mem - reserved) / gpu_mem, 3)``;
* era (c), 2026 on: the same reserve with ``reserve_for_graph_mb()`` and
  ``reserve_for_deepep_a2a_mb()``; the tp x pp term inferred to use integer division.

Between mid 2025 and Oct 2025 the era is not known by date; the dump then tells which rule
it fits, if any. A log's date only bounds its SGLang version from above (an old image can
run later). Like rules.py this imports nothing of the package at run time but the rules.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import date
from enum import Enum
from typing import Any

from logmem.frozen import frozen
from logmem.sglang import rules
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
"""Extra reserve for the other speculative algorithms except NGRAM (eras b and c)."""


class Era(Enum):
    A = "a"  # tp_size table
    B = "b"  # _handle_gpu_memory_settings reserve
    C = "c"  # reserve_for_graph_mb + DeepEP term
    BETWEEN = "a_or_b"  # dated mid 2025 - Oct 2025: either
    UNKNOWN = "unknown"  # no date


class Rule(Enum):
    """Which rule gave the dumped mem_fraction_static."""

    TP_TABLE = "era_a_tp_table"
    RESERVE = "era_bc_reserve_formula"
    PASSED = "passed_by_user"
    UNKNOWN = "unknown"


class NoPrediction(Enum):
    """Why a rule's value could not be computed."""

    NO_TP = "no_tp_size"  # the dump has no tp_size
    NO_CAPACITY = "no_device_capacity"  # the log prints no device capacity
    INPUTS = "inputs_missing"  # chunked_prefill_size / cuda_graph_max_bs not in the dump
    UNMODELLED = "unmodelled_case"  # VLM, PD disaggregation, symmetric memory: not modelled


@frozen
class DefaultMfs:
    """How the launch's mem_fraction_static came about (reference 12.3)."""

    rule: Rule
    era: Era
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


def era_of(printed: date | None) -> Era:
    """The default-mfs era of a log printed on ``printed`` (reference 12.3)."""
    if printed is None:
        return Era.UNKNOWN
    if printed <= ERA_A_LAST:
        return Era.A
    if printed < ERA_B_FIRST:
        return Era.BETWEEN
    return Era.B if printed < ERA_C_FIRST else Era.C


def table_mfs(tp_size: int) -> float:
    """Era (a)'s default for ``tp_size`` (``TP_TABLE``)."""
    return next(v for lo, v in TP_TABLE if tp_size >= lo)


def _int(args: Mapping[str, Any], key: str) -> int | None:
    v = args.get(key)
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def reserved_mib(args: Mapping[str, Any], era: Era, gpu_mem_mib: float) -> float | None:
    """The reserve (MiB) of eras (b) and (c) from resolved server_args, or None when an input
    is missing or the case is not modelled (reference 12.3 b, c)."""
    chunk, max_bs = _int(args, "chunked_prefill_size"), _int(args, "cuda_graph_max_bs")
    tp, pp = _int(args, "tp_size"), _int(args, "pp_size") or 1
    if chunk is None or tp is None or (max_bs is None and not args.get("disable_cuda_graph")):
        return None
    tokens = chunk if chunk > 0 else _int(args, "max_prefill_tokens")
    if tokens is None:
        return None
    reserved = BASE_RESERVE_MIB + max(tokens, rules.ACTIVATION_MIN_TOKENS) * (
        rules.ACTIVATION_MIB_PER_TOKEN
    )
    reserved += (tp * pp // 8) * 1024 if era is Era.C else tp * pp / 8 * 1024
    terms = rules.graph_reserve(args) or ()
    deepep = sum(t.bytes for t in terms if t.term is rules.ReserveTerm.DEEPEP) / MIB
    reserved += sum(t.bytes for t in terms if t.term is not rules.ReserveTerm.DEEPEP) / MIB
    if gpu_mem_mib > LARGE_GPU_MIB:
        reserved = max(reserved, RESERVE_FLOOR_MIB)
    if era is Era.C:
        reserved += deepep
    spec = args.get("speculative_algorithm")
    if spec == "STANDALONE":
        reserved += STANDALONE_SPEC_MIB
    elif spec not in (None, "NGRAM", "None"):
        reserved += OTHER_SPEC_MIB
    return reserved


def _unmodelled(args: Mapping[str, Any], multimodal: bool) -> bool:
    pd = args.get("disaggregation_mode")
    return multimodal or pd not in (None, "null") or bool(args.get("enable_symm_mem"))


def default_mfs(
    args: Mapping[str, Any],
    printed: date | None,
    passed: bool | None,
    capacity_mib: float | None,
    multimodal: bool = False,
) -> DefaultMfs:
    """Which rule gave the dump's mem_fraction_static (reference 12.3).

    ``passed``: whether the echoed command line passes --mem-fraction-static (None: the log
    echoes none); ``capacity_mib``: the device capacity SGLang's gpu_mem is (None: not printed).
    """
    mfs = args.get("mem_fraction_static")
    dumped = float(mfs) if isinstance(mfs, (int, float)) and not isinstance(mfs, bool) else None
    tp, pp = _int(args, "tp_size"), _int(args, "pp_size")
    table = table_mfs(tp) if tp is not None and tp >= 1 else None
    era = era_of(printed)
    seed = DefaultMfs(
        Rule.UNKNOWN,
        era,
        "none" if era is Era.UNKNOWN else "date",
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
    if era is Era.A:
        world = tp * pp if tp is not None and pp is not None and pp > 1 else None
        # The later tp x pp variant: the dump tells which when pp > 1.
        pred = table_mfs(world) if world is not None and dumped == table_mfs(world) else table
        return replace(
            seed,
            rule=Rule.TP_TABLE,
            predicted=pred,
            no_prediction=NoPrediction.NO_TP if pred is None else None,
        )
    if era is Era.BETWEEN and table is not None and dumped is not None and dumped == table:
        return replace(seed, rule=Rule.TP_TABLE, era=Era.A, era_from="dump", predicted=table)
    if era is Era.UNKNOWN:
        return seed
    formula_era = Era.B if era is Era.BETWEEN else era
    why, pred, reserved = None, None, None
    if capacity_mib is None:
        why = NoPrediction.NO_CAPACITY
    elif _unmodelled(args, multimodal):
        why = NoPrediction.UNMODELLED
    else:
        reserved = reserved_mib(args, formula_era, capacity_mib)
        if reserved is None:
            why = NoPrediction.INPUTS
        else:
            pred = round((capacity_mib - reserved) / capacity_mib, 3)
    fits = pred is not None and dumped is not None and abs(pred - dumped) < 5e-4
    if era is Era.BETWEEN and not fits:
        return seed  # neither rule is shown to apply: the era stays unknown
    return replace(
        seed,
        rule=Rule.RESERVE,
        era=formula_era,
        era_from="dump" if era is Era.BETWEEN else "date",
        predicted=pred,
        no_prediction=why,
        capacity_mib=capacity_mib,
        reserved_mib=reserved,
    )
