"""View models of ``logmem diff``, ``fit`` and ``whatif``: every figure a report shows, decided once.

``diff_view`` and ``fit_view`` (and report.compare.whatif_view's ``whatif_view``) turn logmem.compare's
Diff, Fit and WhatIf into frozen records holding the
numbers as the reports print them (GiB to two decimals, slopes to three), the strings as the
log wrote them, and None where a figure is unknown. The text, Markdown and HTML layouts
(report.compare.layout) and the JSON document (report.compare.jsonout) read only these, so the
formats cannot disagree.
"""

from __future__ import annotations

from typing import Any

from logmem.compare.args import ArgChange, ArgsComparison
from logmem.compare.diff import Diff
from logmem.compare.diff_graphs import GraphChange
from logmem.compare.load import LaunchRef
from logmem.compare.points import GraphPoint
from logmem.compare.slope import Fit, Line, Slope
from logmem.frozen import frozen
from logmem.report.causes import phase_name
from logmem.report.compare.notes import note_text, texts
from logmem.report.compare.outcome_words import (
    end_json,
    end_rows,
    end_source,
    outcome_json,
    outcome_line,
    stopped_text,
    unreached_text,
)
from logmem.report.compare.words import (
    era_text,
    growth_text,
    heuristic_terms_text,
    rows_text,
    term_text,
)
from logmem.report.input_notes import ref_notes, stopped_json
from logmem.units import MIB, gib

DIFF_SCHEMA = "logmem.diff/1"
FIT_SCHEMA = "logmem.fit/1"


def rounded(x: float | None, nd: int = 3) -> float | None:
    """A float as reports show it; never "-0.0"."""
    if x is None:
        return None
    v = round(x, nd)
    return 0.0 if v == 0 else v


