"""Analysis: everything logmem read from one or more inputs (what ``logmem.read_log`` returns)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from logmem.model.inputs import Apart, InputGroup
from logmem.model.records import Launch, Rank
from logmem.parse.read import ReadStats
from logmem.parse.unmatched import UnmatchedSummary

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True)
class Analysis:
    """Everything logmem read from one or more inputs."""

    paths: tuple[str, ...]
    launches: tuple[Launch, ...]
    unmatched: UnmatchedSummary  # memory lines no pattern matched, counted per shape
    stats: tuple[ReadStats, ...] = field(compare=False)
    # A Hugging Face config.json, when given: reports put expected sizes beside measured ones.
    model_config: dict[str, Any] | None = field(default=None, compare=False)
    # How the input files were grouped into launches (files of different launches apart).
    inputs: tuple[InputGroup, ...] = field(default=(), compare=False)

    @property
    def apart(self) -> tuple[Apart, ...]:
        """Why files given together were read as different launches (empty: one launch)."""
        return tuple(a for g in self.inputs for a in g.apart)

    def launches_of(self, path: str) -> tuple[Launch, ...]:
        """The launches a given input file is part of."""
        return tuple(L for L in self.launches if path in L.paths)

    @property
    def ranks(self) -> tuple[Rank, ...]:
        return tuple(r for L in self.launches for r in L.ranks)

    def launch(self, index: int) -> Launch:
        return self.launches[index]

    @property
    def findings(self) -> list[str]:
        from logmem.analysis.attribution import launch_findings

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
