"""The estimate report: an Estimate -> a typed view model -> text, Markdown or versioned JSON.

``estimate_view`` decides every cell once (units, "unknown" and what would fill it); the
text and Markdown reporters draw its tables with the same table renderers as ``analyze``
(logmem/report/text.py and markdown.py), so the formats cannot disagree. JSON keeps exact
integer bytes (schema logmem.estimate/1).
"""

from __future__ import annotations

import textwrap
from typing import Any

from logmem.analysis.communication import Plan
from logmem.estimate import Estimate, Unknown
from logmem.estimate.notes import ModelDiffers
from logmem.frozen import frozen
from logmem.report import json_text
from logmem.report.communication import plan_json, plan_view
from logmem.report.estimate.words import (
    component_why,
    model_differs_text,
    notes_text,
    unknown_reason,
)
from logmem.report.markdown import md_escape, table_md
from logmem.report.safe_text import one_line, strip_controls
from logmem.report.table import Table
from logmem.report.text import WIDTH, table_lines
from logmem.units import GIB, MIB

SCHEMA = "logmem.estimate/1"
UNKNOWN = "unknown"

# The estimate's settings by the flag that gives each (SGLang's server flags have the same
# names, so the hint also tells a reader of a log which server_args entry was missing).
FLAGS = {
    "cuda_graph_max_bs": "--cuda-graph-max-bs",
    "max_running_requests": "--max-running-requests",
    "context_len": "--context-length",
    "quantization": "--quantization",
}


@frozen
class EstimateView:
    """What the estimate report shows, in the order it shows it."""

    title: str
    summary: Table
    components: Table | None
    notes: tuple[str, ...]
    lead: tuple[str, ...] = ()  # said before the tables: a config for another model


def _bytes(n: int | None) -> str:
    """Binary units, as SGLang's "GB" are GiB; two decimals match the log's resolution."""
    if n is None:
        return UNKNOWN
    if abs(n) >= GIB:
        return f"{n / GIB:.2f} GiB"
    if abs(n) >= MIB:
        return f"{n / MIB:.1f} MiB"
    if abs(n) >= 1 << 10:
        return f"{n / (1 << 10):.1f} KiB"
    return f"{n} B"


def _params(n: int | None) -> str:
    if n is None:
        return UNKNOWN
    for scale, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "K")):
        if abs(n) >= scale:
            return f"{n / scale:.2f} {suffix}"
    return str(n)


def what_fills(u: Unknown | None) -> str:
    """The cell of an unknown figure: "unknown", and what would give it a value."""
    if u is None:
        return UNKNOWN
    wants = []
    if u.settings:
        wants.append("pass " + " and ".join(FLAGS.get(s, s) for s in u.settings))
    if u.config_keys:
        wants.append("config.json has no " + ", ".join(u.config_keys))
    if reason := unknown_reason(u):
        wants.append(reason)
    return f"{UNKNOWN}: " + "; ".join(wants) if wants else UNKNOWN


def _figure(est: Estimate, name: str, value: int | None) -> str:
    return _bytes(value) if value is not None else what_fills(est.unknown_for(name))


def _summary(est: Estimate) -> Table:
    p = est.parallel
    parallel = f"TP {p.tp}, DP {p.dp}, EP {p.ep}, PP {p.pp}"
    if p.dp_attention:
        parallel += f", DP attention (attention TP {p.attn_tp})"
    weights = _figure(est, "weights_bytes_per_rank", est.weights_bytes_per_rank)
    if est.weights_bytes_per_rank is not None and est.weights_bytes_total is not None:
        weights += f" per rank ({est.weights_bytes_total / 1e9:.1f} GB decimal in total)"
    kv = what_fills(est.unknown_for("kv_bytes_per_token_per_rank"))
    if est.kv_bytes_per_token_per_rank is not None:
        kv = f"{est.kv_bytes_per_token_per_rank:,} B per token per rank"
        if est.kv_tokens_per_gib is not None:
            kv += f" ({est.kv_tokens_per_gib:,.0f} tokens per GiB)"
    params = (
        _params(est.params_total)
        if est.params_total is not None
        else what_fills(est.unknown_for("params_total"))
    )
    rows = [
        ("model", one_line(est.model or UNKNOWN)),
        ("parallel", parallel),
        (
            "dtype",
            f"{est.dtype}, KV cache {est.kv_cache_dtype}, "
            f"quantization {est.quantization or 'none'}",
        ),
        ("parameters", params),
        ("weights", weights),
        ("KV cache", kv),
    ]
    if est.kv_swa_bytes_per_token_per_rank is not None:
        rows.append(("SWA KV", f"{est.kv_swa_bytes_per_token_per_rank:,} B per token per rank"))
    logits = (
        "none: this SGLang version has no static logits buffer (the logits are graph outputs)"
        if est.logits_static is False
        else _figure(est, "logits_buffer_bytes", est.logits_buffer_bytes)
    )
    rows.append(("logits buffer", logits))
    if est.has_experts:
        rows.append(
            ("DeepEP LL buffer", _figure(est, "deepep_buffer_bytes", est.deepep_buffer_bytes))
        )
        rows.append(
            ("masked GEMM", _figure(est, "deepep_masked_gemm_bytes", est.deepep_masked_gemm_bytes))
        )
    else:
        rows.append(("DeepEP LL buffer", "none: no routed experts"))
    rows.append(
        ("request-to-token table", _figure(est, "req_to_token_bytes", est.req_to_token_bytes))
    )
    return Table("Expected per rank", ("quantity", "value"), tuple(rows), ("l", "l"))


