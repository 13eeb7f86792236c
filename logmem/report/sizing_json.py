"""JSON of the KV-sizing facts split off jsonout: rank coverage and the default-mfs rule."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from logmem.units import gib

if TYPE_CHECKING:
    from logmem.analysis.attribution import LaunchLedger


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
            "capacity_from_device_name": (
                {"device_name": d.capacity_named[0], "line": d.capacity_named[1]}
                if d.capacity_named is not None
                else None
            ),
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


def _round_local(x: float | None) -> int | None:
    return round(x) if x is not None else None


def sizing_json(led: LaunchLedger) -> dict[str, Any] | None:
    sz = led.sizing
    if sz is None:
        return None
    out: dict[str, Any] = {
        "mem_fraction_static": sz.mem_fraction_static,
        "mem_fraction_static_source": "server_args" if sz.mfs_lines is None else "command",
        "pre_load_gib": gib(sz.pre_load_bytes),
        "pre_load_rank": sz.pre_load_rank,
        "after_weights_gib": gib(sz.after_weights_bytes),
        "rest_gib": gib(sz.rest_bytes),
        "logged_pool_gib": gib(sz.logged_pool_bytes),
        "kv_gib": gib(sz.kv_bytes),
        "kv_tokens": sz.kv_tokens,
        "bytes_per_token": round(sz.bytes_per_token) if sz.bytes_per_token else None,
        "bytes_per_token_range": list(sz.bytes_per_token_range)
        if sz.bytes_per_token_range
        else None,
        "bytes_per_token_likely": sz.likely_bytes_per_token,
        "rule_mem_fraction_static": round(sz.rule_mfs, 6),
        "mfs_adjustments": [
            {"scope": a.scope, "factor": a.factor, "versions": a.versions} for a in sz.adjustments
        ],
        "rule_tokens": sz.rule_tokens,
        "budget_bytes_per_token": _round_local(sz.budget_bytes_per_token),
        "all_pools_bytes_per_token": _round_local(sz.all_pools_bytes_per_token),
        "pre_load_ranks": _cov(sz.pre_load_coverage),
        "after_weights_ranks": _cov(sz.after_weights_coverage),
    }
    pc = sz.post_capture
    if pc is not None:
        # Post-capture KV sizing (logmem.analysis.post_capture); only where the log shows it.
        out["post_capture"] = {
            "rank": pc.rank,
            "line": pc.line,
            "tokens": pc.tokens,
            "kv_gib": gib(pc.kv_bytes),
            "avail_gib": gib(pc.avail_bytes),
            "after_capture_gib": gib(pc.before_bytes),
            "after_capture_line": pc.before_line,
            "headroom_gib": gib(pc.headroom_bytes),
            "reserved_tokens": pc.reserved_tokens,
            "reserved_gib": gib(pc.reserved_bytes),
            "reserved_line": pc.reserved_line,
            "capped_by_reservation": pc.capped,
        }
    return out
