"""Model stage, bounded: of an input with very many launches, the middle ones kept as briefs.

A file a server restarted in thousands of times holds thousands of launches, each tens of KB of
events and records (6,000 reached the 1 GiB limit, issue 16). Of each input, the first
KEEP_FIRST and the last KEEP_LAST launches are kept in full, the ones between as a
:class:`~logmem.model.records.LaunchBrief` (number, lines, outcome, KV tokens): what is kept
per input is bounded however often it restarted, and every report says how many were left
out and why.

Where one launch ends is the builder's own rule: a private builder (logmem.model.build) is fed
the input's events, and a launch is complete when it opens the next one. Each launch left out
is frozen there to be briefed, then dropped. The events kept go on to the real build with one
:class:`~logmem.parse.events.Summarised` event where launches were left out: the builder opens
the next launch at it, and numbers the launches after it as the input does.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator

from logmem.model.build import _Builder
from logmem.model.launch_build import _LaunchB
from logmem.model.records import Launch, LaunchBrief
from logmem.parse import events as ev

KEEP_FIRST = 100
KEEP_LAST = 100
# A launch the private builder is done with: its records are dropped (one shared placeholder).
_DROPPED = _LaunchB(-1)


class _Input:
    """One input's launches as they complete: the first kept, the last held, the rest briefed."""

    def __init__(self, path: str, outcome: Callable[[Launch], str]) -> None:
        self.path, self.outcome = path, outcome
        self.builder = _Builder()
        self.current: list[ev.Event] = []  # the events of the launch being read
        self.held: deque[tuple[int, list[ev.Event]]] = deque()  # the last KEEP_LAST complete
        self.briefs: list[LaunchBrief] = []
        # Only a server_args or a distributed-init line opens a launch: until there are enough
        # of them for the cap to matter, events wait here and no private builder runs.
        self.waiting: list[ev.Event] | None = []
        self.openers = 0

    def feed(self, e: ev.Event) -> list[ev.Event]:
        """Feed one event; returns the events of first launches it completed (kept whole)."""
        if self.waiting is None:
            return self._feed(e)
        self.waiting.append(e)
        self.openers += isinstance(e, (ev.ServerArgs, ev.InitBegin))
        if self.openers < KEEP_FIRST + KEEP_LAST:
            return []
        waiting, self.waiting = self.waiting, None
        return [x for w in waiting for x in self._feed(w)]

    def _feed(self, e: ev.Event) -> list[ev.Event]:
        b = self.builder
        before, held_back = b.cur, len(b.prelude)
        b.feed(e)
        if b.cur == before or before < 0:
            self.current.append(e)
            return []
        # `e` opened a new launch; the launcher's echo held back before it is that launch's.
        cut = len(self.current) - held_back
        done, self.current = self.current[:cut], [*self.current[cut:], e]
        return self._complete(before, done)

    def _complete(self, index: int, events: list[ev.Event]) -> list[ev.Event]:
        if index < KEEP_FIRST:
            self.builder.launches[index] = _DROPPED
            return events
        self.held.append((index, events))
        if len(self.held) > KEEP_LAST:
            old, evs = self.held.popleft()
            L = self.builder.launches[old].freeze(old)
            self.builder.launches[old] = _DROPPED
            tokens = L.summary.max_total_num_tokens if L.summary is not None else None
            lines = (evs[0].source.line_no, evs[-1].source.line_no)  # opened by an event
            self.briefs.append(LaunchBrief(old, self.path, lines, self.outcome(L), tokens))
        return []

    def finish(self) -> Iterator[ev.Event]:
        """The rest of the input's kept events, with one Summarised where launches were left out."""
        if self.waiting is not None:  # too few launches to leave any out
            yield from self.waiting
            return
        yield from self._complete(max(self.builder.cur, 0), self.current)
        if self.briefs:  # then KEEP_LAST launches are held, each opened by an event
            at = self.held[0][1][0].source
            yield ev.Summarised(rank=None, source=at, briefs=tuple(self.briefs))
        for _, evs in self.held:
            yield from evs


def capped(events: Iterable[ev.Event], outcome: Callable[[Launch], str]) -> Iterator[ev.Event]:
    """The events of every input, an input's launches beyond KEEP_FIRST + KEEP_LAST left out
    as briefs (in a Summarised event); `outcome` says how a launch left out ended."""
    cur: _Input | None = None
    for e in events:
        if cur is None or e.source.path != cur.path:
            if cur is not None:
                yield from cur.finish()
            cur = _Input(e.source.path, outcome)
        yield from cur.feed(e)
    if cur is not None:
        yield from cur.finish()
