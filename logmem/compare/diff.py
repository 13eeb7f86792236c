"""``logmem diff``: what changed from launch A to launch B.

The server_args that differ, the SGLang wording each log used, the change of every phase per
rank, the KV tokens gained or lost and the terms of SGLang's rule that account for them, the
graph split per family and per bucket, and, when the launches differ only in the CUDA-graph
batch sizes, the slope of graph memory per row (logmem.compare.slope). The graph and bucket
comparison lives in logmem.compare.diff_graphs, the causes said under the tables in
logmem.compare.diff_causes, the KV tokens and their terms in logmem.compare.diff_kv.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from logmem.analysis.attribution import LaunchLedger, RankLedger, build_ledger
from logmem.analysis.failures.facts import Verdict
from logmem.analysis.ledger import CaptureEnd, Phase
from logmem.compare import notes as cn
from logmem.compare.args import ArgsComparison, compare_args, confounder_parts
from logmem.compare.comparable import Aspect, identity, mismatches, models_differ
from logmem.compare.diff_causes import (
    EnvChange,
    env_changes,
    first_bucket_causes,
    pairing,
    reserve_not_compared,
    uninitialized_weights,
    weights_cause,
)
from logmem.compare.diff_graphs import GraphChange, graph_changes, like_with_like
from logmem.compare.diff_kv import KVChange as KVChange
from logmem.compare.diff_kv import KVTerm as KVTerm
from logmem.compare.diff_kv import kv_change as kv_change
from logmem.compare.diff_outcome import EndState, end_state, unreached_markers, verdicts
from logmem.compare.load import LaunchRef
from logmem.compare.mfs_aside import set_mfs_aside
from logmem.compare.points import rank_map
from logmem.compare.slope import (
    Slope,
    mfs_hint,
    same_sizes,
    slope_across_models,
    slope_assumptions,
    slopes,
)
from logmem.frozen import frozen
from logmem.model.records import Launch
from logmem.sglang.eras import (
    MARKER_NAMES,
    EraGuess,
    Marker,
    era_markers,
    era_of,
    family_key,
    printed_on,
    wording_differs,
)
from logmem.sglang.rules import DIFFERENCE_RESOLUTION_BYTES


@frozen
class PhaseChange:
    rank: str  # as A prints it
    key: str
    phase: Phase  # A's phase (B's when A has none); logmem.report.causes names it
    a_bytes: int | None  # drop in free memory over the phase, in A
    b_bytes: int | None
    rank_b: str | None = None  # B's label when it differs (matched by position)
    # B's phase when it is another phase than A's, set beside it as like with like (the KV
    # pool step of a launch sizing its KV pool at start-up beside the post-capture KV step of
    # one with SGLang 0.5.17+'s post-capture KV sizing; _paired_pools). ``phase`` is then A's.
    phase_b: Phase | None = None
    # A capture a launch stopped in (CaptureEnd.STOPPED), per side: (bucket readings it took,
    # the size of the last one); its drop is not comparable with a complete capture's.
    stopped: tuple[tuple[int, int | None] | None, tuple[int, int | None] | None] = (None, None)

    @property
    def change_bytes(self) -> int | None:
        if self.a_bytes is None or self.b_bytes is None or any(self.stopped):
            return None
        return self.b_bytes - self.a_bytes


@frozen
class Diff:
    a: LaunchRef
    b: LaunchRef
    args: ArgsComparison
    markers: tuple[Marker, ...]
    eras: tuple[EraGuess, EraGuess]
    phases: tuple[PhaseChange, ...]
    kv: KVChange | None
    graphs: tuple[GraphChange, ...]
    slopes: tuple[Slope, ...]
    slope_note: cn.SlopeNote | None  # why there is no slope (None: there is one)
    notes: tuple[cn.Note, ...]
    assumptions: tuple[cn.Note, ...]
    headlines: tuple[cn.Note, ...] = ()  # said before anything else: other models, SGLang versions
    models: tuple[str | None, str | None] = (None, None)  # model_path (architecture) of A and B
    env: tuple[EnvChange, ...] = ()  # communication variables the logs echoed, where they differ
    phase_causes: tuple[
        cn.Note, ...
    ] = ()  # said under the phases table (logmem.compare.diff_causes)
    graph_causes: tuple[cn.Note, ...] = ()  # said under the CUDA graphs table
    # analyze's verdict of A and B (logmem.analysis.failures), said before anything else.
    outcomes: tuple[Verdict, Verdict] | None = None
    ends: tuple[EndState, EndState] | None = None  # where each start-up ended
    # (marker, side) of wording markers set aside: a line that side's unfinished start-up lacks.
    unreached: tuple[tuple[str, str], ...] = ()


# The pool step of a launch (KV and other pools, or with post-capture KV sizing the other pools
# and the reserved KV pool) and the post-capture KV step (logmem.analysis.attribution).
POOLS_KEY, KV_AFTER_CAPTURE_KEY = "target_pools", "target_kv_after_capture"


def _post_capture_side(pa: Mapping[str, object], pb: Mapping[str, object]) -> str | None:
    """ "A" or "B": the side that backs its KV pool after capture while the other sizes it in its
    pool step (both steps known on the rank), else None (the same mode, or a rank one lacks)."""
    for side, post, other in (("A", pa, pb), ("B", pb, pa)):
        mine = KV_AFTER_CAPTURE_KEY in post and POOLS_KEY in post
        if mine and POOLS_KEY in other and KV_AFTER_CAPTURE_KEY not in other:
            return side
    return None


def _phase_changes(la: LaunchLedger, lb: LaunchLedger) -> list[PhaseChange]:
    """Per rank pair, each phase of A beside B's of the same key. Where one launch backs its KV
    pool after capture (SGLang 0.5.17+) and the other sizes it in the pool step, KV pool is set
    beside KV pool: the start-up launch's pool step beside the other's post-capture KV step,
    and the other's pool step (its other pools and the reserved KV pool) stands apart."""
    out: list[PhaseChange] = []
    m = rank_map([r.rank for r in la.ranks], [r.rank for r in lb.ranks])
    pairs: list[tuple[str | None, str | None]] = [(r.rank, m.get(r.rank)) for r in la.ranks]
    pairs += [(None, r.rank) for r in lb.ranks if r.rank not in m.values()]
    for label_a, label_b in pairs:
        pa = _keyed(la.rank(label_a) if label_a is not None else None)
        pb = _keyed(lb.rank(label_b) if label_b is not None else None)
        shown = label_a if label_a is not None else str(label_b)
        # B's label beside A's only where both launches have the rank: a rank of B's alone is
        # shown by its own label (A's column is empty), not as 'TP1 ~ TP1'.
        both = label_a is not None and label_b is not None
        other = label_b if both and label_b != label_a else None
        post = _post_capture_side(pa, pb)
        keys = list(pa) + [k for k in pb if k not in pa]
        if post is not None:
            keys = [k for k in keys if k != KV_AFTER_CAPTURE_KEY]
        for k in keys:
            a, b = pa.get(k), pb.get(k)
            if post is not None and k == POOLS_KEY:
                # The post-capture side's pool step alone, then KV pool beside KV pool.
                pre, kv = (
                    (a, pa[KV_AFTER_CAPTURE_KEY]) if post == "A" else (b, pb[KV_AFTER_CAPTURE_KEY])
                )
                assert pre is not None and a is not None and b is not None
                a_alone = pre[1] if post == "A" else None
                b_alone = None if post == "A" else pre[1]
                out.append(PhaseChange(shown, POOLS_KEY, pre[0], a_alone, b_alone, other))
                ka, kb = (kv, b) if post == "A" else (a, kv)
                out.append(
                    PhaseChange(shown, KV_AFTER_CAPTURE_KEY, ka[0], ka[1], kb[1], other, kb[0])
                )
                continue
            ref = a if a else b
            assert ref is not None  # k is one of A's or B's keys
            cut = (_stopped(a[0]) if a else None, _stopped(b[0]) if b else None)
            out.append(
                PhaseChange(
                    shown, k, ref[0], a[1] if a else None, b[1] if b else None, other, None, cut
                )
            )
    return out


