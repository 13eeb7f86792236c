"""What one capture measured, reduced to what a slope, a diff or a what-if needs; and how the
ranks of two launches are matched."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from logmem.compare.args import graph_max_bs
from logmem.compare.notes import RowsBasis, RowsSource
from logmem.frozen import frozen
from logmem.model.records import Graph, Launch
from logmem.sglang.rules import graph_sized_in_tokens


def rank_map(a: Sequence[str], b: Sequence[str]) -> dict[str, str]:
    """A's rank label -> B's: the same label, else the unmatched ones in order (e.g. an
    untagged single GPU and "TP0")."""
    m = {x: x for x in a if x in b}
    rest_b = [y for y in b if y not in m]
    for x, y in zip([x for x in a if x not in m], rest_b):
        m[x] = y
    return m


def request_pool(launch: Launch) -> tuple[int | None, int | None]:
    """The request pool SGLang clamps the capture list to, and the line that prints it: the
    summary's max_running_requests, else server_args' --max-running-requests (a log that stops
    before the summary, 023: 1 request, so max bs 8 captured bs 1 only)."""
    s = launch.summary
    if s is not None and (n := s.get_int("max_running_requests")) is not None:
        return n, s.source.line_no
    v = launch.args.get("max_running_requests")
    if isinstance(v, int) and not isinstance(v, bool) and v > 0:
        return v, launch.server_args.source.line_no if launch.server_args else None
    return None, None


# --- graph points: what one capture measured ------------------------------------------------


@frozen
class GraphPoint:
    """One capture of one graph family on one rank, reduced to what a slope needs."""

    rank: str
    graph: str  # family name, "#2" appended for a repeat on the same rank
    per_bs: bool  # sizes are batch sizes (False: piecewise/prefill sizes are tokens)
    largest_size: int | None
    rows_per_bs: int | None  # tokens per request; None for token-sized graphs
    rows: int | None
    rows_source: RowsSource
    static_bytes: int | None
    largest_bytes: int | None
    other_bytes: int | None
    total_bytes: int | None
    buckets: tuple[tuple[int | None, int | None], ...]  # (size, cost bytes) in capture order
    # The size the capture began with, when a reading shows it (the first bar is bucket 0, or
    # carries no index); None when the log kept only later renders.
    first_size: int | None = None

    @property
    def has_buckets(self) -> bool:
        return self.largest_bytes is not None


def _rows_per_bs(g: Graph, args: Mapping[str, Any]) -> tuple[int | None, RowsSource]:
    name = g.name
    if graph_sized_in_tokens(name):
        return None, RowsSource(RowsBasis.TOKENS)
    if g.tokens_per_req is not None:
        return g.tokens_per_req, RowsSource(RowsBasis.BEGIN_LINE, g.tokens_per_req)
    spec = args.get("speculative_algorithm")
    ndt = args.get("speculative_num_draft_tokens")
    target = "draft" not in name
    if target and ("verify" in name or spec not in (None, "None")) and isinstance(ndt, int):
        return ndt, RowsSource(RowsBasis.DRAFT_TOKENS, ndt)
    if "draft" in name:
        return 1, RowsSource(RowsBasis.DRAFT_ASSUMED)
    return 1, RowsSource(RowsBasis.DECODE)


def _keyed(graphs: Sequence[Graph]) -> list[tuple[str, Graph]]:
    """A rank's graphs keyed by family, "#2" appended for a repeat on the same rank."""
    seen: dict[str, int] = {}
    out = []
    for g in graphs:
        n = seen.get(g.name, 0) + 1
        seen[g.name] = n
        out.append((g.name if n == 1 else f"{g.name}#{n}", g))
    return out


def _printed_lists(launch: Launch) -> dict[str, tuple[int, str]]:
    """Graph key -> (largest printed size, rank) of the first rank of the launch that printed
    the graph's list: every rank computes the same list (cuda_graph_runner.py
    get_batch_sizes_to_capture reads only server_args and the request pool, which all ranks
    share), but often only TP0 prints it."""
    out: dict[str, tuple[int, str]] = {}
    for r in launch.ranks:
        for key, g in _keyed(r.graphs):
            if g.sizes and key not in out:
                out[key] = (max(g.sizes), r.label)
    return out


def graph_points(launch: Launch) -> list[GraphPoint]:
    out: list[GraphPoint] = []
    printed = _printed_lists(launch)
    for r in launch.ranks:
        for key, g in _keyed(r.graphs):
            per, source = _rows_per_bs(g, launch.args)
            size = g.largest_size
            if size is None and key in printed:
                size, rank = printed[key]
                source = replace(source, size_from_rank=rank)
            if size is None and per is not None and "draft" not in g.name:
                # No bs list and no bar sizes (E0-E2): the resolved flag is the best we have.
                size = graph_max_bs(launch.args)
                if size is not None:
                    source = replace(source, size_from_args=True)
            rows = (
                size * per
                if size is not None and per is not None
                else size
                if per is None
                else None
            )
            total = g.end.usage.bytes if g.end and g.end.usage else None
            if total is None and g.begin_bytes is not None and g.end_bytes is not None:
                total = g.begin_bytes - g.end_bytes
            buckets: list[tuple[int | None, int | None]] = []
            for i, s in enumerate(g.samples):
                later = g.samples[i + 1] if i + 1 < len(g.samples) else None
                nxt = later.avail.bytes if later is not None else g.end_bytes
                # One bucket's cost only between readings of consecutive buckets (tqdm's n);
                # a kept-only-some-renders log spans several buckets between two readings.
                one = (
                    s.index is None or later.index is None or later.index == s.index + 1
                    if later is not None
                    else s.index is None or g.bar_total is None or s.index == g.bar_total - 1
                )
                buckets.append((s.size, s.avail.bytes - nxt if nxt is not None and one else None))
            head = g.samples[0] if g.samples else None
            first = head.size if head is not None and head.index in (0, None) else None
            # Only readings at the first two buckets measure them (a log may keep only the 0%
            # and 100% renders: their difference is many buckets, not the largest one).
            largest = g.largest_bucket_bytes if g.largest_measured else None
            out.append(
                GraphPoint(
                    r.label,
                    key,
                    per is not None,
                    size,
                    per,
                    rows,
                    source,
                    g.static_bytes if g.static_measured else None,
                    largest,
                    g.other_buckets_bytes if largest is not None else None,
                    total,
                    tuple(buckets),
                    first,
                )
            )
    return out


def main_point(launch: Launch) -> GraphPoint | None:
    """The batch-sized graph a change of max bs rescales: on the rank that printed the bars."""
    pts = [p for p in graph_points(launch) if p.per_bs]
    if not pts:
        return None
    bar = next((r.label for r in launch.ranks if r.prints_bars), None)
    return next((p for p in pts if p.rank == bar), pts[0])
