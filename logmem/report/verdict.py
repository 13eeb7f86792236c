"""The verdict in words: the headline, why, and each fix with its price (from failures' facts).

Every figure a sentence quotes is a field of the facts; the arithmetic shown is the one the
failures stage did, so a person can check it against the log.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import singledispatch

import regex

import logmem.analysis.failures.facts as fx
from logmem.analysis.failures.budget import fmt_mfs
from logmem.analysis.failures.records import (
    CaptureError,
    CommBufferError,
    ErrorRecord,
    KVSizing,
    OtherRanksUnfinished,
    OutOfMemory,
    PythonError,
    Unbalanced,
    message_of,
)
from logmem.report.fixes import fix_text, ranks_who, sentence
from logmem.report.fixes import gib_text as _g
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
    return (
        f"{text}, more than the whole GPU had ({_g(n.begin_bytes)} GiB free before). If the model "
        "should fit, check that it shards (e.g. a fallback implementation that does not split the "
        "experts)"
    )


@note_text.register
def _(n: fx.LoadedBudget) -> str:
    empty = (
        ". Even without this OOM there would be no KV pool, so the weights per rank must shrink"
        if n.rest_bytes <= 0
        else ""
    )
    return (
        f"after loading {_g(n.weights_bytes)} GiB of weights, the ranks that finished leave rest = "
        f"{_g(n.after_weights_bytes)} - {_g(n.pre_load_bytes)} x (1 - {fmt_mfs(n.mfs)}) = "
        f"{_g(n.rest_bytes)} GiB for the KV pool{empty}"
    )


@note_text.register
def _(n: fx.DeepEPLazy) -> str:
    return (
        "DeepEP is on (moe_a2a_backend='deepep') and allocates its buffer lazily at the "
        "first dispatch, inside the capture: the failed allocation may be that buffer"
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
    return "the server_args dump (mem_fraction_static) is missing, so no new value can be computed"


@note_text.register
def _(n: fx.BudgetCameOut) -> str:
    return (
        f"the KV budget came out as rest = {_g(n.after_weights_bytes)} - {_g(n.pre_load_bytes)} x "
        f"(1 - {fmt_mfs(n.mfs)}) = {_g(n.rest_bytes)} GiB (smallest Load weight end avail minus "
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
    return (
        f"{_a(n.exc_type) if n.exc_type else 'the error'} points to a code, install or version "
        f"mismatch{free}; do not change --mem-fraction-static or --cuda-graph-max-bs for it"
    )


@note_text.register
def _(n: fx.CommUnknown) -> str:
    return f"{n.library} failed without saying whether memory ran out"


@note_text.register
def _(n: fx.LogStops) -> str:
    return (
        "no error is in the log: it was cut, or the process hung or was killed (a kill leaves no "
        "traceback; the kernel log shows the OOM killer); memory cannot be judged from it"
    )


def explanation_text(f: fx.Failure) -> str:
    """The verdict's second line: the notes, as sentences (a single phrase stays as it is)."""
    if len(f.notes) == 1 and isinstance(f.notes[0], fx.PHRASES):
        return note_text(f.notes[0])
    return " ".join(sentence(t) for n in f.notes if (t := note_text(n)).strip())


# --- the headline --------------------------------------------------------------------------------


def phase_text(phase: str | None, size: int | None = None, unit: str = "bs") -> str:
    """A phase as a phrase for a sentence: 'while capturing the decode graph at bs 256'."""
    if phase is None:
        return "at an unknown point of start-up"
    if phase.startswith("after capture "):
        return f"after the {phase.removeprefix('after capture ')} graph capture"
    if phase.startswith("capture "):
        where = f" at {unit} {size}" if size is not None else ""
        return f"while capturing the {phase.removeprefix('capture ')} graph{where}"
    draft = "the draft model's " if "draft" in phase else ""
    texts = {
        "before distributed init": "before distributed init",
        "distributed init": "during distributed init",
        "after distributed init": "after distributed init, before weight loading",
        "weights": f"while loading {draft or 'the '}weights",
        "pools": f"while sizing and allocating {draft or 'the '}KV cache",
        "after pools": f"after {draft or 'the '}memory pools (before graph capture)",
        "serving": "after the scheduler started (warm-up or serving)",
    }
    return texts.get(phase.replace("draft ", ""), phase)


def _ranks_text(total: int, ranks: Sequence[str]) -> str:
    if not ranks:
        return ""
    if len(ranks) == 1:
        return ranks[0] or "the GPU"
    if len(ranks) == total == 2:
        return f"both ranks ({ranks[0]}, {ranks[1]})"
    if len(ranks) == total and total > 2:
        return f"all {total} ranks"
    return f"{len(ranks)} ranks ({_compress(ranks)})"


