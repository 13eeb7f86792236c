"""Model stage, launch boundaries inside one input file: where a new start-up begins, and why.

A file holds a new launch where a user reading it would agree that one start-up ended and
another began (reference 1.5, 17). The evidence, in the order it is checked:

* ``server_args=`` printed again (``server_args``);
* a rank begins distributed init again after start-up ended, or after its model(s) loaded
  with no draft configured (``restart``);
* a rank's start-up step (weights, KV pool, capture) after the launch was ready, or after
  that rank printed its scheduler summary (``after_ready``, ``after_summary``): a server
  that came up does not load a model again, and a logged restart would print init first;
* an untagged single-GPU rank's start-up step beside TP-tagged ranks, or the other way
  round (``untagged``, ``tagged``): a launch is one or the other (reference 1.2);
* a start-up step printed more than ``MAX_QUIET`` after (or before) its rank's last
  dated step (``clock``): files concatenated from different days; a step that ends one its
  rank began (``Load weight end`` after a slow download, a capture's end) is never split
  from it by a forward gap;
* a second model load on a rank while server_args configures no draft
  (``speculative_algorithm=None``), or a ``Load weight end`` with no ``Load weight begin``
  waiting for it, of another model type or (no draft configured) of the same (``model``).

A rank's line identical to one it printed already in the same file (the same text, so the same
time), before the launch came up, is a repeated line (overlapping pastes of one log): the
builder ignores it and keeps the range (``Repeat``), so the ledger is built once. After the
launch came up the same line is the same log pasted again, a launch of its own (the rules above).

The clock rule compares a step with the same rank's previous step, never across ranks: a
constant offset between ranks' clocks (another node's time zone) is one launch.

Lines out of time order (a log sorted or reordered by a shipper) are not a new launch: a
step that runs back in time on its rank, or is dated before the ready line it follows, opens
one by the ready or summary rule only when the rank printed that step already (the same log
twice), and never by the model rule (logmem.analysis.findings_order reports a rank's).
"""

from __future__ import annotations

from dataclasses import field, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from logmem.frozen import frozen, mutable
from logmem.model.clock import printed_at, stamp
from logmem.model.inputs import MAX_QUIET
from logmem.parse import events as ev
from logmem.parse.lines import Source

if TYPE_CHECKING:
    from logmem.model.launch_build import _LaunchB
    from logmem.model.rank_build import RankB

# The start-up steps of a rank (model runner lines): what the launch rules look at.
STEPS = (
    ev.InitBegin,
    ev.InitEnd,
    ev.WeightsBegin,
    ev.WeightsEnd,
    ev.KVPool,
    ev.PoolEnd,
    ev.CaptureBegin,
    ev.CaptureEnd,
    ev.Summary,
)
# Steps that only a start-up prints: never after the server came up.
_LOADS = (ev.WeightsBegin, ev.WeightsEnd, ev.KVPool, ev.PoolEnd, ev.CaptureBegin)
# SGLang prints time at one-second resolution, and a rank's threads can print a record
# created a moment earlier: a step may run back by this much without being out of order.
CLOCK_SLACK = timedelta(seconds=1)


@frozen
class LaunchStart:
    """Why a launch (not the first of its file) begins at ``line``."""

    kind: str  # server_args | restart | after_ready | after_summary | untagged | tagged | clock | model
    line: Source  # the line that opened it
    rank: str | None  # the rank that printed it ("" the untagged rank; None: no rank)
    # The earlier line it is measured against: the ready line, the rank's summary, the
    # previous launch's last dated step, its first Load weight end, a tagged rank's step.
    evidence: Source | None = None
    # (what, this line's value, the earlier line's value), as printed: times, model types.
    values: tuple[str, str, str] | None = None
    step: str = ""  # the opening line's event type (WeightsEnd, InitBegin ...); "" server_args
    at: str | None = None  # the opening line's printed date and time, if dated
    # clock: this line's time minus the earlier line's (the sentence's "3 hours after").
    gap: timedelta | None = None
    # The last line read before it in its file (the launch before it ends there). The lines
    # between carry no keyword, so the reader drops them unread: the launch's first line (a
    # warning, the new process's first log line) may be any of them, at or before ``line``.
    after: int | None = None


@frozen
class Repeat:
    """A rank's start-up steps printed again (same text and time) before the launch came up:
    the lines it printed first (``first`` to ``last``) and their repeats (``again`` to
    ``again_last``), all in ``path``; the builder ignored the repeats."""

    rank: str
    path: str
    first: int
    last: int
    again: int
    again_last: int
    count: int  # the repeated step lines


# Lines that begin a repeat when printed again: the start-up steps and the pool lines (a
# warning printed twice in a second is not a repeat of the log).
_REPEATS = (*STEPS, ev.MambaPool, ev.SWAPlan, ev.SWASummary, ev.KVAvailable, ev.DSv4Plan)


