"""`logmem snapshot` reports: the JSON view model (logmem.snapshot/1) and text / Markdown.

Facts come from logmem.torch_snapshot (bytes throughout); this module only words and rounds them.
Sizes are shown the way PyTorch's own messages show them (format_size: bytes, KiB, MiB or
GiB with two decimals), so a figure here reads like the OOM message beside it.
"""

from __future__ import annotations

import textwrap
from typing import Any

from logmem import __version__
from logmem.report.markdown import md_escape, table_md
from logmem.report.table import Section, Table, rank_name
from logmem.report.text import WIDTH, table_lines
from logmem.torch_snapshot.analysis import SnapshotAnalysis, SnapshotFile
from logmem.torch_snapshot.join import LOG_ROUNDING_BYTES, LogJoin
from logmem.torch_snapshot.model import PoolId
from logmem.torch_snapshot.summary import DeviceSummary, SiteTotal
from logmem.torch_snapshot.trace import DeviceTrace, OomEntry, PoolTrace
from logmem.units import format_gib

SCHEMA = "logmem.snapshot/1"


def size(n: int | None) -> str:
    """PyTorch's format_size: "512 bytes", "1.50 KiB", "20.00 MiB", "1.25 GiB"."""
    if n is None:
        return "?"
    sign, n = ("-", -n) if n < 0 else ("", n)
    if n <= 1024:
        return f"{sign}{n} bytes"
    for unit, scale in (("KiB", 1 << 10), ("MiB", 1 << 20)):
        if n <= scale << 10:
            return f"{sign}{n / scale:.2f} {unit}"
    return f"{sign}{n / (1 << 30):.2f} GiB"


def pool_text(p: PoolId | None) -> str:
    return "?" if p is None else f"({p[0]}, {p[1]})"


# --- JSON ----------------------------------------------------------------------------------


def _sites(sites: tuple[SiteTotal, ...]) -> list[dict[str, Any]]:
    return [{"site": s.site, "bytes": s.bytes, "blocks": s.blocks} for s in sites]


def _pool_id(p: PoolId | None) -> list[int] | None:
    return list(p) if p is not None else None


def _device_json(path: str, d: DeviceSummary) -> dict[str, Any]:
    return {
        "path": path,
        "device": d.device,
        "reserved_bytes": d.reserved_bytes,
        "allocated_bytes": d.allocated_bytes,
        "active_bytes": d.active_bytes,
        "requested_bytes": d.requested_bytes,
        "reserved_unallocated_bytes": d.reserved_unallocated_bytes,
        "segments": d.segments,
        "expandable_segments": d.expandable_segments,
        "mismatched_segments": d.mismatched_segments,
        "pools": [
            {
                "pool_id": _pool_id(p.pool_id),
                "kind": p.kind,
                "kind_reason": p.kind_reason,
                "reserved_bytes": p.reserved_bytes,
                "allocated_bytes": p.allocated_bytes,
                "segments": p.segments,
                "blocks": p.blocks,
                "top_sites": _sites(p.top_sites),
            }
            for p in d.pools
        ],
        "top_sites": _sites(d.top_sites),
        "largest_blocks": [
            {
                "bytes": b.size,
                "requested_bytes": b.requested_size,
                "state": b.state,
                "pool_id": _pool_id(b.pool_id),
                "site": b.site,
            }
            for b in d.largest_blocks
        ],
    }


def _pool_trace_json(p: PoolTrace) -> dict[str, Any]:
    return {
        "pool_id": _pool_id(p.pool_id),
        "kind": p.kind,
        "reserved_start_bytes": p.reserved_start,
        "reserved_end_bytes": p.reserved_end,
        "reserved_growth_bytes": p.reserved_growth,
        "allocated_change_bytes": p.allocated_change,
        "reserved_peak_bytes": p.reserved_peak,
        "covers_from_empty": p.covers_from_empty,
        "points": [list(x) for x in p.points],
    }


