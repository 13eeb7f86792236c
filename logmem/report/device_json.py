"""JSON of the device total (logmem.analysis.device_total): SGLang's device list and, per rank,
what was in use before its ledger's first figure (docs/json-schema.md)."""

from __future__ import annotations

from typing import Any

from logmem.analysis.device_total import DeviceTotals, PreStart
from logmem.units import MIB, gib


def _mib(n: int | None) -> float | None:
    if n is None:
        return None
    value = n / MIB
    return int(value) if value.is_integer() else round(value, 2)


def device_totals_json(t: DeviceTotals | None) -> dict[str, Any] | None:
    if t is None:
        return None
    return {
        "per_device_mib": [_mib(b) for b in t.per_device_bytes],
        "per_device_gib": [gib(b) for b in t.per_device_bytes],
        "used_mib": _mib(t.used_bytes),
        "nvidia_smi_failed": t.nvidia_smi_failed,
        "line": {"path": t.path, "line": t.line},
    }


def pre_start_json(items: tuple[PreStart, ...]) -> list[dict[str, Any]]:
    return [
        {
            "rank": p.rank,
            "total_gib": gib(p.total_bytes),
            "first_gib": gib(p.first_bytes),
            "in_use_gib": gib(p.in_use_bytes),
            "in_use_bytes": p.in_use_bytes,
            "total_from": p.join.value,
            "device": p.device,
            "total_line": p.total_line,
            "lines": list(p.lines),
        }
        for p in items
    ]
