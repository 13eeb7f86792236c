"""Lines as released SGLang versions print them, built from the format strings of the wheels on
PyPI (docs/log-lines-by-version.md has the table): each must become the event with the figures
it prints. Every case failed before the patterns were checked against the source (round 25)."""

from __future__ import annotations

from pathlib import Path

import pytest

from logmem.api import read_log
from logmem.parse import events as ev
from logmem.parse.lines import split_records
from logmem.parse.match import match_record
from logmem.parse.read import Segment
from logmem.units import GIB


def event(line: str) -> ev.Event:
    *_, record = split_records(Segment("t.log", 3, line.encode()))
    hit = match_record(record)
    assert hit is not None, f"no pattern matches {line!r}"
    return hit[1]


def test_memory_baseline_is_the_init_end_of_0_5_21_on() -> None:
    # sglang 0.5.21-0.5.23, srt/distributed/bootstrap.py, init_torch_distributed:
    # f"Memory baseline taken. mem usage={(before_avail_memory - local_gpu_memory):.2f} GB"
    e = event("[2026-11-02 10:00:01 TP1] Memory baseline taken. mem usage=1.77 GB")
    assert isinstance(e, ev.InitEnd)
    assert e.usage.gib == 1.77
    assert e.elapsed_s is None


def test_labelled_kv_pool_of_0_5_17_on() -> None:
    # sglang 0.5.23, srt/mem_cache/memory_pool.py, _finalize_allocation_log:
    # f"{cache_name} is allocated. dtype: ..., #tokens: N, KV size: X GB" with
    # cache_name = f"{self.allocation_label} KV Cache" (minimax_m3_nvfp4_pool.py labels).
    e = event(
        "[2026-11-02 10:00:09 TP0] MiniMax MSA-v1 main NVFP4 KV Cache is allocated. "
        "dtype: torch.uint8, #tokens: 600000, KV size: 3.21 GB"
    )
    assert isinstance(e, ev.KVPool)
    assert (e.tokens, e.kv.gib, e.dtype) == (600000, 3.21, "torch.uint8")


def test_va_upper_bound_is_a_reservation_not_an_allocation() -> None:
    # sglang 0.5.18-0.5.23, srt/mem_cache/memory_pool.py _finalize_allocation_log
    # (post_capture_active): address space for #tokens, kept with the pools, never memory.
    e = event(
        "[2026-11-02 10:00:09 TP0] KV Cache VA upper bound. dtype: torch.bfloat16, "
        "#tokens: 925624, K size: 21.19 GB, V size: 21.19 GB"
    )
    assert isinstance(e, ev.KVReserved)
    assert (e.tokens, e.dtype) == (925624, "torch.bfloat16")
    assert abs(e.total_bytes - 42.38 * GIB) < 1024


def test_post_capture_kv_line_is_the_backed_pool() -> None:
    # srt/model_executor/model_runner_components/kv_pool_runtime.py
    # compute_post_capture_kv_resize (0.5.17-0.5.23); the draft's line from 0.5.22
    e = event(
        "[2026-11-02 10:00:09 TP0] Post-capture KV sizing: KV cache allocated. dtype: "
        "torch.bfloat16, #tokens: 400000, KV size: 18.31 GB, avail mem=3.20 GB"
    )
    assert isinstance(e, ev.PostCaptureKV)
    assert (e.tokens, e.draft) == (400000, False)
    assert e.avail is not None and abs(e.avail.bytes - 3.20 * GIB) < 1024
    assert abs(e.total_bytes - 18.31 * GIB) < 1024
    d = event(
        "[2026-11-02 10:00:09 TP0] Post-capture KV sizing: draft KV cache allocated. dtype: "
        "torch.bfloat16, #tokens: 400000, KV size: 1.53 GB"
    )
    assert isinstance(d, ev.PostCaptureKV) and d.draft and d.avail is None


def test_swa_va_upper_bound_is_a_figure() -> None:
    # srt/mem_cache/swa_memory_pool.py (0.5.18-0.5.23): the two pools' reserved sum
    e = event(
        "[2026-11-02 10:00:09 TP0] SWAKVPool VA upper bound: 12.50 GB, swa size: 100, full size: 200"
    )
    assert isinstance(e, ev.MiscMemory)
    assert e.what == "kv_not_allocated"
    assert abs(e.amount.bytes - 12.5 * GIB) < 1024


