"""mem_fraction_static beside the CUDA-graph batch sizes: a confounder of the slope or not.

SGLang captures its graphs after the KV pool, from the list the batch-size flags give; the
value reaches the graphs only through the request pool, which follows the KV tokens and cuts
the list where it is smaller (logmem.sglang.capture_tops.pool_left_list_whole). Where every
launch's request pool is above its largest captured bs, no list was cut, so the launches'
graphs differ by the batch sizes alone: diff and fit set mem_fraction_static aside, with a
note that the KV section carries its effect.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from logmem.compare import notes as cn
from logmem.compare.args import ArgsComparison
from logmem.compare.points import graph_points, request_pool
from logmem.model.records import Launch
from logmem.sglang.capture_tops import pool_left_list_whole

MFS = "mem_fraction_static"


def mfs_set_aside(
    launches: Sequence[Launch], labels: Sequence[str], cmp: ArgsComparison
) -> cn.MfsSetAside | None:
    """The note when mem_fraction_static, a value every launch prints, is the one confounder
    of a slope over the batch sizes and no launch's capture list was cut to its request pool;
    None otherwise (other keys stand in the way anyway, the pool unknown, no batch-sized graph
    captured with a size, or a largest bs at or above the pool). The pool is the summary's
    max_running_requests: with post-capture KV sizing (0.5.17+) it may be lowered after the
    capture, never raised, so one above the largest bs was above it at capture too."""
    change = next((c for c in cmp.changed if c.key == MFS), None)
    if cmp.confounders != (MFS,) or not cmp.varied or change is None:
        return None
    pools: list[int] = []
    lines: list[int | None] = []
    largest: list[int] = []
    for L in launches:
        pool, line = request_pool(L)
        sizes = [p.largest_size for p in graph_points(L) if p.per_bs and p.largest_size]
        if pool is None or not sizes:
            return None
        top = max(s for s in sizes if s is not None)
        if not pool_left_list_whole(top, pool):
            return None
        pools.append(pool)
        lines.append(line)
        largest.append(top)
    return cn.MfsSetAside(tuple(labels), change.values, tuple(pools), tuple(lines), tuple(largest))


def without_mfs(cmp: ArgsComparison) -> ArgsComparison:
    """The comparison with mem_fraction_static moved from the confounders to ``set_aside``."""
    return replace(
        cmp,
        confounders=tuple(k for k in cmp.confounders if k != MFS),
        set_aside=(*cmp.set_aside, MFS),
    )


def set_mfs_aside(
    launches: Sequence[Launch], labels: Sequence[str], cmp: ArgsComparison
) -> tuple[ArgsComparison, cn.MfsSetAside | None]:
    """``cmp`` with mem_fraction_static set aside where ``mfs_set_aside`` allows it, and the note."""
    note = mfs_set_aside(launches, labels, cmp)
    return (without_mfs(cmp), note) if note is not None else (cmp, None)
