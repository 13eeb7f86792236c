"""Post-capture KV sizing of sliding-window pools (sglang 0.5.23): SWAKVPool's two reservations,
the split printed after the graphs, and the unified pool's reservation line.

SWAKVPool (srt/mem_cache/swa_memory_pool.py) reserves its pool labelled 'Full' first, then 'SWA';
after the graphs config_from_budget logs a second 'Use sliding window memory pool.' line and
kv_pool_runtime.py the split and one KV size for both pools. With --enable-unified-memory one
UnifiedKVPool buffer is reserved (unified_memory_pool.py, 0.5.22 on) and no KV line is printed.
The fixtures are built by fixtures/make_postcap_swa.py from the release's format strings.
"""

from __future__ import annotations

import json

from conftest import FIXTURES
from logmem.analysis.ledger import What
from logmem.api import read_log
from logmem.compare.whatif import WhatIf
from logmem.parse import events as ev
from logmem.report.causes import cause_name
from logmem.report.jsonout import render
from logmem.report.sentences import finding_text
from logmem.units import GIB

SWA = FIXTURES / "postcap-swa-0523-constructed.log"
UNI = FIXTURES / "postcap-unified-swa-0523-constructed.log"


def _gib(n: int | None) -> float | None:
    return None if n is None else round(n / GIB, 2)


def _led(path):  # type: ignore[no-untyped-def]
    a = read_log(str(path))
    return a, a.ledger(a.launches[0])


def test_the_reservation_of_the_full_pool_is_the_labelled_one() -> None:
    # 0.5.17-0.5.23 reserve 'Full' before 'SWA': the full pool's tokens and cell, not the SWA's.
    _, led = _led(SWA)
    sz = led.sizing
    assert sz is not None and sz.post_capture is not None
    pc = sz.post_capture
    assert (pc.reserved_tokens, pc.reserved_line, _gib(pc.reserved_bytes)) == (1312601, 6, 30.04)
    assert pc.reserved_swa is not None
    assert (_gib(pc.reserved_swa[0]), pc.reserved_swa[1:]) == (24.04, (1050080, 7))
    # 12 full layers x 8 KV heads x (64 + 64) x 2 B.
    assert sz.likely_bytes_per_token == 24576
    assert sz.kv_tokens == 1252738
    assert (pc.swa_tokens, pc.swa_line) == (1002190, 16)


def test_the_split_after_the_graphs_is_the_targets_not_a_second_model() -> None:
    a, _ = _led(SWA)
    (rank,) = a.launches[0].ranks
    # The second 'Use sliding window memory pool' line (after capture) is the target's resize.
    assert [m.role for m in rank.models] == ["target"]
    assert [p.source.line_no for p in rank.target.pools if isinstance(p, ev.SWAPlan)] == [5, 15, 16]


def test_the_swa_ledger_backs_both_pools_after_the_capture() -> None:
    _, led = _led(SWA)
    (r,) = led.ranks
    pools = r.phase("target_pools")
    assert pools is not None and _gib(pools.delta_bytes) == 0.20
    assert not {c.what for c in pools.causes} & {What.KV_POOL, What.KV_FROM_DROP}
    kv = r.phase("target_kv_after_capture")
    assert kv is not None and (_gib(kv.before_bytes), _gib(kv.after_bytes)) == (63.38, 11.80)
    (pool,) = [c for c in kv.causes if c.what is What.KV_POOL]
    assert (_gib(pool.bytes), pool.facts.tokens, pool.facts.swa_tokens) == (51.66, 1252738, 1002190)
    assert cause_name(pool) == (
        "KV pools (K+V, 1,252,738 full-layer + 1,002,190 sliding-window tokens), backed after "
        "capture"
    )
    text = " ".join(" ".join(finding_text(f) for f in led.findings).split())
    assert "1,252,738 full-layer and 1,002,190 sliding-window tokens in 51.66 GiB" in text
    assert (
        "reserved address space for 1,312,601 full-layer tokens (30.04 GiB, line 6) and 1,050,080 "
        "sliding-window tokens (24.04 GiB, line 7; not memory; the full layers' 24,566 to 24,581"
    ) in text


