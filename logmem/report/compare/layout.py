"""The one layout of diff / fit / whatif: a view model (report.compare.view) written into an
``Out`` (report.compare.out: text or Markdown; report.compare.html: HTML), so every format
shows the same sections, sentences and figures."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import TypeVar

from logmem.report.compare.out import Out
from logmem.report.compare.settings import (
    arg_tag,
    arg_values,
    diff_args,
    only_in_text,
    relevant_only_in,
)
from logmem.report.compare.view import (
    DiffView,
    FitView,
    GraphRow,
    PointView,
    SlopeView,
)
from logmem.report.compare.views import View
from logmem.report.table import rank_name
from logmem.sglang.comm import env_value_text
from logmem.sglang.rules import DIFFERENCE_RESOLUTION_GIB

# A change of a bucket cost between two launches is a difference of two differences: four
# printed readings.
BUCKET_CHANGE_RESOLUTION_GIB = 2 * DIFFERENCE_RESOLUTION_GIB

R = TypeVar("R")


def _f(v: float | None, nd: int = 2, signed: bool = False) -> str:
    if v is None:
        return "-"
    return f"{v:+.{nd}f}" if signed else f"{v:.{nd}f}"


def _n(v: int | None, signed: bool = False) -> str:
    if v is None:
        return "-"
    return f"{v:+,}" if signed else f"{v:,}"


def _size(p: PointView | None) -> str:
    """A point's largest size; '(max bs)' where it is server_args' cuda_graph_max_bs because
    the log prints no bs list, bars or bucket count; "(TP0's list)" where the rank printed
    none but another rank of the launch did."""
    if p is None:
        return _n(None)
    if p.largest_size_from_rank is not None:
        return f"{_n(p.largest_size)} ({rank_name(p.largest_size_from_rank)}'s list)"
    return _n(p.largest_size) + (" (max bs)" if p.largest_size_from_args else "")


def _rank(r: str) -> str:
    return r or "(GPU)"


# --- slopes (diff and fit) ----------------------------------------------------------------


def _slopes(o: Out, slopes: Sequence[SlopeView]) -> None:
    o.heading("Slope: graph memory per row (rows = largest captured batch x tokens per request)")
    for i, s in enumerate(slopes):
        if i:
            o.gap()
        rows = " -> ".join(_n(r) for r in s.rows)
        o.para(
            f"{_rank(s.rank)} {s.graph} ({s.basis}): rows {rows}; tokens per request: {s.rows_source}."
        )
        cols = ["part", "GiB per launch", "MiB per row", "+-", "intercept GiB", "+-"]
        ln = s.line
        rows_out = [
            [
                s.basis,
                " ".join(_f(v) for v in s.points_gib),
                _f(ln.mib_per_row, 3),
                _f(ln.mib_per_row_error, 3),
                _f(ln.intercept_gib, 3),
                _f(ln.intercept_error_gib, 3),
            ]
        ]
        resid = []
        if ln.residuals_gib is not None:
            resid.append(f"{s.basis} " + " ".join(_f(r, 4, True) for r in ln.residuals_gib))
        st = s.static
        if st is not None and s.static_gib is not None:
            rows_out.append(
                [
                    "static buffers",
                    " ".join(_f(v) for v in s.static_gib),
                    _f(st.mib_per_row, 3),
                    _f(st.mib_per_row_error, 3),
                    _f(st.intercept_gib, 3),
                    _f(st.intercept_error_gib, 3),
                ]
            )
            if st.residuals_gib is not None:
                resid.append("static buffers " + " ".join(_f(r, 4, True) for r in st.residuals_gib))
        o.table(cols, rows_out, left=2)
        if resid:
            se = ln.mib_per_row_stderr
            o.para(
                "Residuals, GiB: "
                + "; ".join(resid)
                + "."
                + (
                    f" Standard error of the slope from them: {se:.3f} MiB per row."
                    if se is not None
                    else ""
                )
            )
        h = s.heuristic
        if h is not None:
            at = "; ".join(
                f"at max bs {n} it would set aside {r:,.0f} MiB, the capture used {t:,.0f}"
                for n, r, t in h.at_sizes
            )
            o.para(
                f"What SGLang's default mem_fraction_static would reserve: {h.sglang_mib_per_bs:g} MiB per unit "
                f"of max bs ({h.sglang_terms}), meant for all graph memory; measured {h.measured_mib_per_bs:.2f} MiB per unit of bs ({h.measured_terms}): "
                f"ratio {h.ratio:.2f}x" + (f". In absolute terms: {at}." if at else ".")
            )


# --- diff ---------------------------------------------------------------------------------


Sig = tuple[Hashable, tuple[float | None, ...]]  # what must be equal, figures within print rounding


def _close(x: Sig, y: Sig) -> bool:
    tol = DIFFERENCE_RESOLUTION_GIB + 1e-9
    return (
        x[0] == y[0]
        and len(x[1]) == len(y[1])
        and all(
            (a is None) == (b is None) and (a is None or b is None or abs(a - b) <= tol)
            for a, b in zip(x[1], y[1])
        )
    )


def _distinct_ranks(
    rows: Sequence[R], rank: Callable[[R], str], sig: Callable[[R], Sig]
) -> tuple[set[str], str]:
    """Ranks whose rows differ from every shown rank's beyond print rounding (a phase or graph
    figure is a difference of two readings: +-0.01 GiB), and a sentence for the others."""
    by_rank: dict[str, list[Sig]] = {}
    for r in rows:
        by_rank.setdefault(rank(r), []).append(sig(r))
    shown_sigs: list[tuple[str, list[Sig]]] = []  # shown rank -> its rows
    same: dict[tuple[str, bool], list[str]] = {}  # (shown rank, exactly) -> ranks like it
    for name, sig_rows in by_rank.items():
        like = next(
            (
                (r, rs == sig_rows)
                for r, rs in shown_sigs
                if len(rs) == len(sig_rows) and all(map(_close, rs, sig_rows))
            ),
            None,
        )
        if like is not None:
            same.setdefault(like, []).append(name)
        else:
            shown_sigs.append((name, sig_rows))
    shown = {r for r, _ in shown_sigs}
    near = f" to +-{DIFFERENCE_RESOLUTION_GIB:g} GiB (print rounding)"
    text = "; ".join(
        f"{_ranks(others)}: the same as {_rank(r)}{'' if exact else near}"
        for (r, exact), others in same.items()
    )
    return shown, (text + ".") if text else ""


def _ranks(names: Sequence[str]) -> str:
    """Rank labels, a long list shortened: 'DP0 TP1 EP1, DP0 TP2 EP2, ..., DP3 TP15 EP15 (15 ranks)'."""
    if len(names) <= 4:
        return ", ".join(_rank(x) for x in names)
    return f"{_rank(names[0])}, {_rank(names[1])}, ..., {_rank(names[-1])} ({len(names)} ranks)"


def _diff_settings(d: DiffView, o: Out) -> None:
    o.heading("Settings that differ (memory-relevant)")
    diff_args(d.args, o)
    if d.env:

        def val(v: str | None, line: int | None) -> str:
            return "-" if v is None else f"{v} (l.{line})" if line is not None else v

        rows = [
            [k, val(a and env_value_text(k, a), la), val(b and env_value_text(k, b), lb)]
            for k, a, b, la, lb in d.env
        ]
        o.table(["environment (communication)", "A", "B"], rows, left=1)
        o.para(
            "Variables that size communication buffers, as each log echoed them before its "
            "server_args ('-': not echoed, so SGLang's default unless set unechoed)."
        )

    o.heading("SGLang wording")
    differ = [m for m in d.wording if m.differs]
    same = (
        d.a.era_guess if d.a.era_guess == d.b.era_guess else f"A {d.a.era_guess}; B {d.b.era_guess}"
    )
    era = f"Era from the wording: A {d.a.era_guess}; B {d.b.era_guess}."
    o.para(era if differ else f"The same wording in both logs: {same}.")
    if differ:
        o.table(["line", "A", "B"], [[m.marker, m.a, m.b] for m in differ], left=3)
    if d.unreached:
        o.para(d.unreached)


def _diff_phases(d: DiffView, o: Out) -> None:
    o.heading("Phases per rank (GiB of free memory each phase took; change = B - A)")
    shown, same = _distinct_ranks(d.phases, lambda p: p.rank, lambda p: (p.key, (p.a_gib, p.b_gib)))
    prow = [
        [
            _rank(p.rank) + (f" ~ {_rank(p.rank_b)}" if p.rank_b is not None else ""),
            p.name,
            _f(p.a_gib),
            _f(p.b_gib),
            "n/c" if p.not_comparable else _f(p.change_gib, signed=True),
        ]
        for p in d.phases
        if p.rank in shown
    ]
    o.table(["rank", "phase", "A", "B", "change"], prow, left=2)
    if same:
        o.para(same)
    for why in dict.fromkeys(p.not_comparable for p in d.phases if p.rank in shown):
        if why:
            o.para(why)
    if any(p.rank_b is not None for p in d.phases):
        o.para("'X ~ Y': A's rank X beside B's rank Y (how they were paired: Notes).")
    for c in d.phase_causes:
        o.para(c)

    kv = d.kv
    if kv is None:
        return
    ta, tb = kv.tokens
    ba, bb = kv.bytes_per_token
    bpt = f"{_n(ba)} B per token" if ba == bb else f"{_n(ba)} -> {_n(bb)} B per token"
    if kv.common_range is not None:
        lo, hi = kv.common_range
        bpt = f"same bytes per token (within print rounding: {lo:,}-{hi:,})"
    o.heading(f"KV cache: {_n(ta)} -> {_n(tb)} tokens ({_n(kv.change_tokens, True)}), {bpt}")
    if kv.common_range is None and kv.apart_at_least:
        o.para(
            f"The cells are at least {kv.apart_at_least:,} B per token apart beyond print rounding."
        )
    ma, mb = kv.mem_fraction_static
    if ma is not None and mb is not None:
        o.para(
            f"SGLang's rule, rest = after-weights - P x (1 - mfs): A {_f(kv.after_weights_gib[0])} - "
            f"{_f(kv.pre_load_gib[0])} x (1 - {ma:g}) = {_f(kv.rest_gib[0])} GiB; B "
            f"{_f(kv.after_weights_gib[1])} - {_f(kv.pre_load_gib[1])} x (1 - {mb:g}) = "
            f"{_f(kv.rest_gib[1])} GiB. {_source(kv.tokens_source)}."
        )
    else:
        o.para(f"{_source(kv.tokens_source)}; bytes per token from the printed KV sizes.")
    if kv.terms:
        o.table(
            ["what accounts for the change", "GiB", "tokens"],
            [[t.term, _f(t.gib, signed=True), _n(t.tokens, True)] for t in kv.terms],
        )
    elif kv.terms_note:
        o.para(kv.terms_note)


_GRAPH_PARTS = (
    ("static buffers", "static_gib"),
    ("largest bucket", "largest_bucket_gib"),
    ("other buckets", "other_buckets_gib"),
    ("total (mem usage)", "total_gib"),
)


def _graph_sig(g: GraphRow) -> Sig:
    def figs(p: PointView | None) -> tuple[Hashable, tuple[float | None, ...]]:
        if p is None:
            return None, ()
        return (p.largest_size, p.rows), tuple(getattr(p, a) for _, a in _GRAPH_PARTS)

    (ka, va), (kb, vb) = figs(g.a), figs(g.b)
    return (g.graph, ka, kb), va + vb


def _source(src: str) -> str:
    """Where the token counts come from: one source, or one per launch ('a / b')."""
    said = {"not printed": "none printed (no KV or summary line)"}
    parts = [said.get(x, x) for x in src.split(" / ")]
    if len(parts) == 2:
        return f"Tokens by launch, A: {parts[0]}; B: {parts[1]}"
    return f"Tokens from {parts[0]}"


def _diff_graphs(d: DiffView, o: Out) -> None:
    if not d.graphs:
        return
    o.heading("CUDA graphs (GiB; change = B - A)")
    grow = []
    shown, same = _distinct_ranks(d.graphs, lambda g: g.rank, _graph_sig)
    last_rank = None
    for g in d.graphs:
        if g.rank not in shown:
            continue
        # The rank on its first row, the graph family on the first row of its parts.
        other = f" ~ {_rank(g.rank_b)}" if g.rank_b is not None else ""
        label = f"{_rank(g.rank)}{other}" if g.rank != last_rank else ""
        last_rank = g.rank
        size_a, size_b = (_size(p) for p in (g.a, g.b))
        grow.append([label, g.graph, "largest size", size_a, size_b, ""])
        for part, attr in _GRAPH_PARTS:
            va = getattr(g.a, attr) if g.a else None
            vb = getattr(g.b, attr) if g.b else None
            if va is None and vb is None:
                continue
            grow.append(["", "", part, _f(va), _f(vb), _f(getattr(g.change, attr), signed=True)])
    o.table(["rank", "graph", "part", "A", "B", "change"], grow, left=3)
    if same:
        o.para(same)
    if any(p is not None and p.largest_size_from_args for g in d.graphs for p in (g.a, g.b)):
        o.para(
            "'(max bs)': no rank of that launch prints a bs list, bar sizes or bucket count for "
            "the graph, so its largest size is taken as server_args' cuda_graph_max_bs (an "
            "upper bound: SGLang drops sizes above the request pool)."
        )
    for c in d.graph_causes:
        o.para(c)
    for g in d.graphs:
        if g.buckets:
            _diff_buckets(g, o)


def _diff_buckets(g: GraphRow, o: Out) -> None:
    title = f"Buckets of {_rank(g.rank)} {g.graph} that both launches captured (GiB each kept)"
    # The largest size of each launch carries that capture's lazy allocations: say so.
    big_a = g.a.largest_size if g.a else None
    big_b = g.b.largest_size if g.b else None

    def size_label(size: int, first: str | None) -> str:
        if first in ("A", "B"):
            return f"{size} (first in {first})"
        marks = [w for w, big in (("A", big_a), ("B", big_b)) if size == big]
        return f"{size} (largest in {' and '.join(marks)})" if marks else str(size)

    rows = [
        [size_label(x.size, x.first_in), _f(x.a_gib), _f(x.b_gib), _f(x.change_gib, signed=True)]
        for x in g.buckets
    ]
    if o.md:
        o.details(title, lambda: o.table(["size", "A", "B", "change"], rows))
        if g.bucket_note:
            o.para(g.bucket_note)
        return
    limit = BUCKET_CHANGE_RESOLUTION_GIB
    odd = [r for x, r in zip(g.buckets, rows) if x.change_gib is None]
    moved = [
        r
        for x, r in zip(g.buckets, rows)
        if x.change_gib is None or abs(x.change_gib) > limit + 1e-9
    ]
    o.heading(title)
    if moved:
        o.table(["size", "A", "B", "change"], moved)
    n = len(rows) - len(odd)
    o.para(
        bucket_summary(n, len(moved) - len(odd), len(odd), limit)
        + " (every size: -f markdown/json)."
    )
    if g.bucket_note:
        o.para(g.bucket_note)


def bucket_summary(comparable: int, beyond: int, odd: int, limit: float) -> str:
    """What the plain-text buckets table lists and what it leaves out, naming the tolerance each time."""
    tol = f"the +-{limit:g} GiB that printing allows"
    within = comparable - beyond
    listed: list[str] = []
    if beyond:
        if within == 0:
            every = (
                "the one comparable size, with a"
                if comparable == 1
                else f"all {comparable} comparable sizes, each with a"
            )
            listed.append(f"{every} change beyond {tol}")
        else:
            listed.append(f"{beyond} size{'s' if beyond > 1 else ''} whose change is beyond {tol}")
    if odd:
        listed.append(f"{odd} size{'s' if odd > 1 else ''} with no comparable change")
    head = f"Listed: {' and '.join(listed)}" if listed else ""
    if within == 0:
        return head or "No comparable size"
    if within == comparable:
        rest = (
            f"the one comparable size is within {tol}"
            if comparable == 1
            else f"all {comparable} comparable sizes are within {tol}"
        )
    else:
        rest = f"the other {within} of {comparable} comparable sizes are within +-{limit:g} GiB"
    return f"{head}; {rest}" if head else rest[0].upper() + rest[1:]


def _diff_ends(d: DiffView, o: Out) -> None:
    """Where each start-up ended: free memory after it and max_running_requests."""
    if not d.ends:
        return
    o.heading("Where each start-up ended")
    rows = []
    for name, a, b, change in d.ends:
        if isinstance(a, int) or isinstance(b, int):
            rows.append([name, _n(a), _n(b), _n(change, signed=True)])
        else:
            rows.append([f"{name} (GiB)", _f(a), _f(b), _f(change, signed=True)])
    o.table(["", "A", "B", "change"], rows, left=1)
    o.para(f"From: A {d.end_sources[0]}; B {d.end_sources[1]} ('-': not in the log).")


def _diff(d: DiffView, o: Out) -> str:
    o.title(f"logmem diff: A = {d.a.name}, B = {d.b.name}")
    for line in d.outcomes:
        o.para(line)
    for h in d.headlines:
        o.para(h)
    _diff_settings(d, o)
    _diff_phases(d, o)
    _diff_ends(d, o)
    _diff_graphs(d, o)
    if d.slopes:
        _slopes(o, d.slopes)
    else:
        o.heading("Slope")
        o.para(d.slope_note or "none")
    return _tail(o, d.notes, d.assumptions)


def _tail(o: Out, notes: Sequence[str], assumptions: Sequence[str]) -> str:
    """Every command ends the same way: its notes, then the assumptions it rests on."""
    if notes:
        o.heading("Notes")
        o.bullets(notes)
    o.heading("Assumptions")
    o.bullets(assumptions)
    return o.text()


# --- fit ----------------------------------------------------------------------------------


def _fit(f: FitView, o: Out) -> str:
    o.title(f"logmem fit: {len(f.launches)} launches")
    o.table(["#", "launch"], [[str(i + 1), v.name] for i, v in enumerate(f.launches)], left=2)
    o.heading("Settings that differ (memory-relevant)")
    rows = [
        [r.key, " | ".join(arg_values(r.values)), arg_tag(r.key, f.args)] for r in f.args.changed
    ]
    o.table(["server_args key", "values (in launch order)", "note"], rows, left=3)
    if relevant_only_in(f.args):
        o.para(only_in_text(f.args))
    _slopes(o, f.slopes)
    return _tail(o, f.notes, f.assumptions)


def layout(v: View, out: Out) -> str:
    """Lay one view model out into `out`; returns ``out.text()``."""
    if isinstance(v, DiffView):
        return _diff(v, out)
    if isinstance(v, FitView):
        return _fit(v, out)
    from logmem.report.compare.whatif_layout import whatif_layout

    return whatif_layout(v, out)
