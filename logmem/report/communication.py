"""The communication table in words: a typed view (cells, measured lines, findings) drawn by
every format (text / Markdown / HTML through report.model's Table, JSON through ``comm_json``)
and a heat map of the table for the HTML page.

Facts come from logmem.analysis.communication (derive) and comm_join (the join with a log);
report.comm_sentences words them, this module lays them out.
"""

from __future__ import annotations

from typing import Any

from logmem.analysis import comm_join as cj
from logmem.analysis.communication import Cell, Plan
from logmem.frozen import frozen
from logmem.report.comm_sentences import (
    after_pools_text,
    cell_note,
    comm_finding_text,
    custom_ar_none_text,
    lands_label,
    shared_names,
    size_text,
)
from logmem.report.finding_base import lines_text
from logmem.sglang import comm
from logmem.units import MIB, format_gib, gib

# --- the view -------------------------------------------------------------------------------


@frozen
class Grid:
    """A table of the view: report.model draws it as its Table (same fields), in every format."""

    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    align: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()


@frozen
class CommView:
    cells: Grid | None  # None: one rank per group, no cells
    measured: Grid | None
    findings: tuple[str, ...]
    summary: str

    @property
    def grids(self) -> tuple[Grid, ...]:
        return tuple(g for g in (self.cells, self.measured) if g is not None)


def groups_text(plan: Plan) -> str:
    parts = []
    for g in plan.groups:
        if g.reuses is not None:
            parts.append(f"{g.name} = {g.reuses} ({g.size})")
        elif g.size == 1:
            parts.append(f"{g.name} 1 (no peers)")
        else:
            parts.append(f"{g.name} {g.size}")
    role = (
        f"; PD {plan.pd_role} node, transfer backend {plan.transfer_backend}"
        if plan.pd_role
        else ""
    )
    return f"Groups per rank: {', '.join(parts)}{role}."


def cells_table(plan: Plan, from_log: bool = True) -> Grid | None:
    rows = tuple(
        (
            c.group,
            c.mechanism.value,
            size_text(c.bytes) if c.memory == "device" else f"{size_text(c.bytes)} (host)",
            c.when.value.replace("_", " "),
            c.source,
            cell_note(c),
        )
        for c in plan.cells
    )
    known = [c.bytes for c in plan.cells if c.bytes and c.memory == "device"]
    notes = [
        "when: init = before SGLang measures the pre-load free memory, so it lowers the KV budget; "
        "after kv / first use = later, so it must fit in the 1 - mem_fraction_static headroom.",
        f"measure: no formula ({plan.library} sizes depend on library version and topology); "
        + (
            "the log's readings below show them."
            if from_log
            else "a log's readings show them (logmem analyze)."
        ),
    ]
    if known:
        notes.insert(0, f"Cells with a size add up to {size_text(sum(known))} per rank.")
    none = _custom_ar_none_json(plan)
    if none is not None:
        notes.insert(0, none["text"])
    if not rows:
        return None
    return Grid(
        "Communication cells per rank",
        ("group", "mechanism", "size", "when", "source", "note"),
        rows,
        ("l", "l", "r", "l", "l", "l"),
        tuple(notes),
    )


def measured_table(c: cj.Communication) -> Grid | None:
    rows: list[tuple[str, ...]] = []
    inits = c.ranks
    if inits:
        lo = min(inits, key=lambda r: r.usage_bytes)
        hi = max(inits, key=lambda r: r.usage_bytes)
        main = c.rank(c.main_rank) or lo
        span = (
            ""
            if lo.usage_bytes == hi.usage_bytes
            else f" (ranks {format_gib(lo.usage_bytes)} to {format_gib(hi.usage_bytes)})"
        )
        rows.append(
            (
                "Init torch distributed mem usage",
                f"{format_gib(main.usage_bytes)} GiB",
                f"{main.rank or 'GPU'} line {main.line}{span}",
            )
        )
        if main.formula_bytes:
            rows.append(
                (
                    "  of which cells with a formula",
                    size_text(main.formula_bytes),
                    "custom all-reduce",
                )
            )
            rows.append(
                (
                    "  the rest: communicators, other",
                    f"{format_gib(main.rest_bytes)} GiB",
                    "measured (no formula)",
                )
            )
    ar = c.all_reduce
    if ar is not None:
        rows.append(
            (
                "All Reduce config symmetric_memory",
                f"{ar.symmetric.bytes / MIB:.2f} MiB",
                f"line {ar.source.line_no}",
            )
        )
        rows.append(
            (
                "All Reduce config local_buffer",
                f"{ar.local.bytes / MIB:.2f} MiB",
                f"line {ar.source.line_no}",
            )
        )
    j = c.deepep
    notes: list[str] = []
    if j is not None:
        others = shared_names(j)
        if others:
            notes.append(
                "lazy + graph: the DeepEP buffer, "
                + ", ".join(others)
                + (
                    " and the capture's graphs"
                    if j.whole_capture or not j.finished
                    else " and the bucket's own graph"
                )
                + ", allocated together; the log cannot split them."
            )
        rows.append(
            (
                lands_label(j),
                f"{format_gib(j.bucket_bytes)} GiB",
                f"{j.rank or 'GPU'} {lines_text(j.lines)}",
            )
        )
    h = c.headroom
    if h is not None and h.bytes is not None and c.plan.cells:
        rows.append(
            (
                "headroom: free after the pools",
                f"{format_gib(h.bytes)} GiB",
                f"what lazy cells must fit in ({after_pools_text(h)})",
            )
            if h.measured_binds
            else (
                "headroom P x (1 - mfs)",
                f"{format_gib(h.bytes)} GiB",
                "what lazy cells must fit in",
            )
        )
    if not rows:
        return None
    return Grid(
        "Communication memory the log measured",
        ("reading", "value", "where"),
        tuple(rows),
        ("l", "r", "l"),
        tuple(notes),
    )


