"""The verdict's notes in words: why a failure is (not) memory, and what the log lacks.

One phrase per note type of logmem.analysis.failures.facts; every figure is a field of it.
"""

from __future__ import annotations

from functools import singledispatch

import logmem.analysis.failures.facts as fx
from logmem.analysis.failures.budget import fmt_mfs
from logmem.analysis.failures.traces import Where
from logmem.parse.events import Frame
from logmem.report.fixes import gib_text as _g
from logmem.report.fixes import ranks_who, sentence
from logmem.report.formula import kv_rule_text
from logmem.report.order_sentences import begins_at
from logmem.sglang import rules

# --- notes ---------------------------------------------------------------------------------------


@singledispatch
def note_text(n: object) -> str:
    """One reason the verdict gives, as a phrase."""
    raise TypeError(f"no words for {type(n).__name__}")


@note_text.register
def _(n: fx.Shortfall) -> str:
    return (
        f"{_g(n.tried_bytes)} GiB was asked for with {_g(n.free_bytes)} GiB free: "
        f"{_g(n.shortfall_bytes)} GiB short"
    )


@note_text.register
def _(n: fx.PyTorchHeld) -> str:
    return f"PyTorch held {_g(n.allocated_bytes)} GiB of the {_g(n.capacity_bytes)} GiB GPU"


@note_text.register
def _(n: fx.GpuBusyEarly) -> str:
    return (
        "nothing of SGLang's own size was allocated yet, so the GPU was already busy: "
        "check other processes on it (nvidia-smi); memory flags do not apply"
    )


@note_text.register
def _(n: fx.WeightsBeforePool) -> str:
    return "weights load before the KV pool is sized, so --mem-fraction-static does not help here"


@note_text.register
def _(n: fx.WeightsFloor) -> str:
    text = (
        f"{n.rank or 'the GPU'} needed at least {_g(n.begin_bytes)} - {_g(n.free_bytes)} + "
        f"{_g(n.tried_bytes)} = {_g(n.at_least_bytes)} GiB while loading"
    )
    if n.case is fx.FloorCase.FITS:
        return f"{text}, with {_g(n.begin_bytes)} GiB free before"
    if n.case is fx.FloorCase.PEAKS:
        return (
            f"{text}, more than the {_g(n.begin_bytes)} GiB it had free: loading peaks above the "
            f"final size (the ranks that finished hold {_g(n.finished_bytes)} GiB)"
        )
    if n.beyond_capacity:
        text += f", more than the whole GPU ({_g(n.capacity_bytes)} GiB)"
    else:
        cap = f" (the GPU has {_g(n.capacity_bytes)} GiB)" if n.capacity_bytes is not None else ""
        text += f", more than the {_g(n.begin_bytes)} GiB free before loading{cap}"
    if n.fallback:  # the fallback note that follows says why
        return text
    return (
        f"{text}. If the model should fit, check that it shards (e.g. a fallback implementation "
        "that does not split the experts)"
    )


@note_text.register
def _(n: fx.LoadedBudget) -> str:
    empty = ""
    if n.rest_bytes <= 0:
        zero = rules.smallest_mfs_with_pool(n.after_weights_bytes, n.pre_load_bytes)
        flag = zero / n.factor if zero is not None else None
        empty = (
            f". Even without this OOM, mem_fraction_static {fmt_mfs(n.mfs)} would leave no KV "
            + (
                f"pool (it takes more than {flag:.3f}, or fewer weights per rank)"
                if flag is not None and flag < 1
                else "pool, and no value below 1 would: the weights per rank must shrink"
            )
        )
    return (
        f"after loading {_g(n.weights_bytes)} GiB of weights, the ranks that finished leave rest = "
        f"{_rule(n)} for the KV pool{empty}"
    )


