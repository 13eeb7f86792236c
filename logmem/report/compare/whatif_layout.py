"""The layout of ``logmem whatif`` (see report.compare.layout, whose helpers it shares): the
measured and predicted columns, the pools, the mem_fraction_static window and the context check."""

from __future__ import annotations

from logmem.report.compare.layout import _f, _n, _tail
from logmem.report.compare.out import Out
from logmem.report.compare.whatif_view import PredictionView, WhatIfView


def _feasible(x: PredictionView) -> str:
    if x.feasible_label:
        return x.feasible_label
    v = x.feasible
    return "yes" if v else ("NO" if v is False else "not ruled out")


_SIGNS = {"at least": ">= ", "at most": "<= "}


def _bound(value: float | None, bound: str, error: float | None = None) -> str:
    """A table cell: '>=' / '<=' mark a bound, '~' or '+- E' an estimate; both an estimated
    bound ('>= ~0.74': a capture that did not finish, less a slope's estimate)."""
    if bound == "unknown":
        return "unknown"
    shown = _f(value)
    if bound == "exact" or value is None:
        return shown
    sign = _SIGNS.get(bound.removeprefix("estimated").strip(), "")
    if bound.startswith("estimated"):
        if error is None:
            return f"{sign}~{shown}"
        return f"{sign}{shown} +- {error:.2f}" if round(error, 2) > 0 else f"{sign}{shown} +- <0.01"
    return sign + shown


def _whatif_table(w: WhatIfView, o: Out) -> None:
    m, p = w.measured, w.predicted
    rows = [
        ["mem_fraction_static", f"{m.mem_fraction_static:.3f}", f"{p.mem_fraction_static:.3f}"],
        ["largest captured bs", _n(m.largest_bs), _n(p.largest_bs)],
        [
            # sglang 0.5.17-0.5.23 post-capture KV sizing: the rule sized the reservation only.
            "KV reservation by SGLang's rule (rest), GiB"
            if w.reservation_only
            else "KV budget by SGLang's rule (rest), GiB",
            _f(m.rest_gib),
            _f(p.rest_gib),
        ],
        ["KV tokens (max_total_num_tokens)", _n(m.kv_tokens), _n(p.kv_tokens)],
        *_pool_rows(m, p),
        [
            "max_running_requests (request table)",
            _n(m.max_running_requests),
            _n(p.max_running_requests),
        ],
        [
            "CUDA graphs, GiB",
            _bound(m.graph_gib, m.graph_bound),
            _bound(p.graph_gib, p.graph_bound, p.graph_error_gib),
        ],
        [
            # The least free reading from the pool step on (usually the end, after capture).
            f"headroom, GiB ({p.headroom_rank or 'the GPU'})",
            _bound(m.headroom_gib, m.headroom_bound),
            _bound(p.headroom_gib, p.headroom_bound, p.graph_error_gib),
        ],
        ["feasible", _feasible(m), _feasible(p)],
    ]
    if w.graphs_disabled_by:
        rows.insert(1, [f"CUDA graphs ({w.graphs_disabled_by})", "off", "off"])
    o.table(["", "measured", "what if"], rows)
    if p.graph_bound == "estimated at least":
        err = (
            f"+- {p.graph_error_gib:.2f} GiB from the slope's printing bound"
            if p.graph_error_gib is not None
            else "'~': the slope's error is not known"
        )
        o.para(
            f"Graphs at max bs {p.largest_bs} are an estimated lower bound: what the capture took "
            "before it stopped (a lower bound) changed by the graph slope's estimate (Assumptions), "
            f"so '>=' and '<=' hold only as far as the estimate does ({err}); the headroom is "
            "an estimated upper bound."
        )
    if p.graph_bound == "estimated at most":
        err = (
            f"+- {p.graph_error_gib:.2f} GiB from the slope's printing bound"
            if p.graph_error_gib is not None
            else "'~': the slope's error is not known"
        )
        why = (
            "priced at the larger of the largest batches the log allows"
            if w.graph_upper == "larger list"
            else "the largest bucket's whole cost scaled by rows"
            if w.graph_upper == "scaled top"
            else "the other batch-sized graphs held as measured"
        )
        o.para(
            f"Graphs at max bs {p.largest_bs} are an estimated upper bound: the graph slope's "
            f"estimate (Assumptions), {why}, so '<=' and '>=' hold only as far as the estimate "
            f"does ({err}); the headroom is an estimated lower bound."
        )
    if p.graph_bound == "estimated":
        o.para(
            f"Graphs and headroom at max bs {p.largest_bs} are estimates from the graph slope "
            "(Assumptions): "
            + (
                "+- the measured slope's printing bound over the change in rows"
                + (
                    ", plus that of the added buckets' average."
                    if w.added_buckets and w.added_buckets["gib"] is not None
                    else "."
                )
                if p.graph_error_gib is not None
                else "'~': the slope's error is not known."
            )
        )


