"""What a capture OOM's fix must still cover after the failed bucket, and the evidence another
launch of the same input gives (facts only; logmem.report.fixes and peer_words word them).

A lower mem_fraction_static sized to the one failed allocation leaves nothing for the buckets
SGLang still had to capture (it captures largest first, cuda_graph_runner.py capture()); so the
fix adds what the readings say those buckets cost, and says when they do not say it.
"""

from __future__ import annotations

from collections.abc import Sequence

import logmem.analysis.failures.facts as fx
from logmem.analysis.failures.budget import budget
from logmem.frozen import frozen
from logmem.model.records import Graph, Launch
from logmem.sglang import rules

# server_args that differ between launches of the same input without changing memory.
_NOT_MEMORY = frozenset({"mem_fraction_static", "random_seed", "port", "host", "nccl_port"})


def capture_rest(g: Graph) -> fx.CaptureRest | None:
    """The buckets after the failed one (the last bar sample) and their price: the mean of the
    increments measured between this capture's later buckets (the first bucket's drop is the
    shared pool itself, not an increment)."""
    samples = [x for x in g.samples if x.size is not None]
    if not samples:
        return None
    failed = samples[-1].size
    assert failed is not None
    unit = "num_tokens" if rules.graph_sized_in_tokens(g.name) else "bs"
    sizes = g.sizes or None
    remaining = sum(1 for x in sizes if x < failed) if sizes else None
    # Increments of fully captured buckets other than the largest: samples[1] .. samples[-2].
    later = [
        x.avail.bytes - y.avail.bytes for x, y in zip(samples[1:-1], samples[2:], strict=False)
    ]
    per = sum(later) / len(later) if later else None
    return fx.CaptureRest(
        unit, failed, remaining, max(per, 0.0) if per is not None else None, len(later)
    )


@frozen
class PeerUp:
    """Another launch of the same input (same server_args but mem_fraction_static) that came up:
    the best evidence of a working value and of what the rest of the capture costs."""

    index: int  # its number in the input
    mfs: float
    graph: str
    unit: str
    failed: int  # the bucket this launch failed at
    remaining: int  # the peer's buckets after it
    rest_bytes: int | None  # the peer's bar before the next bucket minus its capture end
    rest_lines: tuple[int, int] | None
    free_after_bytes: int | None  # the peer's free memory at its last capture's end
    free_line: int | None
    # This launch's mem_fraction_static lowered to cover the shortfall plus the peer's rest.
    covers: fx.Fix | None


def _same_input(a: Launch, b: Launch) -> bool:
    keys = (set(a.args) | set(b.args)) - _NOT_MEMORY
    return all(a.args.get(k) == b.args.get(k) for k in keys)


def peer_up(launch: Launch, peers: Sequence[Launch]) -> PeerUp | None:
    """The first other launch of the same settings, another mem_fraction_static, that came up,
    when this launch crashed out of memory in a capture with a lower-mfs fix."""
    from logmem.analysis.failures.fixes import lower_mfs
    from logmem.analysis.failures.outcome import outcome

    f = outcome(launch).failure
    low = (
        next((x.effect for x in f.fixes if isinstance(x.effect, fx.LowerMfs)), None) if f else None
    )
    if f is None or low is None or low.rest is None or f.graph is None:
        return None
    rest = low.rest
    for p in peers:
        mfs = p.args.get("mem_fraction_static")
        if p is launch or not isinstance(mfs, (int, float)) or mfs == low.mfs:
            continue
        if not _same_input(launch, p) or outcome(p).status != "ready":
            continue
        main = p.main_rank
        g = next((x for x in main.graphs if x.name == f.graph), None) if main else None
        if g is None or main is None:
            continue
        samples = [x for x in g.samples if x.size is not None]
        after = [x for x in samples if x.size is not None and x.size < rest.failed]
        end = g.end.avail if g.end is not None else None
        last = next((x for x in reversed(main.graphs) if x.end and x.end.avail), None)
        rest_bytes = lines = None
        if after and end is not None and any(x.size == rest.failed for x in samples):
            rest_bytes = max(0, after[0].avail.bytes - end.bytes)
            assert g.end is not None
            lines = (after[0].source.line_no, g.end.source.line_no)
        covers = None
        if rest_bytes is not None and f.shortfall_bytes is not None:
            covers, blocker = lower_mfs(
                budget(launch), f.shortfall_bytes + rest_bytes, fx.Purpose.CAPTURE
            )
            covers = covers if blocker is None else None
        assert last is None or (last.end is not None and last.end.avail is not None)
        return PeerUp(
            p.index,
            float(mfs),
            g.name,
            rest.unit,
            rest.failed,
            len(after),
            rest_bytes,
            lines,
            last.end.avail.bytes if last and last.end and last.end.avail else None,
            last.end.source.line_no if last and last.end else None,
            covers,
        )
    return None