def _components(est: Estimate) -> Table | None:
    if not est.components:
        return None
    rows = tuple(
        (c.name, _params(c.params), _bytes(c.bytes_per_rank), c.sharding, component_why(c))
        for c in est.components
    )
    return Table(
        "Weights by component",
        ("component", "params", "per rank", "sharding", "why"),
        rows,
        ("l", "r", "r", "l", "l"),
    )


def estimate_view(est: Estimate) -> EstimateView:
    return EstimateView(
        f"Expected sizes for {one_line(est.model or 'an unnamed model')}",  # from config.json
        _summary(est),
        _components(est),
        notes_text(tuple(x for x in est.notes if not isinstance(x, ModelDiffers))),
        tuple(model_differs_text(x) + "." for x in est.notes if isinstance(x, ModelDiffers)),
    )


def _tables(v: EstimateView) -> list[Table]:
    return [v.summary] + ([v.components] if v.components is not None else [])


def _comm_tables(plan: Plan | None) -> tuple[list[Table], tuple[str, ...]]:
    """The Communication table (report.communication's view, drawn as analyze draws it)."""
    if plan is None:
        return [], ()
    v = plan_view(plan)
    return [Table(g.title, g.columns, g.rows, g.align, g.notes) for g in v.grids], (v.summary,)


def render_text(est: Estimate, plan: Plan | None = None) -> str:
    """Plain text, at most 100 columns wide."""
    v = estimate_view(est)
    out = [v.title, "=" * len(v.title)]
    for lead in v.lead:
        out += ["", *textwrap.wrap(lead, WIDTH)]
    for t in _tables(v):
        out += ["", t.title, *table_lines(t)]
    comm_tables, comm_notes = _comm_tables(plan)
    for t in comm_tables:
        out += ["", t.title, *table_lines(t)]
        for note in (*t.notes, *comm_notes):
            out += textwrap.wrap(note, WIDTH)
    if v.notes:
        out += ["", "Notes"]
        for note in v.notes:
            out += textwrap.wrap(note, WIDTH, initial_indent="- ", subsequent_indent="  ")
    return strip_controls("\n".join(out) + "\n")


def render_markdown(est: Estimate, plan: Plan | None = None) -> str:
    """GitHub Markdown: the summary and component tables, the communication table, the notes."""
    v = estimate_view(est)
    out = [f"## {md_escape(v.title)}"]
    out += [x for lead in v.lead for x in ("", md_escape(lead))]
    comm_tables, comm_notes = _comm_tables(plan)
    for t in [*_tables(v), *comm_tables]:
        out += ["", *table_md(t)]
    out += [md_escape(n) for n in comm_notes]
    if v.notes:
        out += ["", "Notes:", ""]
        out += [f"- {md_escape(note)}" for note in v.notes]
    return strip_controls("\n".join(out) + "\n")


def to_json(est: Estimate, plan: Plan | None = None) -> dict[str, Any]:
    """A JSON-ready dict; exact integer bytes, null where the config does not say, and for
    each null figure the flags (settings) or config keys that would fill it."""
    p = est.parallel
    return {
        "schema": SCHEMA,
        "model": est.model,
        "parallel": {
            "tp": p.tp,
            "dp": p.dp,
            "ep": p.ep,
            "pp": p.pp,
            "dp_attention": p.dp_attention,
            "attn_tp": p.attn_tp,
        },
        "dtype": est.dtype,
        "kv_cache_dtype": est.kv_cache_dtype,
        "quantization": est.quantization,
        "params_total": est.params_total,
        "weights_bytes_total": est.weights_bytes_total,
        "weights_bytes_per_rank": est.weights_bytes_per_rank,
        "kv_bytes_per_token_per_rank": est.kv_bytes_per_token_per_rank,
        "kv_swa_bytes_per_token_per_rank": est.kv_swa_bytes_per_token_per_rank,
        "kv_tokens_per_gib": est.kv_tokens_per_gib,
        "components": [
            {
                "name": c.name,
                "params": c.params,
                "bytes_per_rank": c.bytes_per_rank,
                "sharding": c.sharding,
                "why": component_why(c),
            }
            for c in est.components
        ],
        "logits_buffer_bytes": est.logits_buffer_bytes,
        "logits_buffer_static": est.logits_static,
        "deepep_buffer_bytes": est.deepep_buffer_bytes,
        "deepep_masked_gemm_bytes": est.deepep_masked_gemm_bytes,
        "req_to_token_bytes": est.req_to_token_bytes,
        "communication": plan_json(plan) if plan is not None else None,
        "notes": list(notes_text(est.notes)),
        "unknown": [
            {
                "figure": u.figure,
                "flags": [FLAGS.get(s, s) for s in u.settings],
                "config_keys": list(u.config_keys),
                "reason": unknown_reason(u) or None,
            }
            for u in est.unknown
        ],
    }


def render_json(est: Estimate, plan: Plan | None = None) -> str:
    return json_text.dumps(to_json(est, plan)) + "\n"