def test_weight_commit_after_capture() -> None:
    # srt/model_executor/model_runner_components/startup_weight_load.py finalize (0.5.18 on)
    e = event(
        "[2026-11-02 10:00:09 TP0] Load weight end. Committed real weights after CUDA graph "
        "capture in 6.42 s (capture overlap window 9.87 s, startup overlap total 31.05 s)"
    )
    assert isinstance(e, ev.WeightsCommitted)
    assert (e.commit_s, e.window_s, e.total_s) == (6.42, 9.87, 31.05)


def test_swa_summary_with_an_unformatted_float() -> None:
    # sglang 0.5.4-0.5.6, srt/mem_cache/memory_pool.py, SWAKVPool:
    # f"SWAKVPool mem usage: {self.mem_usage} GB, swa size: ..., full size: ..."
    e = event(
        "[2025-11-20 10:00:09 TP0] SWAKVPool mem usage: 2.6400000000000001 GB, "
        "swa size: 49135, full size: 61419"
    )
    assert isinstance(e, ev.SWASummary)
    assert e.usage.bytes == round(2.64 * GIB)
    assert (e.swa_size, e.full_size) == (49135, 61419)


def test_mamba_pool_of_0_5_3_without_its_size() -> None:
    # sglang 0.5.2-0.5.3, srt/mem_cache/memory_pool.py, MambaPool: no max_mamba_cache_size field.
    e = event(
        "[2025-10-01 10:00:09 TP0] Mamba Cache is allocated. conv_state size: 0.10GB, "
        "ssm_state size: 4.38GB "
    )
    assert isinstance(e, ev.MambaPool)
    assert e.max_size is None
    assert (e.conv.gib, e.ssm.gib) == (0.1, 4.38)


@pytest.mark.parametrize(
    "line",
    [
        # sglang 0.5.12-0.5.14, srt/model_executor/pool_configurator.py
        "DSV4 memory calculation: bytes_per_full_token=176983.05, available_bytes=87.26 GB, "
        "full_token=529408",
        # sglang 0.5.21-0.5.23, same file
        "DSV4 memory calculation: unified=False, unified_fp8=False, dspark_draft_bf16=False, "
        "bytes_per_full_token=176983.05, available_bytes=87.26 GB, c128_state_fixed=0.50 GB, "
        "c2_state_fixed=0.00 GB, swa_fixed=1.20 GB, swa_ring_fixed=0.00 GB, "
        "c4_state_fixed=0.10 GB, full_token=529408",
    ],
)
def test_dsv4_plan_as_every_version_spells_it(line: str) -> None:
    e = event(f"[2026-06-01 10:00:09 TP0] {line}")
    assert isinstance(e, ev.DSv4Plan)
    assert (e.bytes_per_token, e.avail.gib, e.tokens) == (176983.05, 87.26, 529408)


@pytest.mark.parametrize(
    "line, name, step",
    [
        # sglang 0.5.8-0.5.12, srt/speculative/multi_layer_eagle_draft_extend_cuda_graph_runner.py
        (
            "Capture draft extend cuda graph begin (step 1). This can take up to several "
            "minutes. avail mem=20.00 GB",
            "draft extend",
            1,
        ),
        # sglang 0.5.16-0.5.23, same file
        (
            "Capture single-CG draft extend begin. This can take several minutes. "
            "avail mem=20.00 GB",
            "single-CG draft extend",
            None,
        ),
        # sglang 0.5.20-0.5.23, srt/speculative/uno_worker_v2.py
        (
            "Capture UNO tree draft CUDA graph begin. num_tokens_per_req=8, avail mem=20.00 GB",
            "UNO tree draft",
            None,
        ),
    ],
)
def test_draft_capture_begin_lines(line: str, name: str, step: int | None) -> None:
    e = event(f"[2026-06-01 10:00:09 TP0] {line}")
    assert isinstance(e, ev.CaptureBegin)
    assert (e.name, e.step, e.avail.gib) == (name, step, 20.0)


