"""--enable-unified-memory without post-capture KV sizing (sglang 0.5.16-0.5.23): the
UnifiedKVPool buffer is allocated whole before the graphs and printed as
'[unified-memory-pool] UnifiedKVPool allocated: total_bytes=X GB (=N B), K sub-pool(s)' instead
of a KV line (srt/mem_cache/unified_memory_pool.py UnifiedKVPool.__init__). It is the KV pool:
logged, exact in bytes, split between the full sub-pool (tokens x entry_bytes) and the SWA one.
The fixture is built by fixtures/make_postcap_swa.py (make_swa(True, post=False))."""

from __future__ import annotations

import json

import pytest

from conftest import FIXTURES, read_text_log
from logmem.analysis.ledger import What
from logmem.api import read_log
from logmem.compare.whatif import WhatIf
from logmem.parse import events as ev
from logmem.report.jsonout import render
from logmem.report.sentences import finding_text

UNI = FIXTURES / "unified-swa-0523-constructed.log"


def _words(texts: list[str]) -> str:
    return " ".join(" ".join(texts).split())


def test_the_allocated_buffer_is_the_kv_pool() -> None:
    a = read_log(str(UNI))
    t = a.launches[0].ranks[0].target
    assert t is not None
    (pool,) = t.kv_pools
    assert isinstance(pool, ev.UnifiedAllocated) and not t.reserved_kv_pools
    assert (pool.total_bytes, pool.sub_pools, pool.tokens, pool.source.line_no) == (
        58065248256,
        2,
        None,
        6,
    )
    led = a.ledger(a.launches[0])
    (r,) = led.ranks
    step = r.phase("target_pools")
    assert step is not None
    (kv,) = [c for c in step.causes if c.what is What.KV_POOL]
    assert (kv.bytes, kv.kind, kv.lines) == (58065248256, "logged", (6,))
    assert kv.facts.unified == ("full", "swa") and kv.facts.swa_tokens == 1050080


def test_sizing_splits_the_buffer_by_the_full_sub_pools_entry() -> None:
    a = read_log(str(UNI))
    sz = a.ledger(a.launches[0]).sizing
    assert sz is not None and sz.post_capture is None
    # 1,312,601 x 24,576 B of full pool; the SWA pool the rest (1,050,080 x 24,576 B).
    assert (sz.kv_tokens, sz.kv_bytes) == (1312601, 1312601 * 24576)
    assert sz.pools == (("SWA", 1050080 * 24576, 1050080), ("full", 1312601 * 24576, 1312601))
    assert sz.exact_cell == (24576, 8) and sz.bytes_per_token_range == (24576, 24576)
    assert sz.budget_bytes_per_token == pytest.approx(58065248256 / 1312601)
    text = _words([finding_text(f) for f in a.ledger(a.launches[0]).findings])
    assert "24,576 bytes per token (the full sub-pool's entry_bytes, line 8)" in text
    assert "by print rounding" not in text and "rule, no KV line" not in text


def test_whatif_prices_a_token_with_both_sub_pools() -> None:
    import logmem

    w = logmem.whatif(str(UNI), mem_fraction_static=0.80).model
    assert isinstance(w, WhatIf)
    assert 44200 < w.bytes_per_token / w.kv_share < 44300
    assert w.predicted.kv_tokens < w.measured.kv_tokens


def test_the_json_marks_the_unified_buffer() -> None:
    doc = json.loads(render(read_log(str(UNI))))
    (rank,) = doc["launches"][0]["ranks"]
    (pool,) = rank["models"][0]["kv_pools"]
    assert (pool["bytes"], pool["unified_sub_pools"], pool["line"]) == (58065248256, 2, 6)
    assert not doc["launches"][0].get("unmatched_memory_lines")


def test_the_0516_wording_without_a_split_takes_the_summarys_tokens() -> None:
    """A Mamba-hybrid unified pool (full + mamba sub-pools) prints no sliding-window split:
    the full share is max_total_num_tokens x the full entry, the rest the Mamba state's."""
    lines = [
        "[2026-06-02 10:00:00] server_args=ServerArgs(model_path='m', mem_fraction_static=0.8, "
        "tp_size=1)",
        "[2026-06-02 10:00:01] Load weight begin. avail mem=78.00 GB",
        "[2026-06-02 10:00:09] Load weight end. type=Qwen3NextForCausalLM, avail mem=60.00 GB, "
        "mem usage=18.00 GB.",
        "[2026-06-02 10:00:10] [unified-memory-pool] UnifiedKVPool allocated: total_bytes=44.00 GB"
        " (=47244640256 B), 2 sub-pool(s)",
        "[2026-06-02 10:00:10] [unified-memory-pool]   sub-pool 'full': kind=MHASubPoolSpec, "
        "layer_num=12, grow=down, entry_bytes=24576, max_slots=1922360, min_slot_index=1 "
        "(slots [0,1) reserved)",
        "[2026-06-02 10:00:10] [unified-memory-pool]   sub-pool 'mamba': kind=MambaSubPoolSpec, "
        "layer_num=36, grow=up, entry_bytes=1000000, max_slots=47244, min_slot_index=1 "
        "(slots [0,1) reserved)",
        "[2026-06-02 10:00:10] Memory pool end. avail mem=15.80 GB",
        "[2026-06-02 10:00:11] max_total_num_tokens=1000000, chunked_prefill_size=8192, "
        "max_prefill_tokens=16384, max_running_requests=48, context_len=262144, "
        "available_gpu_mem=15.80 GB",
    ]
    a = read_text_log("\n".join(lines) + "\n")
    sz = a.ledger(a.launches[0]).sizing
    assert sz is not None
    assert (sz.kv_tokens, sz.kv_bytes) == (1000000, 1000000 * 24576)
    assert sz.pools == (
        ("Mamba state", 47244640256 - 1000000 * 24576, None),
        ("full", 1000000 * 24576, 1000000),
    )
