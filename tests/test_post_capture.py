"""Post-capture KV sizing (sglang 0.5.17-0.5.23) and the weight commit after capture (0.5.18 on).

With SGLANG_ENABLE_POST_CAPTURE_KV_SIZING the KV pool is only reserved as address space before
the graphs and backed after them (kv_pool_runtime.py compute_post_capture_kv_resize): the ledger
must put the pool's drop in the step from the capture's end to the post-capture line, keep the
graphs' cost and the pool step free of it, and take #tokens from the post-capture line. The
fixtures are built by fixtures/make_postcap.py from the releases' format strings.
"""

from __future__ import annotations

import json

import logmem.analysis.findings as fd
from conftest import FIXTURES, read_text_log
from logmem.analysis.ledger import What
from logmem.api import read_log
from logmem.report.causes import cause_name, phase_name
from logmem.report.jsonout import render
from logmem.report.sentences import finding_text
from logmem.sglang.default_mfs import Rule
from logmem.units import GIB

K17 = FIXTURES / "postcap-kv-0517-constructed.log"
O23 = FIXTURES / "postcap-overlap-0523-constructed.log"


def _gib(n: int | None) -> float | None:
    return None if n is None else round(n / GIB, 2)


def _led(path):  # type: ignore[no-untyped-def]
    a = read_log(str(path))
    return a, a.ledger(a.launches[0])


def test_the_kv_pool_drop_is_the_step_after_the_capture() -> None:
    _, led = _led(K17)
    tp0 = led.rank("TP0")
    assert tp0 is not None
    keys = [p.key for p in tp0.phases]
    assert keys == [
        "init",
        "target_weights",
        "target_pools",
        "pre_capture:target decode",
        "capture:target decode",
        "target_kv_after_capture",
        "post_capture",
    ]
    kv = tp0.phase("target_kv_after_capture")
    assert kv is not None
    # From the capture's end (line 19, 62.18) to the post-capture line (line 22, 0.62).
    assert kv.lines == (19, 22)
    assert (_gib(kv.before_bytes), _gib(kv.after_bytes)) == (62.18, 0.62)
    pool = next(c for c in kv.causes if c.what is What.KV_POOL)
    assert (pool.kind, pool.lines, _gib(pool.bytes), pool.facts.tokens) == (
        "logged",
        (22,),
        61.72,
        807795,
    )
    assert cause_name(pool) == "KV pool (K+V, 807,795 tokens), backed after capture"
    # The pages the reservation backed before the graphs are in KV size: a negative remainder,
    # neither memory "given back" nor a consumer.
    rest = [c for c in kv.causes if c.kind == "unattributed"]
    assert [(c.what, c.facts.after_capture) for c in rest] == [(What.UNATTRIBUTED, True)]
    assert _gib(rest[0].bytes) == -0.16
    assert cause_name(rest[0]) == (
        "unattributed: KV size also counts the pages backed before capture"
    )


def test_the_pool_step_before_the_graphs_holds_no_kv_pool() -> None:
    _, led = _led(K17)
    tp0 = led.rank("TP0")
    assert tp0 is not None
    pools = tp0.phase("target_pools")
    assert pools is not None
    assert _gib(pools.delta_bytes) == 0.22
    whats = {c.what for c in pools.causes}
    # 0.5.17 printed the reservation as 'KV Cache is allocated ... K size: 31.96 GB': 63.92 GiB of
    # address space, not a cause of a 0.22 GiB drop (nor a KV cache derived from the drop).
    assert not whats & {What.KV_POOL, What.KV_FROM_CELL, What.KV_FROM_RULE, What.KV_FROM_DROP}
    assert whats <= {What.REQ_TABLE, What.SMALL_POOLS, What.ROUNDING}
    assert phase_name(pools) == "other pools (KV pool reserved, backed after capture)"


def test_the_graphs_cost_neither_absorbs_nor_misses_the_pool() -> None:
    _, led = _led(K17)
    for label in ("TP0", "TP1"):
        r = led.rank(label)
        assert r is not None
        cap = r.phase("capture:target decode")
        assert cap is not None
        assert _gib(cap.delta_bytes) == 2.04  # the end line's mem usage=2.04 GB
        assert sum(c.bytes for c in cap.causes if c.what is What.KV_POOL) == 0