def comm_view(c: cj.Communication) -> CommView:
    return CommView(
        cells_table(c.plan),
        measured_table(c),
        tuple(comm_finding_text(f) for f in c.findings),
        groups_text(c.plan),
    )


def plan_view(plan: Plan) -> CommView:
    """The same table for ``logmem estimate``: nothing measured."""
    return CommView(cells_table(plan, from_log=False), None, (), groups_text(plan))


# --- JSON -----------------------------------------------------------------------------------


def cell_json(c: Cell) -> dict[str, Any]:
    return {
        "group": c.group,
        "mechanism": c.mechanism.value,
        "bytes": c.bytes,
        "when": c.when.value,
        "source": c.source,
        "memory": c.memory,
        "note": cell_note(c),
        "each_bytes": c.each_bytes,
        "each": c.each,
        "lines": list(c.lines),
    }


def _custom_ar_none_json(plan: Plan) -> dict[str, Any] | None:
    for key, value in plan.notes:
        if key == "custom_ar_none":
            why, nodes, world, printed = value
            return {
                "why": why,
                "nodes": nodes,
                "text": custom_ar_none_text(why, nodes, world, plan.library, printed),
            }
    return None


def plan_json(plan: Plan) -> dict[str, Any]:
    return {
        "custom_all_reduce_none": _custom_ar_none_json(plan),
        "groups": [{"name": g.name, "size": g.size, "reuses": g.reuses} for g in plan.groups],
        "cells": [cell_json(c) for c in plan.cells],
        "pd_role": plan.pd_role,
        "transfer_backend": plan.transfer_backend,
        "mem_fraction_static_explicit": plan.mfs_explicit,
        "env": [
            {"key": v.key, "value": v.value, "origin": v.origin, "line": v.line}
            for v in plan.env.values
            if v.key in comm.COMM_ENV_KEYS
        ],
    }


def comm_json(c: cj.Communication) -> dict[str, Any]:
    """``communication`` in ``logmem analyze --format json`` (docs/json-schema.md)."""
    main = c.rank(c.main_rank) or (c.ranks[0] if c.ranks else None)
    ar = c.all_reduce
    j = c.deepep
    return {
        **plan_json(c.plan),
        "measured": {
            "init_distributed_gib": gib(main.usage_bytes) if main else None,
            "init_rank": main.rank if main else None,
            "init_ranks": [
                {"rank": r.rank, "gib": gib(r.usage_bytes), "line": r.line} for r in c.ranks
            ],
            "init_formula_bytes": main.formula_bytes if main else None,
            "all_reduce_symmetric_mib": round(ar.symmetric.bytes / MIB, 2) if ar else None,
            "all_reduce_local_mib": round(ar.local.bytes / MIB, 2) if ar else None,
            "deepep": None
            if j is None
            else {
                "rank": j.rank,
                "graph": j.graph,
                "bucket": j.bucket,
                "bucket_gib": gib(j.bucket_bytes),
                "whole_capture": j.whole_capture,
                "formula_bytes": j.deepep_bytes,
                "lines": list(j.lines),
                # The bucket's drop holds these too (and its graph): bucket_gib is not DeepEP's.
                "shared": [{"group": x.group, "mechanism": x.mechanism.value} for x in j.shared],
                "also": [x.value for x in j.also],
            },
            "headroom_gib": gib(c.headroom_bytes),
            # The room the lazy cells had: the lower of headroom_gib and the reading after the pools.
            "headroom_after_pools": None
            if c.headroom is None or c.headroom.after_pools_bytes is None
            else {
                "gib": gib(c.headroom.after_pools_bytes),
                "rank": c.headroom.rank,
                "line": c.headroom.line,
            },
            "room_gib": gib(c.headroom.bytes) if c.headroom is not None else None,
            "room_binds": None
            if c.headroom is None or c.headroom.bytes is None
            else "after_pools"
            if c.headroom.measured_binds
            else "budget",
        },
        "findings": [{"kind": type(f).__name__, "text": comm_finding_text(f)} for f in c.findings],
    }


# --- plot -----------------------------------------------------------------------------------


def comm_plot_data(plan: Plan) -> dict[str, Any]:
    """The table as a grid: groups x mechanisms, bytes (None: measure) and when."""
    groups = list(dict.fromkeys(c.group for c in plan.cells))
    mechs = list(dict.fromkeys(c.mechanism.value for c in plan.cells))
    grid: list[list[dict[str, Any] | None]] = [[None for _ in mechs] for _ in groups]
    for c in plan.cells:
        grid[groups.index(c.group)][mechs.index(c.mechanism.value)] = {
            "bytes": c.bytes,
            "label": size_text(c.bytes),
            "when": c.when.value,
            "host": c.memory == "host",
        }
    return {"groups": groups, "mechanisms": mechs, "grid": grid}
