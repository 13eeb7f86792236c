"""Sentences of the capture findings: what a capture's graphs took, what its largest bucket
holds, and why a capture's memory rose or cannot be measured (logmem.report.sentences has the
rest; both register on finding_base.finding_text)."""

from __future__ import annotations

import logmem.analysis.findings as fd
from logmem.analysis.ledger import Bound, Cause, Lazy, Span
from logmem.analysis.platform import unified_possible
from logmem.report.causes import bounded_words, cause_name, lazy_list, span_text, verify_label
from logmem.report.causes import on_gpu as _on
from logmem.report.finding_base import finding_text, graphs_name, lines_text
from logmem.report.finding_base import g as _g
from logmem.report.lever_words import smaller_sizes
from logmem.sglang.rules import DIFFERENCE_RESOLUTION_BYTES


def _fixed_size_lazy(c: Cause) -> str:
    """The lazy allocations in a bucket whose size does not follow the bucket's, or ""."""
    lib = c.facts.library.value if c.facts.library else "NCCL"
    names = {Lazy.DEEPEP: "the DeepEP buffer", Lazy.PEER_BUFFERS: f"the {lib} peer buffers"}
    fixed = [names[x] for x in c.facts.lazy if x in names]
    return " and ".join(fixed)


@finding_text.register
def _(f: fd.GraphSplit) -> str:
    tail = (
        "; the number of buckets hardly matters, the largest bucket does"
        if f.largest_dominates
        else ""
    )
    b = bounded_words
    fixed = _fixed_size_lazy(f.largest)
    span = f.largest.facts.span
    lever = (
        "a smaller largest num_tokens"
        if span is not None and span.tokens
        else smaller_sizes(f.lever)
    )
    if fixed:
        # DeepEP's buffer (sized by its dispatch tokens) and the peer buffers do not scale with
        # the bucket size: smaller graph sizes shrink only the graph's part.
        tail = (
            f"{tail}{', but it' if tail else '; the largest bucket'} also holds {fixed} (below), "
            f"which do not shrink with the bucket size: {lever} reduces only its graph's share, "
            "which the log cannot split off"
        )
    label = verify_label(f.graph, span.per_req if span is not None else None)
    # A negative sum is no cost: free memory rose over those buckets (a release, or on a
    # unified-memory device the system RAM the reading is), so it is said as a rise.
    other = (
        f"over the {cause_name(f.other)} free memory rose {_g(-f.other.bytes)} GiB (no cost the "
        "readings can show)"
        if f.other.bytes <= -DIFFERENCE_RESOLUTION_BYTES
        else f"the {cause_name(f.other)} {b(f.other.bytes, f.other.bound)} in all"
    )
    return (
        f"{graphs_name(f.backend)} ({label}) take {b(f.drop_bytes, f.bound)} GiB on {_on(f.rank)}"
        f"{_logged(f.readings_bytes, f.lines[1])}: static {b(f.static.bytes, f.static.bound)}, "
        f"{cause_name(f.largest)} {b(f.largest.bytes, f.largest.bound)}, {other}{tail}."
    )


def _logged(readings: int | None, line: int) -> str:
    """Where a capture's total comes from when the end line's logged figure (SGLang's, from
    unrounded readings) prints otherwise than the difference of the printed readings."""
    if readings is None:
        return ""
    return f" (the end line's mem usage, line {line}; the printed readings give {_g(readings)})"


@finding_text.register
def _(f: fd.GraphsOff) -> str:
    where = (
        f"{f.flag} on the command line, line {f.line}"
        if f.command
        else f"{f.flag}=True in server_args, line {f.line}"
    )
    return (
        f"CUDA graphs are off ({where}): SGLang captures no "
        "graph, so this launch has no capture phase and no graph memory (decode runs without "
        "graphs); no graph size is there to lower."
    )


@finding_text.register
def _(f: fd.LargestBucketNote) -> str:
    # Several lazy allocations and the bucket's graph in one drop: none gets the whole of it.
    return (
        f"The largest {f.graph} bucket's {bounded_words(f.cause.bytes, f.cause.bound)} GiB holds "
        "its own graph and the lazy "
        f"allocations made on the first capture: {lazy_list(f.cause)}; the log cannot split them."
    )


@finding_text.register
def _(f: fd.GraphSparse) -> str:
    parts = "; ".join(f"{cause_name(c)} {bounded_words(c.bytes, c.bound)}" for c in f.parts)
    return (
        f"{graphs_name(f.backend)} ({f.graph}) take {bounded_words(f.drop_bytes, f.bound)} GiB on "
        f"{_on(f.rank)}{_logged(f.readings_bytes, f.lines[1])}, "
        "but the log kept "
        "bar readings for only some buckets, so the largest bucket cannot be told apart: "
        f"{parts}{_END_LINE if any(c.facts.to_end for c in f.parts) else ''}."
    )