@note_text.register
def _(n: fx.PostCaptureResize) -> str:
    # sglang 0.5.17-0.5.23 kv_pool_runtime.py compute_post_capture_kv_resize; the pages are
    # backed with cuMemCreate (kv_vmm_backing.py), each buffer rounded up to whole pages.
    read = (
        f" ({n.rank or 'the GPU'} had {_g(n.free_bytes)} GiB at line {n.free_line})"
        if n.free_bytes is not None
        else ""
    )
    kept = (
        f"P x (1 - mfs) = {_g(n.pre_load_bytes)} x (1 - {n.mfs:g}) = {_g(n.headroom_bytes)} GiB"
        if n.headroom_bytes is not None and n.pre_load_bytes is not None and n.mfs is not None
        else "P x (1 - mem_fraction_static)"
    )
    return (
        "under post-capture KV sizing the KV pool is backed only after the CUDA graphs: SGLang "
        f"reads the least free memory over ranks then{read}, keeps {kept} free and backs the "
        "rest as KV pages, so an out-of-memory there means less was free when the pages were "
        "backed than the sizing counted on (another process took memory, or the headroom was "
        "smaller than the whole pages each buffer is rounded up to). Lowering "
        "--mem-fraction-static keeps more free; lowering --cuda-graph-max-bs does not: in this "
        "mode memory the graphs leave goes to the KV pool, not to the headroom"
    )


@note_text.register
def _(n: fx.PostCaptureBudgetShort) -> str:
    # kv_pool_runtime.py: budget = free after the graphs - P x (1 - mfs) + the pages backed.
    f = n.figures
    read = f" ({_g(f.free_bytes)} GiB at line {f.free_line})" if f.free_bytes is not None else ""
    kept = (
        f"P x (1 - mfs) = {_g(f.pre_load_bytes)} x (1 - {f.mfs:g}) = {_g(f.headroom_bytes)} GiB"
        if f.headroom_bytes is not None and f.pre_load_bytes is not None and f.mfs is not None
        else "P x (1 - mem_fraction_static)"
    )
    return (
        "under post-capture KV sizing the budget that came out short is not the KV rule's rest "
        "(that only sized the address-space reservation): it is the free memory after the CUDA "
        f"graphs{read} less {kept}. Raising --mem-fraction-static grows it; so does every GiB "
        "the graphs no longer take (smaller CUDA-graph sizes), since in this mode the graphs "
        "come out of the KV pool"
    )


@note_text.register
def _(n: fx.DeepEPLazy) -> str:
    return (
        "DeepEP is on (moe_a2a_backend='deepep') and allocates its buffer lazily at the "
        "first dispatch, inside the capture: the failed allocation may be that buffer"
    )


@note_text.register
def _(n: fx.LibraryHeapLimit) -> str:
    free = (
        f"the {_g(n.free_bytes)} GiB free in its message"
        if n.free_bytes is not None
        else "its message's free figure"
    )
    return (
        f"the bar before it read {_g(n.reading_bytes)} GiB free (line {n.line}), more "
        f"than the {_g(n.tried_bytes)} GiB {n.library} asked for: {free} is most likely the "
        "library's own heap, not the device's free memory as SGLang reads it, so a lower "
        "--mem-fraction-static may not help; shrinking the request (its dispatch tokens) does"
    )


@note_text.register
def _(n: fx.MfsCannotFix) -> str:
    b = n.blocker
    if isinstance(b, fx.NoKVTokensLeft):
        why = f"lowering mem_fraction_static to {fmt_mfs(b.to)} would leave no KV tokens"
    else:
        floor = (
            f"; below {fmt_mfs(b.smallest)} the KV pool is empty" if b.smallest is not None else ""
        )
        why = f"mem_fraction_static would have to drop to {fmt_mfs(b.to)}{floor}"
    return f"lowering --mem-fraction-static alone cannot fix it: {why}"


@note_text.register
def _(n: fx.NoServerArgs) -> str:
    return "the server_args dump is missing, so the mem_fraction_static in use is not known"


@note_text.register
def _(n: fx.BudgetCameOut) -> str:
    return (
        f"the KV budget came out as rest = {_rule(n)} (smallest Load weight end avail minus "
        "P x (1 - mfs), P = the smallest Load weight begin avail)"
    )


@note_text.register
def _(n: fx.NoMfsGivesPool) -> str:
    return (
        "no mem_fraction_static below 1 gives a pool: only "
        f"{_g(n.after_weights_bytes)} GiB is free after the weights"
    )


