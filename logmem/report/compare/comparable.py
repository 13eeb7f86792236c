"""The sentences of logmem.compare.comparable's mismatches: another model, GPU, TP size or
SGLang wording era, as diff's headlines, fit's refusal and whatif --slope-from's first note."""

from __future__ import annotations

from typing import Any

from logmem.compare import notes as cn
from logmem.compare.comparable import Aspect, Identity, Mismatch
from logmem.report.budget_words import rule_inputs_missing_text as rule_inputs_missing_text
from logmem.sglang.default_mfs import LARGE_GPU_MIB, RESERVE_FLOOR_MIB
from logmem.sglang.rules import DECODE_GRAPH_MIB_PER_BS
from logmem.units import format_gib


def model_text(i: Identity) -> str:
    """'Qwen3ForCausalLM (Qwen/Qwen3-14B, line 7)'; '?' for what the log lacks."""
    inner = ", ".join(
        x for x in (i.model_path, f"line {i.model_line}" if i.model_line else None) if x
    )
    return f"{i.model_type or 'an unnamed architecture'}" + (f" ({inner})" if inner else "")


def _free_text(i: Identity) -> str:
    at = f" (line {i.free_line})" if i.free_line is not None else ""
    return f"{format_gib(i.free_before_load_bytes)} GiB free before loading{at}"


def _tp_text(i: Identity) -> str:
    return f"TP {i.tp_size}" + (" (from the rank tags: no server_args)" if i.tp_from_tags else "")


def _aspect_text(m: Mismatch, lab_a: str, lab_b: str) -> str:
    a, b = m.a, m.b
    if m.aspect is Aspect.MODEL:
        return f"{lab_a} loads {model_text(a)}, {lab_b} {model_text(b)}"
    if m.aspect is Aspect.GPU:
        at = f" (line {b.free_line})" if b.free_line is not None else ""
        return (
            f"{lab_a} had {_free_text(a)}, {lab_b} {format_gib(b.free_before_load_bytes)} GiB{at}"
        )
    if m.aspect is Aspect.TP:
        return f"{lab_a} runs {_tp_text(a)}, {lab_b} {_tp_text(b)}"
    return f"{lab_a} reads as SGLang wording {a.era or 'unknown'}, {lab_b} as {b.era or 'unknown'}"


def slope_across_models_text(n: cn.SlopeAcrossModels) -> str:
    a, b = n.labels
    la, lb = (f"launch {x}" if x.isdigit() else x for x in (a, b))
    also = f"; they also differ in {'; '.join(n.also)}" if n.also else ""
    override = (
        "--allow-diff model_path and each key above fit one anyway"
        if n.also
        else "--allow-diff model_path fits one anyway (one checkpoint under two names)"
    )
    return (
        f"none: the launches load different models: {_aspect_text(n.mismatch, la, lb)}{also}. "
        f"A slope would mix the models' graph sizes; {override}."
    )


def _side_text(i: Identity, aspects: tuple[Aspect, ...]) -> str:
    parts = {
        Aspect.MODEL: model_text(i),
        Aspect.GPU: _free_text(i),
        Aspect.TP: _tp_text(i),
        Aspect.ERA: f"SGLang wording {i.era or 'unknown'}",
    }
    return ", ".join(parts[a] for a in aspects)


_KINDS = {
    Aspect.MODEL: "models",
    Aspect.GPU: "GPUs",
    Aspect.TP: "TP splits",
    Aspect.ERA: "SGLang versions",
}


def slope_from_other_text(n: cn.SlopeFromOtherLaunches) -> str:
    aspects = tuple(m.aspect for m in n.mismatches)
    a, b = n.mismatches[0].a, n.mismatches[0].b
    kinds = [_KINDS[x] for x in aspects]
    across = kinds[0] if len(kinds) == 1 else ", ".join(kinds[:-1]) + " or " + kinds[-1]
    return (
        f"The graph slope comes from other launches: --slope-from A is {_side_text(a, aspects)}; "
        f"LOG is {_side_text(b, aspects)}. A slope need not carry across {across}, so the graph "
        "and headroom figures it prices are estimates."
    )


def different_gpus_text(n: cn.DifferentGpus) -> str:
    return (
        f"Different free memory before loading: {_aspect_text(n.mismatch, 'A', 'B')}: another GPU "
        "size, or a GPU shared with other processes. SGLang sizes the pools from this free "
        "memory, so most of a pool change below follows it, not the settings."
    )


def reserve_floor_text(n: cn.ReserveFloorBinds) -> str:
    who = ", ".join(n.labels)
    return (
        f"No comparison with SGLang's graph reserve ({DECODE_GRAPH_MIB_PER_BS:g} MB per unit of "
        f"max bs): on this GPU (above {LARGE_GPU_MIB // 1024} GiB) SGLang's default reserve is its "
        f"{RESERVE_FLOOR_MIB // 1024} GiB floor at every max bs of launches {who}, so max bs "
        "does not move it."
    )


def same_launch_text(n: cn.SameLaunch) -> str:
    return (
        f"A and B are the same launch (launch {n.launch} of the same input): every change below "
        "is zero by construction and says nothing about any setting. To compare settings, give "
        "two launches (another file, or --launch-b M of a restarted server)."
    )


def register(note_text: Any) -> None:
    """Give report.compare.notes' ``note_text`` these notes' sentences."""
    note_text.register(cn.SlopeAcrossModels)(slope_across_models_text)
    note_text.register(cn.SlopeFromOtherLaunches)(slope_from_other_text)
    note_text.register(cn.DifferentGpus)(different_gpus_text)
    note_text.register(cn.SameLaunch)(same_launch_text)
    note_text.register(cn.ReserveFloorBinds)(reserve_floor_text)
