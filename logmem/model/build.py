"""Model stage, building: events -> launches -> ranks -> models, pools and graph captures.

Rules, from docs/reference.md sections 1.5, 7 and 17:

* files given together are first grouped into the files of one launch
  (logmem.model.inputs): files whose server_args, model or clocks say they are different
  launches are never merged;
* a file that prints ``server_args=`` twice, or a rank that begins distributed init
  twice, holds two launches, and so does a file where a start-up begins without them (a
  rank loading after the launch came up, untagged beside tagged ranks, a clock jump,
  another model: logmem.model.boundaries); each such launch keeps why (Launch.start);
  per-rank files of one launch are merged by launch index;
* per rank, the first ``Load weight`` pair is the target model, a later one the draft
  (named "second" when the launch shows no draft: rank_build.draft_evidence);
  pool lines and ``Memory pool end`` belong to the first model whose pools are not
  closed yet (older SGLang: target pools before draft load; newest: both loads first);
* ``Some weights are not initialized from checkpoints`` belongs to the model loading on
  its rank (the first without its ``Load weight end``);
* ``Using KV cache dtype`` belongs to the same model as the pools it precedes; printed by
  TP0 only, it gives every rank's model of that role the dtype its KV lines do not print;
* progress-bar renders carry no prefix: they belong to the open capture on the rank
  that prints bars (the one that printed ``Capture cuda graph bs``, else TP rank 0);
  renders before any capture is open (a fragment that starts mid-capture) belong to the
  capture whose end line follows on that rank;
* captures open and close by the rules of logmem.model.captures: a sizes list with no
  capture open (``Capture cuda graph num tokens [...]`` right after the decode end,
  in versions without a piecewise begin line) opens a capture;
* a capture that printed no end line finished when a later start-up step follows it on
  its rank (another capture, a model load, pools, the summary) or the server came up.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import field, replace

from logmem.frozen import mutable
from logmem.model.boundaries import (
    STEPS,
    FileSteps,
    LaunchStart,
    Repeats,
    new_launch,
    stamped,
)
from logmem.model.captures import (
    begin_capture,
    capture_sizes,
    continues,
    end_capture,
    last_avail,
)
from logmem.model.inputs import InputGroup, group_inputs, same_launch_args
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
from logmem.parse.lines import Source, rank_tags
from logmem.sglang.capture_lists import ListContext

_POOL_EVENTS = (ev.KVPool, ev.MambaPool, ev.SWAPlan, ev.SWASummary, ev.KVAvailable, ev.DSv4Plan)
_ERROR_EVENTS = (ev.ExceptionLine, ev.TorchOOM, ev.NotEnoughMemory, ev.CaptureFailed)
# Start-up steps that come after a capture: one printed on the capture's rank shows that a
# capture without an end line had finished.
_LATER_STEPS = (ev.CaptureBegin, ev.WeightsBegin, ev.WeightsEnd, ev.PoolEnd, ev.Summary)


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
    steps: dict[str, FileSteps] = field(default_factory=dict)  # per file: its steps so far
    repeats: Repeats = field(default_factory=Repeats)  # lines printed again before it came up

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
        """A frame belongs to the traceback its error line will go to: the oldest still open."""
        key = next(iter(self.open_tbs), None)
        if key is not None:
            self.open_tbs[key].add_frame(f)

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
        return Launch(
            index,
            self.server_args,
            tuple(r.freeze(ctx, kv_dtypes, draft) for r in ranks),
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


class _Builder:
    """Launches of one group of input files (see logmem.model.inputs)."""

    def __init__(self) -> None:
        self.launches: list[_LaunchB] = []
        self.cur = -1
        self.path: str | None = None
        self.file_content = False
        # A launcher's echo (command line, environment) after a start-up has begun announces
        # the next start-up: held until its server_args (or restart) opens it.
        self.prelude: list[ev.Event] = []

    def flush_prelude(self, L: _LaunchB, front: bool = False) -> None:
        if self.prelude:
            L.events[: 0 if front else len(L.events)] = self.prelude
            self.prelude = []

    def launch(self) -> _LaunchB:
        if self.cur < 0:
            self.cur = 0
        while len(self.launches) <= self.cur:
            self.launches.append(_LaunchB(len(self.launches)))
        return self.launches[self.cur]

    def next_launch(self, start: LaunchStart | None = None) -> _LaunchB:
        prev = self.launches[self.cur] if 0 <= self.cur < len(self.launches) else None
        self.cur += 1
        L = self.launch()
        if start is not None:
            # The launcher's echo held before it (command line, environment) is the new
            # launch's first line in this file.
            early = [x.source for x in self.prelude if x.source.path == start.line.path]
            line = min([start.line, *early], key=lambda s: s.line_no)
            L.start = L.start or replace(start, line=line)
            if prev is not None and prev.next_start is None:
                prev.next_start = line
        return L

    def feed(self, e: ev.Event) -> None:
        if e.source.path != self.path:
            if self.launches:
                self.flush_prelude(self.launch())
            # Another input file: its launches line up with the first file's, by index.
            self.path = e.source.path
            self.cur = -1
            self.file_content = False
        if isinstance(e, ev.Summarised):  # launches left out: the next one is a launch of its own
            self.next_launch().briefs, self.file_content = e.briefs, False
            return
        L = self.launch()
        if isinstance(e, ev.ServerArgs):
            if self.file_content:
                again = LaunchStart("server_args", e.source, None, _first_args(L))
                L = self.next_launch(replace(stamped(again, e), step=""))
                self.flush_prelude(L, front=True)
            elif L.server_args is not None and not same_launch_args(L.server_args.args, e.args):
                # Another file's start-up with other settings: a launch of its own, not a part.
                self.cur = len(self.launches)
                L = self.launch()
            if L.server_args is None:
                L.server_args = e
            self.file_content = True
            L.paths.append(e.source.path)
            return
        if isinstance(e, (ev.DeviceTotal, ev.NSABackends)):
            # The launcher prints it before server_args: after other content of the file, it
            # belongs to the launch that server_args opens next (like a launch command).
            (self.prelude if self.file_content else L.events).append(e)
            return
        if e.rank is None:
            if not L.repeats.ignored_bar(e, L):
                self.feed_unprefixed(L, e)
                L.repeats.mark(e)
            return
        if L.repeats.ignored(e, L):
            return  # the same line again (overlapping pastes): read once
        start = self.restart(L, e) or new_launch(L, e)
        if start is not None:
            L = self.next_launch(start)
            self.flush_prelude(L, front=True)
        self.file_content = True
        L.paths.append(e.source.path)
        L.repeats.note(e)
        L.repeats.mark(e)
        if isinstance(e, STEPS):
            L.steps.setdefault(e.source.path, FileSteps()).add(e)
        if e.rank == "" and isinstance(e, (ev.Ready, ev.HttpUp, ev.SigQuit)):
            L.events.append(e)
            return
        if isinstance(e, ev.Serving):  # the first only: however the log was split into files
            L.events += [] if any(isinstance(x, ev.Serving) for x in L.events) else [e]
            return
        r = L.rank(e.rank, rank_tags(e.rank or ""))
        r.events.append(e)
        self.feed_rank(L, r, e)

    def restart(self, L: _LaunchB, e: ev.Event) -> LaunchStart | None:
        """A restart (is_restart): its LaunchStart, measured against the rank's first init."""
        if not self.is_restart(L, e):
            return None
        r = L.ranks.get(e.rank or "")
        first = r.init_begin.source if r is not None and r.init_begin is not None else None
        return stamped(LaunchStart("restart", e.source, e.rank, first), e)

    def is_restart(self, L: _LaunchB, e: ev.Event) -> bool:
        """A rank that begins distributed init again after start-up ended is a restart.

        A draft worker also runs distributed init again, but mid start-up. Only evidence from
        the same input counts: with one file per rank, the files are read one after another,
        so TP0's ready line (read earlier) says nothing about where TP1's file stands."""
        if not isinstance(e, ev.InitBegin) or e.rank is None:
            return False
        r = L.ranks.get(e.rank)
        if r is None or r.init_begin is None:
            return False
        if len(r.models) >= 2:
            return True  # target and draft are both loaded: nothing else re-initialises
        if r.events and r.events[-1].source.path != e.source.path:
            return True  # the same rank starting over in another file: a second run, not a part
        spec = L.server_args.args if L.server_args else {}
        if "speculative_algorithm" in spec and spec["speculative_algorithm"] is None and r.models:
            return True  # no draft model in this launch, so a second init is a new start-up
        path = e.source.path
        ended = any(
            isinstance(x, (ev.Ready, ev.HttpUp, ev.SigQuit)) and x.source.path == path
            for x in L.events
        ) or any(err.source.path == path for t in L.tracebacks for err in t.errors)
        return ended or any(
            x.summary is not None and x.summary.source.path == path for x in L.ranks.values()
        )

    def feed_unprefixed(self, L: _LaunchB, e: ev.Event) -> None:
        if not isinstance(e, ev.BarRender):
            L.bar_candidates = None
        if isinstance(e, (ev.LaunchCommand, ev.LaunchEnv)) and self.file_content:
            self.prelude.append(e)
            return
        if isinstance(e, ev.BarRender):
            r = L.bar_rank(e)
            if r is None:
                if e.kind != "plain" or L.pending_bars:
                    # No capture open: a fragment that starts mid-capture (kept until the end
                    # line that follows claims it), or another tool's bar. A bare render is
                    # only kept when it continues renders already held.
                    L.pending_bars.append(e)
                return
            r.bars += 1
            r.events.append(e)
            g = r.open_graph()
            assert g is not None
            g.add_bar(e)
            return
        if isinstance(e, ev.TracebackStart):
            L.open_traceback(None, e)
            return
        if isinstance(e, ev.Frame):
            L.add_frame(e)
            return
        if isinstance(e, ev.MessageMore):
            L.continue_message(e)
            return
        if isinstance(e, ev.Summary) and L.ranks:
            # bench_one_batch prints the summary without a prefix: it is the main rank's.
            main = L.bar_rank() or min(L.ranks.values(), key=_main_rank_key)
            main.events.append(e)
            main.summary = main.summary or e
            main.close_graphs(e)
            L.bar_candidates = None  # bar_rank() above cached them before this close
            return
        if isinstance(e, (*_ERROR_EVENTS, ev.Imbalance, ev.OtherRanksFailed)):
            L.add_error(e, None, any_rank=True)
            return
        L.events.append(e)

    def feed_rank(self, L: _LaunchB, r: _RankB, e: ev.Event) -> None:
        if not isinstance(e, ev.BarRender):
            L.bar_candidates = None
        if isinstance(e, _LATER_STEPS):
            r.close_graphs(e)
        if isinstance(e, ev.InitBegin):
            r.init_begin = r.init_begin or e
        elif isinstance(e, ev.InitEnd):
            r.init_end = r.init_end or e
        elif isinstance(e, ev.WeightsBegin):
            r.new_model().weights_begin = e
        elif isinstance(e, ev.WeightsEnd):
            r.model_loading().weights_end = e
        elif isinstance(e, ev.WeightsUninitialized):  # printed during the load, before its end
            m = r.model_loading()
            m.uninitialized = m.uninitialized or e
        elif isinstance(e, _POOL_EVENTS):
            r.model_for_pools().pools.append(e)
        elif isinstance(e, ev.PoolEnd):
            r.model_for_pools().pool_end = e
        elif isinstance(e, ev.KVDtype):  # printed just before the pools it announces
            m = r.model_for_pools()
            m.kv_dtype = m.kv_dtype or e
        elif isinstance(e, ev.CaptureBegin):
            L.place_pending_bars()  # renders before a begin line are not this capture's
            begin_capture(r.graphs, e)
        elif isinstance(e, ev.CaptureSizes):
            r.printed_sizes = True
            capture_sizes(r.graphs, e)
        elif isinstance(e, ev.CaptureEnd):
            end_capture(r.graphs, e)
        elif isinstance(e, ev.BarRender):
            self.feed_unprefixed(L, dataclasses.replace(e, rank=None))
            r.events.pop()  # the bar is recorded on the rank that owns the capture
        elif isinstance(e, ev.Summary):
            r.summary = r.summary or e
        elif isinstance(e, (ev.SchedulerException, ev.TracebackStart)):
            L.open_traceback(r.label, e)
        elif isinstance(e, ev.Imbalance) and e.exc_type is None:
            pass  # a warning (healthy ranks print it); raised, it ends a traceback
        elif isinstance(e, (*_ERROR_EVENTS, ev.Imbalance, ev.OtherRanksFailed)):
            L.add_error(e, r.label, any_rank=False)


def build_groups(events: Iterable[ev.Event]) -> tuple[tuple[Launch, ...], tuple[InputGroup, ...]]:
    """Launches of all inputs, and how the input files were grouped into launches."""
    by_path: dict[str, list[ev.Event]] = {}
    for e in events:
        by_path.setdefault(e.source.path, []).append(e)
    groups = group_inputs(by_path)
    launches: list[Launch] = []
    left_out = 0  # launches kept as briefs so far: the others keep their numbers in the input
    for grp in groups:
        b = _Builder()
        for path in grp.paths:
            for e in by_path[path]:
                b.feed(e)
        if b.launches:
            b.flush_prelude(b.launch())
        for L in b.launches:
            left_out += len(L.briefs)
            if L.has_content() or L.events:
                launches.append(L.freeze(len(launches) + left_out))
    return tuple(launches), groups


def build_launches(events: Iterable[ev.Event]) -> tuple[Launch, ...]:
    """Group events into launches and ranks (see the module docstring for the rules)."""
    return build_groups(events)[0]