@note_text.register
def _(n: fx.ImbalanceGap) -> str:
    return (
        f"{ranks_who(n.ranks)} has {n.gap_gib:.2f} GiB less free memory than the others "
        f"(pre_model_load_memory={n.pre_model_load_gib:.2f} GiB, the minimum over ranks, vs "
        f"local_gpu_memory={n.local_gib:.2f} GiB on a rank that raised it). The check runs after "
        "distributed init, before the weights load, so the memory was taken before SGLang "
        "allocated anything of size: usually another process on that GPU"
    )


@note_text.register
def _(n: fx.OwnReading) -> str:
    return f"{n.rank}'s own Load weight begin reads {_g(n.bytes)} GiB"


@note_text.register
def _(n: fx.ImbalanceNoFigures) -> str:
    return (
        f"{ranks_who(n.ranks)} had less free memory than the others before the weights loaded: "
        "usually another process"
    )


@note_text.register
def _(n: fx.RanksLagging) -> str:
    lead = f"{', '.join(n.ranks)} printed no Load weight end: " if n.ranks else ""
    return (
        lead + "a rank failed while loading or is slow, and its own error is not in this log "
        "(often an OOM)"
    )


@note_text.register
def _(n: fx.NoTraceback) -> str:
    return "no traceback reached the log; the child's own output may be elsewhere"


def _a(word: str) -> str:
    return ("an " if word[:1].lower() in "aeiou" else "a ") + word


@note_text.register
def _(n: fx.NotMemory) -> str:
    free = (
        f" ({_g(n.bucket_free_bytes)} GiB was still free at that bucket)"
        if n.bucket_free_bytes is not None
        else ""
    )
    raised = n.raised
    where = ""
    # A component's fix quotes its frame; the capture machinery's frame is said here.
    if raised is not None and raised.frame is not None and raised.where is Where.CAPTURE:
        where = f", raised by the capture machinery in {frame_text(raised.frame)}"
    return (
        f"{_a(n.exc_type) if n.exc_type else 'the error'} points to a code, install or version "
        f"mismatch{where}{free}; do not change --mem-fraction-static or the CUDA-graph sizes for it"
    )


@note_text.register
def _(n: fx.TracebackCut) -> str:
    last = f" (its last frame: {frame_text(n.frame)})" if n.frame is not None else ""
    return (
        f"the log ends inside a traceback, before its exception line{last}: the cause is not "
        "in the log; the full log (or the process's own output) has the exception"
    )


@note_text.register
def _(n: fx.MemoryHint) -> str:
    return (
        f"the {n.exc_type} names memory only among possible causes (a launcher's hint, not the "
        "error raised); whether memory ran out cannot be told from it: check the kernel log "
        "(dmesg) for the OOM killer and the process's own output"
    )


@note_text.register
def _(n: fx.OutsidePyTorch) -> str:
    this = ""
    if n.this_process_bytes is not None:
        others = n.used_bytes - n.this_process_bytes
        this = (
            f"; the message says this process has {_g(n.this_process_bytes)} GiB, so "
            f"{_g(n.this_process_bytes - n.pytorch_bytes)} GiB of it is its own non-PyTorch "
            f"memory and {_g(others)} GiB belongs to other processes"
        )
    fits = (
        ": freed, it would cover the shortfall, so the model fits and quantisation or offload "
        "is not the fix"
        if n.fits
        else ""
    )
    return (
        f"PyTorch held {_g(n.pytorch_bytes)} GiB (allocated + reserved) of the "
        f"{_g(n.used_bytes)} GiB in use on the {_g(n.capacity_bytes)} GiB GPU: "
        f"{_g(n.outside_bytes)} GiB is outside PyTorch, held by another process on the GPU or "
        f"by this process's non-PyTorch allocations ({_outside_words(n.device)}){this}{fits}"
    )


