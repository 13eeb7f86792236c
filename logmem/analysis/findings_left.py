"""What is left free at the end of a rank's ledger, and how the start-up ended (a finding)."""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum
from typing import ClassVar

from logmem.analysis.findings_kinds import FindingKind
from logmem.analysis.ledger import Cause, Phase, RankLedger
from logmem.frozen import frozen
from logmem.model.records import Launch, Rank
from logmem.parse import events as ev
from logmem.sglang import rules
from logmem.units import GIB

_TIGHT_BYTES = GIB // 2  # less than this left free: the first requests may run out


class LeftWhen(Enum):
    AFTER_CAPTURE = "after_capture"
    PHASE_END = "phase_end"
    SUMMARY = "summary"
    LOG_STOPS = "log_stops"  # inside a capture that did not finish


class StartupEnd(Enum):
    """How the start-up ended (Outcome.status), which decides what the last free reading is."""

    UP = "ready"  # it finished (the ready line, or what stands for it): what is left for serving
    CRASHED = "crashed"  # it died: the last reading before the crash, not headroom
    STOPPED = "incomplete"  # the log stops first: the last reading the log shows


@frozen
class LeftFree:
    kind: ClassVar[FindingKind] = FindingKind.LEFT_FREE
    rank: str
    bytes: int
    when: LeftWhen
    phase: Phase  # the last phase (PHASE_END; the open capture's for LOG_STOPS)
    tight: bool
    line: int
    end: StartupEnd = StartupEnd.UP
    at_floor: bool = False  # 0.00, the driver's zero (rules.at_floor): the real figure is unknown
    served_line: int | None = None  # a batch the scheduler served after start-up, if logged
    # Graphs were captured after this reading with no memory printed (E0/E1): the headroom the
    # server ends with is lower by an unknown amount.
    unmeasured_after: bool = False
    # A start-up that did not finish: the KV pools the rank logged after this reading (their
    # bytes, the first pool line), which that reading does not yet show.
    pools_after: tuple[int, int] | None = None
    # A crash on another rank: that rank's label, its last free reading and the line, since
    # this rank's reading is not where the failing rank stood.
    crashed: tuple[str, int, int] | None = None

    @property
    def serving(self) -> bool:
        """The launch came up: only then can the first requests meet the little that is left."""
        return self.end is StartupEnd.UP


@frozen
class StoppedFirstBucket:
    """A capture the log stops in (a cut log, an excerpt, a crash) whose first bucket is
    measured, its bar reading to the next one's (analysis.captures): the largest bucket's cost,
    which holds what the capture allocates once, beside the buckets after it to the last reading."""

    kind: ClassVar[FindingKind] = FindingKind.STOPPED_FIRST_BUCKET
    rank: str
    graph: str
    largest: Cause
    after: Cause | None  # the buckets from the second to the last reading (None: only two)
    backend: str = "cuda graph"


def left_free(
    rl: RankLedger,
    last: int,
    end: StartupEnd,
    served: int | None = None,
    unmeasured_after: bool = False,
    rank: Rank | None = None,
    crashed: tuple[str, int, int] | None = None,
) -> LeftFree:
    """The last free reading of the rank, and when it was taken; ``served``: the first line
    showing the server served a batch after start-up (model.build keeps the first one)."""
    final = rl.phases[-1]
    captured = any(p.graph is not None for p in rl.phases)
    when = LeftWhen.AFTER_CAPTURE if captured else LeftWhen.PHASE_END
    if captured and end is not StartupEnd.UP and final.graph is None:
        # Start-up went on after the captures (another one began): say where it stood.
        when = LeftWhen.PHASE_END
    if final.key == "post_capture" and not captured:
        when = LeftWhen.SUMMARY
    if final.key.startswith("capture:") and final.graph is not None and not final.graph.complete:
        when = LeftWhen.LOG_STOPS
    floor = rules.at_floor(last)
    tight = last < _TIGHT_BYTES
    later = unmeasured_after and when is LeftWhen.PHASE_END
    after = _pools_after(rank, final.lines[1]) if end is not StartupEnd.UP else None
    return LeftFree(
        rl.rank, last, when, final, tight, final.lines[1], end, floor, served, later, after, crashed
    )


def crashed_rank(
    rl: RankLedger, failing: tuple[str, ...], ledgers: Sequence[RankLedger]
) -> tuple[str, int, int] | None:
    """The first failing rank other than ``rl``'s, with its last free reading and line, when
    ``rl``'s rank is not among the failing ones and that rank's ledger has a reading."""
    if not failing or rl.rank in failing:
        return None
    by = {r.rank: r for r in ledgers}
    for label in failing:
        other = by.get(label)
        if other is not None and other.last_bytes is not None and other.phases:
            return label, other.last_bytes, other.phases[-1].lines[1]
    return None


def _pools_after(rank: Rank | None, line: int) -> tuple[int, int] | None:
    """KV pools the rank logged after its last reading (line ``line``): bytes, first line."""
    if rank is None:
        return None
    pools = [p for m in rank.models for p in m.kv_pools if p.source.line_no > line]
    if not pools:
        return None
    return sum(p.total_bytes for p in pools), min(p.source.line_no for p in pools)


def served_line(launch: Launch) -> int | None:
    """The line of the first batch the scheduler served ("Prefill batch" / "Decode batch")."""
    e = next((x for x in launch.events if isinstance(x, ev.Serving)), None)
    return e.source.line_no if e is not None else None
