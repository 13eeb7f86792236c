"""Model stage, inputs: which of the files given together are parts of one launch.

Per-rank files, per-node files and rotated parts of one launch are merged; files that are
different launches are kept apart, with the reason as a fact (:class:`Apart`), so that a
report never counts two unrelated servers as one ("start-up finished on 2 ranks"). Two
files are apart when:

* their server_args differ (keys both dumps print; ``node_rank`` and ``random_seed`` differ
  between the nodes of one multi-node launch, each node's launcher picking its own seed);
* their clocks cannot be one launch: one prints dated prefixes and the other time-only ones
  (different SGLang versions, reference 1.1), or the times they print are more than
  ``MAX_QUIET`` apart (per-rank and per-node files of one launch print at the same time;
  rotated parts follow each other);
* their models differ while they print at the same time (the first model each loads, read
  from ``Load weight end``; a part that follows another may start at a draft model's load);
* one holds an untagged single-GPU rank and the other tagged ranks (a launch is one or the
  other, reference 1.2).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from logmem.frozen import frozen
from logmem.model.clock import dated_prefix, printed_at, stamp
from logmem.parse import events as ev

# Keys that differ between the nodes of one launch (each node runs its own launcher).
NODE_LOCAL_KEYS = frozenset({"node_rank", "random_seed"})
# The longest quiet stretch inside one start-up (weights loading from slow storage takes
# minutes to tens of minutes); files further apart than this are different launches.
MAX_QUIET = timedelta(hours=2)
# Files that print during a common stretch longer than this ran at the same time (per-rank
# files of one start-up share nearly all of it); rotated parts share at most a second or two
# at the cut, where the ranks' interleaved clocks are not in order.
CONCURRENT = timedelta(seconds=5)

_RANK_STEPS = (
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


@frozen
class Apart:
    """Why the file ``path`` is not part of the launch of ``other``, given with it."""

    path: str
    other: str
    kind: str  # "server_args" | "clock" | "model" | "ranks"
    # (what differs, this file's value, the other file's value), as printed.
    differences: tuple[tuple[str, str, str], ...]


@frozen
class InputGroup:
    """Input files read as one launch (or one series of launches, by launch index)."""

    paths: tuple[str, ...]
    apart: tuple[Apart, ...] = ()  # why its files are not in an earlier group


def same_launch_args(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return not args_differences(a, b)


def args_differences(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """Keys both dumps print with different values, but for the node-local ones."""
    keys = [k for k in a if k in b and k not in NODE_LOCAL_KEYS]
    return [(k, repr(a[k]), repr(b[k])) for k in keys if a[k] != b[k]]


@frozen
class _File:
    path: str
    args: Mapping[str, Any] | None
    dated: bool | None
    first: datetime | None
    last: datetime | None
    model: str | None
    tagged: bool | None  # None: no rank printed a start-up step

    @staticmethod
    def of(path: str, events: Sequence[ev.Event]) -> _File:
        args = next((e.args for e in events if isinstance(e, ev.ServerArgs)), None)
        forms = {d for d in map(dated_prefix, events) if d is not None}
        times = [t for t in map(printed_at, events) if t is not None]
        labels = {e.rank for e in events if isinstance(e, _RANK_STEPS) and e.rank is not None}
        first_end = next((e for e in events if isinstance(e, ev.WeightsEnd)), None)
        return _File(
            path,
            args,
            forms.pop() if len(forms) == 1 else None,
            min(times) if times else None,
            max(times) if times else None,
            first_end.model_type if first_end is not None else None,
            _tagged(labels),
        )


def _tagged(labels: set[str]) -> bool | None:
    """True: only tagged ranks; False: only the untagged single-GPU rank; None: neither or both."""
    if labels == {""}:
        return False
    return True if labels and "" not in labels else None


def _apart(f: _File, g: _File) -> Apart | None:
    """Why f cannot be a part of g's launch, or None."""
    if f.args is not None and g.args is not None:
        diff = args_differences(f.args, g.args)
        if diff:
            return Apart(f.path, g.path, "server_args", tuple(diff[:3]))
    if f.dated is not None and g.dated is not None and f.dated != g.dated:
        form = {True: "date and time", False: "time only"}
        return Apart(f.path, g.path, "clock", (("prefix", form[f.dated], form[g.dated]),))
    overlap = None
    if f.first and f.last and g.first and g.last:
        gap = max(f.first, g.first) - min(f.last, g.last)
        if gap > MAX_QUIET:
            span = (
                "printed from",
                f"{stamp(f.first)} to {stamp(f.last)}",
                f"{stamp(g.first)} to {stamp(g.last)}",
            )
            return Apart(f.path, g.path, "clock", (span,))
        overlap = gap < -CONCURRENT
    if overlap and f.model and g.model and f.model != g.model:
        return Apart(f.path, g.path, "model", (("first model loaded", f.model, g.model),))
    if f.tagged is not None and g.tagged is not None and f.tagged != g.tagged:
        ranks = {True: "tagged ranks (TP/DP/...)", False: "one untagged rank (single GPU)"}
        return Apart(f.path, g.path, "ranks", (("ranks", ranks[f.tagged], ranks[g.tagged]),))
    return None