def test_single_cg_draft_extend_end() -> None:
    e = event(
        "[2026-06-01 10:00:19 TP0] Capture single-CG draft extend end. elapsed=3.10 s, "
        "mem usage=0.21 GB, avail mem=19.79 GB."
    )
    assert isinstance(e, ev.CaptureEnd)
    assert (e.name, e.usage.gib, e.avail.gib, e.elapsed_s) == (
        "single-CG draft extend",
        0.21,
        19.79,
        3.1,
    )


def test_prefill_shape_bar_of_0_5_21_on() -> None:
    # sglang 0.5.21-0.5.23, srt/model_executor/runner/prefill_cuda_graph_runner.py:
    # f"Capturing prefill shape ({num_tokens=} {avail_mem=:.2f} GB)"
    e = event("Capturing prefill shape (num_tokens=8192 avail_mem=12.59 GB):   0%|    | 0/58 [")
    assert isinstance(e, ev.BarRender)
    assert (e.size, e.avail.gib, e.total) == (8192, 12.59, 58)


def test_imbalance_of_0_4_5_to_0_5_8_names_the_minimum_min_per_gpu_memory() -> None:
    # sglang 0.4.4-0.5.8, srt/model_executor/model_runner.py, init_torch_distributed
    e = event(
        "[2025-06-01 10:00:01 TP3] The memory capacity is unbalanced. Some GPUs may be occupied "
        "by other processes. min_per_gpu_memory=70.1234130859375, local_gpu_memory=78.5, "
        "local_gpu_memory * 0.9=70.65"
    )
    assert isinstance(e, ev.Imbalance)
    assert (e.pre_model_load_gib, e.local_gib) == (70.1234130859375, 78.5)


@pytest.mark.parametrize(
    "line, gb",
    [
        # sglang 0.5.18-0.5.23, srt/mem_cache/pool_host/base.py (decimal GB, /1e9)
        ("Allocating MHA hierarchical KV host pool: 1000000 tokens, 100.00 GB host memory.", 100),
        # sglang 0.5.23, srt/mem_cache/pool_host/mamba.py
        ("Allocating 8.00 GB host memory for hierarchical Mamba cache (64 state slots, "
         "layout=layer_first).", 8),
    ],
)  # fmt: skip
def test_hicache_host_pool_lines(line: str, gb: int) -> None:
    e = event(f"[2026-06-01 10:00:09 TP0] {line}")
    assert isinstance(e, ev.MiscMemory)
    assert e.what == "hicache_host"
    assert e.amount.bytes == gb * 10**9


@pytest.mark.parametrize(
    "line",
    [
        # sglang 0.5.14-0.5.23, srt/model_executor/model_runner_components/cuda_graph_setup.py
        "Disable prefill CUDA graph for EAGLE target on tc_piecewise to avoid FP4/MoE "
        "decode-replay corruption (#28386).",
        "Disable prefill CUDA graph capture because no configured capture size fits "
        "backend=breakable with max_capture_tokens=16 (max_capture_requests=4, "
        "context_length=4096, request-pool size=8).",
    ],
)
def test_prefill_graph_disabled_lines(line: str) -> None:
    e = event(f"[2026-06-01 10:00:09 TP0] {line}")
    assert isinstance(e, ev.GraphDisabled)
    assert e.which == "prefill"


