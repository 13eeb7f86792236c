"""JSON reporter of diff / fit / whatif: a view model as the versioned documents of docs/compare.md.

Schemas "logmem.diff/1", "logmem.fit/1" and "logmem.whatif/1": the keys and their order are
part of the contract (tests/golden/compare pins them), so each is written out here by name.
"""

from __future__ import annotations

from typing import Any

from logmem import __version__
from logmem.compare.diff import Diff
from logmem.compare.slope import Fit
from logmem.compare.whatif import WhatIf
from logmem.report import json_text
from logmem.report.compare.view import (
    ArgsView,
    DiffView,
    FitView,
    LaunchView,
    LineView,
    PointView,
    SlopeView,
)
from logmem.report.compare.views import View, view
from logmem.report.compare.whatif_view import PredictionView, UnfinishedView, WhatIfView


def _launch(v: LaunchView, diff: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {"label": v.label, "paths": list(v.paths), "launch": v.launch}
    out["name"] = v.name
    out["stopped"] = list(v.stopped)  # its inputs whose reading ended early (empty: none)
    if diff:
        out |= {"era_guess": v.era_guess, "model": v.model}
        out |= {"outcome": v.outcome, "end_state": v.end_state}
    return out


def _args(a: ArgsView) -> dict[str, Any]:
    return {
        "changed_args": {r.key: list(r.values) for r in a.changed},
        "varied_args": list(a.varied),
        "allowed_args": list(a.allowed),
        "set_aside_args": list(a.set_aside),
        "ignored_args": {r.key: list(r.values) for r in a.ignored},
        "only_in": {lab: list(keys) for lab, keys in a.only_in},
        "one_sided_args": {r.key: list(r.values) for r in a.one_sided},
        "ignored_one_sided": list(a.ignored_one_sided),
        "server_args_elided": list(a.elided),
    }


def _line(ln: LineView | None) -> dict[str, Any] | None:
    if ln is None:
        return None
    out: dict[str, Any] = {
        "mib_per_row": ln.mib_per_row,
        "mib_per_row_error": ln.mib_per_row_error,
        "intercept_gib": ln.intercept_gib,
        "intercept_error_gib": ln.intercept_error_gib,
    }
    if ln.residuals_gib is not None:
        out["residuals_gib"] = list(ln.residuals_gib)
        out["mib_per_row_stderr"] = ln.mib_per_row_stderr
    return out


def _list(xs: tuple[Any, ...] | None) -> list[Any] | None:
    return None if xs is None else list(xs)


def slope_json(s: SlopeView) -> dict[str, Any]:
    ln = s.line
    out: dict[str, Any] = {
        "graph": s.graph,
        "rank": s.rank,
        "basis": s.basis,
        "rows": list(s.rows),
        "rows_source": s.rows_source,
        "tokens_per_req": s.tokens_per_req,
        "largest_size": list(s.largest_size),
        "largest_bucket_gib": _list(s.largest_bucket_gib),
        "static_gib": _list(s.static_gib),
        "total_gib": list(s.total_gib),
        "mib_per_row": ln.mib_per_row,
        "intercept_gib": ln.intercept_gib,
        "mib_per_row_error": ln.mib_per_row_error,
        "intercept_error_gib": ln.intercept_error_gib,
        "static": _line(s.static),
        "heuristic": None,
    }
    if ln.residuals_gib is not None:
        out["residuals_gib"] = list(ln.residuals_gib)
        out["mib_per_row_stderr"] = ln.mib_per_row_stderr
    if s.heuristic is not None:
        h = s.heuristic
        out["heuristic"] = {
            "sglang_mib_per_bs": h.sglang_mib_per_bs,
            "sglang_terms": h.sglang_terms,
            "measured_mib_per_bs": h.measured_mib_per_bs,
            "measured_terms": h.measured_terms,
            "ratio": h.ratio,
            "at_sizes": [
                {"max_bs": n, "reserve_mib": r, "capture_total_mib": t} for n, r, t in h.at_sizes
            ],
        }
    return out


def _point(p: PointView | None) -> dict[str, Any] | None:
    if p is None:
        return None
    return {
        "largest_size": p.largest_size,
        "largest_size_source": (
            f"list of {p.largest_size_from_rank}"
            if p.largest_size_from_rank is not None
            else "cuda_graph_max_bs"
            if p.largest_size_from_args
            else None
        ),
        "rows": p.rows,
        "static_gib": p.static_gib,
        "largest_bucket_gib": p.largest_bucket_gib,
        "other_buckets_gib": p.other_buckets_gib,
        "total_gib": p.total_gib,
    }


def diff_json(d: DiffView) -> dict[str, Any]:
    kv = None
    if d.kv is not None:
        k = d.kv
        kv = {
            "tokens": list(k.tokens),
            "tokens_source": k.tokens_source,
            "change_tokens": k.change_tokens,
            "bytes_per_token": list(k.bytes_per_token),
            "mem_fraction_static": list(k.mem_fraction_static),
            "pre_load_gib": list(k.pre_load_gib),
            "after_weights_gib": list(k.after_weights_gib),
            "rest_gib": list(k.rest_gib),
            "terms": [{"term": t.term, "gib": t.gib, "tokens": t.tokens} for t in k.terms],
            "terms_note": k.terms_note,
            "bytes_per_token_range": [_list(r) for r in k.bytes_per_token_range],
            "common_bytes_per_token_range": _list(k.common_range),
            "same_bytes_per_token": k.same_cell,
            "bytes_per_token_apart_at_least": k.apart_at_least,
        }
    graphs = [
        {
            "rank": g.rank,
            "rank_b": g.rank_b,
            "graph": g.graph,
            "a": _point(g.a),
            "b": _point(g.b),
            "change": {
                "static_gib": g.change.static_gib,
                "largest_bucket_gib": g.change.largest_bucket_gib,
                "other_buckets_gib": g.change.other_buckets_gib,
                "total_gib": g.change.total_gib,
            },
            "buckets": [
                {
                    "size": x.size,
                    "a_gib": x.a_gib,
                    "b_gib": x.b_gib,
                    "change_gib": x.change_gib,
                    "first_in": x.first_in,
                }
                for x in g.buckets
            ],
            "buckets_note": g.bucket_note,
        }
        for g in d.graphs
    ]
    return {
        "schema": d.schema,
        "logmem": __version__,
        "a": _launch(d.a, diff=True),
        "b": _launch(d.b, diff=True),
        "headlines": list(d.headlines),
        **_args(d.args),
        "server_args_missing": list(d.args.missing),
        "wording": [
            {"marker": m.marker, "a": m.a, "b": m.b, "differs": m.differs} for m in d.wording
        ],
        "wording_not_compared": d.unreached,
        "phases": [
            {
                "rank": p.rank,
                "rank_b": p.rank_b,
                "key": p.key,
                "name": p.name,
                "a_gib": p.a_gib,
                "b_gib": p.b_gib,
                "change_gib": p.change_gib,
                "not_comparable": p.not_comparable,
            }
            for p in d.phases
        ],
        "env_changed": [
            {"key": k, "a": a, "b": b, "line_a": la, "line_b": lb} for k, a, b, la, lb in d.env
        ],
        "phase_causes": list(d.phase_causes),
        "kv": kv,
        "graphs": graphs,
        "graph_causes": list(d.graph_causes),
        "slopes": [slope_json(s) for s in d.slopes],
        "slope_note": d.slope_note,
        "notes": list(d.notes),
        "assumptions": list(d.assumptions),
    }


def fit_json(f: FitView) -> dict[str, Any]:
    return {
        "schema": f.schema,
        "logmem": __version__,
        "launches": [_launch(v) for v in f.launches],
        **_args(f.args),
        "slopes": [slope_json(s) for s in f.slopes],
        "notes": list(f.notes),
        "assumptions": list(f.assumptions),
    }


def _prediction(p: PredictionView) -> dict[str, Any]:
    return {
        "mem_fraction_static": p.mem_fraction_static,
        "largest_bs": p.largest_bs,
        "rest_gib": p.rest_gib,
        "kv_tokens": p.kv_tokens,
        "kv_gib": p.kv_gib,
        "pool_change_gib": p.pool_change_gib,
        "req_table_change_gib": p.req_table_change_gib,
        "max_running_requests": p.max_running_requests,
        "graph_gib": p.graph_gib,
        "graph_change_gib": p.graph_change_gib,
        "headroom_gib": p.headroom_gib,
        "headroom_rank": p.headroom_rank,
        "graph_bound": p.graph_bound,
        "headroom_bound": p.headroom_bound,
        "graph_error_gib": p.graph_error_gib,
        "crashed": p.crashed,
        "feasible": p.feasible,
        "feasible_label": p.feasible_label,
        "pools": [
            {"name": x.name, "gib": x.gib, "tokens": x.tokens, "in_budget": x.in_budget}
            for x in p.pools
        ],
        "draft_pool_change_gib": p.draft_pool_change_gib,
    }


def _unfinished(u: UnfinishedView | None) -> dict[str, Any] | None:
    if u is None:
        return None
    return {
        "status": u.status,
        "headline": u.headline,
        "phase": u.phase,
        "graph": u.graph,
        "size": u.size,
        "unit": u.unit,
        "memory_related": u.memory_related,
        "cause": u.cause,
        "shortfall_gib": u.shortfall_gib,
        "in_capture": u.in_capture,
        "at": u.at,
        "rank": u.rank,
        "label": u.label,
    }


def whatif_json(w: WhatIfView) -> dict[str, Any]:
    p, i, r = w.predicted, w.inputs, w.rule
    slope = None
    if i.slope is not None:
        slope = {
            "mib_per_row": i.slope.mib_per_row,
            "mib_per_bs": i.slope.mib_per_bs,
            "static_mib_per_row": i.slope.static_mib_per_row,
            "source": i.slope.source,
            "measured": i.slope.measured,
        }
    lo, hi = w.window
    return {
        "schema": w.schema,
        "logmem": __version__,
        "launch": _launch(w.launch),
        "inputs": {
            "mem_fraction_static": i.mem_fraction_static,
            "cuda_graph_max_bs": i.cuda_graph_max_bs,
            "activation_reserve_gib": i.activation_reserve_gib,
            "context_length": i.context_length,
            "slope": slope,
        },
        "rule": {
            "pre_load_gib": r.pre_load_gib,
            "pre_load_rank": r.pre_load_rank,
            "after_weights_gib": r.after_weights_gib,
            "bytes_per_token": r.bytes_per_token,
            "bytes_per_token_source": r.bytes_per_token_source,
            "kv_share": r.kv_share,
            "logged_tokens": r.logged_tokens,
        },
        "measured": _prediction(w.measured),
        "predicted": _prediction(p),
        "kv_tokens": p.kv_tokens,
        "kv_gib": p.kv_gib,
        "graph_gib": p.graph_gib,
        "headroom_gib": p.headroom_gib,
        "feasible": w.feasible,
        "unfinished": _unfinished(w.unfinished),
        "mem_fraction_static_window": [lo, hi],
        "window_top_bound": "unknown"
        if w.window_top_unknown
        else "at least"
        if w.window_top_at_least_bound
        else "exact"
        if w.window_top_exact
        else "at most",
        **(
            {"window_top_reason": "free memory at the 0.00 GiB floor"}
            if w.window_top_floored
            else {"window_top_reason": w.window_top_unknown}
            if w.window_top_unknown
            else {}
        ),
        "window_top_at_least": w.window_top_at_least,
        "window_top_low": w.window_top_low,
        "window_top_high": w.window_top_high,
        "window_top_by_low_point": w.window_top_by_low_point,
        "window_top_by_reserve": w.window_top_by_reserve,
        "graphs_disabled_by": w.graphs_disabled_by,
        "max_bs_method": w.max_bs_method,
        "added_buckets": w.added_buckets,
        "first_bucket_shrink": w.first_bucket_shrink,
        "window_empty": w.window_empty,
        "lo_positive_kv": lo,
        "lo_full_context": w.lo_full_context,
        "full_context": w.full_context,
        "notes": list(w.notes),
        "assumptions": list(w.assumptions),
    }


def view_json(v: View) -> dict[str, Any]:
    """The JSON document of a view model."""
    if isinstance(v, DiffView):
        return diff_json(v)
    if isinstance(v, FitView):
        return fit_json(v)
    return whatif_json(v)


def to_json(model: Diff | Fit | WhatIf) -> dict[str, Any]:
    """The JSON document of a Diff, Fit or WhatIf."""
    return view_json(view(model))


def render(v: View) -> str:
    return json_text.dumps(view_json(v)) + "\n"
