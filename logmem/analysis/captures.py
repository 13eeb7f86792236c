"""Graph captures in the ledger: a capture's drop split into static buffers, the largest bucket and the rest."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from logmem.analysis.ledger import (
    Bound,
    Bucket,
    CaptureEnd,
    CaptureStart,
    Cause,
    Facts,
    Lazy,
    Phase,
    PhaseFacts,
    PhaseWhat,
    Reading,
    Span,
    What,
    bound_remainders,
    floor_bound,
    remainder,
)
from logmem.frozen import frozen
from logmem.model.records import OPENED_BY_BARS, Graph, Launch, Rank, Sample
from logmem.sglang import comm, rules
from logmem.sglang.comm import Library


@frozen
class GraphCost:
    """What one capture cost, as far as the log supports it: SGLang's logged mem usage when the
    end line prints one (computed from unrounded readings, so more precise than the difference
    of the printed begin and end), else that difference. ``bytes`` is None when unknown: both
    readings at the 0.00 floor, or a negative usage (the net of the graphs and a larger release,
    ``released_bytes`` being the least that was released)."""

    bytes: int | None
    logged: bool
    bound: Bound
    line: int | None = None
    released_bytes: int | None = None


def graph_cost(g: Graph) -> GraphCost | None:
    """The capture's cost (see GraphCost), or None when the log prints neither figure."""
    usage = g.end.usage.bytes if g.end is not None and g.end.usage is not None else None
    line = g.end.source.line_no if g.end is not None else None
    begin, end = g.begin_bytes, g.end_bytes
    logged = usage is not None
    if usage is None:
        if begin is None or end is None:
            return None
        usage = begin - end
    if usage < -rules.DIFFERENCE_RESOLUTION_BYTES:
        return GraphCost(None, logged, Bound.MASKED, line, -usage)
    bound = Bound.EXACT
    if end is not None:
        bound = floor_bound(begin if begin is not None else end + usage, end)
    return GraphCost(usage if bound.known else None, logged, bound, line)


@frozen
class PhaseCost:
    """What a capture phase cost (``phase_cost``): ``bytes`` None when the log supports no
    figure; ``logged`` when it is the end line's mem usage; ``bound`` how far it is exact."""

    bytes: int | None
    logged: bool
    bound: Bound
    graph: GraphCost | None = None  # the end line's figure, when the capture finished


def phase_cost(p: Phase) -> PhaseCost:
    """The one rule for what a capture phase cost: the end line's logged usage when the
    capture finished and printed one (``graph_cost``: SGLang computes it from unrounded
    readings), else the phase's drop between its readings; unknown (``bytes`` None) when the
    logged usage is masked or floored, or the drop's readings sit at the floor."""
    cost = graph_cost(p.graph) if p.graph is not None and p.graph.complete else None
    if cost is not None:
        return PhaseCost(cost.bytes, cost.logged and cost.bytes is not None, cost.bound, cost)
    bound = p.bound
    return PhaseCost(p.delta_bytes if bound.known else None, False, bound)


@frozen
class GraphsTotal:
    """What a rank's captures cost together by their end lines' logged usage (``total_cost``)."""

    bytes: int | None  # None: no logged usage, or one the log does not support
    bound: Bound  # EXACT, AT_LEAST (a reading at the floor), or the unknown one's bound
    count: int  # how many captures printed a usage


def total_cost(graphs: Sequence[Graph]) -> GraphsTotal:
    """The sum of the captures' logged usages; one the log does not support (floored,
    masked) makes the sum unknown, a bounded one makes it a lower bound."""
    costs = [c for g in graphs if g.end and g.end.usage and (c := graph_cost(g))]
    unknown = next((c.bound for c in costs if not c.bound.known), None)
    if unknown is not None:
        return GraphsTotal(None, unknown, len(costs))
    if not costs:
        return GraphsTotal(None, Bound.EXACT, 0)
    at_least = any(c.bound is Bound.AT_LEAST for c in costs)
    return GraphsTotal(
        sum(c.bytes or 0 for c in costs), Bound.AT_LEAST if at_least else Bound.EXACT, len(costs)
    )