def _stopped(p: Phase) -> tuple[int, int | None] | None:
    """(bucket readings, last size) of a capture the launch stopped in; None otherwise."""
    if p.facts.end is not CaptureEnd.STOPPED:
        return None
    return len(p.buckets), (p.buckets[-1].size if p.buckets else None)


def _sizing_modes(phases: Sequence[PhaseChange]) -> tuple[cn.SizingModesDiffer, ...]:
    """The note on the first rank pair whose KV pools were set beside each other across sizing
    modes (one launch's pool backed after capture), with that pair's figures."""
    for i, p in enumerate(phases):
        if p.phase_b is None or p.a_bytes is None or p.b_bytes is None or i == 0:
            continue
        alone = phases[i - 1]  # the post-capture side's own pool step, just before
        post = "A" if alone.a_bytes is not None else "B"
        step = alone.a_bytes if post == "A" else alone.b_bytes
        if step is None:
            continue
        start, after = (p.b_bytes, p.a_bytes) if post == "A" else (p.a_bytes, p.b_bytes)
        return (cn.SizingModesDiffer(post, p.rank, p.rank_b, step, start, after),)
    return ()


def _keyed(r: RankLedger | None) -> dict[str, tuple[Phase, int]]:
    out: dict[str, tuple[Phase, int]] = {}
    if r is None:
        return out
    for p in r.phases:
        k = family_key(p.key)
        n = 2
        while k in out:  # a repeated capture of the same family
            k = f"{family_key(p.key)}#{n}"
            n += 1
        out[k] = (p, p.delta_bytes)
    return out


