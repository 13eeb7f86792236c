"""Graph memory per row: straight lines through the captures of launches that differ in max bs.

``slopes(launches)`` fits, per (rank, graph family) captured in every launch, the largest
bucket (and the static buffers) against rows = largest captured size x tokens per request,
and sets SGLang's own graph-reserve heuristic beside the measured growth. ``fit_launches`` is
``logmem fit``: the same over two or more launches, refused when anything else differs.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from logmem.analysis.default_mfs import launch_default_mfs
from logmem.compare import notes as cn
from logmem.compare.args import (
    ArgsComparison,
    compare_args,
    confounder_message,
    confounder_parts,
    graph_max_bs,
)
from logmem.compare.comparable import Aspect, Mismatch, mismatches
from logmem.compare.diff_mfs import mfs_not_all_derived, reserve_floor_binds
from logmem.compare.load import LaunchRef
from logmem.compare.mfs_aside import set_mfs_aside
from logmem.compare.points import GraphPoint, graph_points, main_point, rank_map
from logmem.errors import FitError, NoSlopeError
from logmem.frozen import frozen
from logmem.model.records import Launch
from logmem.sglang.default_mfs import MfsEra, Rule
from logmem.sglang.eras import family_key
from logmem.sglang.rules import (
    DIFFERENCE_RESOLUTION_GIB,
    DP_ATTENTION_LARGE_BS,
    graph_reserve_mib_per_bs,
)
from logmem.units import GIB

# A bucket cost or a static-buffer size is a difference of two printed readings: every error
# bound below uses its resolution.
POINT_ERROR_GIB = DIFFERENCE_RESOLUTION_GIB

# --- straight lines ---------------------------------------------------------------------


@frozen
class Line:
    """y = intercept + slope x rows, fitted by least squares (exact through two points).

    Errors are worst-case bounds from printing: every y is off by at most e = POINT_ERROR_GIB,
    so |d slope| <= e x sum|x_i - mean x| / sum (x_i - mean x)^2 (two points: 2e / |x_B - x_A|)
    and |d intercept| <= e x sum_i |1/n - mean x (x_i - mean x) / sum (x - mean x)^2|.
    """

    mib_per_row: float
    intercept_gib: float
    mib_per_row_error: float
    intercept_error_gib: float
    residuals_gib: tuple[float, ...]
    stderr_mib_per_row: float | None  # from the residuals, three or more launches


def fit_line(xs: Sequence[int], ys_bytes: Sequence[int]) -> Line:
    """Ordinary least squares in GiB; pure Python."""
    n = len(xs)
    ys = [y / GIB for y in ys_bytes]
    mx = sum(xs) / n
    my = sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        raise FitError("every launch captured the same largest size: no slope can be fitted")
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx  # GiB per row
    intercept = my - slope * mx
    resid = tuple(y - (intercept + slope * x) for x, y in zip(xs, ys))
    e = POINT_ERROR_GIB
    slope_err = e * sum(abs(x - mx) for x in xs) / sxx
    icpt_err = e * sum(abs(1 / n - mx * (x - mx) / sxx) for x in xs)
    stderr = None
    if n >= 3:
        stderr = math.sqrt(sum(r * r for r in resid) / (n - 2) / sxx) * 1024
    return Line(slope * 1024, intercept, slope_err * 1024, icpt_err, resid, stderr)


@frozen
class Heuristic:
    """SGLang's graph reserve per unit of max bs against the measured growth.

    The reserve (max bs x MiB per bs) is meant to cover all graph memory, so the growth it is
    set against is the capture total's (the capture end's mem usage) per unit of max bs, and
    ``sizes`` / ``total_bytes`` give the absolute figures: what it reserves at each launch's
    max bs against what the capture used there."""

    mib_per_bs: float
    terms: cn.HeuristicTerms
    measured_mib_per_bs: float
    measured_terms: cn.MeasuredGrowth
    sizes: tuple[int, ...] = ()  # each launch's largest captured size
    total_bytes: tuple[int, ...] = ()  # each launch's capture total (mem usage)

    @property
    def ratio(self) -> float:
        return self.measured_mib_per_bs / self.mib_per_bs


def heuristic_mib_per_bs(
    args: Mapping[str, Any], max_bs: int | None
) -> tuple[float, cn.HeuristicTerms]:
    """SGLang's graph reserve per unit of max bs (rules.graph_reserve_mib_per_bs) and its terms."""
    dp = args.get("dp_size")
    dp_attention = bool(args.get("enable_dp_attention")) and isinstance(dp, int)
    dp_size = dp if dp_attention and isinstance(dp, int) else None
    large = dp_size is not None and max_bs is not None and max_bs > DP_ATTENTION_LARGE_BS
    terms = cn.HeuristicTerms(dp_size, large)
    return graph_reserve_mib_per_bs(dp_attention, dp_size, max_bs), terms