def test_sizing_takes_tokens_and_cell_from_the_right_lines() -> None:
    _, led = _led(K17)
    sz = led.sizing
    assert sz is not None and sz.post_capture is not None
    assert sz.kv_tokens == 807795  # the post-capture line, not the reservation's 837,729
    assert sz.post_capture.reserved_tokens == 837729
    # The reservation's tensors span its tokens' cells exactly: 81,920 B per token (40 layers x 4
    # KV heads x 128 x 2 x 2 B); the backed KV size is rounded up to whole pages per buffer.
    assert sz.likely_bytes_per_token == 81920
    pc = sz.post_capture
    assert (pc.rank, pc.line, pc.before_line) == ("TP0", 22, 19)
    assert _gib(pc.headroom_bytes) == 0.71  # 78.48 x (1 - 0.991)
    assert _gib(pc.avail_bytes) == 0.62
    assert led.context is not None and led.context.kv_tokens == 807795


def test_the_finding_is_the_post_capture_sizing_not_the_rule() -> None:
    _, led = _led(K17)
    kinds = [type(f) for f in led.findings]
    assert fd.PostCaptureKVBudget in kinds
    assert fd.KVBudget not in kinds and fd.PoolsVsBudget not in kinds
    text = " ".join(finding_text(f) for f in led.findings)
    assert "a cap held the pool below the budget" not in text
    assert (
        "SGLang backed the KV pool after the CUDA graphs, 807,795 tokens in 61.72 GiB on TP0 "
        "(line 22), sized from the free memory after the capture (62.18 GiB at line 19) less a "
        "headroom of P x (1 - mfs) = 78.48 x (1 - 0.991) = 0.71 GiB; 0.62 GiB stayed free"
    ) in text
    assert (
        "Before the graphs it only reserved address space for 837,729 tokens (63.92 GiB, line 10, "
        "printed as 'KV Cache is allocated'; not memory"
    ) in text
    assert "sized by the KV rule: 64.62 - 78.48 x (1 - 0.991) = 63.91 GiB." in text


def test_the_default_mfs_is_the_post_capture_reserve() -> None:
    _, led = _led(K17)
    d = led.default_mfs
    assert d is not None
    # sglang 0.5.17 server_args.py: 512 + 2 / 8 x 1024 = 768 MiB, no graph terms: an H100's
    # 81,559 MiB gives round((81559 - 768) / 81559, 3) = 0.991, the dump's value.
    assert d.rule is Rule.POST_CAPTURE and d.reserved_mib == 768
    assert d.formula_windows and any(a <= 81559 <= b for a, b in d.formula_windows)
    assert led.reserve is None  # no graph reserve was set aside


def test_json_marks_the_backed_pool_and_the_reservation() -> None:
    a = read_log(str(K17))
    doc = json.loads(render(a))
    L = doc["launches"][0]
    tp0 = next(r for r in L["ranks"] if r["rank"] == "TP0")
    model = tp0["models"][0]
    (pool,) = model["kv_pools"]
    assert (pool["tokens"], pool["kv_gib"], pool["line"]) == (807795, 61.72, 22)
    assert (pool["allocated"], pool["avail_gib"]) == ("after_capture", 0.62)
    (res,) = [p for p in model["other_pools"] if p["kind"] == "kv_reserved"]
    assert (res["tokens"], res["k_gib"], res["line"]) == (837729, 31.96, 10)
    pc = L["sizing"]["post_capture"]
    assert (pc["tokens"], pc["headroom_gib"], pc["reserved_tokens"]) == (807795, 0.71, 837729)
    assert L["max_total_num_tokens"] == 807795
    phases = [p["key"] for p in tp0["phases"]]
    assert "target_kv_after_capture" in phases


