"""Issue 12, the remaining items: the printed KV dtype reaches the pools and the sizing, a launch
that died loading weights gets no "left free" finding, a proposed --mem-fraction-static goes
through SGLang's own scaling, and the text of crashed launches says only what is true.

Corpus logs where one shows it (018, 019, 041), constructed logs in SGLang's wording otherwise.
Expected figures come from the log text, never from logmem's output.
"""

from __future__ import annotations

import json
from pathlib import Path

from conftest import FIXTURES, corpus_log
from logmem.analysis.attribution import build_ledger
from logmem.api import read_log
from logmem.estimate.crosscheck import crosscheck
from logmem.report import render


def _write(tmp_path: Path, text: str, name: str = "start-up.log") -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def _json(path: Path) -> dict:  # type: ignore[type-arg]
    out: dict = json.loads(render(read_log(str(path)), "json"))  # type: ignore[type-arg]
    return out


# --- item 1: "Using KV cache dtype: X" is the dtype of the pools it precedes -------------------


def _pools(doc: dict, rank: str, role: str = "target") -> list[dict]:  # type: ignore[type-arg]
    r = next(r for r in doc["launches"][0]["ranks"] if r["rank"] == rank)
    m = next(m for m in r["models"] if m["role"] == role)
    pools: list[dict] = m["kv_pools"]  # type: ignore[type-arg]
    return pools


def test_every_rank_gets_tp0s_kv_dtype_line() -> None:
    """041: TP0 prints 'Using KV cache dtype: torch.float8_e4m3fn' (line 8); TP1's KV line
    (line 9) comes before TP0's and prints no dtype: both pools are fp8, from line 8."""
    path = corpus_log("041-")
    doc = _json(path)
    for rank in ("TP0", "TP1"):
        (pool,) = _pools(doc, rank)
        assert pool["dtype"] == "torch.float8_e4m3fn"
        assert pool["dtype_line"] == {"path": str(path), "line": 8}
    sz = build_ledger(read_log(str(path)).launches[0]).sizing
    assert sz is not None and sz.kv_dtype == "torch.float8_e4m3fn"
    # 7.70 GiB / 202,093 tokens, likely 40,960 B: 40 layers x 4 KV heads x 128 x 2 of 1 byte.
    assert sz.kv_element_bytes == 1 and sz.likely_elements_per_token == 40_960
    text = render(read_log(str(path)), "text")
    assert "40,960 float8_e4m3fn elements of 1 byte" in " ".join(text.split())


def test_e5m2_on_an_offline_run() -> None:
    """018: bench_one_batch prints 'Using KV cache dtype: torch.float8_e5m2' (line 18)."""
    (pool,) = _pools(_json(corpus_log("018-")), "TP0")
    assert pool["dtype"] == "torch.float8_e5m2" and pool["dtype_line"]["line"] == 18


def test_the_draft_pools_get_the_line_printed_before_them() -> None:
    """019 (MTP): line 934 precedes the target's pools, line 1322 the draft's (after the draft's
    Load weight end, line 1319)."""
    path = corpus_log("019-")
    doc = _json(path)
    for rank in ("DP0 TP0 EP0", "DP3 TP15 EP15"):
        (target,) = _pools(doc, rank)
        (draft,) = _pools(doc, rank, "draft")
        assert target["dtype"] == draft["dtype"] == "torch.bfloat16"
        assert (target["dtype_line"]["line"], draft["dtype_line"]["line"]) == (934, 1322)


def test_a_kv_line_that_prints_its_dtype_keeps_it() -> None:
    """016 (Aug 2026): 'KV Cache is allocated. dtype: torch.bfloat16, ...' on line 4."""
    path = corpus_log("016-")
    (pool,) = _pools(_json(path), "")
    assert pool["dtype"] == "torch.bfloat16" and pool["dtype_line"]["line"] == 4


def test_no_dtype_printed_is_null() -> None:
    """001 (Mar 2025) prints no KV dtype anywhere: null, never a guess."""
    pool = _pools(_json(corpus_log("001-")), "TP0")[0]
    assert pool["dtype"] is None and pool["dtype_line"] is None


def test_crosscheck_prices_the_printed_kv_dtype(tmp_path: Path) -> None:
    """001 with kv_cache_dtype='auto' but an fp8 cache: 'Using KV cache dtype:
    torch.float8_e4m3fn' and K = V = 0.71 GiB for 46,611 tokens (32,768 B per token). QwQ-32B's
    config at fp8 gives 64 layers x 8/4 KV heads x 128 x 2 x 1 B = 32,768: it agrees (bf16,
    what 'auto' would mean for the checkpoint, gives 65,536)."""
    text = corpus_log("001-").read_text(encoding="utf-8").replace("2025-03-08", "2026-03-08")
    text = text.replace("K size: 1.42 GB, V size: 1.42 GB", "K size: 0.71 GB, V size: 0.71 GB")
    kv0 = "[2026-03-08 12:29:21 TP0] KV Cache is allocated."
    assert kv0 in text
    text = text.replace(
        kv0, "[2026-03-08 12:29:21 TP0] Using KV cache dtype: torch.float8_e4m3fn\n" + kv0
    )
    led = build_ledger(read_log(str(_write(tmp_path, text))).launches[0])
    config = json.loads((FIXTURES / "configs" / "qwq-32b.json").read_text(encoding="utf-8"))
    kv = next(c for c in crosscheck(led, config).checks if "per token" in c.what)
    assert kv.expected_bytes == 32_768 and not kv.differs
