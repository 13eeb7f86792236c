"""Graph captures in the ledger: a capture's drop split into static buffers, the largest bucket and the rest."""

from __future__ import annotations

from logmem.analysis.ledger import Bucket, Cause, Phase, Reading, remainder
from logmem.model.records import OPENED_BY_BARS, Graph, Launch, Rank
from logmem.sglang import comm, rules


def lazy_note(launch: Launch, deepep: bool = True) -> str:
    """What the first capture of a kind also allocates lazily (DeepEP, EP all-to-all, DP attention).

    DeepEP's buffer is one per process, created at the first dispatch and reused
    (``sglang.comm.deepep_on``): only the launch's first capture holds it (``deepep``)."""
    a = launch.args
    why = []
    if deepep and comm.deepep_on(a):
        why.append("DeepEP buffers (moe_a2a_backend='deepep')")
    ep = a.get("ep_size")
    if isinstance(ep, int) and ep > 1:
        why.append(f"expert-parallel (ep_size={ep}) all-to-all buffers")
    if a.get("enable_dp_attention"):
        why.append("DP-attention gather buffers")
    if not why:
        return ""
    return "includes lazy allocations made on the first capture: " + ", ".join(why)


def graph_kind(name: str) -> str:
    """Prefill-type graphs (piecewise, prefill) and decode-type graphs allocate different lazy buffers."""
    return "prefill" if rules.graph_sized_in_tokens(name) else "decode"


def _bucket_indices(g: Graph) -> tuple[list[int], int | None, bool]:
    """Each sample's 0-based bucket in capture order, the number of buckets, and whether
    the indices were read (tqdm's n/total or the sizes list) rather than assumed."""
    order = sorted(g.sizes, reverse=True) if g.sizes else None  # SGLang captures largest first
    n = len(order) if order else g.bar_total
    out: list[int] = []
    known = True
    for i in range(len(g.samples)):
        b = g.sample_bucket(i)
        if b is None:
            b, known = i, False
        out.append(b)
    return out, n, known


def _size_name(g: Graph, size: int | None) -> str:
    if size is None:
        return "?"
    return f"num_tokens {size}" if graph_kind(g.name) == "prefill" else f"bs {size}"


def _span(g: Graph, lo: int, hi: int, size: int | None = None) -> str:
    """Buckets lo..hi-1 (capture order) in words; ``size``: the bar's size at bucket lo."""
    order = sorted(g.sizes, reverse=True) if g.sizes else None
    count = hi - lo
    if order is None and count == 1 and size is not None:
        return f"bucket {_size_name(g, size)}"
    if order is None or not 0 <= lo < hi <= len(order):
        # Counts that do not fit the sizes list (two logs interleaved, a cut bar): say less.
        return f"{count} bucket{'s' if count != 1 else ''}" if count > 0 else "buckets"
    if count == 1:
        return f"bucket {_size_name(g, order[lo])}"
    return f"{count} buckets, {_size_name(g, order[lo])} to {order[hi - 1]}"