def jsonable(v: Any) -> Any:
    """A server_args value as JSON can hold it (anything else becomes its str)."""
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, dict):
        return {str(k): jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [jsonable(x) for x in v]
    return str(v)


# --- shared parts -----------------------------------------------------------------------------


@frozen
class LaunchView:
    label: str
    paths: tuple[str, ...]
    launch: int
    name: str
    era_guess: str | None = None  # diff only
    model: str | None = None  # diff only: model_path (architecture)
    stopped: tuple[dict[str, Any], ...] = ()  # its inputs read in part (report.input_notes)
    outcome: dict[str, Any] | None = None  # diff only: analyze's verdict (outcome_words)
    end_state: dict[str, Any] | None = None  # diff only: where its start-up ended


def launch_view(
    ref: LaunchRef,
    era: str | None = None,
    model: str | None = None,
    ended: tuple[dict[str, Any], dict[str, Any]] | None = None,
) -> LaunchView:
    """``ended``: diff's (outcome, end state) of the launch."""
    stopped = tuple(stopped_json(ref.stopped))
    o, e = ended if ended is not None else (None, None)
    return LaunchView(ref.label, ref.paths, ref.index, ref.name, era, model, stopped, o, e)


@frozen
class ArgRow:
    key: str
    values: tuple[Any, ...]  # JSON-able, one per launch; None where a launch lacks the key


@frozen
class ArgsView:
    """The server_args comparison, the same in diff and fit."""

    changed: tuple[ArgRow, ...]
    varied: tuple[str, ...]
    allowed: tuple[str, ...]
    ignored: tuple[ArgRow, ...]
    only_in: tuple[tuple[str, tuple[str, ...]], ...]  # label -> keys only it prints
    one_sided: tuple[ArgRow, ...]
    missing: tuple[str, ...]  # labels of launches without a server_args line
    set_aside: tuple[str, ...] = ()  # differing keys a rule keeps from blocking the slope
    ignored_one_sided: tuple[str, ...] = ()  # one-sided keys that cannot change GPU memory
    elided: tuple[str, ...] = ()  # labels whose server_args line is elided with '...'


def _rows(changes: tuple[ArgChange, ...]) -> tuple[ArgRow, ...]:
    return tuple(ArgRow(c.key, tuple(jsonable(list(c.values)))) for c in changes)


def args_view(a: ArgsComparison) -> ArgsView:
    return ArgsView(
        _rows(a.changed),
        a.varied,
        a.allowed,
        _rows(a.ignored),
        a.only_in,
        _rows(a.one_sided),
        a.missing,
        a.set_aside,
        a.ignored_one_sided,
        a.elided,
    )


@frozen
class LineView:
    mib_per_row: float | None
    mib_per_row_error: float | None
    intercept_gib: float | None
    intercept_error_gib: float | None
    residuals_gib: tuple[float | None, ...] | None  # fit only
    mib_per_row_stderr: float | None  # fit only, three or more launches


def line_view(ln: Line, residuals: bool) -> LineView:
    return LineView(
        rounded(ln.mib_per_row),
        rounded(ln.mib_per_row_error),
        rounded(ln.intercept_gib),
        rounded(ln.intercept_error_gib),
        tuple(rounded(x, 4) for x in ln.residuals_gib) if residuals else None,
        rounded(ln.stderr_mib_per_row) if residuals else None,
    )


@frozen
class HeuristicView:
    sglang_mib_per_bs: float | None
    sglang_terms: str
    measured_mib_per_bs: float | None
    measured_terms: str
    ratio: float | None
    # At each launch's max bs: (size, what the reserve sets aside in MiB, the capture total in MiB).
    at_sizes: tuple[tuple[int, float, float], ...] = ()


@frozen
class SlopeView:
    graph: str
    rank: str
    basis: str  # "largest bucket" | "capture total"
    rows: tuple[int, ...]
    rows_source: str
    tokens_per_req: int | None
    largest_size: tuple[int | None, ...]
    largest_bucket_gib: tuple[float | None, ...] | None
    static_gib: tuple[float | None, ...] | None
    total_gib: tuple[float | None, ...]
    line: LineView
    static: LineView | None
    heuristic: HeuristicView | None
    with_residuals: bool  # fit: residuals and the standard error are shown

    @property
    def points_gib(self) -> tuple[float | None, ...]:
        """The y of each launch on the slope's basis."""
        if self.basis == "largest bucket" and self.largest_bucket_gib is not None:
            return self.largest_bucket_gib
        return self.total_gib


def slope_view(s: Slope, residuals: bool) -> SlopeView:
    h = s.heuristic
    return SlopeView(
        s.graph,
        s.rank,
        s.basis,
        s.rows,
        rows_text(s.rows_source),
        s.rows_per_bs,
        s.sizes,
        tuple(gib(b) for b in s.largest_bytes) if s.largest_bytes else None,
        tuple(gib(b) for b in s.static_bytes) if s.static_bytes else None,
        tuple(gib(b) for b in s.total_bytes),
        line_view(s.line, residuals),
        line_view(s.static, residuals) if s.static is not None else None,
        HeuristicView(
            rounded(h.mib_per_bs),
            heuristic_terms_text(h.terms),
            rounded(h.measured_mib_per_bs),
            growth_text(h.measured_terms),
            rounded(h.ratio, 2),
            tuple(
                (n, round(n * h.mib_per_bs, 1), round(t / MIB, 1))
                for n, t in zip(h.sizes, h.total_bytes)
            ),
        )
        if h is not None
        else None,
        residuals,
    )


# --- diff -------------------------------------------------------------------------------------


@frozen
class WordingRow:
    marker: str
    a: str
    b: str
    differs: bool


@frozen
class PhaseRow:
    rank: str
    rank_b: str | None
    key: str
    name: str
    a_gib: float | None
    b_gib: float | None
    change_gib: float | None
    not_comparable: str | None = None  # why the change is not given (a capture stopped)


@frozen
class KVTermRow:
    term: str
    gib: float | None
    tokens: int


@frozen
class KVView:
    tokens: tuple[int | None, int | None]
    tokens_source: str
    change_tokens: int | None
    bytes_per_token: tuple[int | None, int | None]
    mem_fraction_static: tuple[float | None, float | None]
    pre_load_gib: tuple[float | None, float | None]
    after_weights_gib: tuple[float | None, float | None]
    rest_gib: tuple[float | None, float | None]
    terms: tuple[KVTermRow, ...]
    terms_note: str | None
    bytes_per_token_range: tuple[tuple[int, int] | None, tuple[int, int] | None] = (None, None)
    common_range: tuple[int, int] | None = None
    same_cell: bool | None = None
    apart_at_least: int | None = None


@frozen
class PointView:
    """One capture's parts (GiB), or their changes from A to B."""

    largest_size: int | None
    rows: int | None
    static_gib: float | None
    largest_bucket_gib: float | None
    other_buckets_gib: float | None
    total_gib: float | None
    # No bs list, bars or rule in the log: the largest size is server_args' cuda_graph_max_bs.
    largest_size_from_args: bool = False
    # The rank printed no list: the largest size is this rank's printed list (same launch).
    largest_size_from_rank: str | None = None


@frozen
class BucketRow:
    size: int
    a_gib: float | None
    b_gib: float | None
    change_gib: float | None  # None: not like with like (first_in)
    first_in: str | None = None  # "A" / "B" / "both": whose capture of the graph began with it


@frozen
class GraphRow:
    rank: str
    rank_b: str | None
    graph: str
    a: PointView | None
    b: PointView | None
    change: PointView  # largest_size and rows stay None
    buckets: tuple[BucketRow, ...]
    bucket_note: str | None = None  # why some sizes show no change


@frozen
class DiffView:
    a: LaunchView
    b: LaunchView
    headlines: tuple[str, ...]
    args: ArgsView
    wording: tuple[WordingRow, ...]
    phases: tuple[PhaseRow, ...]
    kv: KVView | None
    graphs: tuple[GraphRow, ...]
    slopes: tuple[SlopeView, ...]
    slope_note: str | None
    notes: tuple[str, ...]
    assumptions: tuple[str, ...]
    schema: str = DIFF_SCHEMA
    # Communication variables the logs echoed, where they differ: (key, A, B, A's line, B's line).
    env: tuple[tuple[str, str | None, str | None, int | None, int | None], ...] = ()
    phase_causes: tuple[str, ...] = ()
    graph_causes: tuple[str, ...] = ()
    outcomes: tuple[str, ...] = ()  # 'A: <verdict>', 'B: <verdict>': said first
    unreached: str | None = None  # wording markers set aside (an unfinished start-up's)
    # (row, A, B, change) of where each start-up ended, and each side's sources.
    ends: tuple[tuple[str, Any, Any, Any], ...] = ()
    end_sources: tuple[str, str] = ("-", "-")


def _point(p: GraphPoint | None) -> PointView | None:
    if p is None:
        return None
    return PointView(
        p.largest_size,
        p.rows,
        gib(p.static_bytes),
        gib(p.largest_bytes),
        gib(p.other_bytes),
        gib(p.total_bytes),
        p.rows_source.size_from_args,
        p.rows_source.size_from_rank,
    )


def _change(a: int | None, b: int | None) -> float | None:
    return None if a is None or b is None else gib(b - a)


def _graph_row(g: GraphChange) -> GraphRow:
    a, b = g.a, g.b

    def change(attr: str) -> float | None:
        return _change(getattr(a, attr) if a else None, getattr(b, attr) if b else None)

    return GraphRow(
        g.rank,
        g.rank_b,
        g.graph,
        _point(a),
        _point(b),
        PointView(
            None,
            None,
            change("static_bytes"),
            change("largest_bytes"),
            change("other_bytes"),
            change("total_bytes"),
        ),
        tuple(
            BucketRow(x.size, gib(x.a_bytes), gib(x.b_bytes), gib(x.change_bytes), x.first_in)
            for x in g.buckets
        ),
        note_text(g.not_compared) if g.not_compared is not None else None,
    )


def _gib2(pair: tuple[int | None, int | None]) -> tuple[float | None, float | None]:
    return gib(pair[0]), gib(pair[1])


def diff_view(d: Diff) -> DiffView:
    vs, ends = d.outcomes, d.ends
    ended = (
        ((outcome_json(vs[0]), end_json(ends[0])), (outcome_json(vs[1]), end_json(ends[1])))
        if vs is not None and ends is not None
        else (None, None)
    )
    kv = None
    if d.kv is not None:
        k = d.kv
        kv = KVView(
            k.tokens,
            k.tokens_source,
            k.change_tokens,
            k.bytes_per_token,
            k.mem_fraction_static,
            _gib2(k.pre_load_bytes),
            _gib2(k.after_weights_bytes),
            _gib2(k.rest_bytes),
            tuple(KVTermRow(term_text(t.name), gib(t.bytes), t.tokens) for t in k.terms),
            note_text(k.terms_note) if k.terms_note is not None else None,
            k.bytes_per_token_range,
            k.common_range,
            k.same_cell,
            k.apart_at_least,
        )
    return DiffView(
        launch_view(d.a, era_text(d.eras[0]), d.models[0], ended[0]),
        launch_view(d.b, era_text(d.eras[1]), d.models[1], ended[1]),
        texts(d.headlines),
        args_view(d.args),
        tuple(WordingRow(m.name, m.values[0], m.values[1], m.differs) for m in d.markers),
        tuple(
            PhaseRow(
                p.rank,
                p.rank_b,
                p.key,
                phase_name(p.phase)
                + (f" ~ {phase_name(p.phase_b)}" if p.phase_b is not None else ""),
                gib(p.a_bytes),
                gib(p.b_bytes),
                gib(p.change_bytes),
                stopped_text(p),
            )
            for p in d.phases
        ),
        kv,
        tuple(_graph_row(g) for g in d.graphs),
        tuple(slope_view(s, residuals=False) for s in d.slopes),
        note_text(d.slope_note) if d.slope_note is not None else None,
        ref_notes((d.a, d.b)) + texts(d.notes),
        texts(d.assumptions),
        env=tuple((e.key, e.a, e.b, e.line_a, e.line_b) for e in d.env),
        phase_causes=texts(d.phase_causes),
        graph_causes=texts(d.graph_causes),
        outcomes=tuple(outcome_line(s, v) for s, v in zip("AB", vs, strict=True)) if vs else (),
        unreached=unreached_text(d.unreached),
        ends=tuple(end_rows(ends)) if ends is not None else (),
        end_sources=(end_source(ends[0]), end_source(ends[1])) if ends is not None else ("-", "-"),
    )


# --- fit --------------------------------------------------------------------------------------


@frozen
class FitView:
    launches: tuple[LaunchView, ...]
    args: ArgsView
    slopes: tuple[SlopeView, ...]
    notes: tuple[str, ...]
    assumptions: tuple[str, ...]
    schema: str = FIT_SCHEMA


def fit_view(f: Fit) -> FitView:
    return FitView(
        tuple(launch_view(r) for r in f.launches),
        args_view(f.args),
        tuple(slope_view(s, residuals=True) for s in f.slopes),
        ref_notes(f.launches) + texts(f.notes),
        texts(f.assumptions),
    )
