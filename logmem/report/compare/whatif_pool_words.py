"""whatif's notes on the request and Mamba pools and on a held mem_fraction_static: what the
request pool caps, why the value is held, and how the Mamba slots follow (registered on
logmem.report.compare.notes.note_text when logmem.report.compare.whatif_words is imported)."""

from __future__ import annotations

from logmem.compare import whatif_facts as wf
from logmem.report.compare.notes import note_text
from logmem.sglang.default_mfs import Rule
from logmem.sglang.rules import DECODE_GRAPH_MIB_PER_BS


@note_text.register
def _(n: wf.CappedAtRequestPool) -> str:
    # No line: the pool predicted at the new setting (a hybrid Mamba model's slots // 3).
    line = f", line {n.line}" if n.line is not None else " at the predicted setting"
    if n.unchanged:
        asked = f"--cuda-graph-max-bs {n.requested}: " if n.requested is not None else ""
        return (
            f"{asked}the largest captured batch stays {n.pool}: capped by the request pool "
            f"(max_running_requests {n.pool}{line}), as the launch already captured; nothing "
            "changes."
        )
    return (
        f"SGLang caps captured batch sizes at the request pool (max_running_requests "
        f"{n.pool}{line}): largest bs {n.pool}."
    )


@note_text.register
def _(n: wf.MfsHeld) -> str:
    if n.rule is Rule.PASSED:
        return f"mem_fraction_static is held at {n.mfs:g}, as passed on the command line."
    if n.rule is Rule.LARGE_GPU:
        return (
            f"mem_fraction_static is held at {n.mfs:g}: SGLang's default of this era comes from "
            "the GPU's capacity and tp size, so max bs does not move it."
        )
    if n.rule is Rule.TP_TABLE:
        return (
            f"mem_fraction_static is held at {n.mfs:g}: SGLang's default of this era comes from "
            "tp_size alone, so max bs does not move it."
        )
    if n.rule is Rule.GPU_TIER:
        return (
            f"mem_fraction_static is held at {n.mfs:g}: it matches SGLang's GPU-tier default of "
            "sglang 0.4.8-0.5.2 (Jun-Oct 2025), which comes from the GPU's capacity and tp x pp, so max bs does "
            "not move it."
        )
    if n.rule is Rule.RESERVE and n.matches is False:
        return (
            f"mem_fraction_static is held at {n.mfs:g}, as passed: SGLang's reserve formula gives "
            "another value here (see analyze's default-mfs row), so max bs does not move it."
        )
    if n.rule is Rule.RESERVE and n.matches:
        return (
            f"mem_fraction_static is held at {n.mfs:g}, the default SGLang derived from its "
            f"reserve formula; without --mem-fraction-static that default moves by "
            f"{DECODE_GRAPH_MIB_PER_BS:g} MiB per unit of max bs divided by the GPU capacity."
        )
    # Which rule gave it cannot be told: no claim that the default follows max bs.
    return (
        f"mem_fraction_static is held at {n.mfs:g} (whether SGLang derived it or it was passed "
        "cannot be told from the log)."
    )


@note_text.register
def _(n: wf.MambaRequestsFollow) -> str:
    cap = (
        f"; {n.new_requests} requests cap the decode graphs at bs {n.graph_cap}"
        if n.graph_cap is not None
        else ""
    )
    return (
        f"Hybrid Mamba: the log shows max_running_requests {n.requests} (line {n.summary_line}) = "
        f"max_mamba_cache_size {n.slots} (line {n.slots_line}) // 3, so the request count follows "
        f"the Mamba slots, which scale with the Mamba state pool: at {n.mfs:g}, about "
        f"{n.new_slots} slots, {n.new_requests} requests{cap}. The slots are the logged ones x the "
        "change of the full pool's tokens (an estimate: SGLang rounds its own split)."
    )


@note_text.register
def _(n: wf.MambaRequestsHeld) -> str:
    return (
        "max_running_requests is held as logged: this hybrid Mamba model's log does not show it "
        "as max_mamba_cache_size // 3, so how its Mamba slots set it is unknown."
    )