def _pool_rows(m: PredictionView, p: PredictionView) -> list[list[str]]:
    """One row per pool inside the KV budget (the full KV pool first), then the draft's."""
    if not p.pools:
        return [["KV pool, GiB", _f(m.kv_gib), _f(p.kv_gib)]]
    measured = {x.label: x for x in m.pools}
    return [
        [x.label, _f(measured[x.label].gib if x.label in measured else None), _f(x.gib)]
        for x in p.pools
    ]


def _window(w: WhatIfView) -> str:
    """The feasible mem_fraction_static window, said with what bounds it."""
    lo, hi = w.window
    reserve = w.inputs.activation_reserve_gib or 0.0
    u = w.unfinished
    crashed_mfs = w.measured.mem_fraction_static
    if u is not None and u.in_capture and not u.memory_related and lo is not None:
        what = (
            "the log stops"
            if u.status == "incomplete"
            else f"the launch crashed ({u.cause}, not memory)"
        )
        if u.memory_related is None and u.status != "incomplete":
            what = f"the launch crashed ({u.cause}; memory or not cannot be told)"
        top = (
            f" Up to {hi:.3f} the free memory at the last reading stays >= {reserve:.2f} GiB, so the top is "
            f"at most {hi:.3f}."
            if hi is not None
            else ""
        )
        return (
            f"[{lo:.3f}, ?]: from {lo:.3f} the KV pool is positive. The top cannot be judged for graphs: "
            f"{what} {u.at}, before the {u.graph or 'graph'} capture finished, so its memory is "
            f"unknown.{top}"
        )
    if w.window_top_floored and lo is not None and (u is None or not u.memory_related):
        # A floored reading is an upper bound of the headroom at every setting: at the logged
        # one memory was already exhausted, so the top lies below it (and below hi, where even
        # that bound falls under the reserve).
        m0 = w.measured.mem_fraction_static
        top = ""
        if m0 is not None:
            top = (
                f" At {m0:.3f}, the logged setting, free memory was already exhausted, so the top "
                f"is below {m0:.3f}"
            )
            if hi is not None and hi < m0 - 0.0005:
                top += (
                    f", and at most {hi:.3f} to keep {reserve:.2f} GiB free (above it even the "
                    "most the reading allows is less)"
                )
            top += "."
        elif hi is not None:
            top = f" The top is at most {hi:.3f}: above it even the most the reading allows is less than {reserve:.2f} GiB."
        return (
            f"[{lo:.3f}, ?]: from {lo:.3f} the KV pool is positive. The top cannot be judged: free "
            "memory after capture reads 0.00 GiB, the driver's zero (SGLang sets no floor), so the real "
            f"headroom may be below zero and the graphs' memory is unknown.{top}"
        )
    if w.window_top_unknown and lo is not None:
        return f"[{lo:.3f}, ?]: from {lo:.3f} the KV pool is positive; {w.window_top_unknown}"
    if not w.window_empty and lo is not None and hi is not None:
        text = f"[{lo:.3f}, {hi:.3f}]: from {lo:.3f} the KV pool is positive; "
        if w.window_top_at_least_bound:
            # Graphs at most as priced (the first bucket's pool kept whole): the top is at least.
            text += (
                f"up to {hi:.3f} the headroom stays >= {reserve:.2f} GiB even with the graphs at "
                f"their upper bound at max bs {w.predicted.largest_bs}, so the top is at least "
                f"{hi:.3f}; "
                + (
                    "it may be higher if the smaller largest batch the log allows is the one "
                    "captured (Notes)."
                    if w.graph_upper == "larger list"
                    else "it may be higher by what the other batch-sized graphs, held as "
                    "measured, shed at the smaller max bs (Assumptions)."
                    if w.graph_upper == "other graphs"
                    else "it may be higher by the part of the largest bucket that does not grow "
                    "with rows (--slope-from A B measures it)."
                    if w.graph_upper == "scaled top"
                    else "it may be higher by what the graph memory pool sheds with the largest "
                    "batch (--slope-from A B or --mib-per-row prices it)."
                )
            )
            if not reserve:
                text += (
                    " With no activation reserve such a top leaves no room for prefill "
                    "activations (pass --activation-reserve GIB)."
                )
        elif w.window_top_exact:
            text += (
                _tops(w, hi, reserve) or f"up to {hi:.3f} the headroom stays >= {reserve:.2f} GiB."
            )
            text += _top_error(w, hi, reserve)
            if not reserve:
                # The top keeps nothing for prefill activations: a bound, not a setting to run.
                text += (
                    f" {hi:.3f} is an upper bound, not a usable setting: it leaves no room for "
                    "prefill activations (pass --activation-reserve GIB)."
                )
        else:
            at = f" {u.at}" if u else ""
            smaller = w.predicted.largest_bs != w.measured.largest_bs
            versus = (
                # Smaller graphs than the ones that failed: the top need not be below that mfs.
                f" with graphs up to bs {w.predicted.largest_bs} ({crashed_mfs:.3f} ran out of "
                f"memory{at})"
                if smaller
                else f", below the {crashed_mfs:.3f} that ran out of memory{at}"
            )
            text += (
                f"the top is at most {hi:.3f}{versus}. The rest "
                "of the capture was not measured, so the real top may be lower."
            )
        if w.window_top_exact and u is not None and u.memory_related:
            text += f" The top is below the {crashed_mfs:.3f} that ran out of memory {u.at}."
        return text
    why = [
        "no value gives a positive KV pool"
        if lo is None
        else f"the KV pool is positive only from {lo:.3f}",
        f"no value leaves {reserve:.2f} GiB after capture"
        if hi is None
        else f"the headroom stays >= {reserve:.2f} GiB only up to {hi:.3f}",
    ]
    return f"EMPTY: no mem_fraction_static works: {why[0]}, but {why[1]}."