@frozen
class Slope:
    graph: str
    rank: str
    basis: str  # "largest bucket" | "capture total"
    rows: tuple[int, ...]
    rows_source: cn.RowsSource
    rows_per_bs: int | None
    sizes: tuple[int | None, ...]
    largest_bytes: tuple[int, ...] | None
    static_bytes: tuple[int, ...] | None
    total_bytes: tuple[int | None, ...]
    line: Line  # on the basis: largest bucket, or the capture total when no bucket readings
    static: Line | None
    heuristic: Heuristic | None


def reserve_rule_in_force(launches: Sequence[Launch]) -> bool:
    """Whether SGLang's graph reserve per unit of max bs is set beside the measured growth:
    every launch is of a reserve-formula era (analysis.default_mfs: the rule is the reserve, or
    unknown in era b / c), and not every launch is known to have passed the value. It is then
    what SGLang's default would reserve, not a finding that these launches derived their value
    with it (diff_mfs says where they cannot all have). Era (a)'s tp table, an undated or
    mid-2025 launch, or both passing it: no such reserve to set the measured growth against;
    nor where the formula cannot give a launch's value (formula_excluded) or its 10 GiB floor
    binds on the launch's GPU (diff_mfs.reserve_floor_binds)."""
    ds = [launch_default_mfs(L) for L in launches]
    passed = [d is not None and (d.passed is True or d.rule is Rule.PASSED) for d in ds]
    reserve_era = all(
        d is not None
        and (
            d.rule is Rule.RESERVE
            or (d.rule not in (Rule.TP_TABLE, Rule.POST_CAPTURE) and d.era in (MfsEra.B, MfsEra.C))
        )
        for d in ds
    )
    # The formula gives the dump on no GPU holding P (the value was passed), or its floor binds
    # on this GPU (max bs does not move the reserve): no per-bs reserve to set beside a slope.
    floor_or_excluded = any(
        d is not None and (d.formula_excluded or reserve_floor_binds(d, L.args))
        for d, L in zip(ds, launches)
    )
    return reserve_era and not all(passed) and not floor_or_excluded


def _heuristic(points: Sequence[GraphPoint], args: Mapping[str, Any]) -> Heuristic | None:
    """SGLang's reserve against the capture total's growth per unit of max bs (a decode graph
    with a capture total and a largest size in every launch, two sizes at least)."""
    p0 = points[0]
    sizes = [p.largest_size for p in points]
    totals = [p.total_bytes for p in points]
    if not (p0.per_bs and p0.rows_per_bs) or None in sizes or None in totals:
        return None
    xs = [int(x) for x in sizes if x is not None]
    ys = [int(y) for y in totals if y is not None]
    if len(set(xs)) < 2:
        return None
    h, terms = heuristic_mib_per_bs(args, max(xs))
    grown = fit_line(xs, ys).mib_per_row  # x is max bs: MiB per unit of bs
    what = cn.MeasuredGrowth("capture total", False, 1)
    return Heuristic(h, terms, grown, what, tuple(xs), tuple(ys))


def _slope_for(
    points: Sequence[GraphPoint], args: Mapping[str, Any], reserve: bool = True
) -> Slope | None:
    rows = [p.rows for p in points]
    if any(r is None for r in rows) or len({r for r in rows}) < 2:
        return None
    xs = [int(r) for r in rows if r is not None]
    p0 = points[0]
    if all(p.has_buckets for p in points):
        basis = "largest bucket"
        ys = [p.largest_bytes for p in points]
    else:
        basis = "capture total"
        ys = [p.total_bytes for p in points]
    if any(y is None for y in ys):
        return None
    line = fit_line(xs, [int(y) for y in ys if y is not None])
    static = None
    st = [p.static_bytes for p in points]
    if basis == "largest bucket" and all(s is not None for s in st):
        static = fit_line(xs, [int(s) for s in st if s is not None])
    heur = _heuristic(points, args) if reserve else None
    return Slope(
        p0.graph,
        p0.rank,
        basis,
        tuple(xs),
        p0.rows_source,
        p0.rows_per_bs,
        tuple(p.largest_size for p in points),
        tuple(int(p.largest_bytes) for p in points if p.largest_bytes is not None)
        if basis == "largest bucket"
        else None,
        tuple(int(s) for s in st if s is not None) if static else None,
        tuple(p.total_bytes for p in points),
        line,
        static,
        heur,
    )


