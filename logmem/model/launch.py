"""Ledger stage: events -> launches -> ranks -> models, pools and graph captures with samples.

This is the shape of a start-up as the log tells it, per rank and in log order. Later
stages (attribution, fit, failures, reports) read it and never go back to the text.
Rules, from docs/reference.md section 17:

* a file that prints ``server_args=`` twice, or a rank that begins distributed init
  twice, holds two launches; per-rank files of one launch are merged by launch index;
* per rank, the first ``Load weight`` pair is the target model, a later one the draft;
  pool lines and ``Memory pool end`` belong to the first model whose pools are not
  closed yet (older SGLang: target pools before draft load; newest: both loads first);
* progress-bar renders carry no prefix: they belong to the open capture on the rank
  that prints bars (the one that printed ``Capture cuda graph bs``, else TP rank 0).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from logmem.parse import events as ev
from logmem.parse.lines import Source
from logmem.units import Mem


@dataclass(frozen=True)
class Sample:
    """Free memory at the start of one bucket (one per bucket, in capture order)."""

    size: int | None
    avail: Mem
    source: Source = field(compare=False, repr=False)
    index: int | None = None  # 0-based bucket in capture order, from tqdm's n/total


@dataclass(frozen=True)
class Graph:
    """One capture block of one graph family on one rank."""

    name: str
    backend: str
    begin: ev.CaptureBegin | None
    end: ev.CaptureEnd | None
    sizes: tuple[int, ...] | None
    sizes_source: str | None  # "begin line" | "bs line" | "num tokens line"
    samples: tuple[Sample, ...]
    bars: int  # progress-bar renders seen, with or without a reading
    bar_total: int | None = None  # tqdm's total: the number of buckets, when sizes are not printed

    @property
    def begin_bytes(self) -> int | None:
        return self.begin.avail.bytes if self.begin and self.begin.avail else None

    @property
    def end_bytes(self) -> int | None:
        return self.end.avail.bytes if self.end and self.end.avail else None

    @property
    def static_bytes(self) -> int | None:
        """Capture begin minus the first bucket's reading: buffers allocated before any bucket."""
        if self.begin_bytes is None or not self.samples:
            return None
        return self.begin_bytes - self.samples[0].avail.bytes

    @property
    def largest_bucket_bytes(self) -> int | None:
        if len(self.samples) < 2:
            return None
        return self.samples[0].avail.bytes - self.samples[1].avail.bytes

    @property
    def other_buckets_bytes(self) -> int | None:
        if len(self.samples) < 2 or self.end_bytes is None:
            return None
        return self.samples[1].avail.bytes - self.end_bytes

    def sample_bucket(self, i: int) -> int | None:
        """The 0-based bucket (capture order) of sample i: from the sizes list, else tqdm's count."""
        smp = self.samples[i]
        # The sizes list is exact; tqdm's count can lag one behind a new description when
        # renders are throttled, so it is only the fallback.
        if self.sizes and smp.size in self.sizes:
            return sorted(self.sizes, reverse=True).index(smp.size)
        return smp.index

    @property
    def static_measured(self) -> bool:
        """The first reading is taken at the first bucket, so begin - it is the static buffers."""
        return bool(self.samples) and self.sample_bucket(0) in (0, None)

    @property
    def largest_measured(self) -> bool:
        """Readings at the first two buckets exist, so their difference is the largest bucket."""
        return (
            len(self.samples) >= 2
            and self.sample_bucket(0) in (0, None)
            and self.sample_bucket(1) in (1, None)
        )

    @property
    def largest_size(self) -> int | None:
        if self.samples and self.samples[0].size is not None:
            return self.samples[0].size
        return max(self.sizes) if self.sizes else None

    @property
    def tokens_per_req(self) -> int | None:
        return self.begin.tokens_per_req if self.begin else None

    @property
    def step(self) -> int | None:
        return (
            self.begin.step
            if self.begin and self.begin.step is not None
            else (self.end.step if self.end else None)
        )

    @property
    def label(self) -> str:
        """The family name, with the EAGLE step for multi-step draft-extend captures."""
        return self.name if self.step is None else f"{self.name} (step {self.step})"

    @property
    def complete(self) -> bool:
        return self.end is not None