def test_the_unified_pools_reservation_is_read() -> None:
    a, led = _led(UNI)
    t = a.launches[0].ranks[0].target
    assert t is not None
    (res,) = t.reserved_kv_pools
    assert isinstance(res, ev.UnifiedReserved)
    assert (res.total_bytes, res.sub_pools, res.source.line_no) == (58065248256, 2, 6)
    sz = led.sizing
    assert sz is not None and sz.post_capture is not None
    pc = sz.post_capture
    assert pc.unified and pc.reserved_bytes == 58065248256
    assert (pc.reserved_tokens, pc.reserved_swa) == (1312601, (58065248256, 1050080, 5))
    # The unified buffer's bytes are not (tokens + page) cells: the sub-pool line's entry is.
    assert pc.full_entry == (24576, 8) and sz.bytes_per_token_range == (24576, 24576)
    (r,) = led.ranks
    pools = r.phase("target_pools")
    assert pools is not None and not {c.what for c in pools.causes} & {What.KV_POOL}
    kv = r.phase("target_kv_after_capture")
    assert kv is not None
    (pool,) = [c for c in kv.causes if c.what is What.KV_POOL]
    assert (_gib(pool.bytes), pool.facts.swa_tokens) == (51.52, 1000446)
    text = " ".join(" ".join(finding_text(f) for f in led.findings).split())
    assert (
        "reserved address space for one unified buffer of 1,312,601 full-layer and 1,050,080 "
        "sliding-window tokens (split at line 5; 54.08 GiB, line 6; not memory; the full "
        "sub-pool's entry_bytes: 24,576 bytes per token, line 8), sized by the KV rule"
    ) in text


def test_json_names_the_unified_reservation_and_the_split() -> None:
    doc = json.loads(render(read_log(str(UNI))))
    (rank,) = doc["launches"][0]["ranks"]
    other = rank["models"][0]["other_pools"]
    res = next(p for p in other if p["kind"] == "kv_reserved")
    assert (res["bytes"], res["tokens"], res["unified_sub_pools"], res["line"]) == (
        58065248256,
        None,
        2,
        6,
    )
    split = next(p for p in other if p["kind"] == "post_capture_split")
    assert (split["full_layer_tokens"], split["swa_layer_tokens"]) == (1250558, 1000446)
    subs = [(p["name"], p["entry_bytes"]) for p in other if p["kind"] == "unified_sub_pool"]
    assert subs == [("swa", 24576), ("full", 24576)]


OOM = FIXTURES / "postcap-resize-oom-0523-constructed.log"


def test_a_failed_backing_is_the_post_capture_sizings_oom() -> None:
    # kv_vmm_backing.py / cuda_vmm_utils.py: cuMemCreate failing raises RuntimeError with the
    # CUresult, uncaught: memory, in the resize after the graphs, not a code error.
    doc = json.loads(render(read_log(str(OOM))))
    f = doc["launches"][0]["failure"]
    assert (f["kind"], f["memory_related"], f["phase"], f["ranks"]) == (
        "oom",
        True,
        "post-capture KV sizing",
        ["TP1"],
    )
    verdict = " ".join(doc["launches"][0]["verdict"])
    assert (
        "Crashed: CUDA out of memory on TP1 after the CUDA graphs, while SGLang sized and backed "
        "the KV pool (post-capture KV sizing). Memory-related." in verdict
    )
    assert "(TP1 had 68.45 GiB at line 20), keeps P x (1 - mfs) = 78.46 x (1 - 0.978) = 1.73" in (
        verdict
    )
    assert (
        "lowering --cuda-graph-max-bs does not: in this mode memory the graphs leave goes to the "
        "KV pool, not to the headroom" in verdict
    )
    # The fix lowers mem_fraction_static: more stays outside the pool the sizing backs.
    assert [(x["flag"], x["value"]) for x in f["fixes"]] == [("--mem-fraction-static", "0.968")]


def test_the_drivers_oom_wordings_are_read() -> None:
    from logmem.parse.patterns import BY_NAME

    pat = BY_NAME["vmm_oom"].regex
    for line in (
        "RuntimeError: cuMemCreate(local): <CUresult.CUDA_ERROR_OUT_OF_MEMORY: 2>",  # 0.5.18+
        "RuntimeError: cuMemCreate failed: CUresult.CUDA_ERROR_OUT_OF_MEMORY",  # 0.5.17 _check
        "RuntimeError: cuMemCreate(local): 2",  # a stdlib IntEnum's str on Python 3.11+
    ):
        assert pat.search(line), line
    assert not pat.search(
        "RuntimeError: cuMemCreate(local): <CUresult.CUDA_ERROR_INVALID_VALUE: 1>"
    )


def test_the_unified_floor_in_the_resize_is_the_post_capture_budget() -> None:
    # unified_memory_pool.py UnifiedKVPool.finalize_backing checks the bs=1 floor on the budget
    # after the graphs: not the rule's rest (which only sized the reservation).
    head = UNI.read_bytes().decode().split("\n")[:15]  # keep tqdm's \r inside its line
    tail = [
        "[2026-11-12 17:04:08] Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/model_executor/'
        'model_runner_components/kv_pool_runtime.py", line 151, in compute_post_capture_kv_resize',
        "    pool.finalize_backing(config)",
        "RuntimeError: [unified-memory-pool] UnifiedKVPool.finalize_backing: byte budget "
        "104857600 cannot fit ONE worst-case request (bs=1 floor 3246391296 = swa_window_kv="
        "3246366720 + sink=24576). A pool this size retract-livelocks at runtime. Raise "
        "--mem-fraction-static, lower the model context length, or reduce reserved memory.",
    ]
    from conftest import read_text_log

    doc = json.loads(render(read_text_log("\n".join(head + tail) + "\n")))
    f = doc["launches"][0]["failure"]
    assert (f["phase"], f["memory_related"]) == ("post-capture KV sizing", True)
    verdict = " ".join(doc["launches"][0]["verdict"])
    assert "the rule does not explain this failure" not in verdict
    assert (
        "it is the free memory after the CUDA graphs (63.38 GiB at line 15) less P x (1 - mfs) = "
        "78.95 x (1 - 0.85) = 11.84 GiB" in verdict
    )
    assert "each 0.01 adds P x 0.01 = 0.79 GiB to the budget the pool is backed from" in verdict


