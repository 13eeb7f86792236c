"""The pipeline in one call: paths -> read -> lines -> events -> launches (+ outcome, failure)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from logmem import events as ev
from logmem.errors import NoStartupError
from logmem.ledger import Launch, Rank, build_launches
from logmem.lines import iter_records
from logmem.patterns import KEYWORD_BYTES
from logmem.read import ReadStats, read_segments

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True)
class Analysis:
    """Everything logmem read from one or more inputs."""

    paths: tuple[str, ...]
    launches: tuple[Launch, ...]
    unmatched: tuple[ev.Unmatched, ...]
    stats: tuple[ReadStats, ...] = field(compare=False)
    # A Hugging Face config.json, when given: reports put expected sizes beside measured ones.
    model_config: dict[str, Any] | None = field(default=None, compare=False)

    @property
    def ranks(self) -> tuple[Rank, ...]:
        return tuple(r for L in self.launches for r in L.ranks)

    def launch(self, index: int) -> Launch:
        return self.launches[index]

    @property
    def findings(self) -> list[str]:
        from logmem.attribution import launch_findings

        return [f for L in self.launches for f in launch_findings(L)]

    def ledger_frame(self) -> pd.DataFrame:
        from logmem.report.frames import ledger_frame

        return ledger_frame(self)

    def samples_frame(self) -> pd.DataFrame:
        from logmem.report.frames import samples_frame

        return samples_frame(self)

    def to_json(self) -> dict[str, Any]:
        from logmem.report.jsonout import analysis_json

        return analysis_json(self)


def collect_events(
    paths: Sequence[str], stats: list[ReadStats] | None = None, unmatched: list[ev.Unmatched] | None = None
) -> list[ev.Event]:
    return list(ev.iter_events(iter_records(read_segments(paths, KEYWORD_BYTES, stats)), unmatched))


def read_log(*paths: str, require_startup: bool = True) -> Analysis:
    """Read SGLang logs (paths, or "-" for stdin) into an :class:`Analysis`.

    Several paths are one launch split across files (one per rank, or rotated parts);
    a file with two start-ups gives two launches. Raises NoStartupError when nothing
    SGLang printed about start-up is found, InputError when a file cannot be read.
    """
    stats: list[ReadStats] = []
    unmatched: list[ev.Unmatched] = []
    events = collect_events(paths, stats, unmatched)
    launches = build_launches(events)
    if require_startup and not any(L.ranks or L.server_args for L in launches):
        raise NoStartupError(list(paths))
    return Analysis(tuple(paths), launches, tuple(unmatched), tuple(stats))


def select(analysis: Analysis, launch: int | None = None, ranks: Sequence[str] = ()) -> Analysis:
    """Keep one launch and/or some ranks; unknown names are an error that lists what exists."""
    from dataclasses import replace

    from logmem.errors import SelectionError

    launches = analysis.launches
    if launch is not None:
        if not 0 <= launch < len(launches):
            raise SelectionError(
                f"--launch {launch}: the input holds {len(launches)} launch(es), numbered 0 to {len(launches) - 1}"
            )
        launches = (launches[launch],)
    if ranks:
        known = {r.label for L in launches for r in L.ranks}
        missing = [r for r in ranks if r not in known]
        if missing:
            shown = ", ".join(repr(k) for k in sorted(known)) or "none"
            raise SelectionError(f"--rank {missing[0]!r} is not in the log; ranks seen: {shown}")
        launches = tuple(replace(L, ranks=tuple(r for r in L.ranks if r.label in ranks)) for L in launches)
    return replace(analysis, launches=launches)