@dataclass(frozen=True)
class Model:
    role: str  # "target" | "draft"
    weights_begin: ev.WeightsBegin | None
    weights_end: ev.WeightsEnd | None
    pools: tuple[ev.Event, ...]  # KVPool, MambaPool, SWAPlan, SWASummary, KVAvailable, DSv4Plan
    pool_end: ev.PoolEnd | None

    @property
    def kv_pools(self) -> tuple[ev.KVPool, ...]:
        return tuple(p for p in self.pools if isinstance(p, ev.KVPool))

    @property
    def mamba_pools(self) -> tuple[ev.MambaPool, ...]:
        return tuple(p for p in self.pools if isinstance(p, ev.MambaPool))


@dataclass(frozen=True)
class Traceback:
    """A crash report of one rank (or of an unprefixed process): its opening and its errors."""

    rank: str | None
    opening: ev.Event | None  # SchedulerException or TracebackStart
    errors: tuple[
        ev.Event, ...
    ]  # ExceptionLine, TorchOOM, NotEnoughMemory, CaptureFailed, Imbalance


@dataclass(frozen=True)
class Rank:
    label: str
    tags: tuple[tuple[str, int], ...]
    init_begin: ev.InitBegin | None
    init_end: ev.InitEnd | None
    models: tuple[Model, ...]
    graphs: tuple[Graph, ...]
    events: tuple[ev.Event, ...]  # everything this rank printed, in order
    summary: ev.Summary | None
    prints_bars: bool

    def tag(self, name: str) -> int | None:
        return next((n for t, n in self.tags if t == name), None)

    @property
    def target(self) -> Model | None:
        return next((m for m in self.models if m.role == "target"), None)

    @property
    def draft(self) -> Model | None:
        return next((m for m in self.models if m.role == "draft"), None)

    def all(self, kind: type[ev.Event]) -> tuple[ev.Event, ...]:
        return tuple(e for e in self.events if isinstance(e, kind))

    @property
    def last_event(self) -> ev.Event | None:
        return self.events[-1] if self.events else None


@dataclass(frozen=True)
class Launch:
    index: int
    server_args: ev.ServerArgs | None
    ranks: tuple[Rank, ...]
    tracebacks: tuple[Traceback, ...]
    events: tuple[ev.Event, ...]  # launch-level: ready, http_up, sigquit, unprefixed errors
    stray_bars: int  # bar renders with no open capture to belong to
    paths: tuple[str, ...]

    @property
    def args(self) -> dict[str, Any]:
        return self.server_args.args if self.server_args else {}

    def rank(self, label: str) -> Rank | None:
        return next((r for r in self.ranks if r.label == label), None)

    @property
    def main_rank(self) -> Rank | None:
        """The rank reports lead with: the one that printed bucket readings, else the first."""
        bars = next((r for r in self.ranks if r.prints_bars), None)
        if bars is not None or not self.ranks:
            return bars
        # Else the rank that printed the most free-memory readings (ties: the first).
        return max(self.ranks, key=lambda r: sum(1 for e in r.events if _is_reading(e)))

    @property
    def summary(self) -> ev.Summary | None:
        """The scheduler summary line (TP0's when several ranks print it)."""
        found = [r.summary for r in self.ranks if r.summary is not None]
        return found[0] if found else None

    @property
    def ready(self) -> ev.Event | None:
        return next((e for e in self.events if isinstance(e, ev.Ready)), None)

    def all_events(self) -> list[ev.Event]:
        out: list[ev.Event] = []
        if self.server_args:
            out.append(self.server_args)
        for r in self.ranks:
            out.extend(r.events)
        out.extend(self.events)
        return sorted(out, key=lambda e: (e.source.path, e.source.line_no))


def _is_reading(e: ev.Event) -> bool:
    if isinstance(e, (ev.WeightsBegin, ev.WeightsEnd, ev.PoolEnd)):
        return True
    return isinstance(e, (ev.CaptureBegin, ev.CaptureEnd)) and e.avail is not None


# --- building ---------------------------------------------------------------------------

_POOL_EVENTS = (ev.KVPool, ev.MambaPool, ev.SWAPlan, ev.SWASummary, ev.KVAvailable, ev.DSv4Plan)
_ERROR_EVENTS = (ev.ExceptionLine, ev.TorchOOM, ev.NotEnoughMemory, ev.CaptureFailed)