def _trace_json(path: str, t: DeviceTrace) -> dict[str, Any]:
    return {
        "path": path,
        "device": t.device,
        "entries": t.entries,
        "actions": dict(t.actions),
        "time_us": list(t.time_us) if t.time_us else None,
        "x": t.x_unit,
        "window": {"first_entry": t.window[0], "last_entry": t.window[1]} if t.window else None,
        "window_sites": _sites(t.window_sites),
        "pools": [_pool_trace_json(p) for p in t.pools],
        "ooms": [
            {
                "entry": o.entry,
                "time_us": o.time_us,
                "size_bytes": o.size_bytes,
                "device_free_bytes": o.device_free_bytes,
                "reserved_bytes": o.reserved_bytes,
                "allocated_bytes": o.allocated_bytes,
            }
            for o in t.oom_entries
        ],
    }


def _join_json(j: LogJoin) -> dict[str, Any]:
    return {
        "paths": list(j.log_paths),
        "rank": j.rank,
        "device": j.device,
        "capture": j.graph,
        "start": {"reading": j.start_label, "line": j.start_line, "free_bytes": j.start_bytes},
        "end": {"line": j.end_line, "free_bytes": j.end_bytes},
        "drop_bytes": j.drop_bytes,
        "graph_pool_growth_bytes": j.graph_pool_bytes,
        "other_pools_growth_bytes": j.other_pools_bytes,
        "pytorch_bytes": j.pytorch_bytes,
        "outside_pytorch_bytes": None if j.mismatch else j.outside_bytes,
        "rounding_bytes": LOG_ROUNDING_BYTES,
        "mismatch": j.mismatch,
        "rank_device": j.rank_device,
        "basis": "measured" if j.measured else "assumed",
        "assumptions": list(j.assumptions),
        "other_captures": list(j.other_captures),
    }


def to_json(a: SnapshotAnalysis) -> dict[str, Any]:
    traces = [_trace_json(f.snapshot.path, t) for f in a.files for t in f.traces]
    return {
        "schema": SCHEMA,
        "logmem_version": __version__,
        "frames": a.frames,
        "snapshots": [
            {
                "path": f.snapshot.path,
                "form": f.snapshot.form,
                "keys": list(f.snapshot.keys),
                "allocator_settings": dict(f.snapshot.allocator_settings),
            }
            for f in a.files
        ],
        "devices": [_device_json(f.snapshot.path, d) for f in a.files for d in f.devices],
        "trace": {"devices": traces} if traces else None,
        "log": _join_json(a.join) if a.join is not None else None,
    }


# --- the report model (text and Markdown) ---------------------------------------------------


def _site_table(title: str, sites: tuple[SiteTotal, ...], total: int) -> Table:
    rows = tuple(
        (size(s.bytes), f"{100 * s.bytes / total:.1f}%" if total else "", str(s.blocks), s.site)
        for s in sites
    )
    return Table(title, ("allocated", "share", "blocks", "site"), rows, ("r", "r", "r", "l"))


def device_paragraph(d: DeviceSummary) -> str:
    req = f", requested {size(d.requested_bytes)}" if d.requested_bytes is not None else ""
    exp = f" ({d.expandable_segments} expandable)" if d.expandable_segments else ""
    return (
        f"Device {d.device}: reserved {size(d.reserved_bytes)}, allocated "
        f"{size(d.allocated_bytes)}, active {size(d.active_bytes)}{req}; reserved but "
        f"unallocated {size(d.reserved_unallocated_bytes)}. {d.segments} segment{'' if d.segments == 1 else 's'}{exp}."
    )


def device_sections(path: str, d: DeviceSummary) -> list[Section]:
    notes = [device_paragraph(d)]
    if d.mismatched_segments:
        notes.append(
            f"{d.mismatched_segments} segment(s) state an allocated_size that differs from the "
            "sum of their allocated blocks; the sums here are the blocks'."
        )
    pools = Table(
        f"Pools on device {d.device}",
        ("pool", "kind", "reserved", "allocated", "segments", "blocks", "why this kind"),
        tuple(
            (
                pool_text(p.pool_id),
                p.kind,
                size(p.reserved_bytes),
                size(p.allocated_bytes),
                str(p.segments),
                str(p.blocks),
                p.kind_reason,
            )
            for p in d.pools
        ),
        ("l", "l", "r", "r", "r", "r", "l"),
    )
    tables = [
        pools,
        _site_table(f"Top allocation sites on device {d.device}", d.top_sites, d.allocated_bytes),
    ]
    if len(d.pools) > 1:
        for p in d.pools:
            if p.top_sites:
                tables.append(
                    _site_table(
                        f"Top sites in pool {pool_text(p.pool_id)} ({p.kind})",
                        p.top_sites,
                        p.allocated_bytes,
                    )
                )
    tables.append(
        Table(
            f"Largest allocated blocks on device {d.device}",
            ("size", "requested", "pool", "site"),
            tuple(
                (size(b.size), size(b.requested_size), pool_text(b.pool_id), b.site)
                for b in d.largest_blocks
            ),
            ("r", "r", "l", "l"),
        )
    )
    return [Section(f"{path}, device {d.device}", tuple(tables), tuple(notes))]


