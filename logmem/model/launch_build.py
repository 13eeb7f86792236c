"""Model stage, building one launch: its ranks, tracebacks and error lines, progress-bar
renders and where the launch begins, while the builder (logmem.model.build) reads; frozen into
logmem.model.records.Launch at the end."""

from __future__ import annotations

from dataclasses import field, replace

from logmem.frozen import mutable
from logmem.model.boundaries import FileSteps, LaunchStart, Repeats
from logmem.model.captures import continues, last_avail
from logmem.model.rank_build import RankB as _RankB
from logmem.model.rank_build import bar_preference as _preference
from logmem.model.rank_build import draft_evidence, launch_kv_dtypes
from logmem.model.records import (
    MAX_FRAMES,
    OPENED_BY_BARS,
    OPENED_BY_END,
    Launch,
    LaunchBrief,
    Traceback,
)
from logmem.model.tracebacks import TracebackB as _TracebackB
from logmem.model.tracebacks import continue_last_error
from logmem.parse import events as ev
from logmem.parse.lines import Source
from logmem.sglang.capture_lists import ListContext


@mutable
class _LaunchB:
    index: int
    server_args: ev.ServerArgs | None = None
    ranks: dict[str, _RankB] = field(default_factory=dict)
    tracebacks: list[_TracebackB] = field(default_factory=list)
    events: list[ev.Event] = field(default_factory=list)
    stray_bars: int = 0
    paths: list[str] = field(default_factory=list)
    # Capture renders printed while no capture was open (until an end line claims them).
    pending_bars: list[ev.BarRender] = field(default_factory=list)
    # Tracebacks still waiting for their error line, oldest first (keys: their order): all
    # of them, and per rank. An error line looks its traceback up instead of scanning all
    # (a crashed launch in per-rank files holds one traceback per rank).
    open_tbs: dict[int, _TracebackB] = field(default_factory=dict)
    open_by_rank: dict[str | None, dict[int, _TracebackB]] = field(default_factory=dict)
    # bar_rank's candidates, valid until the next event that is not a bar render (only such
    # events open, close or mark captures): a render then costs the candidates, not every rank.
    bar_candidates: list[_RankB] | None = None
    # The traceback that took the last error line, and that line (path, number): a
    # continuation line right after it extends that error's message.
    last_error: tuple[_TracebackB, str, int] | None = None
    briefs: tuple[LaunchBrief, ...] = ()  # the launches before it left out (logmem.model.cap)
    # Why it begins where it does (not the first launch of its file), and where the next
    # launch of its file begins (logmem.model.boundaries).
    start: LaunchStart | None = None
    next_start: Source | None = None
    next_after: int | None = None  # the last line read before next_start (LaunchStart.after)
    steps: dict[str, FileSteps] = field(default_factory=dict)  # per file: its steps so far
    repeats: Repeats = field(default_factory=Repeats)  # lines printed again before it came up
    # Frames of faulthandler's dump still to keep: set by each 'Fatal Python error' line.
    fault_frames_left: int = 0

    def rank(self, label: str, tags: tuple[tuple[str, int], ...]) -> _RankB:
        r = self.ranks.get(label)
        if r is None:
            r = self.ranks[label] = _RankB(label, tags)
        return r

    def has_content(self) -> bool:
        return bool(self.ranks) or self.server_args is not None

    def open_traceback(self, rank: str | None, opening: ev.Event) -> None:
        tb = _TracebackB(rank, opening)
        self.tracebacks.append(tb)
        key = len(self.tracebacks)
        self.open_tbs[key] = tb
        self.open_by_rank.setdefault(rank, {})[key] = tb

    def add_error(self, e: ev.Event, rank: str | None, any_rank: bool) -> None:
        """Give an error line to the oldest traceback still without one (of `rank`, or of any
        rank), else to a traceback of its own (rank `rank`)."""
        waiting = self.open_tbs if any_rank else self.open_by_rank.get(rank, {})
        key = next(iter(waiting), None)
        if key is None:
            tb = _TracebackB(rank, None)
            self.tracebacks.append(tb)
        else:
            tb = self.open_tbs.pop(key)
            del self.open_by_rank[tb.rank][key]
        tb.errors.append(e)
        self.last_error = (tb, e.source.path, e.source.line_no)

    def add_frame(self, f: ev.Frame) -> None:
        """A frame belongs to the traceback its error line will go to: the oldest still open.
        With none open, right after 'Fatal Python error', it is faulthandler's dump of the
        dying process's threads: the first MAX_FRAMES of them are kept as launch events (where
        it died, analysis.failures.deaths); any other frame outside a traceback is dropped."""
        key = next(iter(self.open_tbs), None)
        if key is not None:
            self.open_tbs[key].add_frame(f)
        elif self.fault_frames_left > 0:
            self.fault_frames_left -= 1
            self.events.append(f)

    def continue_message(self, more: ev.MessageMore) -> None:
        self.last_error = continue_last_error(self.last_error, more)

    def bar_rank(self, bar: ev.BarRender | None = None) -> _RankB | None:
        """The rank whose open capture a prefix-less bar belongs to."""
        if self.bar_candidates is None:
            open_ranks = [r for r in self.ranks.values() if r.open_graph() is not None]
            best = min((_preference(r) for r in open_ranks), default=None)
            self.bar_candidates = [r for r in open_ranks if _preference(r) == best]
        candidates = self.bar_candidates
        if not candidates:
            return None
        if len(candidates) > 1 and bar is not None and bar.avail is not None:
            # Several bar printers at once (each PP stage has a TP rank 0): the render belongs
            # to the capture it continues. A reading above capture begin cannot be that capture's.
            avail = bar.avail.bytes
            fitting = [r for r in candidates if continues(r.open_graph(), bar)]
            if fitting:
                return min(
                    fitting, key=lambda r: (abs(last_avail(r.open_graph()) - avail), -_open_line(r))
                )
        # Otherwise the most recently opened capture.
        return max(candidates, key=lambda r: _open_line(r))

    def place_pending_bars(self) -> None:
        """Renders printed while no capture was open go to the capture whose end line follows
        them (a fragment that starts mid-capture): the end-only capture on the bar-printing
        rank (TP0 first), the earliest such end. Called at the next begin line and at the end:
        renders a begin line follows are not a later capture's, so they stay stray."""
        group, self.pending_bars = self.pending_bars, []
        if not group:
            return
        last = group[-1].source
        ends = [
            (r, g)
            for r in self.ranks.values()
            for g in r.graphs
            if g.opened_by == OPENED_BY_END
            and not g.samples
            and g.end is not None
            and g.end.source.path == last.path
            and g.end.source.line_no >= last.line_no
        ]
        if not ends:
            self.stray_bars += sum(1 for b in group if b.kind != "plain")
            return
        r, g = min(ends, key=lambda x: (_preference(x[0]), _line_of(x[1].end)))
        g.opened_by = OPENED_BY_BARS
        for b in group:
            g.add_bar(b)
        r.bars += len(group)
        at = next((i for i, x in enumerate(r.events) if x is g.end), len(r.events))
        r.events[at:at] = group

    def close_at_ready(self) -> None:
        """The server came up: captures opened before that line had finished. Done once all
        is read, so that the ready line never decides which capture a bar belongs to."""
        up = next((e for e in self.events if isinstance(e, (ev.Ready, ev.HttpUp))), None)
        if up is None:
            return
        for r in self.ranks.values():
            for g in r.graphs:
                at = g.opening.source if g.opening is not None else up.source  # never before
                if g.is_open and at.path == up.source.path and at.line_no < up.source.line_no:
                    g.closed_by = up

    def freeze(self, index: int) -> Launch:
        self.place_pending_bars()
        self.close_at_ready()
        ranks = sorted(self.ranks.values(), key=lambda r: (len(r.tags) > 0, r.tags, r.label))
        tbs = tuple(
            Traceback(t.rank, t.opening, tuple(t.errors), tuple(t.frames[-MAX_FRAMES:]))
            for t in self.tracebacks
        )
        reqs = (r.summary.get_int("max_running_requests") for r in self.ranks.values() if r.summary)
        pool = next((n for n in reqs if n is not None), None)
        ctx = ListContext.from_args(self.server_args.args if self.server_args else None, pool)
        kv_dtypes = launch_kv_dtypes(ranks)
        draft = draft_evidence(ranks, self.server_args.args if self.server_args else None)
        frozen_ranks = tuple(r.freeze(ctx, kv_dtypes, draft) for r in ranks)
        if resize_failed(tbs):
            frozen_ranks = tuple(
                replace(
                    r, models=tuple(replace(m, resize_failed=m.role == "target") for m in r.models)
                )
                for r in frozen_ranks
            )
        return Launch(
            index,
            self.server_args,
            frozen_ranks,
            tbs,
            tuple(self.events),
            self.stray_bars,
            tuple(dict.fromkeys(self.paths)),
            tuple(
                replace(b, index=index - len(self.briefs) + i) for i, b in enumerate(self.briefs)
            ),
            self.start,
            self.next_start,
            self.repeats.freeze(),
            self.next_after,
        )


def _first_args(L: _LaunchB) -> Source | None:
    return L.server_args.source if L.server_args is not None else None


def _line_of(e: ev.Event | None) -> int:
    return e.source.line_no if e is not None else -1


def _main_rank_key(r: _RankB) -> tuple[int, ...]:
    return tuple(n for _, n in r.tags)


def _open_line(r: _RankB) -> int:
    g = r.open_graph()
    return _line_of(g.opening) if g else -1


# The functions of SGLang's post-capture resize (sglang 0.5.17-0.5.23: model_runner.py
# post_capture_resize_kv_pool -> kv_pool_runtime.py compute_post_capture_kv_resize).
_RESIZE_FUNCS = frozenset({"post_capture_resize_kv_pool", "compute_post_capture_kv_resize"})


def resize_failed(tracebacks: tuple[Traceback, ...]) -> bool:
    """A traceback ran through the post-capture resize: the launch sized its KV pool after the
    graphs (the mode is launch-wide), whether or not a post-capture line was printed."""
    return any(f.func in _RESIZE_FUNCS for t in tracebacks for f in t.frames)