def slopes(
    launches: Sequence[Launch], labels: Sequence[str] = ()
) -> tuple[list[Slope], list[cn.Note]]:
    """A slope per (rank, graph family) captured in every launch with different rows; what
    SGLang's default would reserve for graphs beside it only where the launches are of the
    reserve formula's era and not all passed their value (reserve_rule_in_force); with
    ``labels``, a note where the launches' values cannot all be that default (diff_mfs)."""
    reserve = reserve_rule_in_force(launches)
    per_launch = [graph_points(L) for L in launches]
    first = [r.label for r in launches[0].ranks]
    index = []
    for L, pts in zip(launches, per_launch):
        back = {v: k for k, v in rank_map(first, [r.label for r in L.ranks]).items()}
        index.append({(back.get(p.rank, p.rank), family_key(p.graph)): p for p in pts})
    out: list[Slope] = []
    notes: list[cn.Note] = []
    keys = [(p.rank, family_key(p.graph)) for p in per_launch[0]]
    with_buckets = {k for k in keys if all(k in ix and ix[k].has_buckets for ix in index)}
    families_done: set[str] = set()
    for k in keys:
        if not all(k in ix for ix in index):
            notes.append(cn.NotInEveryLaunch(k[1], k[0]))
            continue
        pts = [ix[k] for ix in index]
        # Without bucket readings, fall back to the capture total on one rank per family
        # (the other ranks print the same end lines).
        if k not in with_buckets and (
            k[1] in families_done or any(kk[1] == k[1] for kk in with_buckets)
        ):
            continue
        s = _slope_for(pts, launches[0].args, reserve)
        if s is None:
            if len({p.rows for p in pts}) < 2:
                size = pts[0].largest_size
                same = size if all(p.largest_size == size for p in pts) else None
                notes.append(cn.SameLargestSize(k[1], k[0], same, pts[0].per_bs, len(pts)))
            continue
        families_done.add(k[1])
        out.append(s)
    if labels and (mixed := mfs_not_all_derived(launches, labels)) is not None:
        notes.append(mixed)
    return out, notes


def slope_assumptions(found: Sequence[Slope] = ()) -> tuple[cn.Note, ...]:
    """What the slopes rest on; SGLang's reserve is explained only when a slope sets it beside
    the measured growth."""
    out: tuple[cn.Note, ...] = (
        cn.RowsDefinition(),
        cn.BucketDefinition(),
        cn.DifferenceError(),
        cn.CaptureTotalSlopes(),
    )
    return out + ((cn.HeuristicReserve(),) if any(s.heuristic for s in found) else ())


# --- fit --------------------------------------------------------------------------------


def same_sizes(launches: Sequence[Launch]) -> cn.SlopeNotVaried:
    """Why launches that print the same CUDA-graph batch sizes give no slope, with the size:
    each one's largest captured batch size (its batch-sized graph on the rank that printed
    the bars), else server_args' resolved cuda_graph_max_bs."""
    sizes: list[int | None] = []
    from_args: list[bool] = []
    for L in launches:
        p = main_point(L)
        if p is not None and p.largest_size is not None:
            sizes.append(p.largest_size)
            from_args.append(p.rows_source.size_from_args)
        else:
            sizes.append(graph_max_bs(L.args))
            from_args.append(True)
    return cn.SlopeNotVaried(tuple(sizes), tuple(from_args))


def slope_across_models(
    launches: Sequence[Launch], labels: Sequence[str], also: Sequence[str] = ()
) -> cn.SlopeAcrossModels | None:
    """The refusal when some launch loads another model than the first (compare.comparable);
    ``also``: the confounding keys, said after the model."""
    for lab, L in zip(labels[1:], launches[1:]):
        m = next((x for x in mismatches(launches[0], L) if x.aspect is Aspect.MODEL), None)
        if m is not None:
            return cn.SlopeAcrossModels((labels[0], lab), m, tuple(also))
    return None


def mfs_hint(launches: Sequence[Launch], cmp: ArgsComparison) -> bool:
    """Whether to advise passing --mem-fraction-static: the launches' values differ, it is the
    one confounder left, and some launch's era derives its default from max bs (the reserve
    formula, or an undecided rule; not a passed value, era a's tp table or large-GPU rule, nor
    the GPU-tier rule: logmem.sglang.default_mfs, read through analysis.default_mfs)."""
    if cmp.confounders != ("mem_fraction_static",) or not any(
        c.key == "mem_fraction_static" for c in cmp.changed
    ):
        return False
    # Post-capture KV sizing's default has no graph term (mfs_versions.POST_CAPTURE_FORMS).
    fixed = (Rule.PASSED, Rule.TP_TABLE, Rule.LARGE_GPU, Rule.GPU_TIER, Rule.POST_CAPTURE)
    ds = [launch_default_mfs(L) for L in launches]
    return any(d is None or d.rule not in fixed for d in ds)