def _oom_text(t: DeviceTrace, o: OomEntry) -> str:
    """One oom entry: what failed, the free memory it records, and PyTorch's levels there."""
    when = ""
    if o.time_us is not None and t.time_us is not None:
        when = f" ({(o.time_us - t.time_us[0]) / 1e6:.3f} s)"
    tried = (
        f"an allocation of {size(o.size_bytes)} failed"
        if o.size_bytes is not None
        else "an allocation failed (size not recorded)"
    )
    free = (
        f" with {size(o.device_free_bytes)} free on the device"
        if o.device_free_bytes is not None
        else ""
    )
    return (
        f"Entry {o.entry}{when}: {tried}{free}; PyTorch then held {size(o.reserved_bytes)} "
        f"reserved, {size(o.allocated_bytes)} allocated."
    )


def trace_section(path: str, t: DeviceTrace) -> Section:
    acts = ", ".join(f"{k} {v}" for k, v in t.actions)
    span = ""
    if t.time_us is not None:
        span = f" over {(t.time_us[1] - t.time_us[0]) / 1e6:.3f} s"
    paras = [f"Trace of device {t.device}: {t.entries} entries{span} ({acts})."]
    if t.ooms:
        paras.append(f"The trace records {t.ooms} out-of-memory event{'s' if t.ooms != 1 else ''}.")
    paras += [_oom_text(t, o) for o in t.oom_entries]
    rows = tuple(
        (
            pool_text(p.pool_id) if p.kind != "unknown" or p.pool_id else "unknown",
            p.kind,
            size(p.reserved_start),
            size(p.reserved_end),
            size(p.reserved_peak),
            size(p.reserved_growth),
            size(p.allocated_change),
            "yes" if p.covers_from_empty else "no",
        )
        for p in t.pools
    )
    tables = [
        Table(
            f"Reserved memory over the trace, device {t.device}",
            (
                "pool",
                "kind",
                "at first entry",
                "at the end",
                "peak",
                "growth",
                "active change",
                "from empty",
            ),
            rows,
            ("l", "l", "r", "r", "r", "r", "r", "l"),
            (
                "active change: allocations minus completed frees, so blocks freed but still "
                "pending (active_pending_free) count; the pool table's 'allocated' does not "
                "count them.",
            ),
        )
    ]
    if t.window is not None:
        total = sum(s.bytes for s in t.window_sites)
        tables.append(
            _site_table(
                f"Allocations in the capture window (entries {t.window[0]} to {t.window[1]}), by site",
                t.window_sites,
                total,
            )
        )
    return Section(f"{path}, trace of device {t.device}", tuple(tables), tuple(paras))