def graph_phase(
    g: Graph,
    before: Reading,
    after: Reading,
    launch: Launch,
    rank: Rank,
    first_of_kind: bool,
    first_capture: bool = True,
) -> Phase:
    """The capture between two readings: static buffers, the largest bucket and the others when
    the bar readings allow, else one cause per stretch of buckets, else the logged total."""
    delta = before.bytes - after.bytes
    lines = (before.line, after.line)
    causes: list[Cause] = []
    buckets: list[Bucket] = []
    s = g.samples
    open_capture = after.kind == "last_sample"
    if s:
        idx, n, known = _bucket_indices(g)
        ends: list[int | None] = [*idx[1:], n if n is not None and not open_capture else None]
        for i, smp in enumerate(s):
            nxt = (
                s[i + 1].avail.bytes if i + 1 < len(s) else (None if open_capture else after.bytes)
            )
            cost = smp.avail.bytes - nxt if nxt is not None else None
            hi = ends[i]
            covers = (hi - idx[i]) if hi is not None and hi > idx[i] else 1
            buckets.append(Bucket(smp.size, smp.avail.bytes, cost, smp.source.line_no, covers))
        consecutive = idx == list(range(len(s)))
        lazy = lazy_note(launch, deepep=first_capture) if first_of_kind else ""
        assumed = "" if known else "bar renders carry no bucket count: assumed consecutive"
        head = (before.line, s[0].source.line_no)
        if before.kind == "first_sample":
            pass  # the phase opens at the first bar reading: nothing lies before it
        elif idx[0] == 0:
            causes.append(
                Cause(
                    "static buffers (before the first bucket)",
                    before.bytes - s[0].avail.bytes,
                    "derived",
                    head,
                    assumed,
                    part="static",
                )
            )
        else:
            first_n = f"first {idx[0]} bucket{'s' if idx[0] != 1 else ''}"
            causes.append(
                Cause(
                    f"static buffers + {first_n} (one reading)",
                    before.bytes - s[0].avail.bytes,
                    "derived",
                    head,
                    lazy,
                    part="mixed",
                )
            )
            lazy = ""
        if open_capture:
            if len(s) > 1:
                causes.append(
                    Cause(
                        f"{_span(g, idx[0], idx[-1])}, before the stop",
                        s[0].avail.bytes - s[-1].avail.bytes,
                        "derived",
                        (s[0].source.line_no, s[-1].source.line_no),
                        lazy,
                        part="buckets",
                    )
                )
        elif len(s) >= 2 and consecutive and idx[0] == 0:
            causes.append(
                Cause(
                    f"largest bucket ({_size_name(g, s[0].size) if s[0].size else 'first bucket'})",
                    s[0].avail.bytes - s[1].avail.bytes,
                    "derived",
                    (s[0].source.line_no, s[1].source.line_no),
                    lazy,
                    part="largest",
                )
            )
            n_other = (n - 1) if n is not None else (len(s) - 1)
            causes.append(
                Cause(
                    f"other {n_other} buckets",
                    s[1].avail.bytes - after.bytes,
                    "derived",
                    (s[1].source.line_no, after.line),
                    part="other",
                )
            )
        else:
            # Sparse readings (only some renders reached the log): one cause per stretch.
            for i, smp in enumerate(s):
                nxt_b = s[i + 1].avail.bytes if i + 1 < len(s) else after.bytes
                nxt_line = s[i + 1].source.line_no if i + 1 < len(s) else after.line
                end_i = ends[i]
                hi = end_i if end_i is not None else idx[i] + 1
                what = _span(g, idx[i], hi, smp.size) if n is not None else "the remaining buckets"
                causes.append(
                    Cause(
                        what,
                        smp.avail.bytes - nxt_b,
                        "derived",
                        (smp.source.line_no, nxt_line),
                        lazy if i == 0 else "",
                        part="buckets",
                    )
                )
    elif g.end is not None and g.end.usage is not None:
        note = (
            ""
            if rank.prints_bars or before.graph is not g
            else "no bucket readings on this rank (only the bar-printing rank has them)"
        )
        causes.append(
            Cause(
                "graph capture (total)",
                g.end.usage.bytes,
                "logged",
                (after.line,),
                note,
                part="total",
            )
        )
    rest = "unattributed"
    if before.graph is not g:
        rest = "workspaces before it began (unlogged)"
    causes = remainder(delta, causes, rest, lines)
    return Phase(
        f"capture:{g.name}",
        f"capture {g.label}{_phase_suffix(g, before, after)}",
        before.bytes,
        after.bytes,
        tuple(causes),
        lines,
        g,
        tuple(buckets),
    )


def captured_between(a: Reading, b: Reading) -> Graph | None:
    """The capture whose phase runs from reading a to reading b: from its opening (begin line,
    else first bar reading) to its end reading, or to the next reading when it printed none;
    or, for an end line that printed no begin and no bar reading, from the reading before."""
    g = a.graph
    opens = g is not None and a.kind in ("capture_begin", "first_sample")
    if opens and g is not None and (b.graph is g or g.end_bytes is None):
        return g
    g = b.graph
    if b.kind == "capture_end" and g is not None and g.begin_bytes is None and not g.samples:
        return g
    return None


def _phase_suffix(g: Graph, before: Reading, after: Reading) -> str:
    """How far the phase is the capture itself: its name says what the log left out."""
    parts = []
    if before.graph is not g:
        parts.append("no begin line")
    elif before.kind == "first_sample":
        parts.append(
            "log starts mid-capture" if g.opened_by == OPENED_BY_BARS else "from its first bar"
        )
    if after.kind == "last_sample":
        parts.append("stopped" if not g.complete else "to its last bar")
    elif after.graph is not g:
        parts.append("no end line")
    return f" ({'; '.join(parts)})" if parts else ""