@dataclass
class _GraphB:
    name: str
    backend: str
    begin: ev.CaptureBegin | None = None
    end: ev.CaptureEnd | None = None
    sizes: tuple[int, ...] | None = None
    sizes_source: str | None = None
    samples: list[Sample] = field(default_factory=list)
    bars: int = 0
    bar_total: int | None = None

    def freeze(self) -> Graph:
        return Graph(
            self.name,
            self.backend,
            self.begin,
            self.end,
            self.sizes,
            self.sizes_source,
            tuple(self.samples),
            self.bars,
            self.bar_total,
        )


@dataclass
class _ModelB:
    role: str
    weights_begin: ev.WeightsBegin | None = None
    weights_end: ev.WeightsEnd | None = None
    pools: list[ev.Event] = field(default_factory=list)
    pool_end: ev.PoolEnd | None = None

    def freeze(self) -> Model:
        return Model(
            self.role, self.weights_begin, self.weights_end, tuple(self.pools), self.pool_end
        )


@dataclass
class _RankB:
    label: str
    tags: tuple[tuple[str, int], ...]
    init_begin: ev.InitBegin | None = None
    init_end: ev.InitEnd | None = None
    models: list[_ModelB] = field(default_factory=list)
    graphs: list[_GraphB] = field(default_factory=list)
    events: list[ev.Event] = field(default_factory=list)
    summary: ev.Summary | None = None
    printed_sizes: bool = False
    bars: int = 0

    def open_graph(self) -> _GraphB | None:
        for g in reversed(self.graphs):
            if g.end is None and g.begin is not None:
                return g
        return None

    def new_model(self) -> _ModelB:
        m = _ModelB("target" if not self.models else "draft")
        self.models.append(m)
        return m

    def model_for_pools(self) -> _ModelB:
        for m in self.models:
            if m.pool_end is None:
                return m
        return self.new_model()

    def freeze(self) -> Rank:
        return Rank(
            self.label,
            self.tags,
            self.init_begin,
            self.init_end,
            tuple(m.freeze() for m in self.models),
            tuple(g.freeze() for g in self.graphs),
            tuple(self.events),
            self.summary,
            self.bars > 0,
        )


@dataclass
class _TracebackB:
    rank: str | None
    opening: ev.Event | None
    errors: list[ev.Event] = field(default_factory=list)


@dataclass
class _LaunchB:
    index: int
    server_args: ev.ServerArgs | None = None
    ranks: dict[str, _RankB] = field(default_factory=dict)
    tracebacks: list[_TracebackB] = field(default_factory=list)
    events: list[ev.Event] = field(default_factory=list)
    stray_bars: int = 0
    paths: list[str] = field(default_factory=list)

    def rank(self, label: str, tags: tuple[tuple[str, int], ...]) -> _RankB:
        r = self.ranks.get(label)
        if r is None:
            r = self.ranks[label] = _RankB(label, tags)
        return r

    def has_content(self) -> bool:
        return bool(self.ranks) or self.server_args is not None

    def bar_rank(self, bar: ev.BarRender | None = None) -> _RankB | None:
        """The rank whose open capture a prefix-less bar belongs to."""
        open_ranks = [r for r in self.ranks.values() if r.open_graph() is not None]
        if not open_ranks:
            return None

        def preference(r: _RankB) -> tuple[int, int]:
            tp = next((n for t, n in r.tags if t == "TP"), 0)
            dp = next((n for t, n in r.tags if t == "DP"), 0)
            # The rank that printed the bs list prints the bars; else TP rank 0 (DP0 first).
            return (
                0 if r.printed_sizes else 1,
                0 if tp == 0 and dp == 0 else (1 if tp == 0 else 2),
            )

        best = min(preference(r) for r in open_ranks)
        candidates = [r for r in open_ranks if preference(r) == best]
        if len(candidates) > 1 and bar is not None and bar.avail is not None:
            # Several bar printers at once (each PP stage has a TP rank 0): the render belongs
            # to the capture it continues. A reading above capture begin cannot be that capture's.
            avail = bar.avail.bytes
            fitting = [r for r in candidates if _continues(r, bar)]
            if fitting:
                return min(fitting, key=lambda r: (abs(_last_avail(r) - avail), -_open_line(r)))
        # Otherwise the most recently opened capture.
        return max(candidates, key=lambda r: _open_line(r))

    def freeze(self) -> Launch:
        ranks = sorted(self.ranks.values(), key=lambda r: (len(r.tags) > 0, r.tags, r.label))
        tbs = tuple(Traceback(t.rank, t.opening, tuple(t.errors)) for t in self.tracebacks)
        return Launch(
            self.index,
            self.server_args,
            tuple(r.freeze() for r in ranks),
            tbs,
            tuple(self.events),
            self.stray_bars,
            tuple(dict.fromkeys(self.paths)),
        )