def _compress(labels: Sequence[str]) -> str:
    """TP0, TP3, TP4, TP5 -> TP0, TP3-TP5 (only for plain TP labels)."""
    nums = []
    for x in labels:
        m = regex.fullmatch(r"TP(\d+)", x)
        if m is None:
            return ", ".join(labels)
        nums.append(int(m.group(1)))
    out: list[str] = []
    i = 0
    nums.sort()
    while i < len(nums):
        j = i
        while j + 1 < len(nums) and nums[j + 1] == nums[j] + 1:
            j += 1
        out.append(
            f"TP{nums[i]}"
            if i == j
            else (f"TP{nums[i]}, TP{nums[j]}" if j == i + 1 else f"TP{nums[i]}-TP{nums[j]}")
        )
        i = j + 1
    return ", ".join(out)


def _what(rec: ErrorRecord | None) -> str:
    if isinstance(rec, OutOfMemory):
        if rec.comm_library:
            return f"{rec.comm_library} could not allocate its buffer"
        return f"{rec.device or 'GPU'} out of memory"
    if isinstance(rec, KVSizing):
        at = (
            f" at mem_fraction_static={fmt_mfs(rec.mem_fraction_static)}"
            if rec.mem_fraction_static
            else ""
        )
        return f'"Not enough memory" for the KV cache{at}'
    if isinstance(rec, Unbalanced):
        return '"The memory capacity is unbalanced"'
    if isinstance(rec, CaptureError):
        return f"CUDA graph capture failed ({short(rec.message)})"
    if isinstance(rec, CommBufferError):
        return f"{rec.library} error ({short(rec.message)})"
    if isinstance(rec, PythonError):
        return f"{rec.exc_type} ({short(rec.message)})" if rec.message else rec.exc_type
    if isinstance(rec, OtherRanksUnfinished):
        return f"TP rank {rec.tp_rank} finished loading but other ranks did not"
    return "a child process died without a traceback"


def short(text: str, n: int = 80) -> str:
    text = text.strip()
    return text if len(text) <= n else text[: n - 3].rstrip() + "..."


def _memory_word(m: bool | None) -> str:
    if m is None:
        return "Memory-related or not: cannot tell."
    return "Memory-related." if m else "Not memory-related."


def _unit(graph: str | None) -> str:
    return "num_tokens" if graph is not None and rules.graph_sized_in_tokens(graph) else "bs"


def headline_text(f: fx.Failure) -> str:
    """The verdict's first line: what happened, where, on which ranks, with the figures."""
    where = phase_text(f.phase, f.size, _unit(f.graph))
    if f.kind == "stopped":
        rank = f.ranks[0] if f.ranks else "?"
        extra = ""
        if f.phase and f.phase.startswith("capture "):
            extra = _capture_state(f)
        line = f" (last line {f.line.line_no})" if f.line else ""
        return (
            f"Incomplete: the log stops {where}{extra} on {rank or 'the GPU'}{line}; "
            f"this is not a complete start-up."
        )
    figures = ""
    if f.tried_bytes is not None and f.free_bytes is not None:
        figures = f" (tried {_g(f.tried_bytes)} GiB, {_g(f.free_bytes)} GiB free)"
    elif f.phase and f.phase.startswith("capture") and f.bucket_free_bytes is not None:
        on = f" on {f.bar_rank}" if f.bar_rank else ""
        figures = f" ({_g(f.bucket_free_bytes)} GiB free at that bucket{on})"
    on_ranks = _ranks_text(f.ranks_total, f.ranks)
    return (
        f"Crashed: {_what(f.record)}{' on ' + on_ranks if on_ranks else ''} {where}{figures}. "
        f"{_memory_word(f.memory_related)}"
    )


def _capture_state(f: fx.Failure) -> str:
    if f.bucket_free_bytes is not None:
        return f" ({_g(f.bucket_free_bytes)} GiB free)"
    if f.compiling_size is not None:
        return f" (compiling num_tokens {f.compiling_size})"
    if f.capture_begin_bytes is not None:
        return f" (before the first bucket; {_g(f.capture_begin_bytes)} GiB free at capture begin)"
    return ""


def verdict_lines(v: fx.Verdict) -> list[str]:
    """The plain-sentence verdict every report prints first: the outcome, why, and each fix."""
    oc = v.outcome
    lines: list[str] = []
    if oc.status == "ready":
        n = v.ranks_printing
        count = (
            f"{v.world} ranks ({n} print memory lines)"
            if v.world and v.world > n
            else f"{n} rank{'s' if n != 1 else ''}"
        )
        lines.append(f"Ready: start-up finished on {count}.")
    elif oc.failure is not None:
        f = oc.failure
        lines.append(headline_text(f))
        explanation = explanation_text(f)
        if explanation:
            lines.append(sentence(explanation))
        lines.extend(fix_text(x) for x in f.fixes)
        if f.memory_related and not f.fixes:
            lines.append("No fix can be computed from this log (figures missing).")
    else:
        lines.append("Incomplete: the log holds no rank lines, so start-up cannot be judged.")
    if oc.runtime_errors:
        e = v.first_runtime_error
        what = short(message_of(e.record, e.source)) if e is not None else "an error"
        at = f" (first at line {e.source.line_no}: {what})" if e is not None and e.source else ""
        lines.append(
            f"{len(oc.runtime_errors)} error(s) after start-up{at}; they are not start-up failures."
        )
    return lines
