"""Render an Estimate (expected sizes from config.json) as text, Markdown or versioned JSON."""

from __future__ import annotations

import textwrap
from typing import Any

from logmem.estimate import Estimate
from logmem.units import GIB

SCHEMA = "logmem.estimate/1"
WIDTH = 100
UNKNOWN = "unknown"


def _bytes(n: int | None) -> str:
    """Binary units, as SGLang's "GB" are GiB; two decimals match the log's resolution."""
    if n is None:
        return UNKNOWN
    if abs(n) >= GIB:
        return f"{n / GIB:.2f} GiB"
    if abs(n) >= 1 << 20:
        return f"{n / (1 << 20):.1f} MiB"
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


def _parallel(est: Estimate) -> str:
    p = est.parallel
    text = f"TP {p.tp}, DP {p.dp}, EP {p.ep}, PP {p.pp}"
    if p.dp_attention:
        text += f", DP attention (attention TP {p.attn_tp})"
    return text


def _summary(est: Estimate) -> list[tuple[str, str]]:
    """The label/value rows both text and Markdown show, so they cannot disagree."""
    weights = _bytes(est.weights_bytes_per_rank)
    if est.weights_bytes_total is not None:
        weights += f" per rank ({est.weights_bytes_total / 1e9:.1f} GB decimal in total)"
    kv = UNKNOWN
    if est.kv_bytes_per_token_per_rank is not None:
        kv = f"{est.kv_bytes_per_token_per_rank:,} B per token per rank"
        if est.kv_tokens_per_gib is not None:
            kv += f" ({est.kv_tokens_per_gib:,.0f} tokens per GiB)"
    rows = [
        ("model", est.model or UNKNOWN),
        ("parallel", _parallel(est)),
        (
            "dtype",
            f"{est.dtype}, KV cache {est.kv_cache_dtype}, "
            f"quantization {est.quantization or 'none'}",
        ),
        ("parameters", _params(est.params_total)),
        ("weights", weights),
        ("KV cache", kv),
    ]
    if est.kv_swa_bytes_per_token_per_rank is not None:
        rows.append(("SWA KV", f"{est.kv_swa_bytes_per_token_per_rank:,} B per token per rank"))
    rows += [
        ("logits buffer", _bytes(est.logits_buffer_bytes)),
        ("DeepEP LL buffer", _bytes(est.deepep_buffer_bytes)),
    ]
    if est.deepep_masked_gemm_bytes is not None:
        rows.append(("masked GEMM", _bytes(est.deepep_masked_gemm_bytes)))
    rows.append(("req_to_token", _bytes(est.req_to_token_bytes)))
    return rows


def _component_rows(est: Estimate) -> list[tuple[str, str, str, str, str]]:
    return [
        (c.name, _params(c.params), _bytes(c.bytes_per_rank), c.sharding, c.why)
        for c in est.components
    ]


def render_text(est: Estimate) -> str:
    """Plain text, at most 100 columns wide."""
    lines = [f"Expected sizes for {est.model or 'an unnamed model'}", ""]
    label_w = max(len(label) for label, _ in _summary(est)) + 2
    for label, value in _summary(est):
        wrapped = textwrap.wrap(value, WIDTH - label_w) or [""]
        lines.append(f"{label:<{label_w}}{wrapped[0]}")
        lines += [" " * label_w + more for more in wrapped[1:]]
    rows = _component_rows(est)
    if rows:
        head = ("component", "params", "per rank", "sharding", "why")
        widths = [max(len(head[i]), *(len(r[i]) for r in rows)) for i in range(4)]
        indent = sum(widths) + 2 * 4
        why_w = max(20, WIDTH - indent)
        lines += ["", _row(head, widths, why_w)[0]]
        for r in rows:
            lines += _row(r, widths, why_w)
    if est.notes:
        lines += ["", "Notes:"]
        for note in est.notes:
            lines += textwrap.wrap(note, WIDTH, initial_indent="- ", subsequent_indent="  ")
    return "\n".join(lines) + "\n"


def _row(cells: tuple[str, ...], widths: list[int], why_w: int) -> list[str]:
    name, params, per_rank, sharding, why = cells
    left = (
        f"{name:<{widths[0]}}  {params:>{widths[1]}}  {per_rank:>{widths[2]}}  "
        f"{sharding:<{widths[3]}}  "
    )
    wrapped = textwrap.wrap(why, why_w) or [""]
    out = [(left + wrapped[0]).rstrip()]
    out += [" " * len(left) + more for more in wrapped[1:]]
    return out


def _md(text: str) -> str:
    return text.replace("|", "\\|")


def render_markdown(est: Estimate) -> str:
    """GitHub Markdown: a summary table, a component table and the notes."""
    lines = [
        f"## Expected sizes for {_md(est.model or 'an unnamed model')}",
        "",
        "| | |",
        "|---|---|",
    ]
    lines += [f"| {_md(label)} | {_md(value)} |" for label, value in _summary(est)]
    rows = _component_rows(est)
    if rows:
        lines += [
            "",
            "| Component | Parameters | Per rank | Sharding | Why |",
            "|---|---:|---:|---|---|",
        ]
        lines += ["| " + " | ".join(_md(c) for c in r) + " |" for r in rows]
    if est.notes:
        lines += ["", "Notes:", ""]
        lines += [f"- {note}" for note in est.notes]
    return "\n".join(lines) + "\n"


def to_json(est: Estimate) -> dict[str, Any]:
    """A JSON-ready dict; exact integer bytes, null where the config does not say."""
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
                "why": c.why,
            }
            for c in est.components
        ],
        "logits_buffer_bytes": est.logits_buffer_bytes,
        "deepep_buffer_bytes": est.deepep_buffer_bytes,
        "deepep_masked_gemm_bytes": est.deepep_masked_gemm_bytes,
        "req_to_token_bytes": est.req_to_token_bytes,
        "notes": list(est.notes),
    }