class _Group:
    """A group's files, and what all of them share or span: enough to see at once that a file
    is apart from none of them (the usual case: a launch's per-rank files), where checking it
    against every member made 1,600 per-rank files cost 1.3 million comparisons."""

    def __init__(self, f: _File) -> None:
        self.files: list[_File] = []
        self.args: dict[str, Any] = {}  # every key a member prints; members agree on shared keys
        self.dated: set[bool] = set()
        self.first_max: datetime | None = None  # the latest first line of a member with times
        self.last_min: datetime | None = None  # the earliest last line of a member with times
        self.models: set[str] = set()  # first models of the members with times
        self.tagged: set[bool] = set()
        self.add(f)

    def add(self, f: _File) -> None:
        self.files.append(f)
        for k, v in (f.args or {}).items():
            self.args.setdefault(k, v)
        if f.dated is not None:
            self.dated.add(f.dated)
        if f.first and f.last:
            self.first_max = f.first if self.first_max is None else max(self.first_max, f.first)
            self.last_min = f.last if self.last_min is None else min(self.last_min, f.last)
            if f.model:
                self.models.add(f.model)
        if f.tagged is not None:
            self.tagged.add(f.tagged)

    def maybe_apart(self, f: _File) -> bool:
        """False only when _apart(f, g) is None for every member g: each clause of _apart holds
        for some member only if it holds against these aggregates (the clock's gap with g is
        max(f.first - g.last, g.first - f.last) when both print times)."""
        if f.args is not None and args_differences(f.args, self.args):
            return True
        if f.dated is not None and self.dated - {f.dated}:
            return True
        if f.first and f.last and self.first_max is not None and self.last_min is not None:
            if f.first - self.last_min > MAX_QUIET or self.first_max - f.last > MAX_QUIET:
                return True
            if f.model and self.models - {f.model}:
                return True
        return f.tagged is not None and bool(self.tagged - {f.tagged})


def group_inputs(by_path: Mapping[str, Sequence[ev.Event]]) -> tuple[InputGroup, ...]:
    """Files in input order, grouped: a file joins the first group none of whose files it is
    apart from; else it starts a group, with the reasons it is apart from each earlier one."""
    return group_files([_File.of(p, evs) for p, evs in by_path.items()])


def group_files(files: Sequence[_File]) -> tuple[InputGroup, ...]:
    """group_inputs' rule on the files' summaries."""
    groups: list[_Group] = []
    reasons: list[list[Apart]] = []
    for f in files:
        why: list[Apart] = []
        for grp in groups:
            found = None
            if grp.maybe_apart(f):  # then the first member it is apart from, as before
                found = next((a for a in (_apart(f, g) for g in grp.files) if a is not None), None)
            if found is None:
                grp.add(f)
                break
            why.append(found)
        else:
            groups.append(_Group(f))
            reasons.append(why)
    return tuple(
        InputGroup(tuple(x.path for x in grp.files), tuple(r)) for grp, r in zip(groups, reasons)
    )
