"""Model stage, captures: one graph capture being read, and the rules that open and close it.

A capture opens at its begin line; in versions without one, at its sizes list (the piecewise
runner prints ``Capture cuda graph num tokens [...]`` right after the decode end, reference
18.3); an end line alone makes a capture of its own (a trimmed or filtered log). Bars go to
the open capture (logmem.model.build says whose); SGLang captures the largest size first.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import field

from logmem.frozen import mutable
from logmem.model.clock import printed_at
from logmem.model.records import (
    OPENED_BY_BEGIN,
    OPENED_BY_END,
    OPENED_BY_SIZES,
    Graph,
    Sample,
)
from logmem.parse import events as ev
from logmem.sglang import rules
from logmem.sglang.capture_lists import ListContext, largest_from_count

_SLACK = rules.DIFFERENCE_RESOLUTION_BYTES  # two printed readings differ by +-0.01 GiB


@mutable
class GraphB:
    """A capture being read; frozen into a Graph when the launch is complete."""

    name: str
    backend: str
    begin: ev.CaptureBegin | None = None
    end: ev.CaptureEnd | None = None
    sizes: tuple[int, ...] | None = None
    sizes_source: str | None = None
    samples: list[Sample] = field(default_factory=list)
    bars: int = 0
    bar_total: int | None = None
    opened_by: str = OPENED_BY_BEGIN
    closed_by: ev.Event | None = None
    opening: ev.Event | None = None  # the event that opened it (begin, sizes or end line)

    @property
    def is_open(self) -> bool:
        return (
            self.end is None
            and self.closed_by is None
            and self.opened_by in (OPENED_BY_BEGIN, OPENED_BY_SIZES)
        )

    def add_bar(self, e: ev.BarRender) -> None:
        self.bars += 1
        if e.total is not None and e.kind != "compile":
            self.bar_total = e.total
        if e.avail is not None and e.kind != "compile":
            last = self.samples[-1] if self.samples else None
            new_bucket = last is None or (
                e.size != last.size if e.size is not None else e.avail.bytes != last.avail.bytes
            )
            if new_bucket:
                self.samples.append(Sample(e.size, e.avail, e.source, e.bucket_index))

    def freeze(self, ctx: ListContext) -> Graph:
        inferred, rule = None, None
        if not self.sizes and self.bar_total:
            seen = tuple((s.index, s.size) for s in self.samples if s.size is not None)
            opening = self.opening or self.end
            when = month(opening) if opening is not None else None
            at = dataclasses.replace(ctx, month=when, verify_graph="draft" not in self.name)
            found = largest_from_count(self.bar_total, family(self.name), at, seen)
            if found is not None:
                inferred, rule = found
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
            self.opened_by,
            self.closed_by,
            inferred,
            rule,
            self.opening,
        )


def _family(name: str) -> str:
    """Prefill-type graphs are sized in tokens, the others in batch sizes."""
    return "tokens" if rules.graph_sized_in_tokens(name) else "bs"


def _month(e: ev.Event) -> tuple[int, int] | None:
    ts = printed_at(e)
    return (ts.year, ts.month) if ts is not None else None


def family(name: str) -> str:
    """Which of SGLang's list families a graph's sizes come from: tokens or batch sizes."""
    return "tokens" if rules.graph_sized_in_tokens(name) else "bs"


def month(e: ev.Event) -> tuple[int, int] | None:
    ts = printed_at(e)
    return (ts.year, ts.month) if ts is not None else None


def open_graph(graphs: Sequence[GraphB]) -> GraphB | None:
    return next((g for g in reversed(graphs) if g.is_open), None)


def begin_capture(graphs: list[GraphB], e: ev.CaptureBegin) -> None:
    sizes_source = "begin line" if e.sizes is not None else None
    graphs.append(
        GraphB(e.name, e.backend, begin=e, sizes=e.sizes, sizes_source=sizes_source, opening=e)
    )


def capture_sizes(graphs: list[GraphB], e: ev.CaptureSizes) -> None:
    g = open_graph(graphs)
    if g is None:
        # No begin line before it: this version announces the capture by its list.
        name = "piecewise" if e.kind == "num tokens" else "decode"
        g = GraphB(name, "cuda graph", opened_by=OPENED_BY_SIZES, opening=e)
        graphs.append(g)
    if g.sizes is None:
        g.sizes = e.sizes
        g.sizes_source = f"{e.kind} line"


def end_capture(graphs: list[GraphB], e: ev.CaptureEnd) -> None:
    g = open_graph(graphs)
    if g is None or g.name != e.name:
        g = next((x for x in reversed(graphs) if x.end is None and x.name == e.name), None)
    if g is None:
        g = GraphB(e.name, e.backend, opened_by=OPENED_BY_END, opening=e)
        graphs.append(g)
    g.end = e
    if g.sizes is None and e.sizes is not None:
        g.sizes = e.sizes
        g.sizes_source = "end line"


def last_avail(g: GraphB | None) -> int:
    """The open capture's latest free-memory reading (its last bar, else its begin line)."""
    assert g is not None
    if g.samples:
        return g.samples[-1].avail.bytes
    return g.begin.avail.bytes if g.begin and g.begin.avail else 0


def continues(g: GraphB | None, bar: ev.BarRender) -> bool:
    """Whether a bar reading can continue this open capture."""
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
