"""JSON of the KV-sizing facts split off jsonout: rank coverage and the default-mfs rule."""

from __future__ import annotations

from typing import Any


def _cov(c: Any) -> dict[str, Any] | None:
    return {"ranks_with_reading": c.printed, "ranks_expected": c.expected} if c else None


def default_mfs_json(d: Any) -> dict[str, Any] | None:
    """Which SGLang rule gave mem_fraction_static (logmem.sglang.default_mfs)."""
    if d is None:
        return None
    return {
        "rule": d.rule.value,
        "era": d.era.value,
        "era_from": d.era_from,
        "printed_on": d.printed_on.isoformat() if d.printed_on else None,
        "passed": d.passed,
        "inputs": {
            "tp_size": d.tp_size,
            "pp_size": d.pp_size,
            "capacity_mib": d.capacity_mib,
            "reserved_mib": d.reserved_mib,
            "free_before_load_mib": d.free_mib,
        },
        "gpu_tier_predicted": d.tier_mfs,
        "gpu_tier_reserved_mib": d.tier_reserved_mib,
        "capacity_windows_mib": {
            "gpu_tier": [list(w) for w in d.tier_windows] if d.tier_windows is not None else None,
            "formula": [list(w) for w in d.formula_windows]
            if d.formula_windows is not None
            else None,
        },
        "formula_excluded": d.formula_excluded,
        "excluded": d.excluded,
        "predicted": d.predicted,
        "no_prediction": d.no_prediction.value if d.no_prediction else None,
        "dumped": d.dumped,
        "matches": d.matches,
        "form": d.form,
    }
