"""Reporters for Diff, Fit and WhatIf: a versioned JSON view-model, then text and Markdown from it.

``to_json(model)`` decides every number once; ``render_text`` and ``render_markdown``
only lay that dict out, so the formats cannot disagree (an HTML renderer should draw
the same dict). Schemas: "logmem.diff/1", "logmem.fit/1", "logmem.whatif/1"
(docs/compare.md). Text fits 100 columns; Markdown is meant to be pasted into a ticket.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Callable, Sequence
from typing import Any

from logmem import __version__
from logmem.compare.args import key_list
from logmem.compare.diff import Diff
from logmem.compare.load import LaunchRef
from logmem.compare.points import GraphPoint
from logmem.compare.slope import Fit, Line, Slope
from logmem.compare.whatif import Prediction, WhatIf
from logmem.errors import LogmemError
from logmem.units import gib

WIDTH = 100
SCHEMAS = {Diff: "logmem.diff/1", Fit: "logmem.fit/1", WhatIf: "logmem.whatif/1"}
Model = Diff | Fit | WhatIf


# --- view-model (JSON) --------------------------------------------------------------------


def _r(x: float | None, nd: int = 3) -> float | None:
    if x is None:
        return None
    v = round(x, nd)
    return 0.0 if v == 0 else v


def _jsonable(v: Any) -> Any:
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    return str(v)


def _launch(ref: LaunchRef) -> dict[str, Any]:
    return {"label": ref.label, "paths": list(ref.paths), "launch": ref.index, "name": ref.name}


def _line(ln: Line | None, residuals: bool) -> dict[str, Any] | None:
    if ln is None:
        return None
    out: dict[str, Any] = {
        "mib_per_row": _r(ln.mib_per_row),
        "mib_per_row_error": _r(ln.mib_per_row_error),
        "intercept_gib": _r(ln.intercept_gib),
        "intercept_error_gib": _r(ln.intercept_error_gib),
    }
    if residuals:
        out["residuals_gib"] = [_r(x, 4) for x in ln.residuals_gib]
        out["mib_per_row_stderr"] = _r(ln.stderr_mib_per_row)
    return out


def _slope(s: Slope, residuals: bool) -> dict[str, Any]:
    out: dict[str, Any] = {
        "graph": s.graph,
        "rank": s.rank,
        "basis": s.basis,
        "rows": list(s.rows),
        "rows_source": s.rows_source,
        "tokens_per_req": s.rows_per_bs,
        "largest_size": list(s.sizes),
        "largest_bucket_gib": [gib(b) for b in s.largest_bytes] if s.largest_bytes else None,
        "static_gib": [gib(b) for b in s.static_bytes] if s.static_bytes else None,
        "total_gib": [gib(b) for b in s.total_bytes],
        "mib_per_row": _r(s.line.mib_per_row),
        "intercept_gib": _r(s.line.intercept_gib),
        "mib_per_row_error": _r(s.line.mib_per_row_error),
        "intercept_error_gib": _r(s.line.intercept_error_gib),
        "static": _line(s.static, residuals),
        "heuristic": None,
    }
    if residuals:
        out["residuals_gib"] = [_r(x, 4) for x in s.line.residuals_gib]
        out["mib_per_row_stderr"] = _r(s.line.stderr_mib_per_row)
    if s.heuristic is not None:
        h = s.heuristic
        out["heuristic"] = {
            "sglang_mib_per_bs": _r(h.mib_per_bs),
            "sglang_terms": h.terms,
            "measured_mib_per_bs": _r(h.measured_mib_per_bs),
            "measured_terms": h.measured_terms,
            "ratio": _r(h.ratio, 2),
        }
    return out


def _point(p: GraphPoint | None) -> dict[str, Any] | None:
    if p is None:
        return None
    return {
        "largest_size": p.largest_size,
        "rows": p.rows,
        "static_gib": gib(p.static_bytes),
        "largest_bucket_gib": gib(p.largest_bytes),
        "other_buckets_gib": gib(p.other_bytes),
        "total_gib": gib(p.total_bytes),
    }


def _pair_change(a: int | None, b: int | None) -> float | None:
    return None if a is None or b is None else gib(b - a)


def diff_json(d: Diff) -> dict[str, Any]:
    kv = None
    if d.kv is not None:
        k = d.kv
        kv = {
            "tokens": list(k.tokens),
            "tokens_source": k.tokens_source,
            "change_tokens": k.change_tokens,
            "bytes_per_token": list(k.bytes_per_token),
            "mem_fraction_static": list(k.mem_fraction_static),
            "pre_load_gib": [gib(x) for x in k.pre_load_bytes],
            "after_weights_gib": [gib(x) for x in k.after_weights_bytes],
            "rest_gib": [gib(x) for x in k.rest_bytes],
            "terms": [{"term": t.name, "gib": gib(t.bytes), "tokens": t.tokens} for t in k.terms],
            "terms_note": k.terms_note or None,
        }
    graphs = []
    for g in d.graphs:
        a, b = g.a, g.b

        def change(attr: str, a: GraphPoint | None = a, b: GraphPoint | None = b) -> float | None:
            return _pair_change(getattr(a, attr) if a else None, getattr(b, attr) if b else None)

        graphs.append(
            {
                "rank": g.rank,
                "rank_b": g.rank_b,
                "graph": g.graph,
                "a": _point(a),
                "b": _point(b),
                "change": {
                    "static_gib": change("static_bytes"),
                    "largest_bucket_gib": change("largest_bytes"),
                    "other_buckets_gib": change("other_bytes"),
                    "total_gib": change("total_bytes"),
                },
                "buckets": [
                    {"size": s, "a_gib": gib(x), "b_gib": gib(y), "change_gib": gib(y - x)}
                    for s, x, y in g.buckets
                ],
            }
        )
    return {
        "schema": SCHEMAS[Diff],
        "logmem": __version__,
        "a": _launch(d.a) | {"era_guess": d.eras[0], "model": d.models[0]},
        "b": _launch(d.b) | {"era_guess": d.eras[1], "model": d.models[1]},
        "headlines": list(d.headlines),
        **_args_json(d.args),
        "server_args_missing": list(d.args.missing),
        "wording": [
            {"marker": m.name, "a": m.values[0], "b": m.values[1], "differs": m.differs}
            for m in d.markers
        ],
        "phases": [
            {
                "rank": p.rank,
                "rank_b": p.rank_b,
                "key": p.key,
                "name": p.name,
                "a_gib": gib(p.a_bytes),
                "b_gib": gib(p.b_bytes),
                "change_gib": gib(p.change_bytes),
            }
            for p in d.phases
        ],
        "kv": kv,
        "graphs": graphs,
        "slopes": [_slope(s, residuals=False) for s in d.slopes],
        "slope_note": d.slope_note or None,
        "notes": list(d.notes),
        "assumptions": list(d.assumptions),
    }


def _args_json(args: Any) -> dict[str, Any]:
    """The server_args comparison, the same in diff and fit."""
    return {
        "changed_args": {c.key: _jsonable(list(c.values)) for c in args.changed},
        "varied_args": list(args.varied),
        "allowed_args": list(args.allowed),
        "ignored_args": {c.key: _jsonable(list(c.values)) for c in args.ignored},
        "only_in": {lab: list(keys) for lab, keys in args.only_in},
        "one_sided_args": {c.key: _jsonable(list(c.values)) for c in args.one_sided},
    }


def fit_json(f: Fit) -> dict[str, Any]:
    return {
        "schema": SCHEMAS[Fit],
        "logmem": __version__,
        "launches": [_launch(r) for r in f.launches],
        **_args_json(f.args),
        "slopes": [_slope(s, residuals=True) for s in f.slopes],
        "notes": list(f.notes),
        "assumptions": list(f.assumptions),
    }


def _prediction(p: Prediction, reserve: int) -> dict[str, Any]:
    return {
        "mem_fraction_static": p.mem_fraction_static,
        "largest_bs": p.largest_bs,
        "rest_gib": gib(p.rest_bytes),
        "kv_tokens": p.kv_tokens,
        "kv_gib": gib(p.kv_bytes),
        "pool_change_gib": gib(p.pool_change_bytes),
        "req_table_change_gib": gib(p.req_table_change_bytes),
        "max_running_requests": p.max_running_requests,
        "graph_gib": gib(p.graph_bytes),
        "graph_change_gib": gib(p.graph_change_bytes),
        "headroom_gib": gib(p.headroom_bytes),
        "headroom_rank": p.headroom_rank,
        "graph_bound": "exact" if p.graph_exact else "at least",
        "headroom_bound": "exact" if p.headroom_exact else "at most",
        "crashed": p.crashed,
        "feasible": p.verdict(reserve),
        "feasible_label": p.label,
    }


def whatif_json(w: WhatIf) -> dict[str, Any]:
    p = w.predicted
    lo, hi = w.lo_positive, w.hi
    slope = None
    if w.slope is not None:
        slope = {
            "mib_per_row": _r(w.slope.mib_per_row) if not w.slope.per_bs else None,
            "mib_per_bs": _r(w.slope.mib_per_row) if w.slope.per_bs else None,
            "static_mib_per_row": _r(w.slope.static_mib_per_row),
            "source": w.slope.source,
            "measured": not w.slope.per_bs,
        }
    return {
        "schema": SCHEMAS[WhatIf],
        "logmem": __version__,
        "launch": _launch(w.launch),
        "inputs": {
            "mem_fraction_static": w.requested_mfs,
            "cuda_graph_max_bs": w.requested_max_bs,
            "activation_reserve_gib": gib(w.reserve_bytes),
            "context_length": w.context_len,
            "slope": slope,
        },
        "rule": {
            "pre_load_gib": gib(w.pre_load_bytes),
            "pre_load_rank": w.pre_load_rank,
            "after_weights_gib": gib(w.after_weights_bytes),
            "bytes_per_token": w.bytes_per_token,
            "bytes_per_token_source": w.bytes_per_token_source,
            "kv_share": _r(w.kv_share, 4),
            "logged_tokens": w.logged_tokens,
        },
        "measured": _prediction(w.measured, w.reserve_bytes),
        "predicted": _prediction(p, w.reserve_bytes),
        "kv_tokens": p.kv_tokens,
        "kv_gib": gib(p.kv_bytes),
        "graph_gib": gib(p.graph_bytes),
        "headroom_gib": gib(p.headroom_bytes),
        "feasible": w.verdict,
        "unfinished": _unfinished(w),
        "mem_fraction_static_window": [lo, hi],
        "window_top_bound": "exact" if w.hi_exact else "at most",
        "window_empty": w.window is None,
        "lo_positive_kv": lo,
        "lo_full_context": w.lo_context,
        "full_context": w.context_note,
        "notes": list(w.notes),
        "assumptions": list(w.assumptions),
    }


def _unfinished(w: WhatIf) -> dict[str, Any] | None:
    u = w.unfinished
    if u is None:
        return None
    return {
        "status": u.status,
        "headline": u.headline,
        "phase": u.phase,
        "graph": u.graph,
        "size": u.size,
        "unit": u.unit,
        "memory_related": u.memory,
        "cause": u.cause,
        "shortfall_gib": gib(u.shortfall_bytes),
        "in_capture": u.in_capture,
        "at": u.at,
        "rank": u.rank,
        "label": u.label,
    }


def to_json(model: Model) -> dict[str, Any]:
    if isinstance(model, Diff):
        return diff_json(model)
    if isinstance(model, Fit):
        return fit_json(model)
    return whatif_json(model)


def render_json(model: Model) -> str:
    return json.dumps(to_json(model), indent=2) + "\n"


# --- layout helpers -----------------------------------------------------------------------


def _wrap(text: str, bullet: str = "") -> list[str]:
    return textwrap.wrap(
        text, WIDTH, initial_indent=bullet, subsequent_indent=" " * len(bullet)
    ) or [""]


def _table(columns: Sequence[str], rows: Sequence[Sequence[str]], left: int = 1) -> list[str]:
    """A plain table: the first `left` columns left-aligned, the rest right-aligned."""
    cells = [list(columns)] + [list(r) for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(columns))]
    # Too wide: the widest text (left-aligned) column gives way, one column at a time, down to 8
    # characters each, then any column; a cut cell ends with a marker.
    while (over := sum(widths) + 2 * (len(widths) - 1) - WIDTH) > 0:
        pool = [j for j in range(left) if widths[j] > 8] or [
            j for j in range(len(widths)) if widths[j] > 8
        ]
        if not pool:
            break
        i = max(pool, key=lambda j: widths[j])
        second = max((widths[j] for j in pool if j != i), default=8)
        widths[i] -= max(1, min(over, widths[i] - max(8, second)))
    out = []
    for n, r in enumerate(cells):
        parts = []
        for i, c in enumerate(r):
            c = c if len(c) <= widths[i] else c[: widths[i] - 1] + "~"
            parts.append(c.ljust(widths[i]) if i < left else c.rjust(widths[i]))
        out.append("  ".join(parts).rstrip())
        if n == 0:
            out.append("  ".join("-" * w for w in widths))
    return out


def _md_table(columns: Sequence[str], rows: Sequence[Sequence[str]], left: int = 1) -> list[str]:
    def esc(c: str) -> str:
        return c.replace("|", "\\|")

    out = ["| " + " | ".join(esc(c) for c in columns) + " |"]
    out.append("|" + "|".join(":---" if i < left else "---:" for i in range(len(columns))) + "|")
    out.extend("| " + " | ".join(esc(c) for c in r) + " |" for r in rows)
    return out


def _f(v: float | None, nd: int = 2, signed: bool = False) -> str:
    if v is None:
        return "-"
    return f"{v:+.{nd}f}" if signed else f"{v:.{nd}f}"


def _n(v: int | None, signed: bool = False) -> str:
    if v is None:
        return "-"
    return f"{v:+,}" if signed else f"{v:,}"


def _val(v: Any) -> str:
    if isinstance(v, list) and len(v) > 6 and all(isinstance(x, int) for x in v):
        return (
            f"[{v[0]}, {v[1]}, ..., {v[-1]}] ({len(v)})"  # a bs list: its ends and length tell it
        )
    text = json.dumps(v) if not isinstance(v, str) else repr(v)
    return text if len(text) <= 36 else text[:33] + "..."


def _rank(r: str) -> str:
    return r or "(GPU)"


class _Out:
    """Collects lines for one format: text (underlined headings) or Markdown (### headings)."""

    def __init__(self, md: bool) -> None:
        self.md = md
        self.lines: list[str] = []

    def title(self, text: str) -> None:
        if self.md:
            self.lines.extend([f"## {text}", ""])
            return
        wrapped = textwrap.wrap(text, WIDTH, subsequent_indent="  ", break_on_hyphens=False) or [""]
        self.lines.extend([*wrapped, "=" * max(len(x) for x in wrapped)])

    def heading(self, text: str) -> None:
        if self.lines and self.lines[-1] == "":
            self.lines.pop()
        self.lines.extend(["", f"### {text}", ""] if self.md else ["", text])

    def gap(self) -> None:
        self.lines.append("")

    def _block(self) -> None:
        # Markdown blocks (paragraphs, tables, lists) need a blank line between them.
        if self.md and self.lines and self.lines[-1] != "":
            self.lines.append("")

    def para(self, text: str) -> None:
        if self.md:
            self._block()
            self.lines.append(text)
        else:
            self.lines.extend(_wrap(text))

    def bullets(self, items: Sequence[str]) -> None:
        self._block()
        for it in items:
            if self.md:
                self.lines.append(f"- {it}")
            else:
                self.lines.extend(_wrap(it, "- "))

    def table(self, columns: Sequence[str], rows: Sequence[Sequence[str]], left: int = 1) -> None:
        if self.md:
            self._block()
            self.lines.extend(_md_table(columns, rows, left))
        else:
            self.lines.extend(_table(columns, rows, left))

    def details(self, summary: str, body: Callable[[], None]) -> None:
        if self.md:
            self.lines.extend(["", f"<details><summary>{summary}</summary>", ""])
            body()
            self.lines.extend(["", "</details>"])
        else:
            self.heading(summary)
            body()

    def text(self) -> str:
        return "\n".join(self.lines).rstrip() + "\n"


# --- slopes (diff and fit) ----------------------------------------------------------------


def _slopes(o: _Out, slopes: Sequence[dict[str, Any]], fit: bool) -> None:
    o.heading("Slope: graph memory per row (rows = largest captured batch x tokens per request)")
    for i, s in enumerate(slopes):
        if i:
            o.gap()
        rows = " -> ".join(_n(r) for r in s["rows"])
        o.para(
            f"{_rank(s['rank'])} {s['graph']} ({s['basis']}): rows {rows}; tokens per request: {s['rows_source']}."
        )
        cols = ["part", "GiB per launch", "MiB per row", "+-", "intercept GiB", "+-"]
        y = s["largest_bucket_gib"] if s["basis"] == "largest bucket" else s["total_gib"]
        rows_out = [
            [
                s["basis"],
                " ".join(_f(v) for v in y),
                _f(s["mib_per_row"], 3),
                _f(s["mib_per_row_error"], 3),
                _f(s["intercept_gib"], 3),
                _f(s["intercept_error_gib"], 3),
            ]
        ]
        resid = (
            [f"{s['basis']} " + " ".join(_f(r, 4, True) for r in s["residuals_gib"])] if fit else []
        )
        st = s["static"]
        if st is not None and s["static_gib"] is not None:
            rows_out.append(
                [
                    "static buffers",
                    " ".join(_f(v) for v in s["static_gib"]),
                    _f(st["mib_per_row"], 3),
                    _f(st["mib_per_row_error"], 3),
                    _f(st["intercept_gib"], 3),
                    _f(st["intercept_error_gib"], 3),
                ]
            )
            if fit:
                resid.append(
                    "static buffers " + " ".join(_f(r, 4, True) for r in st["residuals_gib"])
                )
        o.table(cols, rows_out, left=2)
        if resid:
            se = s.get("mib_per_row_stderr")
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
        h = s["heuristic"]
        if h is not None:
            o.para(
                f"SGLang's heuristic reserves {h['sglang_mib_per_bs']:g} MiB per unit of max bs ({h['sglang_terms']}); "
                f"measured {h['measured_mib_per_bs']:.2f} MiB per unit of bs ({h['measured_terms']}): "
                f"ratio {h['ratio']:.2f}x."
            )


# --- diff ---------------------------------------------------------------------------------


def _distinct_ranks(rows: Sequence[dict[str, Any]], keys: Sequence[str]) -> tuple[set[str], str]:
    """Ranks whose rows differ from every earlier rank's, and a sentence for the others."""
    by_rank: dict[str, list[str]] = {}
    for r in rows:
        by_rank.setdefault(r["rank"], []).append(json.dumps([r[k] for k in keys]))
    first: dict[str, str] = {}  # signature -> first rank with it
    same: dict[str, list[str]] = {}
    for rank, sig_rows in by_rank.items():
        sig = "\n".join(sig_rows)
        if sig in first:
            same.setdefault(first[sig], []).append(rank)
        else:
            first[sig] = rank
    shown = set(first.values())
    text = "; ".join(
        f"{', '.join(_rank(x) for x in others)}: the same as {_rank(r)}"
        for r, others in same.items()
    )
    return shown, (text + ".") if text else ""


def _only_in(doc: dict[str, Any]) -> str:
    """'Only in A: x, y; only in B: z.' for keys one launch does not print (another version)."""
    parts = [
        f"only in {'launch ' if lab.isdigit() else ''}{lab} ({len(keys)}): {key_list(keys)}"
        for lab, keys in doc.get("only_in", {}).items()
    ]
    if not parts:
        return ""
    text = "; ".join(parts)
    return f"{text[0].upper()}{text[1:]}. A key one launch does not print means another SGLang version, or a trimmed dump."


def _diff(d: dict[str, Any], o: Any) -> str:
    md = o.md
    o.title(f"logmem diff: A = {d['a']['name']}, B = {d['b']['name']}")
    for h in d.get("headlines", []):
        o.para(h)
    o.heading("Settings that differ (memory-relevant)")
    if d["changed_args"]:
        rows = []
        for k, (a, b) in d["changed_args"].items():
            tag = (
                "varied" if k in d["varied_args"] else ("allowed" if k in d["allowed_args"] else "")
            )
            rows.append([k, _val(a), _val(b), tag])
        o.table(["server_args key", "A", "B", "note"], rows, left=4)
    elif d["server_args_missing"]:
        o.para(f"Cannot tell: no server_args line in {' and '.join(d['server_args_missing'])}.")
    elif d.get("only_in"):
        o.para("None among the keys both launches print.")
    else:
        o.para("None.")
    if d.get("only_in"):
        o.para(_only_in(d))
    if d["ignored_args"]:
        ign = "; ".join(f"{k} {_val(a)} -> {_val(b)}" for k, (a, b) in d["ignored_args"].items())
        o.para(f"Ignored (they do not touch memory): {ign}.")

    o.heading("SGLang wording")
    differ = [m for m in d["wording"] if m["differs"]]
    era = f"A: {d['a']['era_guess']}; B: {d['b']['era_guess']} (approximate era from the wording)."
    o.para(
        era if differ else f"The same wording in both logs: {d['a']['era_guess']} (approximate)."
    )
    if differ:
        o.table(["line", "A", "B"], [[m["marker"], m["a"], m["b"]] for m in differ], left=3)

    o.heading("Phases per rank (GiB of free memory each phase took; change = B - A)")
    shown, same = _distinct_ranks(d["phases"], ("key", "a_gib", "b_gib"))
    prow = [
        [
            _rank(p["rank"]) + (f" ~ {_rank(p['rank_b'])}" if p["rank_b"] is not None else ""),
            p["name"],
            _f(p["a_gib"]),
            _f(p["b_gib"]),
            _f(p["change_gib"], signed=True),
        ]
        for p in d["phases"]
        if p["rank"] in shown
    ]
    o.table(["rank", "phase", "A", "B", "change"], prow, left=2)
    if same:
        o.para(same)

    kv = d["kv"]
    if kv is not None:
        ta, tb = kv["tokens"]
        ba, bb = kv["bytes_per_token"]
        bpt = f"{_n(ba)} B per token" if ba == bb else f"{_n(ba)} -> {_n(bb)} B per token"
        o.heading(f"KV cache: {_n(ta)} -> {_n(tb)} tokens ({_n(kv['change_tokens'], True)}), {bpt}")
        ma, mb = kv["mem_fraction_static"]
        o.para(
            f"SGLang's rule, rest = after-weights - P x (1 - mfs): A {_f(kv['after_weights_gib'][0])} - "
            f"{_f(kv['pre_load_gib'][0])} x (1 - {ma:g}) = {_f(kv['rest_gib'][0])} GiB; B "
            f"{_f(kv['after_weights_gib'][1])} - {_f(kv['pre_load_gib'][1])} x (1 - {mb:g}) = "
            f"{_f(kv['rest_gib'][1])} GiB. Tokens from {kv['tokens_source']}."
        )
        if kv["terms"]:
            o.table(
                ["what accounts for the change", "GiB", "tokens"],
                [
                    [t["term"], _f(t["gib"], signed=True), _n(t["tokens"], True)]
                    for t in kv["terms"]
                ],
            )
        elif kv.get("terms_note"):
            o.para(kv["terms_note"])

    if d["graphs"]:
        o.heading("CUDA graphs (GiB; change = B - A)")
        grow = []
        shown, same = _distinct_ranks(d["graphs"], ("graph", "a", "b"))
        for g in d["graphs"]:
            if g["rank"] not in shown:
                continue
            a, b, c = g["a"] or {}, g["b"] or {}, g["change"]
            other = f" ~ {_rank(g['rank_b'])}" if g["rank_b"] is not None else ""
            label = f"{_rank(g['rank'])}{other} {g['graph']}"
            grow.append(
                [label, "largest size", _n(a.get("largest_size")), _n(b.get("largest_size")), ""]
            )
            for part, key in (
                ("static buffers", "static_gib"),
                ("largest bucket", "largest_bucket_gib"),
                ("other buckets", "other_buckets_gib"),
                ("total (mem usage)", "total_gib"),
            ):
                if a.get(key) is None and b.get(key) is None:
                    continue
                grow.append(["", part, _f(a.get(key)), _f(b.get(key)), _f(c[key], signed=True)])
        o.table(["graph", "part", "A", "B", "change"], grow, left=2)
        if same:
            o.para(same)
        for g in d["graphs"]:
            if not g["buckets"]:
                continue
            title = f"Buckets of {_rank(g['rank'])} {g['graph']} that both launches captured (GiB each kept)"
            # The largest size of each launch carries that capture's lazy allocations: say so.
            big_a, big_b = (g["a"] or {}).get("largest_size"), (g["b"] or {}).get("largest_size")

            def size_label(size: Any, big_a: Any = big_a, big_b: Any = big_b) -> str:
                marks = [
                    w for w, big in (("A", big_a), ("B", big_b)) if size is not None and size == big
                ]
                return f"{size} (largest in {' and '.join(marks)})" if marks else str(size)

            rows = [
                [
                    size_label(x["size"]),
                    _f(x["a_gib"]),
                    _f(x["b_gib"]),
                    _f(x["change_gib"], signed=True),
                ]
                for x in g["buckets"]
            ]
            if md:

                def body(rows: list[list[str]] = rows) -> None:
                    o.table(["size", "A", "B", "change"], rows)

                o.details(title, body)
            else:
                # A change of a bucket cost is a difference of four readings: +-0.02 GiB is printing.
                moved = [
                    r for x, r in zip(g["buckets"], rows) if abs(x["change_gib"]) > 0.02 + 1e-9
                ]
                o.heading(title)
                if moved:
                    o.table(["size", "A", "B", "change"], moved)
                o.para(
                    (
                        "Listed: changes beyond the +-0.02 GiB that printing allows; "
                        if moved
                        else ""
                    )
                    + f"{len(rows) - len(moved)} of {len(rows)} sizes are within it (every size: -f markdown/json)."
                )

    if d["slopes"]:
        _slopes(o, d["slopes"], fit=False)
    else:
        o.heading("Slope")
        o.para(d["slope_note"] or "none")
    return _tail(o, d)


def _tail(o: Any, doc: dict[str, Any]) -> str:
    """Every command ends the same way: its notes, then the assumptions it rests on."""
    if doc["notes"]:
        o.heading("Notes")
        o.bullets(doc["notes"])
    o.heading("Assumptions")
    o.bullets(doc["assumptions"])
    return str(o.text())


# --- fit ----------------------------------------------------------------------------------


def _fit(f: dict[str, Any], o: Any) -> str:
    o.title(f"logmem fit: {len(f['launches'])} launches")
    o.table(["#", "launch"], [[str(i + 1), L["name"]] for i, L in enumerate(f["launches"])], left=2)
    o.heading("Settings that differ (memory-relevant)")
    rows = []
    for k, vals in f["changed_args"].items():
        tag = "varied" if k in f["varied_args"] else ("allowed" if k in f["allowed_args"] else "")
        rows.append([k, " | ".join(_val(v) for v in vals), tag])
    o.table(["server_args key", "values (in launch order)", "note"], rows, left=3)
    if f.get("only_in"):
        o.para(_only_in(f))
    _slopes(o, f["slopes"], fit=True)
    return _tail(o, f)


# --- whatif -------------------------------------------------------------------------------


def _whatif(w: dict[str, Any], o: Any) -> str:
    o.title(f"logmem whatif: {w['launch']['name']}")
    m, p = w["measured"], w["predicted"]
    u = w["unfinished"]

    def feasible(x: dict[str, Any]) -> str:
        if x["feasible_label"]:
            return str(x["feasible_label"])
        v = x["feasible"]
        return "yes" if v else ("NO" if v is False else "not ruled out")

    def bound(x: dict[str, Any], key: str, kind: str) -> str:
        shown = _f(x[f"{key}_gib"])
        if x[f"{key}_bound"] == "exact" or x[f"{key}_gib"] is None:
            return shown
        return (">= " if kind == "at least" else "<= ") + shown

    rows = [
        [
            "mem_fraction_static",
            f"{m['mem_fraction_static']:.3f}",
            f"{p['mem_fraction_static']:.3f}",
        ],
        ["largest captured bs", _n(m["largest_bs"]), _n(p["largest_bs"])],
        ["KV budget by SGLang's rule (rest), GiB", _f(m["rest_gib"]), _f(p["rest_gib"])],
        ["KV tokens (max_total_num_tokens)", _n(m["kv_tokens"]), _n(p["kv_tokens"])],
        ["KV pool, GiB", _f(m["kv_gib"]), _f(p["kv_gib"])],
        [
            "max_running_requests (request table)",
            _n(m["max_running_requests"]),
            _n(p["max_running_requests"]),
        ],
        ["CUDA graphs, GiB", bound(m, "graph", "at least"), bound(p, "graph", "at least")],
        [
            f"headroom after capture, GiB ({_rank(p['headroom_rank'] or '')})",
            bound(m, "headroom", "at most"),
            bound(p, "headroom", "at most"),
        ],
        ["feasible", feasible(m), feasible(p)],
    ]
    o.table(["", "measured", "what if"], rows)
    lo, hi = w["mem_fraction_static_window"]
    reserve = w["inputs"]["activation_reserve_gib"] or 0.0
    o.heading("Feasible mem_fraction_static window")
    exact = w["window_top_bound"] == "exact"
    crashed_mfs = m["mem_fraction_static"]
    if u is not None and u["in_capture"] and not u["memory_related"] and lo is not None:
        what = (
            "the log stops"
            if u["status"] == "incomplete"
            else f"the launch crashed ({u['cause']}, not memory)"
        )
        if u["memory_related"] is None and u["status"] != "incomplete":
            what = f"the launch crashed ({u['cause']}; memory or not cannot be told)"
        top = (
            f" Up to {hi:.3f} the free memory at the last reading stays >= {reserve:.2f} GiB, so the top is "
            f"at most {hi:.3f}."
            if hi is not None
            else ""
        )
        o.para(
            f"[{lo:.3f}, ?]: from {lo:.3f} the KV pool is positive. The top cannot be judged for graphs: "
            f"{what} {u['at']}, before the {u['graph'] or 'graph'} capture finished, so its memory is "
            f"unknown.{top}"
        )
    elif not w["window_empty"]:
        text = f"[{lo:.3f}, {hi:.3f}]: from {lo:.3f} the KV pool is positive; "
        if exact:
            text += f"up to {hi:.3f} the headroom after capture stays >= {reserve:.2f} GiB."
        else:
            at = f" {u['at']}" if u else ""
            text += (
                f"the top is at most {hi:.3f}, below the {crashed_mfs:.3f} that ran out of memory{at}. The rest "
                "of the capture was not measured, so the real top may be lower."
            )
        if exact and u is not None and u["memory_related"]:
            text += f" The top is below the {crashed_mfs:.3f} that ran out of memory {u['at']}."
        o.para(text)
    else:
        why = []
        why.append(
            "no value gives a positive KV pool"
            if lo is None
            else f"the KV pool is positive only from {lo:.3f}"
        )
        why.append(
            f"no value leaves {reserve:.2f} GiB after capture"
            if hi is None
            else f"the headroom stays >= {reserve:.2f} GiB only up to {hi:.3f}"
        )
        o.para(f"EMPTY: no mem_fraction_static works: {why[0]}, but {why[1]}.")
    ctx = w["inputs"]["context_length"]
    o.para(f"One full context{f' ({ctx:,} tokens)' if ctx else ''}: {w['full_context']}.")
    return _tail(o, w)


def render_text(model: Model) -> str:
    return _layout(to_json(model), md=False)


def render_markdown(model: Model) -> str:
    return _layout(to_json(model), md=True)


def layout(doc: dict[str, Any], out: Any) -> str:
    """Lay one view model out into `out` (text/Markdown `_Out`, or html.HtmlOut): one layout,
    so the formats cannot disagree."""
    schema = doc["schema"]
    if schema == SCHEMAS[Diff]:
        return _diff(doc, out)
    if schema == SCHEMAS[Fit]:
        return _fit(doc, out)
    return _whatif(doc, out)


def _layout(doc: dict[str, Any], md: bool) -> str:
    return layout(doc, _Out(md))


def render_html(model: Model) -> str:
    from logmem.report.html import render_compare_html

    doc = to_json(model)
    kind = {SCHEMAS[Diff]: "diff", SCHEMAS[Fit]: "fit"}.get(doc["schema"], "whatif")
    return render_compare_html(doc, kind)


RENDERERS: dict[str, Callable[[Model], str]] = {
    "text": render_text,
    "markdown": render_markdown,
    "json": render_json,
    "html": render_html,
}


def render(model: Model, fmt: str) -> str:
    if fmt not in RENDERERS:
        raise LogmemError(
            f"{fmt} output is not available for this command yet; use -f text, markdown or json"
        )
    return RENDERERS[fmt](model)
