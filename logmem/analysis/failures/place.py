"""Where a start-up stands or stopped: a rank's phase from the last memory step it printed.

Traceback frames never reach the events, so the *place* of a failure is the last memory
step the failing rank printed before its error (or, under the mid-2025 rank-zero filter,
the step of the rank that prints), and for a capture, the last bar sample of the bucket.
"""

from __future__ import annotations

from logmem.frozen import frozen
from logmem.model.records import Graph, Launch, Rank
from logmem.parse import events as ev
from logmem.parse.lines import Source

# --- phases -----------------------------------------------------------------------------

# Phase names as they appear in Failure.phase, in start-up order; "<x>" is a graph family.
PHASES = (
    "before distributed init",
    "distributed init",
    "after distributed init",
    "weights",
    "pools",
    "after pools",
    "capture <x>",
    "after capture <x>",
    "post-capture KV sizing",  # after the last capture when the pool is backed after the graphs
    "after post-capture KV sizing",
    "serving",
)
POST_CAPTURE = "post-capture KV sizing"
AFTER_POST_CAPTURE = "after post-capture KV sizing"


def rank_steps(rank: Rank) -> list[tuple[Source, str]]:
    """The rank's start-up markers, in its own log order (drafts interleave with graphs)."""
    steps: list[tuple[Source, str]] = []
    if rank.init_begin is not None:
        steps.append((rank.init_begin.source, "distributed init"))
    if rank.init_end is not None:
        steps.append((rank.init_end.source, "after distributed init"))
    for m in rank.models:
        label = "" if m.role == "target" else "draft "
        if m.weights_begin:
            steps.append((m.weights_begin.source, f"{label}weights"))
        if m.weights_end:
            steps.append((m.weights_end.source, f"{label}pools"))
        if m.pool_end:
            steps.append((m.pool_end.source, f"after {label}pools"))
    for g in rank.graphs:
        if g.begin:
            steps.append((g.begin.source, f"capture {g.name}"))
        if g.end:
            steps.append((g.end.source, f"after capture {g.name}"))
    if rank.summary is not None:
        steps.append((rank.summary.source, "serving"))
    steps.sort(key=lambda s: (s[0].path, s[0].line_no))
    t = rank.target
    if t is not None and t.kv_deferred:
        # Post-capture KV sizing (sglang 0.5.17-0.5.23, scheduler.py init_model_worker): after
        # every graph, compute_post_capture_kv_resize sizes and backs the pool, then logs it.
        ends = [i for i, (_, name) in enumerate(steps) if name.startswith("after capture ")]
        if ends:
            steps[ends[-1]] = (steps[ends[-1]][0], POST_CAPTURE)
        if t.post_capture is not None:
            steps.append((t.post_capture.source, AFTER_POST_CAPTURE))
            steps.sort(key=lambda s: (s[0].path, s[0].line_no))
    return steps


def _before(src: Source, limit: Source | None) -> bool:
    return limit is None or src.path != limit.path or src.line_no < limit.line_no


def rank_phase(rank: Rank, before: Source | None = None) -> str:
    """Where a rank's start-up stands (optionally: just before line `before`), from its last memory step."""
    steps = [s for s in rank_steps(rank) if _before(s[0], before)]
    return steps[-1][1] if steps else "before distributed init"


def _phase_order(phase: str) -> int:
    if phase == AFTER_POST_CAPTURE:
        return 8
    if phase.startswith("after capture") or phase == POST_CAPTURE:
        return 7
    if phase.startswith("capture"):
        return 6
    base = phase.removeprefix("after ").removeprefix("draft ")
    order = {
        "before distributed init": 0,
        "distributed init": 1,
        "weights": 3,
        "pools": 4,
        "serving": 9,
    }
    if phase == "after distributed init":
        return 2
    if phase.startswith("after "):
        return 5  # after (draft) pools
    return order.get(base, 0)


# --- the place --------------------------------------------------------------------------


def _rank_key(r: Rank) -> tuple[int, ...]:
    return tuple(n for _, n in r.tags)


def furthest_rank(launch: Launch) -> Rank:
    """The rank whose start-up got furthest; ties go to the rank that prints the bars, then the lowest."""

    def key(r: Rank) -> tuple[int, int, int, tuple[int, ...]]:
        phase = rank_phase(r)
        printed_sizes = any(isinstance(e, ev.CaptureSizes) for e in r.events)
        return (
            -_phase_order(phase),
            0 if (r.prints_bars or printed_sizes) else 1,
            -len(rank_steps(r)),
            _rank_key(r),
        )

    return min(launch.ranks, key=key)


def bar_rank(launch: Launch) -> Rank | None:
    return next((r for r in launch.ranks if r.prints_bars), None)


def graph_at(rank: Rank, phase: str) -> Graph | None:
    """The graph a 'capture <x>' phase refers to: the rank's last open capture of that family."""
    if not phase.startswith("capture "):
        return None
    name = phase.removeprefix("capture ")
    return next((g for g in reversed(rank.graphs) if g.name == name and g.begin is not None), None)


@frozen
class Place:
    rank: Rank | None
    phase: str | None
    graph: Graph | None  # the capture on the failing rank
    bar_graph: Graph | None  # the same capture on the rank that prints bars (has the samples)
    bar_rank: str | None

    @property
    def sample(self) -> tuple[int | None, int | None]:
        g = self.bar_graph
        if g is None or not g.samples:
            return None, None
        return g.samples[-1].size, g.samples[-1].avail.bytes


def place_of(launch: Launch, rank: Rank | None, at: Source | None) -> Place:
    if rank is None and launch.ranks:
        rank = furthest_rank(launch)
    if rank is None:
        return Place(None, None, None, None, None)
    phase = rank_phase(rank, at)
    # Under the rank-zero filter (mid 2025) other ranks print no memory lines: take the
    # phase of the rank that does, as of the same line.
    if not rank_steps(rank):
        main = furthest_rank(launch)
        phase = rank_phase(
            main,
            at
            if at is not None and main.events and at.path == main.events[0].source.path
            else None,
        )
    graph = graph_at(rank, phase)
    bar = bar_rank(launch)
    bar_graph = None
    if phase.startswith("capture ") and bar is not None:
        bar_graph = graph_at(bar, phase)
    if bar_graph is None:
        bar_graph = graph
    bar_label = (
        bar.label if bar is not None and bar_graph is not None and bar_graph is not graph else None
    )
    return Place(rank, phase, graph, bar_graph, bar_label)