@frozen
class Fit:
    launches: tuple[LaunchRef, ...]
    args: ArgsComparison
    slopes: tuple[Slope, ...]
    notes: tuple[cn.Note, ...]
    assumptions: tuple[cn.Note, ...]


def fit_launches(
    launches: Sequence[Launch], refs: Sequence[LaunchRef], allow: Sequence[str] = ()
) -> Fit:
    """The slope by least squares over two or more launches that differ in the graph batch sizes."""
    if len(launches) < 2:
        raise FitError("fit needs at least two launches")
    labels = [r.label for r in refs]
    cmp = compare_args(launches, labels, allow)
    if cmp.missing:
        raise FitError(
            f"launch {', '.join(cmp.missing)} printed no server_args: cannot check that only the "
            "CUDA-graph batch sizes differ"
        )
    if not cmp.varied:
        raise NoSlopeError("no slope", (same_sizes(launches),), joined=False)
    parts = confounder_parts(cmp) if cmp.confounders else []
    if "model_path" not in allow and (across := slope_across_models(launches, labels, parts)):
        raise NoSlopeError("no slope", (across,), joined=False)
    cmp, aside = set_mfs_aside(launches, labels, cmp)
    if cmp.confounders:
        raise FitError(confounder_message(cmp, labels, mfs_hint(launches, cmp)))
    found, notes = slopes(launches, labels)
    notes[:0] = (aside,) if aside is not None else ()
    if any(s.rows_per_bs for s in found) and all(
        reserve_floor_binds(launch_default_mfs(L), L.args) for L in launches
    ):
        notes.append(cn.ReserveFloorBinds(tuple(labels)))
    if not found:
        raise NoSlopeError(
            "no graph family was captured with different largest sizes in every launch",
            tuple(notes),
            joined=True,
        )
    return Fit(
        tuple(refs),
        cmp,
        tuple(found),
        tuple(notes),
        slope_assumptions(found)[:2] + (cn.FitErrors(),) + slope_assumptions(found)[3:],
    )


# --- the slope a what-if uses ----------------------------------------------------------


@frozen
class GraphSlope:
    """What a change of max bs costs per row, and where that figure comes from."""

    mib_per_row: float  # largest bucket (or the capture total, for 'capture total' / heuristic)
    static_mib_per_row: float | None
    source: cn.SlopeSource
    per_bs: bool = False  # heuristic: MiB per unit of bs, not per row
    # The printing bounds of a measured slope (slope.Line), MiB per row; None: not known (given
    # or SGLang's heuristic).
    mib_per_row_error: float | None = None
    static_mib_per_row_error: float | None = None


def slope_from_fit(
    found: Sequence[Slope],
    family: str | None,
    launches: Sequence[str] = (),
    differs: Sequence[Mismatch] = (),
) -> GraphSlope | None:
    """Pick the measured slope for the graph family whose max bs changes (``launches``: the
    labels of the launches it was measured on, ``differs``: how they differ from the launch it
    prices), with its printing bounds; None when no slope is of that family."""
    usable = [s for s in found if s.rows_per_bs is not None]
    if family is None:
        s = usable[0] if usable else None
    else:  # the same family under any era's name (E7 renamed decode 'target decode')
        s = next((x for x in usable if family_key(x.graph) == family_key(family)), None)
    if s is None:
        return None
    static = s.static.mib_per_row if s.static else None
    err = s.line.mib_per_row_error
    src = cn.MeasuredSlope(
        s.graph, s.rank, s.basis, s.rows[0], s.rows[-1], tuple(launches), err, tuple(differs)
    )
    return GraphSlope(
        s.line.mib_per_row,
        static,
        src,
        mib_per_row_error=err,
        static_mib_per_row_error=s.static.mib_per_row_error if s.static else None,
    )


def given_slope(mib_per_row: float, static_mib_per_row: float | None) -> GraphSlope:
    """A slope the user gives (``--mib-per-row M [--static-mib-per-row S]``)."""
    return GraphSlope(
        mib_per_row, static_mib_per_row, cn.GivenSlope(mib_per_row, static_mib_per_row)
    )
