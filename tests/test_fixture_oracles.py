"""The real logs in fixtures/ against the figures a person read off each by eye.

fixtures/expected/<log stem>.expected.json holds, for one rank of each real log, what the
log printed: the weights' free memory and usage, the KV pool, Memory pool end, every graph
capture with its bar readings, the summary's token count and how the start-up ended. This
test compares `logmem analyze --format json` with them, in the repository alone (the
same oracles also live in the shared corpus, which a clone does not have).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conftest import FIXTURES
from logmem.api import read_log
from logmem.report.jsonout import analysis_json

EXPECTED = FIXTURES / "expected"
PRINTED = 0.0051  # a value printed with two decimals
DIFFERENCE = 0.0101  # a difference of two printed values
NO_TAG = "(no rank tag, single GPU)"

REAL_LOGS = sorted(p for p in FIXTURES.glob("*.log") if "constructed" not in p.name)
ORACLES = sorted(EXPECTED.glob("*.expected.json"))


def test_every_real_fixture_log_has_its_oracle_and_back() -> None:
    assert REAL_LOGS, f"no real logs in {FIXTURES}"
    logs = {p.stem for p in REAL_LOGS}
    oracles = {p.name.removesuffix(".expected.json") for p in ORACLES}
    assert logs == oracles, (
        f"logs without oracle: {logs - oracles}; oracles without log: {oracles - logs}"
    )


def _get(node: Any, *path: str | int) -> Any:
    for key in path:
        if isinstance(key, int):
            node = node[key] if isinstance(node, list) and -len(node) <= key < len(node) else None
        else:
            node = node.get(key) if isinstance(node, dict) else None
    return node


def _minus(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else round(a - b, 2)


def _pool(sizes: dict[str, float] | None) -> dict[str, float | None]:
    """The oracle's KV sizes under the JSON's names: one KV size (MLA) or K and V."""
    if not sizes:
        return {}
    if "KV" in sizes:
        return {"kv_gib": sizes["KV"]}
    return {"k_gib": sizes.get("K"), "v_gib": sizes.get("V")}


def _pairs(
    exp: dict[str, Any], launch: dict[str, Any], rank: dict[str, Any]
) -> list[tuple[str, Any, Any, float]]:
    """(what, got, want, tolerance) for every figure the oracle states."""
    out: list[tuple[str, Any, Any, float]] = []
    models = rank.get("models") or []
    target = models[0] if models else None
    weights = exp.get("load_weight_end") or {}
    out.append(
        (
            "weights end avail",
            _get(target, "weights", "end_avail_gib"),
            weights.get("avail_gb"),
            PRINTED,
        )
    )
    out.append(
        (
            "weights usage",
            _get(target, "weights", "usage_gib"),
            weights.get("mem_usage_gb"),
            PRINTED,
        )
    )
    pools = [p for m in models for p in (m.get("kv_pools") or [])]
    if exp.get("kv_pools"):
        out.append(("KV pools", len(pools), len(exp["kv_pools"]), 0))
        for i, want in enumerate(exp["kv_pools"]):
            out.append((f"KV pool {i} tokens", _get(pools, i, "tokens"), want.get("kv_tokens"), 0))
            out += [
                (f"KV pool {i} {k}", _get(pools, i, k), v, PRINTED) for k, v in _pool(want).items()
            ]
    elif exp.get("kv_tokens") is not None or exp.get("kv_sizes_gb"):
        first = _get(target, "kv_pools", 0)
        out.append(("KV tokens", _get(first, "tokens"), exp.get("kv_tokens"), 0))
        out += [
            (f"KV {k}", _get(first, k), v, PRINTED)
            for k, v in _pool(exp.get("kv_sizes_gb")).items()
        ]
    else:
        out.append(("KV pools (none printed)", len(_get(target, "kv_pools") or []), 0, 0))
    out.append(
        (
            "Memory pool end",
            _get(target, "memory_pool_end_avail_gib"),
            exp.get("memory_pool_end_avail_gb"),
            PRINTED,
        )
    )
    draft = next((m for m in models if m.get("role") == "draft"), None)
    has_draft = any(k.startswith("draft_") for k in exp)
    out.append(("a draft model", draft is not None, has_draft, 0))
    if has_draft:
        dw = exp.get("draft_load_weight_end") or {}
        out.append(
            (
                "draft weights end avail",
                _get(draft, "weights", "end_avail_gib"),
                dw.get("avail_gb"),
                PRINTED,
            )
        )
        out.append(
            (
                "draft weights usage",
                _get(draft, "weights", "usage_gib"),
                dw.get("mem_usage_gb"),
                PRINTED,
            )
        )
        out.append(
            (
                "draft Memory pool end",
                _get(draft, "memory_pool_end_avail_gib"),
                exp.get("draft_memory_pool_end_avail_gb"),
                PRINTED,
            )
        )
        out.append(
            ("draft KV tokens", _get(draft, "kv_pools", 0, "tokens"), exp.get("draft_kv_tokens"), 0)
        )
        out += [
            (f"draft KV {k}", _get(draft, "kv_pools", 0, k), v, PRINTED)
            for k, v in _pool(exp.get("draft_kv_sizes_gb")).items()
        ]
    graphs = rank.get("graphs") or []
    captures = exp.get("graph_captures") or []
    out.append(("graph captures", len(graphs), len(captures), 0))
    for i, (g, want) in enumerate(zip(graphs, captures)):
        tag = f"graph {i} ({want.get('name')})"
        samples = g.get("samples") or []
        begin, end = want.get("begin_avail_gb"), want.get("end_avail_gb")
        first, second, last = (want.get(f"{k}_bar_avail_gb") for k in ("first", "second", "last"))
        if (
            second is not None
            and len(samples) == 1
            and first is not None
            and abs(second - first) < PRINTED
        ):
            second = None  # stopped in its first bucket: the oracle repeats the first bar
        else:
            out.append((f"{tag} second bar", _get(samples, 1, "avail_gib"), second, PRINTED))
        out += [
            (f"{tag} begin", g.get("begin_avail_gib"), begin, PRINTED),
            (f"{tag} end", g.get("end_avail_gib"), end, PRINTED),
            (f"{tag} usage", g.get("usage_gib"), want.get("end_mem_usage_gb"), PRINTED),
            (f"{tag} sizes", g.get("sizes"), want.get("bs_list"), 0),
            (f"{tag} first bar", _get(samples, 0, "avail_gib"), first, PRINTED),
            (f"{tag} last bar", _get(samples, -1, "avail_gib"), last, PRINTED),
            (f"{tag} static", g.get("static_gib"), _minus(begin, first), DIFFERENCE),
            (
                f"{tag} largest bucket",
                g.get("largest_bucket_gib"),
                _minus(first, second),
                DIFFERENCE,
            ),
            (f"{tag} other buckets", g.get("other_buckets_gib"), _minus(second, end), DIFFERENCE),
        ]
    out.append(
        (
            "max_total_num_tokens",
            launch.get("max_total_num_tokens"),
            exp.get("max_total_num_tokens"),
            0,
        )
    )
    if exp.get("crashed_oom") is not None:
        out.append(
            (
                "an out-of-memory failure",
                _get(launch, "failure", "kind") == "oom",
                exp["crashed_oom"],
                0,
            )
        )
    if exp.get("outcome"):
        out.append(("outcome", launch.get("outcome"), exp["outcome"], 0))
    elif exp.get("completed") is not None:
        out.append(("start-up finished", launch.get("outcome") == "ready", exp["completed"], 0))
    return out


def _agrees(got: Any, want: Any, tol: float) -> bool:
    if want is None or got is None:
        return want is None and got is None  # unprinted stays null, never 0
    if isinstance(want, float) or isinstance(got, float):
        return isinstance(got, (int, float)) and abs(got - want) <= tol
    return bool(got == want)


@pytest.mark.parametrize("oracle", ORACLES, ids=lambda p: p.name.removesuffix(".expected.json"))
def test_fixture_log_matches_its_hand_read_figures(oracle: Path) -> None:
    exp = json.loads(oracle.read_text(encoding="utf-8"))
    log = FIXTURES / (oracle.name.removesuffix(".expected.json") + ".log")
    doc = json.loads(json.dumps(analysis_json(read_log(str(log))), default=str))
    label = "" if exp["rank"] == NO_TAG else exp["rank"]
    found = [(L, r) for L in doc["launches"] for r in L["ranks"] if r["rank"] == label]
    assert found, f"no rank {exp['rank']!r} in {log.name}"
    launch, rank = found[0]
    pairs = _pairs(exp, launch, rank)
    wrong = [
        f"{what}: got {got!r}, want {want!r}"
        for what, got, want, tol in pairs
        if not _agrees(got, want, tol)
    ]
    assert not wrong, f"{log.name}, {exp['rank']}:\n  " + "\n  ".join(wrong)
    assert len(pairs) >= 8  # the oracle states figures for this rank, and they were compared