def test_the_overlap_load_and_the_commit_after_capture() -> None:
    _, led = _led(O23)
    tp0 = led.rank("TP0")
    assert tp0 is not None
    keys = [p.key for p in tp0.phases]
    assert keys == [
        "init",
        "target_weights_and_pools",
        "pre_capture:target decode",
        "capture:target decode",
        "target_kv_after_capture",
        "post_capture",
    ]
    # The weights' storage is allocated before the graphs (loader.py
    # initialize_model_for_startup): its drop is in the step before them, with the pools.
    step = tp0.phase("target_weights_and_pools")
    assert step is not None and _gib(step.delta_bytes) == 7.97
    assert not {c.what for c in step.causes} & {What.KV_FROM_DROP, What.KV_FROM_RULE}
    assert "real weights committed after capture" in phase_name(step)
    warm = tp0.phase("post_capture")
    assert warm is not None and phase_name(warm) == "after capture (warm-up, weight commit)"
    kv = tp0.phase("target_kv_after_capture")
    assert kv is not None and _gib(kv.delta_bytes) == 66.82
    texts = [finding_text(f) for f in led.findings]
    assert any("--startup-weight-load-mode overlap" in t and "line 25, 5.31 s" in t for t in texts)
    # No Load weight end reading, so no rule Sizing; the post-capture finding needs only P.
    assert led.sizing is None
    assert any(
        "974,076 tokens in 66.94 GiB on TP0 (line 22)" in t
        and "78.46 x (1 - 0.978) = 1.73 GiB" in t
        for t in texts
    )


def test_commit_line_is_read_not_unmatched() -> None:
    a = read_log(str(O23))
    L = a.launches[0]
    tp0 = next(r for r in L.ranks if r.label == "TP0")
    assert tp0.target is not None and tp0.target.committed is not None
    assert tp0.target.committed.commit_s == 5.31
    doc = json.loads(render(a))
    m = next(r for r in doc["launches"][0]["ranks"] if r["rank"] == "TP0")["models"][0]
    assert m["weights"]["committed_after_capture"]["line"] == 25


_HEAD = (
    "[2026-10-20 10:00:00] server_args={'model_path': 'x/dflash', 'tp_size': 1, "
    "'mem_fraction_static': 0.9, 'speculative_algorithm': 'DFLASH'}\n"
    "[2026-10-20 10:00:01] Load weight begin. avail mem=78.00 GB\n"
    "[2026-10-20 10:00:02] Load weight end. elapsed=1.00 s, type=Qwen3ForCausalLM, "
    "avail mem=62.00 GB, mem usage=16.00 GB.\n"
    "[2026-10-20 10:00:03] KV Cache VA upper bound. dtype: torch.bfloat16, #tokens: 400000, "
    "K size: 27.47 GB, V size: 27.47 GB\n"
    "[2026-10-20 10:00:03] Memory pool end. avail mem=61.80 GB\n"
    "[2026-10-20 10:00:04] Capture target decode CUDA graph begin. backend=full, "
    "num_tokens_per_req=1, avail mem=61.70 GB\n"
)


def test_a_draft_pool_backed_with_the_target_is_in_the_same_step() -> None:
    # sglang 0.5.22-0.5.23 kv_pool_runtime.py: every pool is finalized, then the target's line
    # (with avail mem) and the draft's (without) are logged.
    a = read_text_log(
        _HEAD
        + "[2026-10-20 10:00:09] Capture target decode CUDA graph end. bs=[1, 2], elapsed=5.00 s, "
        "mem usage=1.70 GB, avail mem=60.00 GB.\n"
        "[2026-10-20 10:00:10] Post-capture KV sizing: KV cache allocated. dtype: torch.bfloat16, "
        "#tokens: 300000, KV size: 41.20 GB, avail mem=14.50 GB\n"
        "[2026-10-20 10:00:10] Post-capture KV sizing: draft KV cache allocated. dtype: "
        "torch.bfloat16, #tokens: 300000, KV size: 4.12 GB\n"
        "[2026-10-20 10:00:11] max_total_num_tokens=300000, chunked_prefill_size=8192, "
        "max_prefill_tokens=16384, max_running_requests=64, context_len=40960, "
        "available_gpu_mem=14.40 GB\n"
    )
    led = a.ledger(a.launches[0])
    (r,) = led.ranks
    kv = r.phase("target_kv_after_capture")
    assert kv is not None and _gib(kv.delta_bytes) == 45.50
    pools = [c for c in kv.causes if c.what is What.KV_POOL]
    assert [(_gib(c.bytes), c.facts.draft) for c in pools] == [(41.20, False), (4.12, True)]
    assert "draft KV pool" in cause_name(pools[1])
    warm = r.phase("post_capture")
    assert warm is not None and not any(c.what is What.KV_POOL for c in warm.causes)


