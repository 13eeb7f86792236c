"""The pools-vs-budget check adds the draft's KV pool where SGLang counts it inside the target's
budget (rules.draft_pool_rule: EAGLE/STANDALONE from 0.5.16, pool_configurator.py scales the
target's cell by (1 + draft layers / target layers), so the rule's rest is split between the two
pools). Variants of the constructed Kimi K3 EAGLE log (dated 2026-09, after 0.5.16) with a draft
KV line after the target's Memory pool end, as E7 logs print it (021)."""

from __future__ import annotations

import logmem.analysis.findings as fd
from conftest import FIXTURES, read_text_log
from logmem.analysis.attribution import build_ledger
from logmem.report.sentences import finding_text
from logmem.units import gib

_SRC = FIXTURES / "kimi-k3-b200-dp2-dcp8-target-verify-constructed.log"
_KV = "KV Cache is allocated. dtype: torch.bfloat16, #tokens: {t}, KV size: {b} GB"


def _variant(tokens: int, target: str, draft: str, ends: dict[str, tuple[str, str]]) -> str:
    """The fixture with the target's pool at ``tokens`` / ``target`` GB and, per rank, a draft
    pool of ``draft`` GB for as many tokens after the target's Memory pool end (rank -> the two
    pool ends)."""
    out = []
    for line in _SRC.read_text(encoding="utf-8").splitlines():
        head = line.split("] ", 1)[0] + "] "
        rank = head[21:-2]
        if "KV Cache is allocated" in line:
            line = head + _KV.format(t=tokens, b=target)
        elif "Memory pool end" in line:
            first, second = ends[rank]
            out.append(f"{head}Memory pool end. avail mem={first} GB")
            out.append(head + _KV.format(t=tokens, b=draft))
            line = f"{head}Memory pool end. avail mem={second} GB"
        elif "max_total_num_tokens=844800" in line:
            line = line.replace("844800", str(tokens))
        out.append(line)
    return "\n".join(out) + "\n"


def _findings(text: str) -> list[object]:
    return list(build_ledger(read_text_log(text).launches[0]).findings)


def test_draft_pool_inside_the_budget_fills_it_with_the_target_pool() -> None:
    """62 MLA layers of 1,152 bytes and a one-layer draft: the scaled cell is 72,576 bytes, so
    56.20 GiB holds 831,424 tokens (page 64); the target's 55.31 and the draft's 0.89 GiB fill
    the rest. Without the draft the check would say the pools logged 0.89 GiB less."""
    text = _variant(
        831_424, "55.31", "0.89", {"DP0 TP0": ("27.22", "26.33"), "DP1 TP8": ("27.26", "26.37")}
    )
    found = _findings(text)
    d = next(f for f in found if isinstance(f, fd.DraftPool))
    assert d.rule.in_budget is True and gib(d.bytes) == 0.89
    assert not any(isinstance(f, fd.PoolsVsBudget) for f in found)


def test_pools_that_miss_the_budget_even_with_the_draft_are_reported() -> None:
    """The target's pool 1.3 GiB short of what the scaled cell gives: the finding stays, with
    the draft pool counted in it and said so."""
    text = _variant(
        811_008, "53.95", "0.87", {"DP0 TP0": ("28.58", "27.71"), "DP1 TP8": ("28.62", "27.75")}
    )
    f = next(f for f in _findings(text) if isinstance(f, fd.PoolsVsBudget))
    assert f.draft is not None and gib(f.draft[0]) == 0.87
    assert gib(f.pool_bytes) == 54.82 and gib(f.gap_bytes) == -1.38
    words = finding_text(f)
    assert "with the draft model's KV pool (0.87 GiB, line " in words
    assert "counts inside the target's budget" in words
    assert "53.95 GiB of the target's and 0.87 of the draft's against 56.20 GiB" in words
    assert "1.38 GiB less than that budget" in words