def _same_inputs(a: LaunchRef, b: LaunchRef) -> bool:
    """The same launch of the same files (standard input is never the same twice)."""
    if a.index != b.index or "-" in a.paths or "-" in b.paths:
        return False
    return sorted(os.path.realpath(p) for p in a.paths) == sorted(
        os.path.realpath(p) for p in b.paths
    )


def diff_launches(
    a: Launch,
    ref_a: LaunchRef,
    b: Launch,
    ref_b: LaunchRef,
    allow: Sequence[str] = (),
    slope: bool = True,
) -> Diff:
    """Compare two launches; always compares. A slope is fitted when they differ in the graph
    batch sizes and in nothing else memory-relevant that `allow` does not name; otherwise
    `slope_note` says why there is none (which keys)."""
    labels = (ref_a.label, ref_b.label)
    cmp = compare_args((a, b), labels, allow)
    la, lb = build_ledger(a), build_ledger(b)
    ma, mb = era_markers(a), era_markers(b)
    outcomes = verdicts(a, b)
    markers, unreached = unreached_markers(
        tuple(Marker(n, (ma.get(n, "-"), mb.get(n, "-"))) for n in MARKER_NAMES), outcomes
    )
    cmp, note, found, notes = _slope_part((a, b), labels, cmp, allow, slope, (la, lb))
    moved = {
        x: y
        for x, y in rank_map([r.label for r in a.ranks], [r.label for r in b.ranks]).items()
        if x != y
    }
    if moved:
        same, differ, one = pairing(tuple(moved.items()))
        sizes = tuple(
            (c.key, c.values[0], c.values[1])
            for c in cmp.changed
            if c.key in ("tp_size", "dp_size", "ep_size", "pp_size")
        )
        notes.append(cn.RanksMatched(tuple(moved.items()), same, differ, one, sizes))
    for k in allow:
        if k not in {c.key for c in cmp.changed} and k not in {c.key for c in cmp.ignored}:
            notes.append(cn.AllowDiffUnused(k))
    headlines: list[cn.Note] = []
    if _same_inputs(ref_a, ref_b):
        headlines.append(cn.SameLaunch(ref_a.index))
    models = (_model_name(a), _model_name(b))
    if _models_differ(a, b):
        ta, tb = _model_type(a), _model_type(b)
        headlines.append(cn.DifferentModels(models[0], models[1], ta if ta and ta == tb else None))
    gpu = next((m for m in mismatches(a, b) if m.aspect is Aspect.GPU), None)
    if gpu is not None:
        headlines.append(cn.DifferentGpus(gpu))
    headlines.extend(uninitialized_weights(a, b, _models_differ(a, b)))
    eras = (EraGuess(era_of(ma), printed_on(a)), EraGuess(era_of(mb), printed_on(b)))
    if wording_differs(markers):
        headlines.append(cn.DifferentWording(*eras))
    phases = _phase_changes(la, lb)
    wa = [p for p in phases if p.key == "target_weights" and p.change_bytes]
    first = wa[0] if wa and wa[0].rank == phases[0].rank else None
    why_w = weights_cause(a, b, first.rank, (first.a_bytes, first.b_bytes)) if first else None
    if found and any(abs(p.change_bytes or 0) > DIFFERENCE_RESOLUTION_BYTES for p in wa):
        notes.append(cn.WeightsDiffer())
    graphs = graph_changes(a, b)
    assumptions: tuple[cn.Note, ...] = (
        cn.GBIsGiB(),
        cn.PhasesMatchedByKey(),
        cn.PhaseValueIsDrop(),
    )
    return Diff(
        ref_a,
        ref_b,
        cmp,
        markers,
        eras,
        tuple(phases),
        kv_change(a, la, b, lb),
        tuple(graphs),
        tuple(found),
        note,
        tuple(notes) + tuple(like_with_like(graphs)),
        assumptions + (slope_assumptions(found) if found else ()),
        tuple(headlines),
        models,
        (env := env_changes(a, b)),
        _sizing_modes(phases) + ((why_w,) if why_w is not None else ()),
        first_bucket_causes(graphs, env, cmp),
        outcomes,
        (end_state(a, la, outcomes[0]), end_state(b, lb, outcomes[1])),
        unreached,
    )