def _tops(w: WhatIfView, hi: float, reserve: float) -> str:
    """The two limits of the top, with a reserve and a low point before the end: the low point
    stays >= 0, the reserve is kept after capture; which one sets the top ('' without both)."""
    by_low, by_end = w.window_top_by_low_point, w.window_top_by_reserve
    if not reserve or w.low_point_at is None or (by_low is None and by_end is None):
        return ""
    text = (
        f"up to {hi:.3f} free memory stays >= 0 at the low point ({w.low_point_at}) and keeps "
        f"{reserve:.2f} GiB after capture."
    )
    low_sets = by_end is None or (by_low is not None and by_low <= by_end)
    if by_low == by_end:
        return text + " Both limits set the top."
    if low_sets:
        alone = f"would allow {by_end:.3f}" if by_end is not None else "allows no value"
        return (
            text
            + f" The low point sets the top; the {reserve:.2f} GiB reserve after capture {alone}."
        )
    alone = f"would allow {by_low:.3f}" if by_low is not None else "allows no value"
    return (
        text
        + f" The {reserve:.2f} GiB reserve after capture sets the top; the low point alone {alone}."
    )


def _top_error(w: WhatIfView, hi: float, reserve: float) -> str:
    """How far the window's top moves with the estimated graphs' error."""
    p = w.predicted
    if p.graph_bound != "estimated":
        return ""
    if p.graph_error_gib is None:
        return (
            f" That top is for graphs as estimated at max bs {p.largest_bs}; the estimate's "
            "error is not known, so neither is the top's."
        )
    if not p.graph_error_gib:
        return ""
    err = f"+- {p.graph_error_gib:.2f} GiB"
    low, high = w.window_top_low, w.window_top_high
    if low == hi == high:
        return ""
    span = (
        f"from {low:.3f} to {high:.3f}"
        if low is not None and high is not None
        else f"up to {high:.3f}, and with graphs at their largest no value leaves {reserve:.2f} GiB"
    )
    return (
        f" That is for graphs as estimated at max bs {p.largest_bs}; within their {err} (the "
        f"slope's printing bound) the top is {span}."
    )


def whatif_layout(w: WhatIfView, o: Out) -> str:
    o.title(f"logmem whatif: {w.launch.name}")
    _whatif_table(w, o)
    o.heading("Feasible mem_fraction_static window")
    o.para(_window(w))
    ctx = w.inputs.context_length
    o.para(f"One full context{f' ({ctx:,} tokens)' if ctx else ''}: {w.full_context}.")
    return _tail(o, w.notes, w.assumptions)