def _derived(
    what: What, before: int, after: int, lines: tuple[int, ...], facts: Facts, part: str
) -> Cause:
    """A cause derived from two readings, bounded when the later one sits at the 0.00 floor."""
    return Cause(what, before - after, "derived", lines, facts, part, floor_bound(before, after))


def lazy_allocs(
    launch: Launch, deepep: bool = True, library: Library | None = None
) -> tuple[tuple[Lazy, ...], int | None]:
    """What the first capture of a kind also allocates lazily (DeepEP, EP all-to-all, DP
    attention, the collective library's peer buffers), and the ep_size the all-to-all buffers
    are for.

    DeepEP's buffer is one per process, created at the first dispatch and reused
    (``sglang.comm.deepep_on``), and the peer buffers of the groups come with the first
    collective (``sglang.comm.peer_buffers_when``): only the launch's first capture holds them
    (``deepep``). ``library`` names the peer buffers' library; None leaves them out."""
    a = launch.args
    why: list[Lazy] = []
    if deepep and comm.deepep_on(a):
        why.append(Lazy.DEEPEP)
    ep = a.get("ep_size")
    if not a:
        # No server_args (a fragment): the ranks' EP tags still say expert parallelism is on.
        tags = {t for r in launch.ranks if (t := r.tag("EP")) is not None}
        # Only every EP rank 0..n-1 in the log gives n: a part of them gives no size.
        ep = len(tags) if len(tags) > 1 and tags == set(range(len(tags))) else None
        if ep is not None and deepep:
            # Which all-to-all backend (and buffers) is not logged: no buffer is named.
            why.append(Lazy.UNNAMED)
    elif isinstance(ep, int) and ep > 1 and _a2a_backend(a) and not comm.deepep_on(a):
        # An all-to-all backend the dump names (DeepEP's buffer is its own item, once per
        # process; with 'none' the MoE dispatch allocates no all-to-all buffers).
        why.append(Lazy.EP_ALL_TO_ALL)
    if a.get("enable_dp_attention"):
        why.append(Lazy.DP_ATTENTION)
    # The peer buffers are named where the drop would otherwise go to another lazy allocation
    # alone, or where the init step shows the library set nothing up (0.00 GiB on every rank).
    if (
        deepep
        and library is not None
        and peer_buffers_lazy(a)
        and (why or _init_took_nothing(launch))
    ):
        why.insert(0, Lazy.PEER_BUFFERS)
    return tuple(why), ep if isinstance(ep, int) and ep > 1 else None


def _a2a_backend(args: Mapping[str, Any]) -> str | None:
    """The MoE all-to-all backend server_args names (None: 'none', or not in the dump)."""
    b = args.get("moe_a2a_backend")
    return b if isinstance(b, str) and b.lower() not in ("", "none") else None


def _init_took_nothing(launch: Launch) -> bool:
    """Every rank that printed its distributed init took 0.00 GiB (comm_join.InitNothing)."""
    inits = [r.init_end.usage.bytes for r in launch.ranks if r.init_end is not None]
    return len(inits) > 1 and all(u <= rules.DIFFERENCE_RESOLUTION_BYTES for u in inits)


def peer_buffers_lazy(args: Mapping[str, Any]) -> bool:
    """A group with peers whose buffers come at the first collective (not pre-warmed): the
    communication table's peer-buffer cells (``analysis.communication.derive``) say the same."""
    if not args or comm.peer_buffers_when(args) is not comm.When.FIRST_USE:
        return False
    return any(g.own for g in comm.groups(comm.layout_from_args(args)))


def graph_kind(name: str) -> str:
    """Prefill-type graphs (piecewise, prefill) and decode-type graphs allocate different lazy buffers."""
    return "prefill" if rules.graph_sized_in_tokens(name) else "decode"