# A constructed start-up as sglang 0.5.23 prints it (one GPU, no rank tag), each line from
# its format string: no 'Init torch distributed begin.', 'Memory baseline taken.', the decode
# list in the capture end line (srt/model_executor/model_runner_components/cuda_graph_setup.py).
LOG_0_5_23 = """\
[2026-11-02 10:00:00] server_args=ServerArgs(model_path='Qwen/Qwen3-8B', tp_size=1, mem_fraction_static=0.85)
[2026-11-02 10:00:05] Memory baseline taken. mem usage=0.09 GB
[2026-11-02 10:00:05] Load weight begin. avail mem=78.50 GB
[2026-11-02 10:00:09] Load weight end. elapsed=4.10 s, type=Qwen3ForCausalLM, avail mem=63.10 GB, mem usage=15.40 GB.
[2026-11-02 10:00:09] KV Cache is allocated. dtype: torch.bfloat16, #tokens: 380000, K size: 26.09 GB, V size: 26.09 GB
[2026-11-02 10:00:09] Memory pool end. avail mem=10.80 GB
[2026-11-02 10:00:10] Capture target decode CUDA graph begin. backend=full, num_tokens_per_req=1, avail mem=10.20 GB
[2026-11-02 10:00:20] Capture target decode CUDA graph end. bs=[1, 2, 4, 8], elapsed=10.00 s, mem usage=0.30 GB, avail mem=9.90 GB.
[2026-11-02 10:00:21] max_total_num_tokens=380000, chunked_prefill_size=8192, max_prefill_tokens=16384, max_running_requests=2048, context_len=40960, available_gpu_mem=9.90 GB
"""


def test_a_0_5_23_startup_has_its_init_usage_and_decode_sizes(tmp_path: Path) -> None:
    p = tmp_path / "sglang-0.5.23.log"
    p.write_text(LOG_0_5_23)
    (launch,) = read_log(str(p)).launches
    (rank,) = launch.ranks
    inits = [e for e in rank.events if isinstance(e, ev.InitEnd)]
    assert [e.usage.gib for e in inits] == [0.09]
    (graph,) = rank.graphs
    assert graph.sizes == (1, 2, 4, 8)
    assert graph.sizes_source == "end line"


def test_swa_plan_with_a_capital_s() -> None:
    # sglang 0.4.10-0.5.6, srt/model_executor/model_runner.py:
    # f"Use Sliding window memory pool. full_layer_tokens=..., swa_layer_tokens=..."
    e = event(
        "[2025-10-01 10:00:09 TP0] Use Sliding window memory pool. full_layer_tokens=61419, "
        "swa_layer_tokens=49135"
    )
    assert isinstance(e, ev.SWAPlan)
    assert (e.full_tokens, e.swa_tokens) == (61419, 49135)


def test_decode_batch_with_its_iteration() -> None:
    # sglang 0.5.23, srt/managers/scheduler_components/metrics_reporter.py:
    # f"Decode batch{iter_msg}, #running-req: ..." with iter_msg = f" [{batch_iter}]"
    e = event("[2026-11-02 10:01:00] Decode batch [120], #running-req: 1, #token: 52")
    assert isinstance(e, ev.Serving)
    assert e.kind == "decode"


def test_uninitialized_weights_printed_as_a_set() -> None:
    # sglang 0.5.23, srt/models/deepseek_v4.py: f"...from checkpoints: {unloaded_params}", a set
    e = event(
        "[2026-11-02 10:00:08 TP0] Some weights are not initialized from checkpoints: "
        "{'model.layers.3.mlp.gate.e_score_correction_bias', 'model.layers.4.mlp.gate.e_score_"
        "correction_bias'}"
    )
    assert isinstance(e, ev.WeightsUninitialized)
    assert (e.names, e.layers, e.complete) == (2, 2, True)


@pytest.mark.parametrize(
    "line",
    [
        # sglang 0.2.15-0.3.6, srt/model_executor/model_runner.py
        "Update weights begin. avail mem=12.00 GB",
        # sglang 0.5.1-0.5.23, srt/lora/lora_manager.py
        "LoRA adapter unloading completes: my-lora. avail mem=12.00 GB",
    ],
)
def test_runtime_readings_of_other_versions(line: str) -> None:
    e = event(f"[2024-09-01 10:00:09 TP0] {line}")
    assert isinstance(e, ev.MiscMemory)
    assert (e.what, e.amount.gib) == ("runtime_reading", 12.0)


def test_eras_follow_the_releases() -> None:
    from datetime import date

    from logmem.sglang.eras import ERAS, EraGuess, era_of

    # sglang 0.4.4-0.4.6 print the capture end line avail-first, 0.4.6.post5-0.5.13 usage-first.
    assert era_of({"capture end fields": "avail, usage (E2)"}) is ERAS["E2"]
    assert era_of({"capture end fields": "usage, avail (E3-E6)"}) is ERAS["E3-E4"]
    # sglang 0.5.14 (2026-06-26) first printed the E7 capture names; 0.5.8 (2026-01-23) was
    # the last release without elapsed=.
    assert EraGuess(ERAS["E7"], date(2026, 7, 2)).fits_date is True
    assert EraGuess(ERAS["E3-E4"], date(2026, 1, 28)).fits_date is True


