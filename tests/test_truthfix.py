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


# --- item 2: a launch that died loading weights gets no "left free" headroom ------------------

LOAD_OOM = """\
[2025-09-02 10:00:00] server_args=ServerArgs(model_path='meta-llama/Llama-3.1-70B-Instruct', tp_size=1, mem_fraction_static=0.88, kv_cache_dtype='auto', dtype='auto')
[2025-09-02 10:00:08] Init torch distributed begin.
[2025-09-02 10:00:09] Init torch distributed ends. mem usage=0.35 GB
[2025-09-02 10:00:09] Load weight begin. avail mem=78.84 GB
Loading safetensors checkpoint shards:  60% Completed | 18/30 [00:40<00:27,  2.25s/it]
[2025-09-02 10:00:52] Scheduler hit an exception: Traceback (most recent call last):
  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 2533, in run_scheduler_process
    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, moe_ep_rank, pp_rank, dp_rank)
  File "/sgl-workspace/sglang/python/sglang/srt/model_executor/model_runner.py", line 712, in load_model
    self.model = get_model(
  File "/sgl-workspace/sglang/python/sglang/srt/model_loader/loader.py", line 470, in load_model
    model.load_weights(self._get_all_weights(model_config, model))
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 448.00 MiB. GPU 0 has a total capacity of 79.19 GiB of which 301.44 MiB is free. Process 2211 has 78.88 GiB memory in use. Of the allocated memory 78.27 GiB is allocated by PyTorch, and 103.52 MiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.

[2025-09-02 10:00:52] Received sigquit from a child process. It usually means the child failed.
"""


def _text(path: Path) -> str:
    return " ".join(render(read_log(str(path)), "text").split())


def test_a_crash_while_loading_gets_no_left_free_headroom(tmp_path: Path) -> None:
    """Init ends at 78.84 GiB free (line 4), the load dies with 0.29 GiB free of 79.19: the
    last reading is not what start-up left, and 78.84 - 0.29 + 0.44 = 78.98 GiB is more than
    was free before loading but less than the whole 79.19 GiB GPU."""
    text = _text(_write(tmp_path, LOAD_OOM))
    assert "left free" not in text and "first requests" not in text
    assert (
        "78.84 GiB was free on the GPU at the end of distributed init, the last reading SGLang "
        "printed before the crash (start-up did not finish)." in text
    )
    assert "Crashed: CUDA out of memory on the GPU while loading the weights" in text
    assert "0.44 GiB was asked for with 0.29 GiB free: 0.14 GiB short." in text
    assert "--mem-fraction-static does not help here" in text
    assert "--mem-fraction-static 0" not in text  # no mfs fix for a load OOM
    assert (
        "needed at least 78.84 - 0.29 + 0.44 = 78.98 GiB while loading, more than the 78.84 GiB "
        "free before loading (the GPU has 79.19 GiB)" in text
    )
    assert "whole GPU" not in text


def test_a_log_that_stops_mid_start_up_says_so(tmp_path: Path) -> None:
    """The same start-up cut after Load weight begin (no error): the last reading, not headroom."""
    cut = "\n".join(LOAD_OOM.splitlines()[:5]) + "\n"
    text = _text(_write(tmp_path, cut))
    assert "left free" not in text
    assert "78.84 GiB was free on the GPU at the end of distributed init, the last reading " in text
    assert "before the log stops (start-up had not finished)" in text