K17 = FIXTURES / "postcap-kv-0517-constructed.log"


def test_whatif_moves_the_post_capture_pool_with_the_graphs() -> None:
    # kv_pool_runtime.py: budget = free after the graphs - headroom + backed pages. Max bs 128 is
    # below max_running_requests 256: SGLang then keeps its pre-capture activation reserve,
    # 512 + 8192 x 1.5 + 2 / 8 x 1024 = 13,056 MiB, instead of P x (1 - mfs) = 0.71 GiB.
    import math

    import logmem

    c = logmem.whatif(str(K17), cuda_graph_max_bs=128)
    w = c.model
    assert isinstance(w, WhatIf)
    m, p = w.measured, w.predicted
    assert (m.kv_tokens, p.largest_bs) == (807795, 128)
    g = p.graph_change_bytes
    assert g < 0  # 128 buckets take less than 256
    reserve = 13056 * (1 << 20)
    headroom = round(78.48 * GIB * (1 - 0.991))
    lost = g + reserve - headroom
    assert p.kv_tokens == 807795 - math.ceil(lost / 81920)
    # The headroom is what SGLang keeps, not the graphs' saving: 0.61 + (12.75 - 0.71).
    assert m.headroom_bytes is not None and p.headroom_bytes is not None
    assert abs(p.headroom_bytes - (m.headroom_bytes + reserve - headroom)) < 0.01 * GIB
    text = " ".join(c.render("text").split())
    assert "KV reservation by SGLang's rule (rest), GiB" in c.render("text")
    assert (
        "At max bs 128, below max_running_requests 256, SGLang warns and keeps its pre-capture "
        "activation reserve of 12.75 GiB free instead (P x (1 - mfs) is 0.71 GiB)" in text
    )
    assert "not modelled" not in text


def test_whatif_prices_a_post_capture_swa_token_with_both_pools() -> None:
    # The one KV size of the post-capture line holds the full and the SWA pool: a full-layer
    # token of the budget costs 24,576 + 0.8 x 24,576 B, not the full pool's cell alone.
    import logmem

    w = logmem.whatif(str(SWA), cuda_graph_max_bs=64).model
    assert isinstance(w, WhatIf)
    assert 44000 < w.bytes_per_token / w.kv_share < 44400
    assert [x.label for x in w.measured.pools] == ["full KV", "SWA KV"]
    m, p = w.measured, w.predicted
    lost = p.graph_change_bytes + (p.headroom_bytes or 0) - (m.headroom_bytes or 0)
    assert abs((m.kv_tokens - p.kv_tokens) - lost / (w.bytes_per_token / w.kv_share)) < 2


def test_a_0517_resize_that_fails_leaves_the_reservation_a_reservation() -> None:
    # 0.5.17 prints the reservation as 'KV Cache is allocated'; with no post-capture line, only
    # the traceback (model_runner.py post_capture_resize_kv_pool, kv_pool_runtime.py) shows the
    # mode: the 63.92 GiB line is address space, not a pool 'given back' in the pool step.
    from conftest import read_text_log

    head = K17.read_bytes().decode().split("\n")[:19]
    tail = [
        "[2026-08-19 14:03:02 TP0] Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/usr/local/lib/python3.11/dist-packages/sglang/srt/model_executor/model_runner.py'
        '", line 880, in post_capture_resize_kv_pool',
        "    resize = compute_post_capture_kv_resize(self)",
        '  File "/usr/local/lib/python3.11/dist-packages/sglang/srt/mem_cache/kv_vmm_backing.py", '
        "line 35, in _check",
        '    raise RuntimeError(f"{label} failed: {err}")',
        "RuntimeError: cuMemCreate failed: CUresult.CUDA_ERROR_OUT_OF_MEMORY",
    ]
    a = read_text_log("\n".join(head + tail) + "\n")
    led = a.ledger(a.launches[0])
    tp0 = led.rank("TP0")
    assert tp0 is not None
    pools = tp0.phase("target_pools")
    assert pools is not None and _gib(pools.delta_bytes) == 0.22
    assert not {c.what for c in pools.causes} & {What.KV_POOL, What.GIVEN_BACK}
    f = json.loads(render(a))["launches"][0]["failure"]
    assert (f["kind"], f["phase"]) == ("oom", "post-capture KV sizing")