_SLACK = round(0.01 * (1 << 30))  # two printed readings differ by +-0.01 GiB


def _last_avail(r: _RankB) -> int:
    g = r.open_graph()
    assert g is not None
    if g.samples:
        return g.samples[-1].avail.bytes
    return g.begin.avail.bytes if g.begin and g.begin.avail else 0


def _continues(r: _RankB, bar: ev.BarRender) -> bool:
    g = r.open_graph()
    assert g is not None and bar.avail is not None
    if (
        g.begin is not None
        and g.begin.avail is not None
        and bar.avail.bytes > g.begin.avail.bytes + _SLACK
    ):
        return False
    last = g.samples[-1] if g.samples else None
    # Sizes are captured largest first: a larger size than the last one is another capture's.
    return not (
        last is not None and last.size is not None and bar.size is not None and bar.size > last.size
    )


def _main_rank_key(r: _RankB) -> tuple[int, ...]:
    return tuple(n for _, n in r.tags)


def _open_line(r: _RankB) -> int:
    g = r.open_graph()
    return g.begin.source.line_no if g and g.begin else -1


class _Builder:
    def __init__(self) -> None:
        self.launches: list[_LaunchB] = []
        self.cur = -1
        self.path: str | None = None

    def launch(self) -> _LaunchB:
        if self.cur < 0:
            self.cur = 0
        while len(self.launches) <= self.cur:
            self.launches.append(_LaunchB(len(self.launches)))
        return self.launches[self.cur]

    def next_launch(self) -> _LaunchB:
        self.cur += 1
        return self.launch()

    def feed(self, e: ev.Event) -> None:
        if e.source.path != self.path:
            # Another input file: its launches line up with the first file's, by index.
            self.path = e.source.path
            self.cur = -1
            self.file_content = False
        L = self.launch()
        if isinstance(e, ev.ServerArgs):
            if self.file_content:
                L = self.next_launch()
            elif L.server_args is not None and L.server_args.args != e.args:
                # Another file's start-up with other settings: a launch of its own, not a part.
                self.cur = len(self.launches)
                L = self.launch()
            if L.server_args is None:
                L.server_args = e
            self.file_content = True
            L.paths.append(e.source.path)
            return
        if e.rank is None:
            self.feed_unprefixed(L, e)
            return
        if self.is_restart(L, e):
            L = self.next_launch()
        self.file_content = True
        L.paths.append(e.source.path)
        if e.rank == "" and isinstance(e, (ev.Ready, ev.HttpUp, ev.SigQuit)):
            L.events.append(e)
            return
        r = L.rank(e.rank, ev_tags(e))
        r.events.append(e)
        self.feed_rank(L, r, e)

    def is_restart(self, L: _LaunchB, e: ev.Event) -> bool:
        """A rank that begins distributed init again after start-up ended is a restart.

        A draft worker also runs distributed init again, but mid start-up. Only evidence from
        the same input counts: with one file per rank, the files are read one after another,
        so TP0's ready line (read earlier) says nothing about where TP1's file stands."""
        if not isinstance(e, ev.InitBegin) or e.rank is None:
            return False
        r = L.ranks.get(e.rank)
        if r is None or r.init_begin is None:
            return False
        if len(r.models) >= 2:
            return True  # target and draft are both loaded: nothing else re-initialises
        if r.events and r.events[-1].source.path != e.source.path:
            return True  # the same rank starting over in another file: a second run, not a part
        spec = L.server_args.args if L.server_args else {}
        if "speculative_algorithm" in spec and spec["speculative_algorithm"] is None and r.models:
            return True  # no draft model in this launch, so a second init is a new start-up
        path = e.source.path
        ended = any(
            isinstance(x, (ev.Ready, ev.HttpUp, ev.SigQuit)) and x.source.path == path
            for x in L.events
        ) or any(err.source.path == path for t in L.tracebacks for err in t.errors)
        return ended or any(
            x.summary is not None and x.summary.source.path == path for x in L.ranks.values()
        )

    def feed_unprefixed(self, L: _LaunchB, e: ev.Event) -> None:
        if isinstance(e, ev.BarRender):
            r = L.bar_rank(e)
            if r is None:
                if e.kind != "plain":  # a bare tqdm bar outside a capture is someone else's
                    L.stray_bars += 1
                return
            r.bars += 1
            r.events.append(e)
            g = r.open_graph()
            assert g is not None
            g.bars += 1
            if e.total is not None and e.kind != "compile":
                g.bar_total = e.total
            if e.avail is not None and e.kind != "compile":
                last = g.samples[-1] if g.samples else None
                new_bucket = last is None or (
                    e.size != last.size if e.size is not None else e.avail.bytes != last.avail.bytes
                )
                if new_bucket:
                    g.samples.append(Sample(e.size, e.avail, e.source, e.bucket_index))
            return
        if isinstance(e, ev.TracebackStart):
            L.tracebacks.append(_TracebackB(None, e))
            return
        if isinstance(e, ev.Summary) and L.ranks:
            # bench_one_batch prints the summary without a prefix: it is the main rank's.
            main = L.bar_rank() or min(L.ranks.values(), key=_main_rank_key)
            main.events.append(e)
            main.summary = main.summary or e
            return
        if isinstance(e, (*_ERROR_EVENTS, ev.Imbalance, ev.OtherRanksFailed)):
            tb = next((t for t in L.tracebacks if not t.errors), None)
            if tb is None:
                tb = _TracebackB(None, None)
                L.tracebacks.append(tb)
            tb.errors.append(e)
            return
        L.events.append(e)

    def feed_rank(self, L: _LaunchB, r: _RankB, e: ev.Event) -> None:
        if isinstance(e, ev.InitBegin):
            r.init_begin = r.init_begin or e
        elif isinstance(e, ev.InitEnd):
            r.init_end = r.init_end or e
        elif isinstance(e, ev.WeightsBegin):
            r.new_model().weights_begin = e
        elif isinstance(e, ev.WeightsEnd):
            m = next((m for m in r.models if m.weights_end is None), None) or r.new_model()
            m.weights_end = e
        elif isinstance(e, _POOL_EVENTS):
            r.model_for_pools().pools.append(e)
        elif isinstance(e, ev.PoolEnd):
            r.model_for_pools().pool_end = e
        elif isinstance(e, ev.CaptureBegin):
            r.graphs.append(
                _GraphB(
                    e.name,
                    e.backend,
                    begin=e,
                    sizes=e.sizes,
                    sizes_source="begin line" if e.sizes is not None else None,
                )
            )
        elif isinstance(e, ev.CaptureSizes):
            r.printed_sizes = True
            g = r.open_graph()
            if g is not None and g.sizes is None:
                g.sizes = e.sizes
                g.sizes_source = f"{e.kind} line"
        elif isinstance(e, ev.CaptureEnd):
            g = r.open_graph()
            if g is None or g.name != e.name:
                g = next(
                    (x for x in reversed(r.graphs) if x.end is None and x.name == e.name), None
                )
            if g is None:
                g = _GraphB(e.name, e.backend)
                r.graphs.append(g)
            g.end = e
        elif isinstance(e, ev.BarRender):
            self.feed_unprefixed(L, dataclasses.replace(e, rank=None))
            r.events.pop()  # the bar is recorded on the rank that owns the capture
        elif isinstance(e, ev.Summary):
            r.summary = r.summary or e
        elif isinstance(e, (ev.SchedulerException, ev.TracebackStart)):
            L.tracebacks.append(_TracebackB(r.label, e))
        elif isinstance(e, ev.Imbalance) and e.exc_type is None:
            pass  # a warning (healthy ranks print it); raised, it ends a traceback
        elif isinstance(e, (*_ERROR_EVENTS, ev.Imbalance, ev.OtherRanksFailed)):
            tb = next((t for t in L.tracebacks if t.rank == r.label and not t.errors), None)
            if tb is None:
                tb = _TracebackB(r.label, None)
                L.tracebacks.append(tb)
            tb.errors.append(e)

    file_content = False


def ev_tags(e: ev.Event) -> tuple[tuple[str, int], ...]:
    from logmem.parse.lines import rank_tags

    return rank_tags(e.rank or "")


def build_launches(events: Iterable[ev.Event]) -> tuple[Launch, ...]:
    """Group events into launches and ranks (see the module docstring for the rules)."""
    b = _Builder()
    for e in events:
        b.feed(e)
    return tuple(L.freeze() for L in b.launches if L.has_content() or L.events)