def _bucket_indices(g: Graph) -> tuple[list[int], int | None, bool]:
    """Each sample's 0-based bucket in capture order, the number of buckets, and whether
    the indices were read (tqdm's n/total or the sizes list) rather than assumed."""
    order = g.capture_order
    n = len(order) if order else g.bar_total
    out: list[int] = []
    known = True
    for i in range(len(g.samples)):
        b = g.sample_bucket(i)
        if b is None:
            b, known = i, False
        out.append(b)
    return out, n, known


def _span(g: Graph, lo: int, hi: int, size: int | None = None) -> Span:
    """Buckets lo..hi-1 (capture order); ``size``: the bar's size at bucket lo."""
    order = g.capture_order
    count = hi - lo
    tokens = graph_kind(g.name) == "prefill"
    if order is None and count == 1 and size is not None:
        return Span(1, size, size, tokens)
    if order is None or not 0 <= lo < hi <= len(order):
        # Counts that do not fit the sizes list (two logs interleaved, a cut bar): say less.
        return Span(count, tokens=tokens)
    return Span(count, order[lo], order[hi - 1], tokens)


def _largest(g: Graph, first: Sample, second: Sample, lazy: Facts) -> Cause:
    """The capture's first (largest) bucket: its bar reading to the next one's (its size as
    the bucket table gives it, Graph.sample_size)."""
    size = g.sample_size(0)[0] if g.samples and g.samples[0] is first else first.size
    return _derived(
        What.LARGEST,
        first.avail.bytes,
        second.avail.bytes,
        (first.source.line_no, second.source.line_no),
        Facts(
            span=Span(1, size, size, graph_kind(g.name) == "prefill"),
            lazy=lazy.lazy,
            ep_size=lazy.ep_size,
            library=lazy.library,
        ),
        part="largest",
    )


