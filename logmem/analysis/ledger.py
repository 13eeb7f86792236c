"""The ledger's records: per rank, phases of free memory, each drop split into causes.

A phase runs between two consecutive free-memory readings; its causes are what the log
names (logged), what logmem derives from readings (derived) or from SGLang's rules
(estimated), and an explicit unattributed remainder. ``RankLedger.check()`` asserts both
conservation laws. Built by logmem.analysis.attribution.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from logmem.model.records import Graph, Model
from logmem.parse import events as ev
from logmem.sglang import rules
from logmem.units import GIB, gib


@dataclass
class Reading:
    """One free-memory reading of a rank's chain, in print order (what phases run between)."""

    kind: str  # weights_begin | weights_end | pool_end | capture_begin | capture_end | summary | last_sample
    bytes: int
    line: int
    event: ev.Event
    model: Model | None = None
    graph: Graph | None = None


@dataclass(frozen=True)
class Cause:
    name: str
    bytes: int
    kind: str  # logged | derived | estimated | unattributed
    lines: tuple[int, ...] = ()
    note: str = ""
    # For graph captures, which part this is: static | largest | other | buckets | mixed | total.
    part: str = ""


@dataclass(frozen=True)
class Bucket:
    """One captured batch size: free memory at its start and what it kept."""

    size: int | None
    avail_bytes: int
    cost_bytes: int | None  # this reading minus the next one (or the end line)
    line: int
    covers: int = 1  # how many buckets lie between this reading and the next


@dataclass(frozen=True)
class Phase:
    key: str  # stable id, e.g. "init", "weights", "pools", "pre_capture:decode", "capture:decode"
    name: str  # what a person reads
    before_bytes: int
    after_bytes: int
    causes: tuple[Cause, ...]
    lines: tuple[int, int]
    graph: Graph | None = field(default=None, compare=False, repr=False)
    buckets: tuple[Bucket, ...] = ()

    @property
    def delta_bytes(self) -> int:
        """Drop in free memory over the phase (negative when free memory rose)."""
        return self.before_bytes - self.after_bytes

    def part(self, name: str) -> Cause | None:
        """A graph capture's cause by part: static, largest, other, buckets, mixed, total."""
        return next((c for c in self.causes if c.part == name), None)

    @property
    def unattributed_bytes(self) -> int:
        return sum(c.bytes for c in self.causes if c.kind == "unattributed")


@dataclass(frozen=True)
class RankLedger:
    rank: str
    phases: tuple[Phase, ...]
    note: str = ""

    @property
    def first_bytes(self) -> int | None:
        return self.phases[0].before_bytes if self.phases else None

    @property
    def last_bytes(self) -> int | None:
        return self.phases[-1].after_bytes if self.phases else None

    def phase(self, key: str) -> Phase | None:
        return next((p for p in self.phases if p.key == key), None)

    def check(self) -> None:
        """Conservation: phases chain and add up; causes add up to each phase's drop."""
        for a, b in zip(self.phases, self.phases[1:]):
            if a.after_bytes != b.before_bytes:
                raise AssertionError(
                    f"{self.rank}: phase {a.key} ends where {b.key} does not begin"
                )
        if self.phases:
            total = sum(p.delta_bytes for p in self.phases)
            assert self.first_bytes is not None and self.last_bytes is not None
            if total != self.first_bytes - self.last_bytes:
                raise AssertionError(f"{self.rank}: phase drops do not add up")
        for p in self.phases:
            if sum(c.bytes for c in p.causes) != p.delta_bytes:
                raise AssertionError(f"{self.rank}: causes of {p.key} do not add up to its drop")


GIVEN_BACK = "given back: free memory rose (unlogged)"
"""The remainder's name when free memory rose by more than the causes explain: memory was
released (temporaries freed, another process, unified memory), never a consumer's name."""


def remainder(
    delta: int,
    causes: list[Cause],
    name: str,
    lines: tuple[int, ...],
    note: str = "",
    tolerance: float = rules.DIFFERENCE_RESOLUTION_BYTES,
) -> list[Cause]:
    """Close a phase's causes with what they leave of its drop: print rounding (+-0.01 GiB, or
    a negative remainder within `tolerance`, what the phase's printed figures can be off by),
    GIVEN_BACK when free memory rose beyond that, else `name`."""
    rest = delta - sum(c.bytes for c in causes)
    if rest != 0 or not causes:
        # A positive remainder always has real, small consumers (allocator rounding, unlogged
        # buffers), so only +-0.01 GiB of it is rounding; a negative one within what every
        # printed figure of the phase can be off by is rounding too, beyond it given back.
        rounding = abs(rest) <= rules.DIFFERENCE_RESOLUTION_BYTES or -tolerance <= rest < 0
        if rounding and causes:
            bound = rules.DIFFERENCE_RESOLUTION_BYTES
            if abs(rest) > bound:
                bound = round(tolerance)
            name, note = "rounding of printed values", f"within +-{bound / GIB:.2f} GiB"
        elif rest < -tolerance and name != "unattributed":
            name = GIVEN_BACK
        causes.append(Cause(name, rest, "unattributed", lines, note))
    return causes


def ledger_rows(led: RankLedger) -> list[dict[str, Any]]:
    """Flat rows {phase, cause, gib, bytes, kind, lines} for JSON and DataFrames."""
    rows = []
    for p in led.phases:
        for c in p.causes:
            rows.append(
                {
                    "phase": p.key,
                    "phase_name": p.name,
                    "cause": c.name,
                    "gib": gib(c.bytes),
                    "bytes": c.bytes,
                    "kind": c.kind,
                    "lines": list(c.lines),
                    "note": c.note,
                }
            )
    return rows