@pytest.mark.parametrize(
    "line, kind",
    [
        # sglang 0.5.2-0.5.23, srt/model_executor/cpu_graph_runner.py
        ("Capture cpu graph bs [1, 2, 4]", ev.CaptureSizes),
        ("Exception: Capture CPU graph failed: out of memory", ev.CaptureFailed),
        # sglang 0.5.14-0.5.23, srt/model_executor/runner/prefill_cuda_graph_runner.py
        ("RuntimeError: Capture prefill CUDA graph failed: CUDA out of memory.", ev.CaptureFailed),
        # sglang 0.5.16-0.5.23, srt/speculative/multi_layer_eagle_draft_extend_cuda_graph_runner.py
        ("Exception: Capture single-CG draft extend failed: boom", ev.CaptureFailed),
        # sglang 0.4.0-0.5.9, srt/distributed/device_communicators/custom_all_reduce.py
        (
            "Custom allreduce is disabled due to an unsupported world size: 3. Supported world "
            "sizes: [2, 4, 6, 8]. To silence this warning, specify disable_custom_all_reduce=True "
            "explicitly.",
            ev.CustomAllReduce,
        ),
        # sglang 0.5.7-0.5.9, srt/model_executor/model_runner.py
        ("Disable piecewise CUDA graph due to existing compilation errors", ev.GraphDisabled),
    ],
)
def test_other_capture_and_custom_ar_wordings(line: str, kind: type[ev.Event]) -> None:
    assert isinstance(event(f"[2026-01-01 00:00:00 TP0] {line}"), kind)


@pytest.mark.parametrize(
    "line",
    [
        # sglang 0.2.9-0.3.3, srt/managers/tp_worker.py / scheduler.py (idle KV leak check)
        "Warning: available_size=100, max_total_num_tokens=46611",
        # sglang 0.5.16-0.5.23, srt/mem_cache/unified_memory_pool.py
        "[unified-memory-pool]   total_bytes=1000, max_total_num_tokens=46611, "
        "max_mamba_cache_size=10, max_num_reqs=20, speculative_num_draft_tokens=None",
    ],
)
def test_lines_naming_max_total_num_tokens_are_not_the_summary(line: str) -> None:
    *_, record = split_records(Segment("t.log", 3, f"[2026-01-01 00:00:00 TP0] {line}".encode()))
    hit = match_record(record)
    assert hit is None or not isinstance(hit[1], ev.Summary)


def test_summary_of_0_2_9_with_its_gpu_tag() -> None:
    # sglang 0.2.9, srt/managers/tp_worker.py: f"[gpu={self.gpu_id}] max_total_num_tokens=..."
    e = event("[gpu=0] max_total_num_tokens=56524, max_prefill_tokens=16384, context_len=32768")
    assert isinstance(e, ev.Summary)
    assert e.max_total_num_tokens == 56524


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        # sglang 0.2.9, srt/model_executor/model_runner.py (the logger prints "%(message)s")
        ("[gpu=1] Init nccl begin.", ev.InitBegin),
        ("[gpu=1] Load weight begin. avail mem=78.52 GB", ev.WeightsBegin),
        (
            "[gpu=1] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, "
            "avail mem=70.98 GB",
            ev.WeightsEnd,
        ),
        ("[gpu=1] Memory pool end. avail mem=10.05 GB", ev.PoolEnd),
        ("[gpu=1] Capture cuda graph begin. This can take up to several minutes.", ev.CaptureBegin),
        (
            "[gpu=1] max_total_num_tokens=56524, max_prefill_tokens=16384, context_len=32768",
            ev.Summary,
        ),
    ],
)
def test_the_gpu_tagged_lines_of_0_2_9_are_that_gpus(line: str, kind: type) -> None:
    e = event(line)
    assert isinstance(e, kind)
    assert e.rank == "GPU1"
