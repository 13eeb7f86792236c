"""Snapshot figures: top allocation sites per pool, and reserved/allocated bytes over time.

As in report.figures.plots: a ``*_data`` function makes a plain dict (what tests check) and a
``*_scene`` function lays it out as a report.figures.scene Scene, written as SVG by report.figures.svg.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from logmem.report.figures.chart import (
    CYCLE,
    Panel,
    label_width,
    legend,
    nice_ticks,
    row_span,
    ytick_width,
)
from logmem.report.figures.plot_data import short
from logmem.report.figures.scene import Line, Rect, Scene
from logmem.report.figures.svg import scene_svg
from logmem.torch_snapshot.summary import DeviceSummary
from logmem.torch_snapshot.trace import DeviceTrace

MIB = 1 << 20
SITES_PER_POOL = 8


def _pool_name(pool_id: tuple[int, int] | None, kind: str) -> str:
    return f"{kind} {pool_id}" if pool_id is not None else kind


def sites_data(d: DeviceSummary) -> dict[str, Any]:
    """Per pool, its top sites in MiB (largest first)."""
    return {
        "device": d.device,
        "pools": [
            {
                "pool": _pool_name(p.pool_id, p.kind),
                "sites": [s.site for s in p.top_sites[:SITES_PER_POOL]],
                "mib": [round(s.bytes / MIB, 3) for s in p.top_sites[:SITES_PER_POOL]],
            }
            for p in d.pools
            if p.top_sites
        ],
    }


def timeline_data(t: DeviceTrace) -> dict[str, Any]:
    """Per pool, reserved and allocated MiB after each (thinned) trace entry, from the
    trace's first entry (the pool's start level) to its last (the snapshot's level)."""
    stamped = t.x_unit == "time_us" and t.time_us is not None
    x0 = t.time_us[0] if stamped and t.time_us else 0
    scale = 1e6 if stamped else 1
    x_end = (t.time_us[1] - x0) / scale if stamped and t.time_us else float(t.entries - 1)
    pools = []
    for p in t.pools:
        if not p.points:
            continue
        xs = [0.0] + [(x - x0) / scale for x, _, _ in p.points] + [x_end]
        reserved = [p.reserved_start] + [r for _, r, _ in p.points] + [p.points[-1][1]]
        # allocated is a change since the first entry: the start level is not in a trace
        allocated = [0] + [a for _, _, a in p.points] + [p.points[-1][2]]
        pools.append(
            {
                "pool": _pool_name(p.pool_id, p.kind),
                "x": xs,
                "reserved_mib": [round(r / MIB, 3) for r in reserved],
                "allocated_change_mib": [round(a / MIB, 3) for a in allocated],
            }
        )
    return {
        "device": t.device,
        "x_label": "seconds since the first entry" if stamped else "trace entry",
        "pools": pools,
    }


def sites_scene(data: Mapping[str, Any]) -> Scene:
    """Per pool, a horizontal bar per top site (largest on top)."""
    pools: Sequence[Mapping[str, Any]] = data["pools"]
    names = [short(site, 70) for p in pools for site in p["sites"]]
    left = 10 + label_width(names, 8.0) + 8
    width = max(648.0, left + 300)
    s = Scene(width, 0)
    y = 0.0
    for p in pools:
        n = len(p["sites"])
        hi = max(p["mib"], default=0.0) * 1.05 or 1.0
        xt = [v for v in nice_ticks(0, hi, most=9) if v <= hi]
        rows, ylim = row_span(n)
        box = Panel(s, left, y + 24, width - 14, y + 24 + 23 * rows, (0.0, hi), ylim, yflip=True)
        box.grid(xs=xt)
        for i, mib in enumerate(p["mib"]):
            s.add(
                Rect(
                    box.x(0),
                    box.y(i - 0.4),
                    box.x(mib) - box.x(0),
                    box.y(i + 0.4) - box.y(i - 0.4),
                    "#3b6fb6",
                )
            )
        box.spines()
        box.xticks(xt)
        for i, site in enumerate(p["sites"]):
            s.text(box.x0 - 5.5, box.y(i), short(site, 70), 8.0, "middle", anchor="end")
        box.title(f"device {data['device']}, pool {p['pool']}")
        box.xlabel("MiB allocated")
        y = box.y1 + 44
    s.height = max(y, 60.0)
    return s


def timeline_scene(data: Mapping[str, Any]) -> Scene:
    """Per pool, reserved MiB (solid) and MiB allocated since the first entry (dashed), as steps."""
    s = Scene(648, 0)
    pools = data["pools"]
    xs = [x for p in pools for x in p["x"]] or [0.0, 1.0]
    ys = [y for p in pools for k in ("reserved_mib", "allocated_change_mib") for y in p[k]] or [
        0.0,
        1.0,
    ]
    span = max(xs) - min(xs) or 1.0
    xlim = (min(xs) - span * 0.03, max(xs) + span * 0.03)
    lo, hi = min(ys), max(ys)
    d = (hi - lo) * 0.05 or 1.0
    ylim = (lo - d, hi + d)
    xt = [v for v in nice_ticks(*xlim) if xlim[0] <= v <= xlim[1]]
    yt = [v for v in nice_ticks(*ylim, most=8) if ylim[0] <= v <= ylim[1]]
    left = 22 + ytick_width(yt) + 8
    box = Panel(s, left, 24, 634, 290, xlim, ylim)
    box.grid(xt, yt)
    entries = []
    for k, p in enumerate(pools):
        colour = CYCLE[k % len(CYCLE)]
        for key, dash, what in (
            ("reserved_mib", None, "reserved"),
            ("allocated_change_mib", "dashed", "allocated since the first entry"),
        ):
            pts: list[tuple[float, float]] = []
            for i, (x, v) in enumerate(zip(p["x"], p[key])):
                if i:  # a step: the level holds until the next entry
                    pts.append((box.x(x), pts[-1][1]))
                pts.append((box.x(x), box.y(v)))
            s.add(Line(tuple(pts), colour, 1.5, dash))
            entries.append((f"{p['pool']} {what}", colour, "dashed" if dash else "line"))
    box.spines()
    box.xticks(xt)
    box.yticks(yt)
    box.title(f"device {data['device']}: bytes over the trace, per pool")
    box.xlabel(data["x_label"])
    box.ylabel("MiB", left - 12)
    y = 290.0 + 40
    y += legend(s, entries, y, 2)
    s.height = y + 6
    return s


def svg(kind: str, data: Mapping[str, Any]) -> str:
    return scene_svg(sites_scene(data) if kind == "sites" else timeline_scene(data))