def _slope_part(
    pair: tuple[Launch, Launch],
    labels: tuple[str, str],
    cmp: ArgsComparison,
    allow: Sequence[str],
    slope: bool,
    ledgers: tuple[LaunchLedger, LaunchLedger],
) -> tuple[ArgsComparison, cn.SlopeNote | None, list[Slope], list[cn.Note]]:
    """The slope, or why there is none, with its notes; ``cmp`` with mem_fraction_static set
    aside where no capture list was cut to the request pool (compare.mfs_aside)."""
    a, b = pair
    notes: list[cn.Note] = []
    if not slope:
        return cmp, cn.SlopeNotAsked(), [], notes
    if cmp.missing:
        return cmp, cn.SlopeNoArgs(tuple(cmp.missing)), [], notes
    if not cmp.varied:
        return cmp, same_sizes(pair), [], notes
    if "model_path" not in allow and (
        across := slope_across_models(pair, labels, confounder_parts(cmp, 4))
    ):
        return cmp, across, [], notes
    cmp, aside = set_mfs_aside(pair, labels, cmp)
    if cmp.confounders:
        parts = tuple(confounder_parts(cmp, 4))
        return cmp, cn.SlopeConfounded(parts, mfs_hint(pair, cmp)), [], notes
    found, why = slopes(pair, labels)
    notes.extend((aside,) if aside is not None else ())
    notes.extend(why)
    defaults = (ledgers[0].default_mfs, ledgers[1].default_mfs)
    if (no_reserve := reserve_not_compared(found, defaults, pair)) is not None:
        notes.append(no_reserve)
    return cmp, (None if found else cn.SlopeNoRows()), found, notes


def _model_type(launch: Launch) -> str | None:
    """The architecture the main rank's Load weight end line names (e.g. Qwen2ForCausalLM)."""
    return identity(launch).model_type


def _model_name(launch: Launch) -> str | None:
    path = launch.args.get("model_path")
    kind = _model_type(launch)
    if isinstance(path, str) and path:
        return f"{path} ({kind})" if kind else path
    return kind


def _models_differ(a: Launch, b: Launch) -> bool:
    """The one rule of logmem.compare.comparable (architecture, model folder's name)."""
    return models_differ(identity(a), identity(b))
