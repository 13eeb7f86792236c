"""Snapshot figures: top allocation sites per pool, and reserved/allocated bytes over time.

As in report.plots: a ``*_data`` function makes a plain dict (what tests check) and a
``*_figure`` function only draws it, with the object API (no pyplot state).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from logmem.report.canvas import lit, new_figure, plot_style
from logmem.report.plot_data import short
from logmem.torch_snapshot.summary import DeviceSummary
from logmem.torch_snapshot.trace import DeviceTrace

if TYPE_CHECKING:
    from matplotlib.figure import Figure

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


def sites_figure(data: Mapping[str, Any]) -> Figure:
    pools: Sequence[Mapping[str, Any]] = data["pools"]
    rows = sum(len(p["sites"]) for p in pools) or 1
    fig = new_figure(9.0, 1.2 + 0.32 * rows + 0.5 * len(pools))
    axes = fig.subplots(len(pools) or 1, 1, squeeze=False)[:, 0]
    for ax, p in zip(axes, pools):
        labels = [lit(short(s, 70)) for s in p["sites"]][::-1]
        ax.barh(range(len(labels)), p["mib"][::-1], color="#3b6fb6")
        ax.set_yticks(range(len(labels)), labels, fontsize=8)
        ax.set_title(lit(f"device {data['device']}, pool {p['pool']}"), loc="left", fontsize=10)
        ax.set_xlabel("MiB allocated")
        ax.grid(axis="x", color="#e4e4e4", linewidth=0.6)
    return fig


def timeline_figure(data: Mapping[str, Any]) -> Figure:
    fig = new_figure(9.0, 4.6)
    ax = fig.subplots()
    for p in data["pools"]:
        ax.step(p["x"], p["reserved_mib"], where="post", label=lit(f"{p['pool']} reserved"))
        ax.step(
            p["x"],
            p["allocated_change_mib"],
            where="post",
            linestyle="--",
            label=lit(f"{p['pool']} allocated since the first entry"),
        )
    ax.set_xlabel(data["x_label"])
    ax.set_ylabel("MiB")
    ax.set_title(f"device {data['device']}: bytes over the trace, per pool", loc="left")
    ax.grid(color="#e4e4e4", linewidth=0.6)
    fig.legend(loc="outside lower center", frameon=False, fontsize=8, ncols=2)
    return fig


def draw(kind: str, data: Mapping[str, Any]) -> Figure:
    with plot_style():
        return sites_figure(data) if kind == "sites" else timeline_figure(data)
