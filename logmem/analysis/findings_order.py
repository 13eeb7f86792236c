"""Findings about the order of the input: where a launch begins inside its file, a rank's
lines out of time order (a log sorted, or reordered by a log shipper), and a rank label two
processes print at once (two servers writing one file).

Lines a rank printed again (same text and time) before the launch came up are a repeat of
the input (overlapping pastes of one log): the model stage read them once (Launch.repeats),
and the report says which lines repeat which.

A launch that is not the first of its file says why it begins there (the model stage's
LaunchStart, logmem.model.boundaries), so that a reader can check the split against the line.

One process prints a rank's start-up steps in order, so their timestamps never run back by
more than the clock's resolution (logmem.model.boundaries.CLOCK_SLACK). When they do, the
ledger of that rank pairs readings in the wrong order (memory "given back", a second model
load that is the first one read late): its figures are not reliable.

One process also runs a rank's steps one at a time: it loads one model at a time (a draft
model's load begins after the target's Load weight end: the draft worker is built after the
target's model runner), and initialises distributed once. A rank whose Load weight begin, or
Init torch distributed begin, comes while the same step it began has not ended is two
processes printing one label (two servers, or two docker services, writing one file); its
ledger mixes their readings, so it is not reliable either (SharedLabel).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timedelta
from typing import ClassVar

from logmem.analysis.findings_kinds import FindingKind
from logmem.frozen import frozen
from logmem.model.boundaries import CLOCK_SLACK, STEPS, LaunchStart
from logmem.model.clock import printed_at
from logmem.model.records import Launch, Rank
from logmem.parse import events as ev
from logmem.parse.lines import Source


@frozen
class LaunchStarted:
    """This launch begins at ``start.line``, after launch ``previous`` of the same file."""

    kind: ClassVar[FindingKind] = FindingKind.LAUNCH_START
    start: LaunchStart
    previous: int  # the index of the launch before it


def launch_started(launch: Launch) -> LaunchStarted | None:
    if launch.start is None:
        return None
    return LaunchStarted(launch.start, launch.index - 1)


@frozen
class RepeatedLines:
    """Start-up lines of ``ranks`` printed at ``first``-``last`` are printed again at
    ``again``-``again_last`` (same text and time), before the launch came up; ignored."""

    kind: ClassVar[FindingKind] = FindingKind.REPEATED_LINES
    ranks: tuple[str, ...]
    first: int
    last: int
    again: int
    again_last: int
    # Two processes print as one of ``ranks`` (SharedLabel): the copies are likely the second
    # process's lines that carry no figure, not a paste of the log twice.
    shared: bool = False


def repeated_lines(launch: Launch) -> tuple[RepeatedLines, ...]:
    """One finding per file whose lines repeat (the ranks' ranges joined)."""
    out = []
    for path in dict.fromkeys(r.path for r in launch.repeats):
        order = [r.label for r in launch.ranks]
        rs = sorted(
            (r for r in launch.repeats if r.path == path),
            key=lambda r: order.index(r.rank) if r.rank in order else len(order),
        )
        ranks = tuple(dict.fromkeys(r.rank for r in rs))
        shared = any(rank_shared_label(r) is not None for r in launch.ranks if r.label in ranks)
        out.append(
            RepeatedLines(
                ranks,
                min(r.first for r in rs),
                max(r.last for r in rs),
                min(r.again for r in rs),
                max(r.again_last for r in rs),
                shared=shared,
            )
        )
    return tuple(out)


# The ranks of one start-up print each step within seconds of each other: first and last
# steps further apart than this on every rank's clock are a clock offset, not slowness.
_OFFSET = timedelta(minutes=10)


@frozen
class ClockOffset:
    """``ranks`` are dated ``offset`` after (negative: before) ``reference`` at their first and
    last start-up steps: their clocks differ (another node's time zone or clock); the launch's
    rules compare each rank's times with its own only."""

    kind: ClassVar[FindingKind] = FindingKind.CLOCK_OFFSET
    ranks: tuple[str, ...]
    reference: tuple[str, ...]
    offset: timedelta


def _span_of(r: Rank) -> tuple[datetime, datetime] | None:
    times = [t for e in r.events if isinstance(e, STEPS) and (t := printed_at(e)) is not None]
    return (min(times), max(times)) if times else None


def clock_offsets(launch: Launch) -> tuple[ClockOffset, ...]:
    """Ranks whose first and last steps are both shifted by about the same amount (to the
    minute) from the launch's first rank's, by more than ``_OFFSET``."""
    spans = {r.label: sp for r in launch.ranks if (sp := _span_of(r)) is not None}
    if len(spans) < 2:
        return ()
    ref = next(iter(spans.values()))
    groups: dict[int, list[str]] = {}
    for label, (a, b) in spans.items():
        d_first, d_last = a - ref[0], b - ref[1]
        minutes = round(d_first.total_seconds() / 60)
        if abs(d_first) > _OFFSET and abs(d_last - d_first) <= _OFFSET:
            groups.setdefault(minutes, []).append(label)
    if not groups:
        return ()
    moved = {x for g in groups.values() for x in g}
    reference = tuple(x for x in spans if x not in moved)
    return tuple(
        ClockOffset(tuple(g), reference, timedelta(minutes=m)) for m, g in sorted(groups.items())
    )


def order_findings(
    launch: Launch,
) -> tuple[LaunchStarted | RepeatedLines | OutOfOrder | SharedLabel | ClockOffset, ...]:
    """Where the launch begins in its file (when not first), lines the input repeats, then
    each rank out of time order: they change how far the launch's other figures can be
    trusted."""
    started = launch_started(launch)
    first = (started,) if started is not None else ()
    return (
        *first,
        *repeated_lines(launch),
        *shared_labels(launch),
        *out_of_order(launch),
        *clock_offsets(launch),
    )


@frozen
class SharedLabel:
    """Two processes print as ``rank``: its ``step`` ("load" or "init") begun at
    ``again_line`` begins while the one begun at ``first_line`` has not ended."""

    kind: ClassVar[FindingKind] = FindingKind.SHARED_LABEL
    rank: str
    step: str
    first_line: int
    again_line: int
    # As OutOfOrder.set_aside: other ranks are reliable and the figures are theirs.
    set_aside: bool = False


# The steps one process runs one at a time: (begin, end, step name).
_ONE_AT_A_TIME: tuple[tuple[type[ev.Event], type[ev.Event], str], ...] = (
    (ev.WeightsBegin, ev.WeightsEnd, "load"),
    (ev.InitBegin, ev.InitEnd, "init"),
)


def _shared_scan(r: Rank) -> SharedLabel | None:
    """The rank's first step begun while the same step it began is still open."""
    open_at: dict[str, Source] = {}  # step -> its begin line, while not ended
    for e in r.events:
        for begin, end, step in _ONE_AT_A_TIME:
            if isinstance(e, begin):
                first = open_at.get(step)
                if first is not None:
                    return SharedLabel(r.label, step, first.line_no, e.source.line_no)
                open_at[step] = e.source
            elif isinstance(e, end):
                open_at.pop(step, None)
    return None


def shared_labels(launch: Launch) -> tuple[SharedLabel, ...]:
    """Per rank (in the launch's order), the first sign that two processes print its label."""
    found = tuple(f for r in launch.ranks if (f := rank_shared_label(r)) is not None)
    return tuple(replace(f, set_aside=_some_reliable(launch)) for f in found)


def _some_reliable(launch: Launch) -> bool:
    """Whether a rank's ledger is reliable: an unreliable rank's figures are then set aside."""
    return any(rank_unreliable(r) is None for r in launch.ranks)


@frozen
class OutOfOrder:
    """A rank's step printed at ``later_line``, dated ``back`` earlier than ``earlier_line``
    printed before it (the first such pair of the rank)."""

    kind: ClassVar[FindingKind] = FindingKind.OUT_OF_ORDER
    rank: str
    earlier_line: int  # printed first, dated later
    earlier_time: datetime
    later_line: int  # printed after it, dated earlier
    later_time: datetime
    count: int  # the rank's steps dated earlier than a step printed before them
    # Other ranks' lines are in time order: the launch's figures (sizing, imbalance, the
    # findings) are taken from them, not from this rank (trusted). False: no rank is in order,
    # so the figures come from out-of-order ledgers.
    set_aside: bool = False


def out_of_order(launch: Launch) -> tuple[OutOfOrder, ...]:
    """Per rank (in the launch's order), its first step that runs back in time."""
    found = tuple(f for r in launch.ranks if (f := rank_out_of_order(r)) is not None)
    return tuple(replace(f, set_aside=_some_reliable(launch)) for f in found)


def trusted(launch: Launch) -> Launch:
    """The launch with only the ranks whose ledgers are reliable (lines in time order, one
    process per label): the ranks the figures derived from ledgers are taken from (KV sizing,
    imbalance, weights, pool step, captures). An out-of-order rank's ledger pairs readings in
    the wrong order, a shared label's mixes two processes' readings. When no rank is
    reliable, the launch as it is (the report then says its figures are not reliable)."""
    kept = tuple(r for r in launch.ranks if rank_unreliable(r) is None)
    if not kept or len(kept) == len(launch.ranks):
        return launch
    return replace(launch, ranks=kept)


def set_aside(launch: Launch) -> tuple[str, ...]:
    """The unreliable ranks whose figures are not used (trusted)."""
    kept = {r.label for r in trusted(launch).ranks}
    return tuple(r.label for r in launch.ranks if r.label not in kept)


def unreliable_source(launch: Launch) -> tuple[str, ...]:
    """The unreliable ranks whose figures are used all the same: no rank is reliable."""
    if set_aside(launch):
        return ()
    return tuple(r.label for r in launch.ranks if rank_unreliable(r) is not None)


def shared_label_ranks(launch: Launch) -> tuple[str, ...]:
    """The ranks two processes print as (their unreliability is a shared label)."""
    return tuple(r.label for r in launch.ranks if rank_shared_label(r) is not None)


_SEEN: dict[int, tuple[weakref.ref[Rank], tuple[OutOfOrder | None, SharedLabel | None]]] = {}
"""rank_out_of_order's answer per Rank object, for as long as the rank lives. trusted() is asked
by the ledger, the sizing, the imbalance, the findings and the report model, and every ask
re-dated each rank's steps: 14,336 scans for 1,024 ranks. Keyed by identity, not by value
(a Rank's hash would walk its events), and checked against the live object, so a reused id
never answers for another rank."""


def _scans(r: Rank) -> tuple[OutOfOrder | None, SharedLabel | None]:
    key = id(r)
    hit = _SEEN.get(key)
    if hit is not None and hit[0]() is r:
        return hit[1]
    found = (_scan(r), _shared_scan(r))
    _SEEN[key] = (weakref.ref(r, _forget(key)), found)
    return found


def rank_out_of_order(r: Rank) -> OutOfOrder | None:
    """The rank's first step dated earlier than a step it printed before it, if any."""
    return _scans(r)[0]


def rank_shared_label(r: Rank) -> SharedLabel | None:
    """The first sign that two processes print the rank's label, if any."""
    return _scans(r)[1]


def rank_unreliable(r: Rank) -> OutOfOrder | SharedLabel | None:
    """Why the rank's ledger is not reliable (out of time order, or a shared label), if so."""
    ooo, shared = _scans(r)
    return ooo or shared


def _forget(key: int) -> Callable[[weakref.ref[Rank]], None]:
    """The weakref callback that drops a dead rank's entry (before its id can be reused)."""

    def drop(_ref: weakref.ref[Rank]) -> None:
        _SEEN.pop(key, None)

    return drop


def _scan(r: Rank) -> OutOfOrder | None:
    latest: dict[str, tuple[datetime, Source]] = {}  # per file: the latest dated step so far
    first: OutOfOrder | None = None
    count = 0
    for e in r.events:
        if not isinstance(e, STEPS):
            continue
        t = printed_at(e)
        if t is None:
            continue
        prev = latest.get(e.source.path)
        if prev is not None and t < prev[0] - CLOCK_SLACK:
            count += 1
            if first is None:
                first = OutOfOrder(r.label, prev[1].line_no, prev[0], e.source.line_no, t, 0)
        if prev is None or t > prev[0]:
            latest[e.source.path] = (t, e.source)
    return (
        None
        if first is None
        else OutOfOrder(
            first.rank,
            first.earlier_line,
            first.earlier_time,
            first.later_line,
            first.later_time,
            count,
        )
    )
