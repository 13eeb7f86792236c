"""``logmem diff``: what changed from launch A to launch B.

The server_args that differ, the SGLang wording each log used, the change of every phase per
rank, the KV tokens gained or lost and the terms of SGLang's rule that account for them, the
graph split per family and per bucket, and, when the launches differ only in the CUDA-graph
batch sizes, the slope of graph memory per row (logmem.compare.slope). The graph and bucket
comparison lives in logmem.compare.diff_graphs, the causes said under the tables in
logmem.compare.diff_causes.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from logmem.analysis.attribution import LaunchLedger, RankLedger, Sizing, build_ledger
from logmem.analysis.ledger import Phase
from logmem.analysis.sizing import common_range, full_pool, line_cell, range_gap, roundest_cell
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
from logmem.compare.load import LaunchRef
from logmem.compare.mfs_aside import set_mfs_aside
from logmem.compare.points import rank_map
from logmem.compare.replay import bytes_per_token
from logmem.compare.slope import Slope, mfs_hint, slope_across_models, slope_assumptions, slopes
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
from logmem.sglang.rules import DIFFERENCE_RESOLUTION_BYTES, mfs_step_bytes, page_size


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

    @property
    def change_bytes(self) -> int | None:
        return None if self.a_bytes is None or self.b_bytes is None else self.b_bytes - self.a_bytes


@frozen
class KVTerm:
    name: cn.TermKind
    bytes: int | None  # change of the KV budget (rest) this term accounts for
    tokens: int


@frozen
class KVChange:
    tokens: tuple[int | None, int | None]
    tokens_source: str
    bytes_per_token: tuple[int | None, int | None]
    # The rule's inputs (None on a side that printed no server_args: printed_kv_change).
    mem_fraction_static: tuple[float | None, float | None]
    pre_load_bytes: tuple[int | None, int | None]
    after_weights_bytes: tuple[int | None, int | None]
    rest_bytes: tuple[int | None, int | None]
    terms: tuple[KVTerm, ...]
    terms_note: cn.NoTermSplit | None = None  # why there are no terms
    # Bytes per token each launch's printed sizes allow (Sizing.bytes_per_token_range).
    bytes_per_token_range: tuple[tuple[int, int] | None, tuple[int, int] | None] = (None, None)
    common_range: tuple[int, int] | None = None  # what both allow (None: unknown or disjoint)
    cell_bytes: int | None = None  # the one cell size the terms use (within both ranges)

    @property
    def same_cell(self) -> bool | None:
        """True: the printed sizes allow one cell size for both; False: they cannot be the
        same; None: a range is unknown (the point values are then compared)."""
        ra, rb = self.bytes_per_token_range
        if ra is not None and rb is not None:
            return self.common_range is not None
        a, b = self.bytes_per_token
        return None if a is None or b is None else a == b

    @property
    def apart_at_least(self) -> int | None:
        """Bytes per token by which the two cells differ at least (ranges known, disjoint)."""
        ra, rb = self.bytes_per_token_range
        return range_gap(ra, rb) if ra is not None and rb is not None else None

    @property
    def change_tokens(self) -> int | None:
        a, b = self.tokens
        return None if a is None or b is None else b - a


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


def _tokens(L: Launch, sz: Sizing | None) -> tuple[int | None, str]:
    """The launch's KV tokens: the summary's max_total_num_tokens, else the KV line's #tokens.
    The KV line is read from the sizing when there is one, else from the printed pool itself:
    a launch without server_args (016) has no sizing, but its KV line still counts its tokens."""
    if L.summary is not None and L.summary.max_total_num_tokens is not None:
        return L.summary.max_total_num_tokens, "max_total_num_tokens"
    if sz is not None and sz.kv_tokens is not None:
        return sz.kv_tokens, "KV line #tokens"
    first = next((r for r in L.ranks if r.target and r.target.kv_pools), None)
    main = full_pool(first.target) if first is not None and first.target is not None else None
    if main is not None and main.tokens is not None:
        return main.tokens, "KV line #tokens"
    return None, "not printed"


def kv_change(a: Launch, la: LaunchLedger, b: Launch, lb: LaunchLedger) -> KVChange | None:
    """KV tokens gained or lost, split into the terms of SGLang's rule.

    rest = after_weights - P (1 - mfs) = P mfs - (P - after_weights), so exactly
    d rest = mfs_A dP + P_B d mfs - d(P - after_weights); tokens = rest / bytes per token.
    mfs is the value the rule ran with (Sizing.rule_mfs: the flag through SGLang's own
    scaling), so the terms add up to the change of the two budgets.
    """
    sa, sb = la.sizing, lb.sizing
    if sa is None or sb is None:
        return printed_kv_change(a, sa, b, sb)
    ta, src_a = _tokens(a, sa)
    tb, src_b = _tokens(b, sb)
    ba, bb = bytes_per_token(sa), bytes_per_token(sb)
    ra, rb = sa.bytes_per_token_range, sb.bytes_per_token_range
    common = common_range(ra, rb)
    cell = ba
    if common is not None:  # one cell size both printed pools allow: the one the terms use
        lo, hi = common
        inside = [x for x in (ba, bb) if x is not None and lo <= x <= hi]
        cell = inside[0] if inside else (roundest_cell(common) or (lo + hi) // 2)
    terms: list[KVTerm] = []
    # Terms in tokens only add up when both pools count the same cells under the same rule.
    caps = [
        x if isinstance(x := L.args.get("max_total_tokens"), int) and x > 0 else None
        for L in (a, b)
    ]
    if ra is not None and rb is not None:
        bpt_differ = (ba or 0, bb or 0) if common is None else None
    else:
        bpt_differ = (ba, bb) if ba and bb and ba != bb else None
    caps_differ = (caps[0], caps[1]) if caps[0] != caps[1] else None
    # One launch sizes its pool after capture from the free memory then (SGLang 0.5.17+,
    # srt/model_executor/model_runner_components/kv_pool_runtime.py), the other at start-up.
    post = None
    if (sa.post_capture is None) != (sb.post_capture is None):
        post = "A" if sa.post_capture is not None else "B"
    terms_note = None
    if bpt_differ or caps_differ or post:
        ranges = (ra, rb) if bpt_differ and ra is not None and rb is not None else None
        terms_note = cn.NoTermSplit(bpt_differ, caps_differ, ranges, post_capture=post)
    elif cell and bb:
        d_p = sb.pre_load_bytes - sa.pre_load_bytes
        w_a = sa.pre_load_bytes - sa.after_weights_bytes
        w_b = sb.pre_load_bytes - sb.after_weights_bytes
        t_p = round(sa.rule_mfs * d_p)
        t_m = mfs_step_bytes(sb.pre_load_bytes, sb.rule_mfs - sa.rule_mfs)
        t_w = -(w_b - w_a)
        for name, n in (
            (cn.TermKind.PRE_LOAD, t_p),
            (cn.TermKind.MFS, t_m),
            (cn.TermKind.WEIGHTS, t_w),
        ):
            terms.append(KVTerm(name, n, int(n / cell)))
        if ta is not None and tb is not None:
            rest = (tb - ta) - sum(t.tokens for t in terms)
            terms.append(KVTerm(cn.TermKind.OTHER, None, rest))
    return KVChange(
        (ta, tb),
        src_a if src_a == src_b else f"{src_a} / {src_b}",
        (ba, bb),
        (sa.mem_fraction_static, sb.mem_fraction_static),
        (sa.pre_load_bytes, sb.pre_load_bytes),
        (sa.after_weights_bytes, sb.after_weights_bytes),
        (sa.rest_bytes, sb.rest_bytes),
        tuple(terms),
        terms_note,
        (ra, rb),
        common,
        cell if common is not None or (ba is not None and ba == bb) else None,
    )


def _printed_cell(L: Launch) -> tuple[int | None, tuple[int, int] | None]:
    """The full KV pool's bytes per token from its printed line alone (analysis.sizing.line_cell):
    the round cell print rounding allows, else the ratio, and the range."""
    first = next((r for r in L.ranks if r.target and r.target.kv_pools), None)
    main = full_pool(first.target) if first is not None and first.target is not None else None
    if main is None:
        return None, None
    tokens = main.tokens or (L.summary.max_total_num_tokens if L.summary else None)
    got = line_cell(main, tokens, page_size(L.args))
    return (round(got[0]), got[1]) if got is not None else (None, None)


def printed_kv_change(
    a: Launch, sa: Sizing | None, b: Launch, sb: Sizing | None
) -> KVChange | None:
    """The printed pools of two launches one of which printed no server_args: tokens and bytes
    per token as logged, no split into the rule's terms (its mem_fraction_static is unknown)."""
    (ta, src_a), (tb, src_b) = _tokens(a, sa), _tokens(b, sb)
    if ta is None and tb is None:
        return None
    (ba, ra), (bb, rb) = _printed_cell(a), _printed_cell(b)
    common = common_range(ra, rb)
    # Which side lacks the rule's inputs, and whether it printed a server_args line at all.
    lacking = tuple(
        (lab, L.server_args is not None)
        for lab, sz, L in (("A", sa, a), ("B", sb, b))
        if sz is None
    )
    note = cn.NoTermSplit(None, None, None, lacking)

    def side(sz: Sizing | None) -> tuple[float | None, int | None, int | None, int | None]:
        if sz is None:
            return None, None, None, None
        return sz.mem_fraction_static, sz.pre_load_bytes, sz.after_weights_bytes, sz.rest_bytes

    xa, xb = side(sa), side(sb)
    return KVChange(
        (ta, tb),
        src_a if src_a == src_b else f"{src_a} / {src_b}",
        (ba, bb),
        (xa[0], xb[0]),
        (xa[1], xb[1]),
        (xa[2], xb[2]),
        (xa[3], xb[3]),
        (),
        note,
        (ra, rb),
        common,
        None,
    )


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
        other = label_b if label_b is not None and label_b != label_a else None
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
            out.append(
                PhaseChange(shown, k, ref[0], a[1] if a else None, b[1] if b else None, other)
            )
    return out


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
    markers = tuple(Marker(n, (ma.get(n, "-"), mb.get(n, "-"))) for n in MARKER_NAMES)
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
        return cmp, cn.SlopeNotVaried(), [], notes
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
