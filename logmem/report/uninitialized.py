"""Words and JSON for weights the checkpoint did not fill (logmem.analysis.weights_loaded):
the finding's sentence, the verdict's caveat, and a model's ``uninitialized_weights`` object.

Only the log's figures: how many names, their kinds and layers, the weights' mem usage and the
quantization the log names. The log has no parameter count, so no expected size is stated.
"""

from __future__ import annotations

from typing import Any

from logmem.analysis.weights_loaded import WeightsNotLoaded
from logmem.parse import events as ev
from logmem.report.finding_base import finding_text
from logmem.report.finding_base import g as _g
from logmem.sglang.quant import UNQUANTIZED_MOE_PARAMS


def _count(u: ev.WeightsUninitialized) -> str:
    n = f"{u.names:,} weight{'s' if u.names != 1 else ''}"
    return n if u.complete else f"at least {n} (the line is cut)"


def _kinds(u: ev.WeightsUninitialized) -> str:
    parts = [f"{k} ({n:,})" for k, n in u.kinds]
    if u.other_kinds:
        parts.append(f"{u.other_kinds:,} other kind{'s' if u.other_kinds != 1 else ''}")
    text = parts[0] if len(parts) == 1 else f"{', '.join(parts[:-1])} and {parts[-1]}"
    if u.layers and u.layer_min is not None and u.layer_max is not None:
        if u.layers == 1:
            text += f", in layer {u.layer_min}"
        elif u.layer_max - u.layer_min + 1 == u.layers:
            text += f", in layers {u.layer_min}-{u.layer_max}"
        else:
            text += f", in {u.layers} layers between {u.layer_min} and {u.layer_max}"
    return text


def listed(f: WeightsNotLoaded) -> str:
    """'Line N (rank; also ...): K weights were not initialized from the checkpoint: kinds'."""
    u = f.listed
    of = " of the draft model" if f.role == "draft" else ""
    experts = "; all are MoE expert weights" if f.all_experts else ""
    if f.other_ranks:
        rest = ", ".join(f"{r or 'the GPU'} at line {n}" for r, n in f.other_ranks)
        where = f"Line {f.line} ({f.rank or 'the GPU'}; also {rest})"
    else:
        where = f"Line {f.line} ({f.rank or 'the GPU'})"
    return (
        f"{where}: {_count(u)}{of} were not initialized from the checkpoint: {_kinds(u)}{experts}"
    )


@finding_text.register
def _(f: WeightsNotLoaded) -> str:
    text = (
        f"{listed(f)}. The server runs with them uninitialised (as allocated, not the "
        "checkpoint's values), so what they compute is not the model's."
    )
    if f.usage_bytes is not None:
        quant = ", ".join(f"{k}={v}" for k, v in f.quant)
        named = [x for x in (quant, f"server_args quantization={f.quantization!r}") if x]
        if f.quantization is None:
            named = named[:1]
        how = f" ({'; '.join(named)})" if named else ""
        head = f" The weights take {_g(f.usage_bytes)} GiB per rank on {f.rank or 'the GPU'}{how}"
        if f.unquantized_experts:
            text += f"{head}, and {unquantized_text(f)}."
        else:
            text += (
                f"{head}: the log prints no parameter count, so whether that is the size the "
                "quantization implies is for the reader to judge from the checkpoint."
            )
    elif f.unquantized_experts:
        text += f" {unquantized_text(f)[0].upper()}{unquantized_text(f)[1:]}."
    return text


def unquantized_text(f: WeightsNotLoaded) -> str:
    """Why a quantised launch's experts were left unfilled: the method gave the MoE layers
    none, so they are allocated unquantised (sglang.quant)."""
    names = ", ".join(UNQUANTIZED_MOE_PARAMS)
    method = f"quantization={f.quantization!r}" if f.quantization else "this quantization"
    fix = (
        f"; --quantization {f.moe_method} gives AWQ and GPTQ experts a quantised method "
        "(moe_wna16.py; whether its kernels run on this GPU the log does not show)"
        if f.moe_method
        else ""
    )
    source = (
        "AWQConfig gives FusedMoE none: awq.py, sglang 0.5.8-0.5.9"
        if f.moe_method
        else "the names are unquant.py's, sglang 0.5.8-0.5.9"
    )
    return (
        f"the listed names are the unquantised experts' ({names}, SGLang's "
        f"UnquantizedFusedMoEMethod; a quantised method names them w13_qweight, w13_scales ...): "
        f"with {method} SGLang gave the MoE layers no quantised method, so the experts are "
        "allocated in the model's dtype, not at the checkpoint's bits, and its quantised expert "
        f"tensors had no parameter to load into ({source}){fix}"
    )


def caveat_text(f: WeightsNotLoaded, ready: bool) -> str:
    """The verdict's caveat: a start-up can finish with weights the checkpoint never filled."""
    experts = (
        " (all MoE expert weights, allocated unquantised)"
        if f.unquantized_experts
        else " (all MoE expert weights)"
        if f.all_experts
        else ""
    )
    what = (
        f"line {f.line} lists {_count(f.listed)}{experts} that were not initialized from the "
        "checkpoint"
    )
    if ready:
        return (
            f"Caveat: start-up finished, but {what}: the server runs with them uninitialised, "
            "so what they compute is not the model's."
        )
    return f"Also: {what}: a server started this way would run with them uninitialised."


def uninitialized_json(u: ev.WeightsUninitialized | None) -> dict[str, Any] | None:
    if u is None:
        return None
    return {
        "names": u.names,
        "complete": u.complete,
        "kinds": [{"kind": k, "names": n} for k, n in u.kinds],
        "other_kinds": u.other_kinds,
        "layers": u.layers,
        "layer_min": u.layer_min,
        "layer_max": u.layer_max,
        "experts": u.experts,
        "line": u.source.line_no,
    }