@mutable
class Repeats:
    """Per file and rank, the lines it printed (by text) and the repeats found so far."""

    printed: dict[tuple[str, str], dict[str, Source]] = field(default_factory=dict)
    running: set[tuple[str, str]] = field(default_factory=set)  # ranks inside a repeat
    found: dict[tuple[str, str], list[tuple[Source, Source, bool]]] = field(default_factory=dict)
    # Files in which the launch came up (mark): repeats are looked for only before that, and
    # lines are remembered only before it, so a long runtime log keeps nothing here and no
    # line rescans the launch's events or ranks.
    up: set[str] = field(default_factory=set)

    def mark(self, e: ev.Event) -> None:
        """e was read into the launch: a ready line, the HTTP server's or a scheduler summary
        means the launch came up in e's file (is_up)."""
        if isinstance(e, ev.Summary) or (
            isinstance(e, (ev.Ready, ev.HttpUp)) and e.rank in (None, "")
        ):
            self.up.add(e.source.path)

    def ignored(self, e: ev.Event, L: _LaunchB) -> bool:
        """Whether the rank line e repeats one its rank printed already (same text and time)
        before the launch came up: a repeated line, ignored. A step or pool line begins a
        repeat; any identical line continues it; a new line ends it."""
        key = (e.source.path, e.rank or "")
        orig = self.printed.get(key, {}).get(e.source.text)
        if (
            orig is None
            or (key not in self.running and not isinstance(e, _REPEATS))
            or is_up(L, e.source.path)
        ):
            self.running.discard(key)
            return False
        self.running.add(key)
        self.found.setdefault(key, []).append((orig, e.source, isinstance(e, STEPS)))
        return True

    def ignored_bar(self, e: ev.Event, L: _LaunchB) -> bool:
        """A progress-bar render identical to one printed already in its file while a rank
        of that file is inside a repeat: part of the repeat (renders carry no rank)."""
        if not isinstance(e, ev.BarRender):
            return False
        key = (e.source.path, "\0bars")
        if is_up(L, e.source.path):
            return False
        seen = self.printed.setdefault(key, {})
        if e.source.text in seen and any(k[0] == e.source.path for k in self.running):
            return True
        seen.setdefault(e.source.text, e.source)
        return False

    def note(self, e: ev.Event) -> None:
        """e was kept on its rank: a later identical line before the launch came up repeats it."""
        if e.source.path in self.up:
            return
        self.printed.setdefault((e.source.path, e.rank or ""), {}).setdefault(
            e.source.text, e.source
        )

    def freeze(self) -> tuple[Repeat, ...]:
        out = []
        for (path, rank), pairs in self.found.items():
            steps = [(a, b) for a, b, step in pairs if step] or [(a, b) for a, b, _ in pairs]
            firsts = [a.line_no for a, _ in steps]
            agains = [b.line_no for _, b in steps]
            out.append(
                Repeat(rank, path, min(firsts), max(firsts), min(agains), max(agains), len(steps))
            )
        return tuple(sorted(out, key=lambda r: (r.path, r.again, r.rank)))


def is_up(L: _LaunchB, path: str) -> bool:
    """The launch came up (ready line, HTTP server, a rank's scheduler summary) in ``path``:
    what Repeats.mark recorded as the launch's lines were read."""
    return path in L.repeats.up


def _spec(L: _LaunchB) -> str | None | bool:
    """The launch's speculative_algorithm: its value, None when server_args says none, False
    when server_args does not print it (or is missing)."""
    args = L.server_args.args if L.server_args else {}
    if "speculative_algorithm" not in args:
        return False
    v = args["speculative_algorithm"]
    return v if isinstance(v, str) and v else None


@mutable
class FileSteps:
    """The start-up steps a launch printed in one file so far: per rank, its first step
    line, its step types and its latest dated step."""

    first: dict[str, Source] = field(default_factory=dict)
    latest: dict[str, tuple[datetime, Source]] = field(default_factory=dict)
    kinds: dict[str, set[str]] = field(default_factory=dict)  # per rank: its step types so far
    # The earliest of the tagged ranks' first lines, kept as they arrive: looking it up among
    # all ranks' first lines at every step was quadratic in ranks (2,048 ranks: 12.7 s).
    first_tagged: Source | None = None

    def add(self, e: ev.Event) -> None:
        label = e.rank or ""
        if label not in self.first:
            self.first[label] = e.source
            t0 = self.first_tagged
            if label and (t0 is None or e.source.line_no < t0.line_no):
                self.first_tagged = e.source
        self.kinds.setdefault(label, set()).add(type(e).__name__)
        t = printed_at(e)
        if t is None:
            return
        if label not in self.latest or t > self.latest[label][0]:
            self.latest[label] = (t, e.source)

    def runs_back(self, e: ev.Event) -> bool:
        """e is dated earlier than a step its rank printed before it: out of order, not new."""
        t = printed_at(e)
        prev = self.latest.get(e.rank or "")
        return t is not None and prev is not None and t < prev[0] - CLOCK_SLACK


