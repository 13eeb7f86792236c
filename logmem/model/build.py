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

One launch being built (its ranks, tracebacks, bar renders) lives in
logmem.model.launch_build, one rank in logmem.model.rank_build.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import replace

from logmem.model.boundaries import STEPS, FileSteps, LaunchStart, new_launch, stamped
from logmem.model.captures import begin_capture, capture_sizes, end_capture
from logmem.model.inputs import InputGroup, group_inputs, same_launch_args
from logmem.model.launch_build import _first_args, _LaunchB, _main_rank_key
from logmem.model.rank_build import RankB as _RankB
from logmem.model.records import MAX_FRAMES, Launch
from logmem.parse import events as ev
from logmem.parse.lines import rank_tags

_POOL_EVENTS = (
    ev.KVPool,
    ev.MambaPool,
    ev.SWAPlan,
    ev.SWASummary,
    ev.KVAvailable,
    ev.DSv4Plan,
    ev.UnifiedSubPool,
)
# What the launcher process prints without a rank (prefix with a time only): launch-level.
_LAUNCHER_EVENTS = (ev.Ready, ev.HttpUp, ev.SigQuit, ev.ProcessDied, ev.SigTerm)
_ERROR_EVENTS = (ev.ExceptionLine, ev.TorchOOM, ev.NotEnoughMemory, ev.CaptureFailed)
# Start-up steps that come after a capture: one printed on the capture's rank shows that a
# capture without an end line had finished.
_LATER_STEPS = (
    ev.CaptureBegin,
    ev.WeightsBegin,
    ev.WeightsEnd,
    ev.PoolEnd,
    ev.PostCaptureKV,
    ev.Summary,
)


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
        # The line of the event read before the current one in this file, and the line read
        # before the prelude's first event: where the launch before a new one ends.
        self.line: int | None = None
        self.prev_line: int | None = None
        self.prelude_after: int | None = None

    def hold(self, e: ev.Event) -> None:
        """Hold a launcher's echo for the next start-up (prelude)."""
        if not self.prelude:
            self.prelude_after = self.prev_line
        self.prelude.append(e)

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
            after = self.prelude_after if early else self.prev_line
            L.start = L.start or replace(start, line=line, after=after)
            if prev is not None and prev.next_start is None:
                prev.next_start, prev.next_after = line, after
        return L

    def feed(self, e: ev.Event) -> None:
        if e.source.path != self.path:
            if self.launches:
                self.flush_prelude(self.launch())
            # Another input file: its launches line up with the first file's, by index.
            self.path = e.source.path
            self.cur = -1
            self.file_content = False
            self.line = None
        self.prev_line, self.line = self.line, e.source.line_no
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
            if self.file_content:
                self.hold(e)
            else:
                L.events.append(e)
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
        if e.rank == "" and isinstance(e, _LAUNCHER_EVENTS):
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
            isinstance(x, (ev.Ready, ev.HttpUp, ev.SigQuit, ev.ProcessDied))
            and x.source.path == path
            for x in L.events
        ) or any(err.source.path == path for t in L.tracebacks for err in t.errors)
        return ended or any(
            x.summary is not None and x.summary.source.path == path for x in L.ranks.values()
        )

    def feed_unprefixed(self, L: _LaunchB, e: ev.Event) -> None:
        if not isinstance(e, ev.BarRender):
            L.bar_candidates = None
        if isinstance(e, (ev.LaunchCommand, ev.LaunchEnv)) and self.file_content:
            self.hold(e)
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
        if isinstance(e, ev.FatalError) and e.kind == "python":
            L.fault_frames_left = MAX_FRAMES  # faulthandler's thread dump follows
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
        elif isinstance(e, ev.PostCaptureKV):  # after the graphs: every pool step is closed
            r.model_post_capture(e.draft).pools.append(e)
        elif isinstance(e, ev.WeightsCommitted):
            m = r.model_post_capture(False)
            m.committed = m.committed or e
        elif isinstance(e, ev.SWAPlan) and _after_pools(r):
            # Post-capture KV sizing splits the pool again after the graphs (kv_pool_runtime.py
            # compute_post_capture_kv_resize -> config_from_budget logs 'Use sliding window
            # memory pool.', then 'Post-capture KV sizing: full_layer_tokens='): the target's.
            r.model_post_capture(False).pools.append(e)
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


def _after_pools(r: _RankB) -> bool:
    """A graph was captured and every model's pools are closed: a pool line now is post-capture."""
    return bool(r.graphs) and bool(r.models) and all(m.pool_end is not None for m in r.models)
