"""The facts of diff's sentences on what else changed (logmem.compare.diff_causes); worded in
logmem.report.compare.causes. logmem.compare.notes re-exports them as part of its Note union."""

from __future__ import annotations

from typing import Any

from logmem.frozen import frozen
from logmem.sglang.default_mfs import Rule


@frozen
class FirstBucketShared:
    """A first capture's graph memory changed while communication settings differ too."""

    rank: str
    graph: str
    largest: tuple[int | None, int | None]  # bytes, A and B
    total: tuple[int | None, int | None]
    env: tuple[tuple[str, str | None, str | None, int | None, int | None], ...]  # key, a, b, lines
    settings: tuple[tuple[str, Any, Any], ...]  # server_args key, a, b
    max_bs: tuple[Any, Any] | None  # cuda_graph_max_bs when it differs


@frozen
class NoReserveComparison:
    """No SGLang graph reserve beside a slope: not the launches' rule (slope.reserve_rule_in_force)."""

    rules: tuple[Rule | None, Rule | None]  # A's and B's (None: no server_args dump)
    passed: tuple[bool | None, bool | None]
    matches: tuple[bool | None, bool | None] = (None, None)  # the rule's value is the dump's


@frozen
class AttentionTPChanged:
    """The same checkpoint and tp_size, another attention TP (tp / dp with DP attention)."""

    rank: str
    weights: tuple[int, int]  # bytes the weights phase took, A and B
    attn_tp: tuple[int, int]
    tp_size: int
    dp_size: tuple[Any, Any]
    dp_lm_head: bool  # enable_dp_lm_head in both: the lm_head is split over attention TP too
    also_differ: tuple[str, ...]  # other keys that change a rank's weights


@frozen
class WeightsUninitializedIn:
    """One launch of a diff printed SGLang's "Some weights are not initialized from checkpoints"
    (analysis.weights_loaded): its weights figure is not a working model's."""

    side: str  # "A" | "B"
    rank: str  # the rank whose line is cited (the main rank when it printed one)
    line: int
    role: str  # "target" | "draft"
    names: int  # names the line lists
    complete: bool  # False: the line is cut, so at least `names`
    experts: bool  # every name is an MoE expert weight
    models_differ: bool  # the diff's launches load different models
    other_ranks: tuple[tuple[str, int], ...] = ()  # (rank, line) of the other ranks printing it


@frozen
class MfsNotAllDerived:
    """Launches whose mem_fraction_static the reserve formula gives only on disjoint GPU sizes,
    while their free memory before loading is the same (one GPU model, most likely): under that
    formula at most ``derivable`` of them derived their value (logmem.compare.diff_mfs)."""

    labels: tuple[str, ...]  # the launches concerned ("A", "B" / "1", "2", ...)
    mfs: tuple[float, ...]  # each one's dumped mem_fraction_static
    max_bs: tuple[Any, ...]  # each one's cuda_graph_max_bs (as resolved; None: not dumped)
    free_bytes: int  # P, the same in each to printing
    windows: tuple[tuple[tuple[int, int], ...], ...]  # GPU sizes (MiB) giving each one's dump
    graph_reserve_mib: tuple[float, ...]  # each one's graph terms of that reserve
    derivable: int  # the most of them one GPU size lets the formula give their value