def test_a_crash_in_capture_after_a_reservation_derives_no_kv_cache() -> None:
    # The pool is only reserved: a capture that fails leaves no KV cache to derive from the drop.
    a = read_text_log(
        _HEAD
        + "[2026-10-20 10:00:06] Capturing batches (bs=2 avail_mem=61.60 GB):   0%|          | "
        "0/2 [00:00<?, ?it/s]\n"
    )
    led = a.ledger(a.launches[0])
    (r,) = led.ranks
    pools = r.phase("target_pools")
    assert pools is not None
    assert not {c.what for c in pools.causes} & {
        What.KV_POOL,
        What.KV_FROM_CELL,
        What.KV_FROM_RULE,
        What.KV_FROM_DROP,
    }
    assert phase_name(pools) == "other pools (KV pool reserved, backed after capture)"


def test_post_capture_reserve_forms_by_release() -> None:
    from datetime import date

    from logmem.sglang.default_mfs import default_mfs

    args = {"tp_size": 2, "pp_size": 1, "mem_fraction_static": 0.978, "chunked_prefill_size": 8192}
    # 0.5.18 on (srt/server_args.py, then arg_groups/memory_hook.py): 1536 + 2 / 8 x 1024 MiB.
    d = default_mfs(args, date(2026, 11, 4), None, 81559.0, post_capture=True)
    assert (d.rule, d.reserved_mib, d.predicted, d.matches) == (
        Rule.POST_CAPTURE,
        1792,
        0.978,
        True,
    )
    assert d.form == "0.5.18-0.5.23" and d.reserve_terms == () and not d.reserve_applies
    # 0.5.16-0.5.17: 512 + 256 MiB; a dump of 0.991 on the same GPU picks that form.
    d = default_mfs(
        {**args, "mem_fraction_static": 0.991}, date(2026, 8, 19), None, 81559.0, post_capture=True
    )
    assert (d.reserved_mib, d.predicted, d.form) == (768, 0.991, "0.5.16-0.5.17")
    # Without the mode the same dump is held to the reserve formula, which never gives it.
    d = default_mfs({**args, "mem_fraction_static": 0.991}, date(2026, 8, 19), None, 81559.0)
    assert d.rule is Rule.RESERVE and d.matches is not True


def test_whatif_says_the_pool_was_sized_after_the_graphs() -> None:
    import logmem

    w = logmem.whatif(str(K17), cuda_graph_max_bs=512)
    text = w.render("text")
    # The pool is not the pre-capture rule's: no "sizes KV differently" guess, but the sizing
    # that ran.
    assert "this version sizes KV differently" not in text
    flat = " ".join(text.split())
    assert (
        "Post-capture KV sizing (line 22): SGLang sized the KV pool after the CUDA graphs" in flat
    )
    # Graph changes move the pool, not the headroom (tests/test_post_capture_swa.py prices them).
    assert "the predictions do so (the pool gives up what the graphs take)" in flat


def test_a_raised_headroom_is_explained_by_the_warning() -> None:
    # kv_pool_runtime.py: decode max bs below max_running_requests raises the headroom to the
    # pre-capture activation reserve (a warning says so), and a smaller pool caps the requests.
    a = read_text_log(
        _HEAD
        + "[2026-10-20 10:00:09] Capture target decode CUDA graph end. bs=[1, 2], elapsed=5.00 s, "
        "mem usage=1.70 GB, avail mem=60.00 GB.\n"
        "[2026-10-20 10:00:10] Post-capture KV sizing: decode CUDA graph max_bs=2 < "
        "max_running_requests=256; reserving activation headroom\n"
        "[2026-10-20 10:00:10] Post-capture KV sizing: max_running_requests 256 -> 200\n"
        "[2026-10-20 10:00:10] Post-capture KV sizing: KV cache allocated. dtype: torch.bfloat16, "
        "#tokens: 300000, KV size: 41.20 GB, avail mem=18.90 GB\n"
        "[2026-10-20 10:00:11] max_total_num_tokens=300000, chunked_prefill_size=8192, "
        "max_prefill_tokens=16384, max_running_requests=200, context_len=40960, "
        "available_gpu_mem=18.80 GB\n"
    )
    led = a.ledger(a.launches[0])
    flat = " ".join(" ".join(finding_text(f) for f in led.findings).split())
    assert (
        "78.00 x (1 - 0.9) = 7.80 GiB; 18.90 GiB stayed free (more than that headroom: SGLang "
        in flat
    )
    assert (
        "warned at line 8 that the decode graph's max bs 2 is below max_running_requests 256"
        in flat
    )
    assert "it lowered max_running_requests 256 -> 200 for that pool (line 9)" in flat
