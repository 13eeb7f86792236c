"""Analysis: everything logmem read from one or more inputs (what ``logmem.read_log`` returns)."""

from __future__ import annotations

from dataclasses import field, replace
from typing import TYPE_CHECKING, Any

from logmem.frozen import frozen
from logmem.model.inputs import Apart, InputGroup
from logmem.model.records import Launch, LaunchBrief, Rank
from logmem.parse.read import ReadStats
from logmem.parse.unmatched import UnmatchedSummary

if TYPE_CHECKING:
    import pandas as pd

    from logmem.analysis.attribution import LaunchLedger


@frozen
class Analysis:
    """Everything logmem read from one or more inputs."""

    paths: tuple[str, ...]
    launches: tuple[Launch, ...]
    unmatched: UnmatchedSummary  # memory lines no pattern matched, counted per shape
    stats: tuple[ReadStats, ...] = field(compare=False)
    # A Hugging Face config.json, when given: reports put expected sizes beside measured ones.
    model_config: dict[str, Any] | None = field(default=None, compare=False)
    # The environment the user gave (--env-file, then --env): (key, value, origin), in order.
    # Variables that size communication buffers never appear in SGLang's own lines.
    env: tuple[tuple[str, str, str], ...] = field(default=(), compare=False)
    # How the input files were grouped into launches (files of different launches apart).
    inputs: tuple[InputGroup, ...] = field(default=(), compare=False)
    # The ranks a report shows (logmem.api.select; empty: all). The launches keep every rank:
    # the verdict, the sizing minima and the findings are the whole launch's.
    shown_ranks: tuple[str, ...] = ()
    # Launches kept only as briefs (logmem.model.cap: an input with very many launches), in
    # order; `launches` keeps the others, each with its number in the input (Launch.index).
    summarised: tuple[LaunchBrief, ...] = field(default=(), compare=False)
    # Every launch read, before select() kept one: a launch that printed no KV line takes its
    # bytes per token from another launch of the same model and KV settings (empty: launches).
    read_launches: tuple[Launch, ...] = field(default=(), compare=False, repr=False)

    @property
    def all_launches(self) -> tuple[Launch, ...]:
        """Every launch of the input, also those select() left out."""
        return self.read_launches or self.launches

    def ledger(self, launch: Launch) -> LaunchLedger:
        """A launch's ledger with what the rest of the input knows: the other launches' KV
        lines and the --model-config (every report builds its ledgers here)."""
        from logmem.analysis.attribution import build_ledger

        return build_ledger(launch, self.all_launches, self.model_config)

    @property
    def apart(self) -> tuple[Apart, ...]:
        """Why files given together were read as different launches (empty: one launch)."""
        return tuple(a for g in self.inputs for a in g.apart)

    def launches_of(self, path: str) -> tuple[Launch, ...]:
        """The launches a given input file is part of."""
        return tuple(L for L in self.launches if path in L.paths)

    @property
    def ranks(self) -> tuple[Rank, ...]:
        """The ranks shown (all, unless select() picked some)."""
        return tuple(r for L in self.launches for r in L.ranks if self.shows(r.label))

    def shows(self, rank: str) -> bool:
        return not self.shown_ranks or rank in self.shown_ranks

    def shown_ledger(self, led: LaunchLedger) -> LaunchLedger:
        """A launch's ledger with only the ranks shown (its sizing and findings stay whole)."""
        return replace(led, ranks=tuple(rl for rl in led.ranks if self.shows(rl.rank)))

    def launch(self, index: int) -> Launch:
        """The launch numbered `index` (its number in the input, as --launch takes it)."""
        return next(L for L in self.launches if L.index == index)

    @property
    def findings(self) -> list[str]:
        """Every launch's findings, as the report and the JSON's ``findings[]`` give them."""
        from logmem.report.finding_lines import finding_lines

        return [f for L in self.launches for f in finding_lines(self.ledger(L))]

    def ledger_frame(self) -> pd.DataFrame:
        from logmem.report.frames import ledger_frame

        return ledger_frame(self)

    def samples_frame(self) -> pd.DataFrame:
        from logmem.report.frames import samples_frame

        return samples_frame(self)

    def to_json(self) -> dict[str, Any]:
        from logmem.report.jsonout import analysis_json

        return analysis_json(self)