def _outside_words(device: str | None) -> str:
    """What a process holds outside PyTorch on the OOM's device: its collective library and
    runtime context (RCCL and HIP on ROCm, HCCL on Ascend)."""
    return {
        "HIP": "RCCL, the HIP context",
        "NPU": "HCCL, the NPU context",
        "MUSA": "MCCL, the MUSA context",
    }.get(device or "", "NCCL, CUDA context")


@note_text.register
def _(n: fx.LargerThanGpu) -> str:
    return (
        f"the one allocation asked for {_g(n.tried_bytes)} GiB, more than the GPU's whole "
        f"{_g(n.capacity_bytes)} GiB: no memory setting makes room for it; the work of one step "
        "must shrink (fewer tokens per batch or per prefill chunk)"
    )


@note_text.register
def _(n: fx.RuleDoesNotExplain) -> str:
    might = ["an adjustment SGLang makes to mem_fraction_static before sizing"]
    if n.multimodal:
        might[0] += " (multimodal models: scaled in some versions)"
    might.append(
        "a draft model's weights and KV pool (speculative decoding is on)"
        if n.draft
        else "a draft model's weights and KV pool, if one runs"
    )
    might.append("a reserve for a multimodal encoder")
    # sglang 0.5.14, srt/model_executor/pool_configurator.py MemoryPoolConfig.__post_init__:
    # from 0.5.14 a non-positive budget raises "Loaded weights leave no GPU memory for the KV
    # cache" instead, and this message means the pools got no token from a positive budget.
    might.append(
        "a fixed part the pool configurator takes from the budget before any token (Mamba, "
        "SWA or DSA state, a draft's cell, page alignment, --max-total-tokens): from sglang "
        "0.5.14 on, this message means exactly that, a positive budget that gave no token"
    )
    return (
        f"SGLang's KV rule gives rest = {_rule(n)}, a positive budget, yet SGLang "
        f"found not enough memory: the rule does not explain this failure. What might: "
        f"{'; '.join(might)}"
    )


@note_text.register
def _(n: fx.TransformersFallback) -> str:
    shard = (
        f": the load needed more than {'the whole GPU' if n.beyond_capacity else 'the GPU had free'}, "
        "so the fallback did not spread the model over the GPUs (it shards only the linear "
        "layers of the model's Transformers TP plan: e.g. fused experts stay whole on each GPU)"
        if n.whole_gpu
        else ""
    )
    return f"the model runs on the Transformers backend (the log says 'Using Transformers backend.'){shard}"


def _rule(n: fx.LoadedBudget | fx.BudgetCameOut | fx.RuleDoesNotExplain) -> str:
    return kv_rule_text(
        n.after_weights_bytes, n.pre_load_bytes, mfs_term(n.mfs, n.factor), n.rest_bytes
    )


def mfs_term(mfs: float, factor: float) -> str:
    """The mem_fraction_static the rule runs with: the flag, times SGLang's own factor if any."""
    return fmt_mfs(mfs) if factor == 1 else f"{fmt_mfs(mfs)} x {factor:g}"


def frame_text(f: Frame) -> str:
    """A frame as a reader finds it: the file, the line, the function."""
    return f"{f.path.rsplit('/', 1)[-1]} line {f.line}, in {f.func}"


@note_text.register
def _(n: fx.CommUnknown) -> str:
    return f"{n.library} failed without saying whether memory ran out"


@note_text.register
def _(n: fx.LogStops) -> str:
    if n.next_launch_line is not None:
        return (
            f"the next launch begins {begins_at(n.next_launch_line, n.next_launch_after)}: this "
            "one ended without an error line (killed or restarted), so memory cannot be judged "
            "from it"
        )
    return (
        "no error is in the log: it was cut, or the process hung or was killed (a kill leaves no "
        "traceback; if the OOM killer ended it, the kernel log would say so); memory "
        "cannot be judged from it"
    )


def explanation_text(f: fx.Failure) -> str:
    """The verdict's second line: the notes, as sentences (a single phrase stays as it is)."""
    if len(f.notes) == 1 and isinstance(f.notes[0], fx.PHRASES):
        return note_text(f.notes[0])
    return " ".join(sentence(t) for n in f.notes if (t := note_text(n)).strip())