# rules.END_LINE_EMPTIES_CACHE, for a stretch measured from the last bar to the end line.
_END_LINE = (
    " (the end line reads free memory after emptying the allocator's cache, the bars without: "
    "the last bar to the end line is that bucket's cost less what the cache gave back)"
)


@finding_text.register
def _(f: fd.StoppedFirstBucket) -> str:
    big, b = f.largest, bounded_words
    lines = lines_text(big.lines)
    text = (
        f"Capture {f.graph} on {_on(f.rank)} did not finish, but its first bucket is measured: "
        f"the {cause_name(big)} took {b(big.bytes, big.bound)} GiB ({lines})"
    )
    a = f.after
    if a is not None:
        text += (
            f", and {span_text(a.facts.span or Span(0))} took {b(a.bytes, a.bound)} up to the "
            f"last bar reading ({lines_text(a.lines)})"
        )
    text += (
        f". The buckets share one {graphs_name(f.backend).removesuffix('s')} memory pool, "
        "so the first holds what the capture allocates once"
    )
    lazy = lazy_list(big)
    if lazy:
        text += f", with the lazy allocations made on the first capture: {lazy}"
    return text + "."


def unified_clause(device: str, where: str, conj: str, other: str = "another process") -> str:
    """The rest of a list of reasons free memory rose: another process, and unified memory only
    on a device that could have it (a GB10 on CUDA, an APU on ROCm; never an Ascend NPU)."""
    if not unified_possible(device):
        return f", {conj} {other}"
    example = "a unified-memory APU" if device == "rocm" else "a unified-memory device such as GB10"
    if not where:
        return f", {other}, {conj} system RAM on {example}"
    return f", {other}, {conj} {example}{where}"


# What a rise of free memory during a capture means, for a plain rise and a negative usage.
_RELEASED = (
    "(temporaries freed, or another process on the GPU), so later readings are higher than the "
    "pools left."
)


@finding_text.register
def _(f: fd.CaptureRose) -> str:
    return (
        f"Free memory rose by {_g(f.bytes)} GiB during capture {f.graph} on {_on(f.rank)}: "
        f"memory was released {_RELEASED}"
    )


@finding_text.register
def _(f: fd.BucketsRose) -> str:
    return (
        f"During capture {f.graph} on {_on(f.rank)} free memory rose between {f.count} bucket "
        f"reading(s) (by up to {_g(f.worst_bytes)} GiB): readings are not monotonic here (freed "
        f"temporaries{unified_clause(f.device, ', where avail mem is system RAM', 'or')})."
    )


@finding_text.register
def _(f: fd.CaptureUnmeasured) -> str:
    if f.bound is Bound.MASKED and f.released_bytes is not None:
        x = _g(f.released_bytes)
        rose = (
            f"free memory rose by {_g(f.rose_bytes)} GiB over the capture, and "
            if f.rose_bytes
            else ""
        )
        return (
            f"The memory of the {f.graph} graphs on {_on(f.rank)} is unknown: {rose}its end line "
            f"(line {f.line}) logs mem usage=-{x} GB: the net of the graphs' cost and at least {x} "
            f"GiB released {_RELEASED}"
        )
    return (
        f"The memory of capture {f.graph} on {_on(f.rank)} is unknown: free memory was already at "
        "the 0.00 GiB floor when it began, so a further drop cannot be measured (its readings to "
        f"line {f.line} all print 0.00)."
    )


_NEGLIGIBLE_WHY = {
    fd.NegligibleReason.BOTTOMED: "free memory was already at 0.00 GiB, so nothing more could "
    "be measured",
    fd.NegligibleReason.REUSED: "they reuse the buffers and memory pool of the earlier captures",
    fd.NegligibleReason.NOTHING: "nothing measurable was allocated",
}


@finding_text.register
def _(f: fd.NegligibleCaptures) -> str:
    counts: dict[str, int] = {}
    for n in f.graphs:
        counts[n] = counts.get(n, 0) + 1
    parts = [n if c == 1 else f"{n} (x{c})" for n, c in counts.items()]
    text = ", ".join(parts[:-1]) + (" and " if len(parts) > 1 else "") + parts[-1]
    what = ("Captures " if len(f.graphs) > 1 else "Capture ") + text
    return (
        f"{what} took no measurable memory on {_on(f.rank)} (within print rounding): "
        f"{_NEGLIGIBLE_WHY[f.reason]}."
    )