def graph_phase(
    g: Graph,
    before: Reading,
    after: Reading,
    launch: Launch,
    rank: Rank,
    first_of_kind: bool,
    first_capture: bool = True,
    library: Library | None = None,
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
            bound = floor_bound(smp.avail.bytes, nxt) if nxt is not None else Bound.EXACT
            to_end = i + 1 == len(s) and cost is not None and rules.END_LINE_EMPTIES_CACHE
            size, size_from = g.sample_size(i)
            buckets.append(
                Bucket(
                    size,
                    smp.avail.bytes,
                    cost,
                    smp.source.line_no,
                    covers,
                    bound,
                    to_end,
                    size_from,
                )
            )
        consecutive = idx == list(range(len(s)))
        allocs, ep_size = (
            lazy_allocs(launch, first_capture, library) if first_of_kind else ((), None)
        )
        lazy = Facts(
            lazy=allocs, ep_size=ep_size, library=library if Lazy.PEER_BUFFERS in allocs else None
        )
        head = (before.line, s[0].source.line_no)
        if before.kind == "first_sample":
            pass  # the phase opens at the first bar reading: nothing lies before it
        elif idx[0] == 0:
            causes.append(
                _derived(
                    What.STATIC,
                    before.bytes,
                    s[0].avail.bytes,
                    head,
                    Facts(assumed=not known),
                    part="static",
                )
            )
        else:
            causes.append(
                _derived(
                    What.STATIC_AND_FIRST,
                    before.bytes,
                    s[0].avail.bytes,
                    head,
                    Facts(count=idx[0], lazy=lazy.lazy, ep_size=lazy.ep_size, library=lazy.library),
                    part="mixed",
                )
            )
            lazy = Facts()
        if open_capture:
            # A capture that stopped: the first bucket's cost is measured when the next bar
            # follows it (as for a finished capture), the buckets after it to the last reading
            # lumped; the last bucket's own cost is unknown.
            first = 0
            if len(s) >= 2 and idx[:2] == [0, 1]:
                causes.append(_largest(g, s[0], s[1], lazy))
                lazy, first = Facts(), 1
            if len(s) > first + 1:
                causes.append(
                    _derived(
                        What.BEFORE_STOP,
                        s[first].avail.bytes,
                        s[-1].avail.bytes,
                        (s[first].source.line_no, s[-1].source.line_no),
                        Facts(
                            span=_span(g, idx[first], idx[-1]),
                            lazy=lazy.lazy,
                            ep_size=lazy.ep_size,
                            library=lazy.library,
                        ),
                        part="buckets",
                    )
                )
        elif len(s) >= 2 and consecutive and idx[0] == 0:
            causes.append(_largest(g, s[0], s[1], lazy))
            n_other = (n - 1) if n is not None else (len(s) - 1)
            causes.append(
                _derived(
                    What.OTHER_BUCKETS,
                    s[1].avail.bytes,
                    after.bytes,
                    (s[1].source.line_no, after.line),
                    Facts(count=n_other),
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
                span = _span(g, idx[i], hi, smp.size) if n is not None else None
                causes.append(
                    _derived(
                        What.SPAN if span is not None else What.REMAINING,
                        smp.avail.bytes,
                        nxt_b,
                        (smp.source.line_no, nxt_line),
                        Facts(
                            span=span,
                            to_end=i + 1 == len(s) and rules.END_LINE_EMPTIES_CACHE,
                            lazy=lazy.lazy if i == 0 else (),
                            ep_size=lazy.ep_size if i == 0 else None,
                            library=lazy.library if i == 0 else None,
                        ),
                        part="buckets",
                    )
                )
    elif g.end is not None and g.end.usage is not None:
        total = Cause(
            What.GRAPH_TOTAL,
            g.end.usage.bytes,
            "logged",
            (after.line,),
            Facts(not_bar_rank=not (rank.prints_bars or before.graph is not g)),
            part="total",
        )
        logged = graph_cost(g)
        if logged is not None and logged.bound is Bound.MASKED:
            # mem usage < 0: the net of the graphs' cost and a larger release. The graphs' own
            # cost is unknown (kept at 0 for conservation); the net shows as the release it is.
            causes.append(replace(total, bytes=0, bound=Bound.MASKED))
            causes.append(Cause(What.RELEASED, g.end.usage.bytes, "logged", (after.line,)))
        else:
            bound = floor_bound(before.bytes, after.bytes)
            causes.append(replace(total, bound=bound) if bound is not Bound.EXACT else total)
    rest = What.UNATTRIBUTED if before.graph is g else What.WORKSPACES_BEFORE
    causes = bound_remainders(remainder(delta, causes, rest, lines), before.bytes, after.bytes)
    start, end = _phase_bounds(g, before, after)
    # The target's verify graph runs bs x draft tokens per bucket: its spans say so.
    per = rules.verify_tokens_per_req(g.name, launch.args, g.tokens_per_req)
    if per is not None:
        causes = [
            replace(c, facts=replace(c.facts, span=replace(c.facts.span, per_req=per)))
            if c.facts.span is not None
            else c
            for c in causes
        ]
    return Phase(
        f"capture:{g.name}",
        PhaseWhat.CAPTURE,
        before.bytes,
        after.bytes,
        tuple(causes),
        lines,
        g,
        tuple(buckets),
        PhaseFacts(graph=g.label, start=start, end=end, verify_per_req=per),
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


def _phase_bounds(
    g: Graph, before: Reading, after: Reading
) -> tuple[CaptureStart | None, CaptureEnd | None]:
    """How far the phase is the capture itself: what the log left out at either end."""
    start = end = None
    if before.graph is not g:
        start = CaptureStart.NO_BEGIN
    elif before.kind == "first_sample":
        start = (
            CaptureStart.MID_CAPTURE if g.opened_by == OPENED_BY_BARS else CaptureStart.FIRST_BAR
        )
    if after.kind == "last_sample":
        end = CaptureEnd.STOPPED if not g.complete else CaptureEnd.LAST_BAR
    elif after.graph is not g:
        end = CaptureEnd.NO_END
    return start, end