def join_paragraphs(j: LogJoin) -> tuple[str, ...]:
    """In GiB with two decimals, as the log prints the readings it is compared with."""
    basis = "Measured" if j.measured else "Computed under assumptions"
    other = (
        f" and the other pools {format_gib(j.other_pools_bytes)} GiB"
        if j.other_pools_bytes is not None
        else ""
    )
    who = rank_name(j.rank)
    if j.device_differs:
        basis = "Not comparable"
    out = [
        f"{basis}: the log's {j.graph} capture on {who} dropped free memory by "
        f"{format_gib(j.drop_bytes)} GiB ({j.start_label}, line {j.start_line}, to the end "
        f"line, line {j.end_line}; +-{format_gib(LOG_ROUNDING_BYTES)} GiB from the log's "
        "rounding).",
        f"In the snapshot (device {j.device}) the CUDA-graph pool grew "
        f"{format_gib(j.graph_pool_bytes)} GiB{other}.",
    ]
    if j.device_differs:
        out.append(
            f"{who} ran on cuda:{j.rank_device} (base_gpu_id + TP rank x gpu_id_step), and the "
            f"snapshot is of device {j.device}: it is another rank's process, so there is no "
            "split (pass --device, or --rank for the rank of that GPU)."
        )
    elif j.pool_beyond_drop:
        out.append(
            f"The snapshot's PyTorch pools grew {format_gib(j.pytorch_bytes)} GiB, more than the "
            f"{format_gib(j.drop_bytes)} GiB the log's capture took (line {j.start_line} to "
            f"{j.end_line}): the snapshot is not of this capture, so there is no split (pass "
            "the log of the run that wrote it, or --rank/--capture)."
        )
    else:
        out.append(
            f"Outside PyTorch: {format_gib(j.drop_bytes)} - {format_gib(j.pytorch_bytes)} = "
            f"{format_gib(j.outside_bytes)} GiB ({_outside_causes(j)})."
        )
    out.extend(f"Assumed: {a}." for a in j.assumptions)
    if j.other_captures:
        out.append(
            f"{who[0].upper()}{who[1:]} also captured {', '.join(j.other_captures)}; "
            "--capture N picks another."
        )
    return tuple(out)


def _outside_causes(j: LogJoin) -> str:
    """What can hold memory outside PyTorch in this launch: DeepEP only with its backend,
    NCCL only with peers."""
    causes = []
    if j.deepep:
        causes.append("DeepEP buffers")
    if j.peers is not False:
        causes.append("NCCL buffers")
    causes += ["cuBLAS workspaces", "the graphs' own driver memory"]
    text = ", ".join(causes[:-1]) + f" and {causes[-1]}"
    if j.peers is False:
        text += "; one GPU: no NCCL peers" + ("" if j.deepep else ", no DeepEP")
    return text


def sections(a: SnapshotAnalysis) -> list[Section]:
    out: list[Section] = []
    if a.join is not None:
        out.append(Section("Snapshot and log", (), join_paragraphs(a.join)))
    for f in a.files:
        out.extend(file_sections(f))
    return out


def file_sections(f: SnapshotFile) -> list[Section]:
    s = f.snapshot
    settings = ", ".join(f"{k}={v}" for k, v in s.allocator_settings)
    head = [
        f"{s.path}: {s.form} form, {len(s.segments)} segment{'' if len(s.segments) == 1 else 's'} on "
        f"{len(f.devices)} device(s)."
    ]
    if settings:
        head.append(f"Allocator settings: {settings}.")
    if not s.segments:
        head.append("The snapshot holds no segments (nothing was reserved when it was taken).")
    out = [Section(s.path, (), tuple(head))]
    for d in f.devices:
        out.extend(device_sections(s.path, d))
    out.extend(trace_section(s.path, t) for t in f.traces)
    return out


def _wrap(text: str) -> str:
    return textwrap.fill(text, WIDTH, break_on_hyphens=False)


def render_text(a: SnapshotAnalysis) -> str:
    out: list[str] = []
    for sec in sections(a):
        title = sec.title if len(sec.title) <= WIDTH else "..." + sec.title[-(WIDTH - 3) :]
        out += [title, "=" * len(title)]
        out.extend(_wrap(p) for p in sec.paragraphs)
        for t in sec.tables:
            out += ["", t.title]
            out.extend(table_lines(t) if t.rows else ["(none)"])
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def render_markdown(a: SnapshotAnalysis) -> str:
    out: list[str] = ["# PyTorch memory snapshot", ""]
    for sec in sections(a):
        out += [f"## {md_escape(sec.title)}", ""]
        out.extend(md_escape(p) + "  " for p in sec.paragraphs)
        for t in sec.tables:
            out.append("")
            out.extend(table_md(t) if t.rows else [f"**{md_escape(t.title)}**", "", "_(none)_"])
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def render(a: SnapshotAnalysis, fmt: str) -> str:
    if fmt == "json":
        from logmem.report import json_text

        return json_text.dumps(to_json(a)) + "\n"
    if fmt == "markdown":
        return render_markdown(a)
    if fmt == "html":
        from logmem.report.snapshot.html import render_html

        html: str = render_html(a)
        return html
    return render_text(a)
