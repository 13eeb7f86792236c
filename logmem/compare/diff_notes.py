"""The facts of diff's sentences on what else changed (logmem.compare.diff_causes), on launches
that cannot be compared (logmem.compare.comparable) and on why there is no slope; worded in
logmem.report.compare (causes, comparable, notes). logmem.compare.notes re-exports them as part
of its Note union."""

from __future__ import annotations

from typing import Any

from logmem.compare.comparable import Mismatch
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
    # The formula gives the dump on no GPU holding P (formula_excluded): passed.
    excluded: tuple[bool, bool] = (False, False)
    floor: tuple[bool, bool] = (False, False)  # its 10 GiB floor binds on this GPU (diff_mfs)


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


@frozen
class SlopeAcrossModels:
    """No slope: the launches load different models (logmem.compare.comparable), so a per-row
    slope would mix the models' graph sizes; ``--allow-diff model_path`` fits one anyway."""

    labels: tuple[str, str]  # the first launch's and the one that differs from it
    mismatch: Mismatch
    also: tuple[str, ...] = ()  # compare.args.confounder_parts: the other keys that differ


@frozen
class SlopeFromOtherLaunches:
    """whatif --slope-from: the slope's launches differ from LOG (GPU, TP, wording era; the
    model only with --allow-diff model_path), said before the figures it prices."""

    mismatches: tuple[Mismatch, ...]  # A's identity as ``a``, LOG's as ``b``


@frozen
class DifferentGpus:
    """diff: the free memory before loading differs far beyond rounding: another GPU size (or a
    GPU shared with something large), which the pools follow."""

    mismatch: Mismatch


@frozen
class SameLaunch:
    """diff: A and B are one launch of one input (the same files, the same launch number):
    every change is zero by construction, which says nothing about any setting."""

    launch: int


@frozen
class ReserveFloorBinds:
    """fit: on these launches' GPU SGLang's default reserve is its floor at every max bs
    (compare.diff_mfs.reserve_floor_binds), so no per-bs reserve is set beside the slope."""

    labels: tuple[str, ...]


# --- why there is no slope (compare.notes.SlopeNote) ---


@frozen
class SlopeNotAsked:  # --no-slope
    pass


@frozen
class SlopeNoArgs:
    missing: tuple[str, ...]  # launches that printed no server_args


@frozen
class SlopeNotVaried:
    """The launches print the same CUDA-graph batch sizes (compare.slope.same_sizes), so they
    capture the same largest size: a slope needs two."""

    # Each launch's largest captured batch size of its batch-sized graph (compare.points.
    # main_point), else server_args' resolved cuda_graph_max_bs; None: neither is known.
    sizes: tuple[int | None, ...] = ()
    from_args: tuple[bool, ...] = ()  # the size is server_args' (no captured size printed)


@frozen
class SlopeConfounded:
    parts: tuple[str, ...]  # compare.args.confounder_parts: key (values), shortened
    mfs_hint: bool  # mem_fraction_static differs and SGLang derives it from max bs


@frozen
class SlopeNoRows:
    pass


@frozen
class MfsSetAside:
    """diff / fit: mem_fraction_static differs besides the batch sizes but is not a confounder
    of the slope (compare.mfs_aside): it sizes the KV pool, and every launch's request pool is
    above its largest captured bs, so no capture list was cut to the pool. The KV section
    carries its effect."""

    labels: tuple[str, ...]
    mfs: tuple[Any, ...]  # each launch's dumped value
    pools: tuple[int, ...]  # each launch's request pool (max_running_requests)
    pool_lines: tuple[int | None, ...]  # the lines that print them
    largest: tuple[int, ...]  # each launch's largest captured bs over its bs-sized graphs


@frozen
class SizingModesDiffer:
    """diff: one launch backs its KV pool after the graphs (SGLang 0.5.17+'s post-capture KV
    sizing), the other sizes it in its pool step: the phases set the start-up launch's pool step
    beside the other's post-capture KV step, and the other's pool step (its other pools and the
    reserved KV pool) stands apart (compare.diff._phase_changes)."""

    post_capture: str  # "A" | "B": the launch that backs its KV pool after capture
    rank: str  # the first rank pair shown (as A prints it)
    rank_b: str | None  # B's label when it differs
    pool_step_bytes: int  # the post-capture launch's pool step on that rank
    start_up_bytes: int  # the other launch's pool step (KV and other pools)
    after_capture_bytes: int  # the post-capture KV step
