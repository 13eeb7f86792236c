"""Which launch of which input: the path spec of one launch, and picking a launch by index.

Every command and API function that takes one launch of an input picks it with
``pick_launch``, so the rule (a file with several start-ups needs an index; an index out of
range lists what exists) and its message are written once.
"""

from __future__ import annotations

import os
from dataclasses import field
from typing import TYPE_CHECKING

from logmem.errors import SelectionError
from logmem.frozen import frozen
from logmem.model.cap import KEEP_FIRST, KEEP_LAST
from logmem.parse.read import ReadStats

if TYPE_CHECKING:
    from logmem.model.analysis import Analysis
    from logmem.model.records import Launch


@frozen
class LaunchRef:
    """Which launch of which input a side of a comparison is."""

    label: str  # "A", "B", "1", ...
    paths: tuple[str, ...]
    index: int
    # The launch's inputs whose reading ended early (a cut or corrupt stream, --max-bytes):
    # every report of a comparison says so, as analyze's Input section does.
    stopped: tuple[ReadStats, ...] = field(default=(), compare=False)

    @property
    def name(self) -> str:
        shown = ",".join("stdin" if p == "-" else os.path.basename(p) for p in self.paths)
        return f"{shown} (launch {self.index})"


def split_spec(spec: str) -> list[str]:
    """'a.log' or 'tp0.log,tp1.log' (the per-rank files of one launch) -> paths."""
    if spec == "-" or os.path.exists(spec) or "," not in spec:
        return [spec]
    return [p for p in spec.split(",") if p]


class LaunchChoiceError(SelectionError):
    """No launch, or one out of range, picked from an input with `count` launches.

    The message names the Python parameter (``launch=2``); ``cli_message`` the command-line
    option it stands for (``--launch 2``), so the CLI and the API share one rule and one text.
    """

    def __init__(self, who: str, count: int, launch: int | None, param: str = "launch") -> None:
        self.who, self.count, self.launch, self.param = who, count, launch, param
        super().__init__(self._text(f"{param}="))

    def _text(self, flag: str) -> str:
        n, last = self.count, self.count - 1
        if self.launch is None:
            return f"{self.who} holds {n} launches; pick one with {flag}N (0 to {last})"
        return f"{flag}{self.launch}: {self.who} holds {n} launch(es), numbered 0 to {last}"

    def cli_message(self) -> str:
        return self._text(f"--{self.param.replace('_', '-')} ")


def pick_launch(
    analysis: Analysis, launch: int | None, who: str, param: str = "launch"
) -> tuple[int, Launch]:
    """The launch numbered `launch` (0-based); None is the only one, an error when there are
    several. `who` names the input in the message ("A (x.log)", "the input")."""
    n = len(analysis.launches) + len(analysis.summarised)
    if launch is None:
        if n > 1:
            raise LaunchChoiceError(who, n, None, param)
        launch = 0
    # By number: an input with very many launches keeps only its first and last ones.
    found = next((L for L in analysis.launches if L.index == launch), None)
    if found is None and any(b.index == launch for b in analysis.summarised):
        raise SelectionError(
            f"{who}: launch {launch} is kept only as a summary line: of an input with this many "
            f"launches, the first {KEEP_FIRST} and the last {KEEP_LAST} are kept in full"
        )
    if found is None:
        raise LaunchChoiceError(who, n, launch, param)
    return launch, found