def new_launch(L: _LaunchB, e: ev.Event) -> LaunchStart | None:
    """Whether the rank event ``e`` opens a new launch after ``L`` (its file's current one),
    by the rules of the module docstring after the restart rule (logmem.model.build)."""
    start = _new_launch(L, e)
    return None if start is None else stamped(start, e)


def stamped(start: LaunchStart, e: ev.Event) -> LaunchStart:
    """The LaunchStart with the opening event's type and printed time."""
    t = printed_at(e)
    return replace(start, step=type(e).__name__, at=stamp(t) if t else None)


def _new_launch(L: _LaunchB, e: ev.Event) -> LaunchStart | None:
    if not isinstance(e, STEPS) or e.rank is None:
        return None
    path = e.source.path
    seen = L.steps.get(path)
    if seen is None:
        return None
    r = L.ranks.get(e.rank)
    # A step the rank printed already is a second start-up's even when its clock runs back
    # (the same log pasted twice); a first one dated back is a reordered line (findings_order).
    repeat = type(e).__name__ in seen.kinds.get(e.rank, ())
    if isinstance(e, _LOADS) and (repeat or not seen.runs_back(e)):
        up = next(
            (x for x in L.events if isinstance(x, (ev.Ready, ev.HttpUp)) and x.source.path == path),
            None,
        )
        if up is not None and (repeat or not _dated_before(e, up)):
            return LaunchStart("after_ready", e.source, e.rank, up.source)
        if r is not None and r.summary is not None and r.summary.source.path == path:
            return LaunchStart("after_summary", e.source, e.rank, r.summary.source)
    if e.rank == "" and seen.first_tagged is not None:
        return LaunchStart("untagged", e.source, e.rank, seen.first_tagged)
    if e.rank != "" and "" in seen.first:
        return LaunchStart("tagged", e.source, e.rank, seen.first[""])
    t = printed_at(e)
    # The rank's own previous step: ranks' clocks may differ by a constant (another node's
    # time zone), so a step is only comparable with its own rank's.
    own = seen.latest.get(e.rank)
    gap = t - own[0] if t is not None and own is not None else None
    # Forward, a step that ends one its rank began (a slow download between Load weight begin
    # and end) is the same start-up however long it took.
    if gap is not None and (gap < -MAX_QUIET or (gap > MAX_QUIET and not _ends_open_step(r, e))):
        assert t is not None and own is not None
        values = ("printed at", stamp(t), stamp(own[0]))
        return LaunchStart("clock", e.source, e.rank, own[1], values, gap=gap)
    return None if seen.runs_back(e) else _model_change(L, e)


def _dated_before(e: ev.Event, other: ev.Event) -> bool:
    """e is dated earlier than ``other`` (beyond the clock's slack): printed late, not after it."""
    t, u = printed_at(e), printed_at(other)
    return t is not None and u is not None and t < u - CLOCK_SLACK


def _ends_open_step(r: RankB | None, e: ev.Event) -> bool:
    """e closes a step its rank opened: a model's load, distributed init, a capture."""
    if r is None:
        return False
    if isinstance(e, ev.WeightsEnd):
        return any(m.weights_begin is not None and m.weights_end is None for m in r.models)
    if isinstance(e, ev.InitEnd):
        return r.init_begin is not None and r.init_end is None
    if isinstance(e, ev.CaptureEnd):
        return r.open_graph() is not None
    return False


def _model_change(L: _LaunchB, e: ev.Event) -> LaunchStart | None:
    """A second model load with no draft configured, or a Load weight end of another model
    type that no Load weight begin waits for (a paste that starts at that line)."""
    r = L.ranks.get(e.rank or "")
    if r is None or not r.models:
        return None
    spec = _spec(L)
    ends = [m.weights_end for m in r.models if m.weights_end is not None]
    if not ends:
        return None
    all_loaded = len(ends) == len(r.models)
    if isinstance(e, ev.WeightsBegin) and spec is None and all_loaded:
        return LaunchStart("model", e.source, e.rank, ends[0].source)
    if isinstance(e, ev.WeightsEnd) and spec in (None, False) and all_loaded:
        other = next((x for x in ends if x.model_type != e.model_type), None)
        if other is not None:
            values = ("model type", e.model_type, other.model_type)
            return LaunchStart("model", e.source, e.rank, other.source, values)
        if spec is None:
            # The same model's end again, none begun and no draft configured: not a second
            # model (nothing loads one), another start-up's line.
            values = ("model type", e.model_type, ends[0].model_type)
            return LaunchStart("model", e.source, e.rank, ends[0].source, values)
    return None
