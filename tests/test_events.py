"""Events stage: one test per event type, on real lines (corpus and reference), numbers converted once.

GiB "as printed" and int bytes are both checked; a figure the line does not print is None (never 0).
"""

from __future__ import annotations

import pytest

from logmem.parse import events as ev
from logmem.parse.builders import parse_int_list
from logmem.parse.lines import split_records
from logmem.parse.match import iter_events, match_record
from logmem.parse.read import Segment
from logmem.parse.server_args import parse_server_args
from logmem.parse.unmatched import UnmatchedCounter
from logmem.units import GIB, MIB, Mem


def event(line: str) -> ev.Event:
    """The event of the last record of `line` (which may carry a prefix)."""
    *_, record = split_records(Segment("t.log", 3, line.encode()))
    hit = match_record(record)
    assert hit is not None, f"no pattern matches {line!r}"
    return hit[1]


def gib(value: float) -> Mem:
    return Mem(value, round(value * GIB))


def test_source_is_kept_but_not_compared() -> None:
    a = event("[2025-03-08 12:29:21 TP0] Memory pool end. avail mem=2.09 GB")
    b = event("[2025-03-08 12:29:59 TP0] Memory pool end. avail mem=2.09 GB")
    assert a == b
    assert hash(a) == hash(b)
    assert (a.source.path, a.source.line_no) == ("t.log", 3)
    assert a.source.text == "[2025-03-08 12:29:21 TP0] Memory pool end. avail mem=2.09 GB"
    assert str(a.source) == "t.log:3"
    with pytest.raises(AttributeError):
        a.avail = gib(1.0)  # type: ignore[misc]


# --- server_args --------------------------------------------------------------------------


def test_server_args_repr_form() -> None:
    e = event(
        "[2025-03-08 12:29:04] server_args=ServerArgs(model_path='/home/model/Qwen/QwQ-32B', "
        "tokenizer_mode='auto', tp_size=4, mem_fraction_static=0.85, chunked_prefill_size=2048, "
        "cuda_graph_max_bs=None, disable_cuda_graph=False, json_model_override_args='{}', "
        "cuda_graph_bs=[1, 2, 4])"
    )
    assert isinstance(e, ev.ServerArgs)
    assert e.rank == ""
    assert (e.form, e.error) == ("repr", None)
    assert e.args["model_path"] == "/home/model/Qwen/QwQ-32B"
    assert e.args["tp_size"] == 4
    assert e.args["mem_fraction_static"] == 0.85
    assert e.args["cuda_graph_max_bs"] is None
    assert e.args["disable_cuda_graph"] is False
    assert e.args["json_model_override_args"] == "{}"
    assert e.args["cuda_graph_bs"] == [1, 2, 4]


def test_server_args_dict_form() -> None:
    e = event(
        "[2026-09-22 06:49:56] server_args={'model_path': 'Qwen/Qwen3-8B', 'tp_size': 2, "
        "'mem_fraction_static': 0.88, 'speculative_algorithm': None, 'cuda_graph_bs': [1, 2, 4]}"
    )
    assert isinstance(e, ev.ServerArgs)
    assert (e.form, e.error) == ("dict", None)
    assert e.args == {
        "model_path": "Qwen/Qwen3-8B",
        "tp_size": 2,
        "mem_fraction_static": 0.88,
        "speculative_algorithm": None,
        "cuda_graph_bs": [1, 2, 4],
    }


def test_server_args_nested_config_objects() -> None:
    args, form, error = parse_server_args(
        "ServerArgs(model_path='m', cuda_graph_config=CudaGraphConfig(decode=PhaseConfig("
        "backend='full', max_bs=256, bs=[1, 2])), dtype=torch.bfloat16)"
    )
    assert (form, error) == ("repr", None)
    assert args["cuda_graph_config"] == {"decode": {"backend": "full", "max_bs": 256, "bs": [1, 2]}}
    assert args["dtype"] == "torch.bfloat16"  # not a literal: kept as text


def test_server_args_cut_by_a_log_shipper_gives_an_error_not_an_exception() -> None:
    e = event("[2026-09-22 06:49:56] server_args=ServerArgs(model_path='m', tp_size=2, mem_frac")
    assert isinstance(e, ev.ServerArgs)
    # The plain values before the cut are kept (model_path names the report); the rest is lost.
    assert e.args == {"model_path": "m", "tp_size": 2}
    assert (
        e.error
        == "the server_args line is cut, elided or malformed; 2 plain values were read from it"
    )


def test_server_args_is_never_evaluated(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    calls: list[str] = []
    monkeypatch.setattr(os, "system", lambda cmd: calls.append(cmd) or 0)
    args, _, error = parse_server_args(
        "ServerArgs(model_path=__import__('os').system('x'), tp_size=1)"
    )
    assert calls == []
    assert error is None
    assert args == {"model_path": "__import__('os').system('x')", "tp_size": 1}
    args, _, error = parse_server_args("{'a': __import__('os').system('x'), 'b': 2}")
    assert calls == []
    assert (args, error) == ({"a": "__import__('os').system('x')", "b": 2}, None)
    args, _, error = parse_server_args("ServerArgs(device=torch.device('cuda'), x=os.system('y'))")
    assert calls == []
    assert args == {"device": "torch.device('cuda')", "x": "os.system('y')"}


# --- init, weights ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    ["[2025-03-08 12:29:11 TP3] Init torch distributed begin.", "[19:01:01 TP0] Init nccl begin."],
)
def test_init_begin(line: str) -> None:
    e = event(line)
    assert isinstance(e, ev.InitBegin)
    assert e.wording in ("Init torch distributed begin.", "Init nccl begin.")


def test_init_end_with_and_without_elapsed() -> None:
    e = event("[2025-03-08 12:29:14 TP2] Init torch distributed ends. mem usage=0.13 GB")
    assert e == ev.InitEnd(rank="TP2", source=e.source, usage=gib(0.13), elapsed_s=None)
    e = event(
        "[2026-08-01 23:37:40] Init torch distributed ends. elapsed=0.23 s, mem usage=0.03 GB"
    )
    assert isinstance(e, ev.InitEnd)
    assert (e.rank, e.elapsed_s, e.usage.gib, e.usage.bytes) == ("", 0.23, 0.03, round(0.03 * GIB))


def test_weights_begin() -> None:
    e = event("[2025-03-08 12:29:14 TP3] Load weight begin. avail mem=21.63 GB")
    assert isinstance(e, ev.WeightsBegin)
    assert e.avail == gib(21.63)
    assert e.avail.bytes == 23225035653  # round(21.63 * 2**30)


def test_weights_end_e0_no_usage() -> None:
    e = event(
        "[2024-10-29 02:03:33 TP0] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, "
        "avail mem=32.22 GB"
    )
    assert isinstance(e, ev.WeightsEnd)
    assert e.avail == gib(32.22)
    assert e.usage is None
    assert e.elapsed_s is None
    assert e.model_type == "LlamaForCausalLM"
    assert e.details == (("dtype", "torch.bfloat16"),)


def test_weights_end_e2_dtype_and_usage() -> None:
    e = event(
        "[2025-03-08 12:29:19 TP0] Load weight end. type=Qwen2ForCausalLM, dtype=torch.bfloat16, "
        "avail mem=6.09 GB, mem usage=15.54 GB."
    )
    assert isinstance(e, ev.WeightsEnd)
    assert (e.avail, e.usage) == (gib(6.09), gib(15.54))
    assert e.details == (("dtype", "torch.bfloat16"),)


def test_weights_end_e5_elapsed() -> None:
    e = event(
        "Load weight end. elapsed=0.38 s, type=Qwen2ForCausalLM, dtype=torch.bfloat16, "
        "avail mem=77.45 GB, mem usage=0.98 GB."
    )
    assert isinstance(e, ev.WeightsEnd)
    assert e.elapsed_s == 0.38
    assert (e.avail.gib, e.usage.gib if e.usage else None) == (77.45, 0.98)


def test_weights_end_e6_no_dtype_with_quant() -> None:
    e = event(
        "Load weight end. elapsed=1.85 s, type=Gemma4ForConditionalGeneration, quant=awq, bits=4, "
        "avail mem=7.36 GB, mem usage=24.13 GB."
    )
    assert isinstance(e, ev.WeightsEnd)
    assert e.model_type == "Gemma4ForConditionalGeneration"
    assert e.details == (("quant", "awq"), ("bits", "4"))
    e = event(
        "Load weight end. elapsed=1.97 s, type=Qwen3ForCausalLM, avail mem=162.30 GB, mem usage=15.28 GB."
    )
    assert isinstance(e, ev.WeightsEnd)
    assert e.details == ()
    assert e.avail.gib == 162.30


def test_weights_end_negative_usage_is_kept() -> None:
    e = event(
        "Load weight end. type=X, dtype=torch.float16, avail mem=9.00 GB, mem usage=-0.25 GB."
    )
    assert isinstance(e, ev.WeightsEnd)
    assert e.usage == Mem(-0.25, -round(0.25 * GIB))


# --- pools ----------------------------------------------------------------------------------


def test_kv_dtype() -> None:
    e = event("[2025-11-10 19:58:01 TP0] Using KV cache dtype: torch.float8_e4m3fn")
    assert isinstance(e, ev.KVDtype)
    assert e.dtype == "torch.float8_e4m3fn"


def test_kv_pool_k_and_v() -> None:
    e = event(
        "[2025-03-08 12:29:20 TP0] KV Cache is allocated. #tokens: 46611, K size: 1.42 GB, V size: 1.42 GB"
    )
    assert e == ev.KVPool(
        rank="TP0", source=e.source, tokens=46611, k=gib(1.42), v=gib(1.42), kv=None, dtype=None
    )
    assert isinstance(e, ev.KVPool)
    assert e.total_bytes == 2 * round(1.42 * GIB)


def test_kv_pool_single_kv_size_mla() -> None:
    e = event("KV Cache is allocated. #tokens: 132608, KV size: 8.69 GB")
    assert isinstance(e, ev.KVPool)
    assert (e.tokens, e.k, e.v, e.kv, e.dtype) == (132608, None, None, gib(8.69), None)
    assert e.total_bytes == round(8.69 * GIB)


def test_kv_pool_e7_with_dtype() -> None:
    e = event(
        "KV Cache is allocated. dtype: torch.bfloat16, #tokens: 148717, K size: 10.21 GB, V size: 10.21 GB"
    )
    assert isinstance(e, ev.KVPool)
    assert (e.dtype, e.tokens, e.k, e.v) == ("torch.bfloat16", 148717, gib(10.21), gib(10.21))


def test_kv_pool_jan_2025_without_token_count() -> None:
    e = event("KV Cache is allocated. K size: 27.13 GB, V size: 27.13 GB.")
    assert isinstance(e, ev.KVPool)
    assert e.tokens is None
    assert e.k == gib(27.13)


def test_kv_pool_zero_sizes_are_zero_not_none() -> None:
    e = event("KV Cache is allocated. #tokens: 20480, K size: 0.00 GB, V size: 0.00 GB")
    assert isinstance(e, ev.KVPool)
    assert (e.k, e.v) == (Mem(0.0, 0), Mem(0.0, 0))


def test_kv_available_ascend() -> None:
    e = event("The available memory for KV cache is 14.18 GB.")
    assert isinstance(e, ev.KVAvailable)
    assert e.avail == gib(14.18)


@pytest.mark.parametrize(
    "line",
    [
        # without a space before GB and with the trailing space SGLang prints
        "Mamba Cache is allocated. max_mamba_cache_size: 186, conv_state size: 0.10GB, ssm_state size: 4.38GB ",
        # a paste that lost the trailing space
        "Mamba Cache is allocated. max_mamba_cache_size: 186, conv_state size: 0.10GB, ssm_state size: 4.38GB",
    ],
    ids=["trailing-space", "no-trailing-space"],
)
def test_mamba_pool(line: str) -> None:
    e = event(line)
    assert isinstance(e, ev.MambaPool)
    assert (e.max_size, e.conv, e.ssm) == (186, gib(0.10), gib(4.38))
    assert (e.intermediate_ssm, e.intermediate_conv) == (None, None)
    assert e.total_bytes == round(0.10 * GIB) + round(4.38 * GIB)


def test_mamba_pool_with_speculative_intermediate_caches() -> None:
    e = event(
        "Mamba Cache is allocated. max_mamba_cache_size: 40, conv_state size: 0.11GB, ssm_state size: 5.77GB "
        "intermediate_ssm_state_cache size: 2.50GB intermediate_conv_window_cache size: 0.05GB"
    )
    assert isinstance(e, ev.MambaPool)
    assert (e.intermediate_ssm, e.intermediate_conv) == (gib(2.50), gib(0.05))


def test_swa_plan_and_summary() -> None:
    e = event(
        "[2026-08-01 23:39:35] Use sliding window memory pool. full_layer_tokens=185897, swa_layer_tokens=148717"
    )
    assert e == ev.SWAPlan(rank="", source=e.source, full_tokens=185897, swa_tokens=148717)
    e = event("Use sliding window memory pool (all SWA). swa_layer_tokens=49135")
    assert isinstance(e, ev.SWAPlan)
    assert (e.full_tokens, e.swa_tokens) == (None, 49135)
    e = event("Use sliding window memory pool. full_layer_tokens=-120, swa_layer_tokens=-96")
    assert isinstance(e, ev.SWAPlan)
    assert (e.full_tokens, e.swa_tokens) == (-120, -96)
    e = event("SWAKVPool mem usage: 28.93 GB, swa size: 148717, full size: 185897")
    assert e == ev.SWASummary(
        rank=None, source=e.source, usage=gib(28.93), swa_size=148717, full_size=185897
    )


def test_dsv4_plan() -> None:
    e = event(
        "DSv4 memory calculation: bytes_per_full_token=176983.05, available_bytes=87.26 GB, full_token=529408"
    )
    assert isinstance(e, ev.DSv4Plan)
    assert (e.bytes_per_token, e.avail, e.tokens) == (176983.05, gib(87.26), 529408)


def test_pool_end() -> None:
    e = event("[2025-03-08 12:29:21 TP2] Memory pool end. avail mem=2.09 GB")
    assert e == ev.PoolEnd(rank="TP2", source=e.source, avail=gib(2.09))


# --- graph capture ---------------------------------------------------------------------------


def test_capture_begin_old_decode() -> None:
    e = event(
        "[2025-03-08 12:29:21 TP0] Capture cuda graph begin. This can take up to several minutes. "
        "avail mem=1.45 GB"
    )
    assert e == ev.CaptureBegin(
        rank="TP0",
        source=e.source,
        name="decode",
        backend="cuda graph",
        avail=gib(1.45),
        sizes=None,
        graph_backend=None,
        tokens_per_req=None,
        step=None,
    )


def test_capture_begin_e1_without_avail() -> None:
    e = event("Capture cuda graph begin. This can take up to several minutes.")
    assert isinstance(e, ev.CaptureBegin)
    assert e.avail is None


@pytest.mark.parametrize(
    ("line", "name", "backend"),
    [
        (
            "Capture npu graph begin. This can take up to several minutes. avail mem=17.55 GB",
            "decode",
            "npu graph",
        ),
        (
            "Capture draft cuda graph begin. This can take up to several minutes. avail mem=4.20 GB",
            "draft",
            "cuda graph",
        ),
        (
            "Capture draft extend cuda graph begin. This can take up to several minutes. avail mem=3.42 GB",
            "draft extend",
            "cuda graph",
        ),
        ("Capture piecewise CUDA graph begin. avail mem=10.81 GB", "piecewise", "CUDA graph"),
    ],
)
def test_capture_begin_families(line: str, name: str, backend: str) -> None:
    e = event(line)
    assert isinstance(e, ev.CaptureBegin)
    assert (e.name, e.backend) == (name, backend)
    assert e.avail is not None


def test_capture_begin_e7_with_bs_list_and_tokens_per_req() -> None:
    e = event(
        "[2026-08-17 10:02:11] Capture target decode CUDA graph begin. backend=full, num_tokens_per_req=1, "
        "bs=[1, 2], avail mem=73.10 GB"
    )
    assert e == ev.CaptureBegin(
        rank="",
        source=e.source,
        name="target decode",
        backend="CUDA graph",
        avail=gib(73.10),
        sizes=(1, 2),
        graph_backend="full",
        tokens_per_req=1,
        step=None,
    )


def test_capture_begin_e7_prefill_num_tokens() -> None:
    e = event(
        "Capture target prefill CUDA graph begin. backend=breakable, num_tokens=[4, 8, 12, 16], "
        "avail mem=12.52 GB"
    )
    assert isinstance(e, ev.CaptureBegin)
    assert (e.name, e.graph_backend, e.sizes, e.tokens_per_req) == (
        "target prefill",
        "breakable",
        (4, 8, 12, 16),
        None,
    )


def test_capture_begin_draft_extend_with_step() -> None:
    e = event("Capture draft extend CUDA graph begin. step=2, avail mem=5.12 GB")
    assert isinstance(e, ev.CaptureBegin)
    assert (e.name, e.step, e.avail) == ("draft extend", 2, gib(5.12))
    e = event(
        "Capture draft extend CUDA graph end. step=2, elapsed=1.50 s, mem usage=0.10 GB, avail mem=5.02 GB."
    )
    assert isinstance(e, ev.CaptureEnd)
    assert (e.name, e.step, e.elapsed_s, e.usage, e.avail) == (
        "draft extend",
        2,
        1.5,
        gib(0.10),
        gib(5.02),
    )


def test_capture_end_both_field_orders() -> None:
    old = event(
        "Capture cuda graph end. Time elapsed: 7.23 s. avail mem=0.53 GB. mem usage=0.93 GB."
    )
    new = event(
        "Capture cuda graph end. Time elapsed: 7.23 s. mem usage=0.93 GB. avail mem=0.53 GB."
    )
    assert old == new
    assert isinstance(old, ev.CaptureEnd)
    assert (old.avail, old.usage, old.elapsed_s) == (gib(0.53), gib(0.93), 7.23)


def test_capture_end_e1_only_elapsed() -> None:
    e = event("Capture cuda graph end. Time elapsed: 3.71 s")
    assert isinstance(e, ev.CaptureEnd)
    assert (e.avail, e.usage, e.elapsed_s) == (None, None, 3.71)


def test_capture_end_negative_usage_is_kept() -> None:
    e = event(
        "[2026-03-20 11:02:33 TP0] Capture cuda graph end. Time elapsed: 1.95 s. mem usage=-5.29 GB. "
        "avail mem=7.20 GB."
    )
    assert isinstance(e, ev.CaptureEnd)
    assert e.usage == Mem(-5.29, -round(5.29 * GIB))
    assert e.usage.bytes < 0


def test_capture_end_e7() -> None:
    e = event(
        "Capture target verify CUDA graph end. elapsed=3.00 s, mem usage=0.60 GB, avail mem=6.67 GB."
    )
    assert e == ev.CaptureEnd(
        rank=None,
        source=e.source,
        name="target verify",
        backend="CUDA graph",
        avail=gib(6.67),
        usage=gib(0.60),
        elapsed_s=3.0,
        step=None,
    )


def test_capture_sizes() -> None:
    e = event("[2026-02-06 12:11:59 DP0 TP0 EP0] Capture cuda graph bs [8, 16, 24, 28, 32, 36]")
    assert e == ev.CaptureSizes(
        rank="DP0 TP0 EP0", source=e.source, kind="bs", sizes=(8, 16, 24, 28, 32, 36)
    )
    e = event("Capture cuda graph num tokens [4, 8, 12, 16]")
    assert isinstance(e, ev.CaptureSizes)
    assert (e.kind, e.sizes) == ("num tokens", (4, 8, 12, 16))


@pytest.mark.parametrize(
    "line",
    [
        "Capture cuda graph bs [1, 2, 4, ...]",
        "Capture cuda graph num tokens [4, 8, 12, \u2026, 4096]",
        "Capture cuda graph bs [1, 2, 4, 8, 12, 16, 24, 32, 40, 48, 56, 64, 72, 80, 88, 96, 104",  # cut
    ],
    ids=["dots", "ellipsis", "cut"],
)
def test_capture_sizes_elided_or_cut_is_none(line: str) -> None:
    e = event(line)
    assert isinstance(e, ev.CaptureSizes)
    assert e.sizes is None


def test_parse_int_list() -> None:
    assert parse_int_list("[1, 2, 4]") == (1, 2, 4)
    assert parse_int_list("[]") == ()
    assert parse_int_list("[1, 2, ...]") is None
    assert parse_int_list("[1, 2") is None
    assert parse_int_list("[1, x]") is None
    assert parse_int_list(None) is None


@pytest.mark.parametrize(
    ("line", "kind", "size", "avail"),
    [
        (
            "Capturing batches (avail_mem=75.12 GB):   0%|          | 0/7 [00:00<?, ?it/s]",
            "batches",
            None,
            75.12,
        ),
        (
            "Capturing batches (bs=24 avail_mem=4.00 GB):  14%|█▍        | 1/7 [00:02<00:17,  2.96s/it]",
            "batches",
            24,
            4.00,
        ),
        (
            "Capturing batches (bs=8 variant=tbo avail_mem=3.10 GB):   0%|          | 0/7",
            "batches",
            8,
            3.10,
        ),
        (
            "Capturing num tokens (num_tokens=8192 avail_mem=12.59 GB):   0%|          | 0/58 [00:00<?, ?it/s]",
            "num tokens",
            8192,
            12.59,
        ),
        (
            "Compiling num tokens (num_tokens=20):   0%|          | 0/5 [00:00<?, ?it/s]",
            "compile",
            20,
            None,
        ),
        ("  0%|          | 0/13 [00:00<?, ?it/s]", "plain", None, None),
        ("100%|██████████| 13/13 [00:07<00:00,  1.80it/s]", "plain", None, None),
        ("\u23ce 100%|██████████| 13/13 [00:07<00:00,  1.80it/s]", "plain", None, None),
    ],
    ids=[
        "avail-only",
        "bs",
        "variant",
        "num-tokens",
        "compile",
        "plain-0",
        "plain-100",
        "paste-marker",
    ],
)
def test_bar_renders(line: str, kind: str, size: int | None, avail: float | None) -> None:
    e = event(line)
    assert e == ev.BarRender(
        rank=None,
        source=e.source,
        kind=kind,
        size=size,
        avail=gib(avail) if avail is not None else None,
        count=e.count,
        total=e.total,
    )


@pytest.mark.parametrize(
    ("line", "count", "total", "bucket"),
    [
        (
            "Capturing batches (bs=24 avail_mem=4.00 GB):   0%|          | 0/7 [00:00<?, ?it/s]",
            0,
            7,
            0,
        ),
        (
            "Capturing batches (bs=16 avail_mem=3.93 GB):  14%|█▍        | 1/7 [00:02<00:17,  2.96s/it]",
            1,
            7,
            1,
        ),
        # The closing render repeats the last description at n == total: it is the last bucket.
        (
            "Capturing batches (bs=1 avail_mem=10.28 GB): 100%|██████████| 23/23 [00:16<00:00,  1.42it/s]",
            23,
            23,
            22,
        ),
        (
            "Capturing batches (bs=1 avail_mem=23.54 GB): 100% | 52/52 [00:03<00:00, 16.76it/s]",
            52,
            52,
            51,
        ),
        ("Capturing batches (bs=8 avail_mem=3.10 GB)", None, None, None),
    ],
)
def test_bar_counts_say_which_bucket(
    line: str, count: int | None, total: int | None, bucket: int | None
) -> None:
    e = event(line)
    assert isinstance(e, ev.BarRender)
    assert (e.count, e.total, e.bucket_index) == (count, total, bucket)


def test_weight_loading_bar_is_not_a_capture_bar() -> None:
    text = "Loading safetensors checkpoint shards:  50% Completed | 7/14 [00:03<00:04,  1.74it/s]"
    record = next(split_records(Segment("t.log", 1, text.encode())))
    assert match_record(record) is None


def test_register_graphs() -> None:
    e = event("[2025-11-10 19:59:08 TP0] Registering 3492 cuda graph addresses")
    assert e == ev.RegisterGraphs(rank="TP0", source=e.source, count=3492)


def test_all_reduce_config_in_mib() -> None:
    e = event(
        "All Reduce config: symmetric_memory = 16.00 MB, local_buffer = 8.01 MB, multicast = False"
    )
    assert isinstance(e, ev.AllReduceConfig)
    assert e.symmetric.bytes == 16 * MIB
    assert e.local.bytes == round(8.01 * MIB)
    assert e.multicast is False


@pytest.mark.parametrize(
    ("line", "what", "n_bytes"),
    [
        ("Pre-allocating symmetric memory pool with 4 GiB", "symm_prealloc", 4 * GIB),
        (
            "DeepGEMM masked layout budget: 2.50 GiB from 10.00 GiB free.",
            "deepgemm_budget",
            round(2.5 * GIB),
        ),
        (
            "Allocating 100.00 GB host memory for hierarchical KV cache.",
            "hicache_host",
            100 * 10**9,
        ),
        (
            "Update engine weights online from disk begin. avail mem=12.00 GB",
            "runtime_reading",
            12 * GIB,
        ),
    ],
)
def test_misc_memory(line: str, what: str, n_bytes: int) -> None:
    e = event(line)
    assert isinstance(e, ev.MiscMemory)
    assert (e.what, e.amount.bytes) == (what, n_bytes)


# --- summary, warnings, failures -------------------------------------------------------------


def test_summary_generic_key_values() -> None:
    e = event(
        "[2025-09-11 08:12:40 TP0] max_total_num_tokens=132608, chunked_prefill_size=512, "
        "max_prefill_tokens=16384, max_running_requests=24, context_len=8192, available_gpu_mem=2.74 GB"
    )
    assert isinstance(e, ev.Summary)
    assert e.max_total_num_tokens == 132608
    assert dict(e.fields) == {
        "chunked_prefill_size": "512",
        "max_prefill_tokens": "16384",
        "max_running_requests": "24",
        "context_len": "8192",
        "available_gpu_mem": "2.74 GB",
    }
    assert e.available == gib(2.74)
    assert e.get_int("max_running_requests") == 24
    assert e.get_int("available_gpu_mem") is None
    assert e.get_int("no_such_key") is None


def test_summary_e1_without_available_or_chunked() -> None:
    e = event(
        "max_total_num_tokens=217512, max_prefill_tokens=16384, max_running_requests=2049, context_len=131072"
    )
    assert isinstance(e, ev.Summary)
    assert e.available is None
    assert e.get_int("chunked_prefill_size") is None
    assert e.get_int("context_len") == 131072


def test_summary_negative_chunked_prefill() -> None:
    e = event(
        "max_total_num_tokens=217600, chunked_prefill_size=-1, max_prefill_tokens=9000, "
        "max_running_requests=36, context_len=8188, available_gpu_mem=6.83 GB"
    )
    assert isinstance(e, ev.Summary)
    assert e.get_int("chunked_prefill_size") == -1


def test_imbalance_raw_floats() -> None:
    e = event(
        "[2026-01-01 00:00:00 TP1] The memory capacity is unbalanced. Some GPUs may be occupied by other "
        "processes. pre_model_load_memory=70.1234130859375, local_gpu_memory=78.5, "
        "local_gpu_memory * 0.9=70.65"
    )
    assert e == ev.Imbalance(
        rank="TP1",
        source=e.source,
        pre_model_load_gib=70.1234130859375,
        local_gib=78.5,
        exc_type=None,
    )


def test_imbalance_raised_old_form() -> None:
    e = event(
        "ValueError: The memory capacity is unbalanced. Some GPUs may be occupied by other processes."
    )
    assert isinstance(e, ev.Imbalance)
    assert (e.pre_model_load_gib, e.local_gib, e.exc_type) == (None, None, "ValueError")


@pytest.mark.parametrize(
    ("line", "mfs"),
    [
        (
            "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. "
            "Current value: mem_fraction_static=0.84",
            0.84,
        ),
        (
            "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. "
            "Current value: self.server_args.mem_fraction_static=0.2",
            0.2,
        ),
        ("RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.", None),
    ],
)
def test_not_enough_memory(line: str, mfs: float | None) -> None:
    e = event(line)
    assert e == ev.NotEnoughMemory(
        rank=None, source=e.source, mem_fraction_static=mfs, exc_type="RuntimeError"
    )


def test_torch_oom_cuda_mib_and_gib() -> None:
    e = event(
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 540.00 MiB. GPU 0 has a total capacity of "
        "14.76 GiB of which 298.75 MiB is free. Process 63729 has 14.46 GiB memory in use. Of the allocated memory "
        "14.35 GiB is allocated by PyTorch, and 1.52 MiB is reserved by PyTorch but unallocated. If reserved but "
        "unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid "
        "fragmentation.  See documentation for Memory Management  "
        "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)"
    )
    assert isinstance(e, ev.TorchOOM)
    assert (e.exc_type, e.device, e.gpu) == ("torch.OutOfMemoryError", "CUDA", 0)
    assert e.tried is not None and e.tried.bytes == 540 * MIB
    assert e.capacity is not None and e.capacity.bytes == round(14.76 * GIB)
    assert e.free is not None and e.free.bytes == round(298.75 * MIB)
    assert e.in_use is not None and e.in_use.bytes == round(14.46 * GIB)
    assert e.allocated is not None and e.allocated.bytes == round(14.35 * GIB)
    assert e.reserved_unallocated is not None and e.reserved_unallocated.bytes == round(1.52 * MIB)
    assert e.private_pools is None


def test_torch_oom_hip_newer_wording() -> None:
    e = event(
        "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 12.00 GiB. GPU 3 has a total capacity of "
        "287.98 GiB of which 3.88 GiB is free. Including non-PyTorch memory, this process has 284.09 GiB memory in "
        "use. Of the allocated memory 280.38 GiB is allocated by PyTorch, with 2.00 MiB allocated in private pools "
        "(e.g., CUDA Graphs), and 6.32 MiB is reserved by PyTorch but unallocated."
    )
    assert isinstance(e, ev.TorchOOM)
    assert (e.device, e.gpu) == ("HIP", 3)
    assert e.tried is not None and e.tried.bytes == 12 * GIB
    assert e.in_use is not None and e.in_use.bytes == round(284.09 * GIB)
    assert e.private_pools is not None and e.private_pools.bytes == 2 * MIB


def test_device_oom_has_no_figures() -> None:
    e = event("torch.AcceleratorError: CUDA error: out of memory")
    assert isinstance(e, ev.TorchOOM)
    assert (e.exc_type, e.device) == ("torch.AcceleratorError", "CUDA")
    assert (e.tried, e.gpu, e.capacity, e.free) == (None, None, None, None)


def test_capture_failed() -> None:
    e = event(
        "Exception: Capture CUDA graph failed: CUDA out of memory. Tried to allocate 2.00 MiB."
    )
    assert e == ev.CaptureFailed(
        rank=None, source=e.source, message="CUDA out of memory. Tried to allocate 2.00 MiB."
    )


def test_scheduler_exception_and_traceback() -> None:
    e = event(
        "[2026-02-26 05:35:14 TP3] Scheduler hit an exception: Traceback (most recent call last):"
    )
    assert e == ev.SchedulerException(
        rank="TP3", source=e.source, text="Traceback (most recent call last):"
    )
    assert isinstance(event("Traceback (most recent call last):"), ev.TracebackStart)
    e = event("TypeError: cannot unpack non-iterable ForwardMetadata object")
    assert e == ev.ExceptionLine(
        rank=None,
        source=e.source,
        exc_type="TypeError",
        message="cannot unpack non-iterable ForwardMetadata object",
    )


def test_other_ranks_failed_sigquit_ready_http() -> None:
    e = event(
        "RuntimeError: TP rank 0 could finish the model loading, but there are other ranks that didn't finish "
        "loading. It is likely due to unexpected failures (e.g., OOM) or a slow node."
    )
    assert e == ev.OtherRanksFailed(rank=None, source=e.source, tp_rank=0)
    assert isinstance(
        event("[2026-01-01 00:00:00] Received sigquit from a child proces. It usually means"),
        ev.SigQuit,
    )
    assert isinstance(
        event("[2025-03-08 12:29:31] The server is fired up and ready to roll!"), ev.Ready
    )
    e = event(
        "[2025-03-08 12:29:29] INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)"
    )
    assert isinstance(e, ev.HttpUp)
    assert e.rank == ""


def test_graph_disabled() -> None:
    e = event("Disable piecewise CUDA graph because --disable-piecewise-cuda-graph is set")
    assert e == ev.GraphDisabled(
        rank=None, source=e.source, which="piecewise", why="--disable-piecewise-cuda-graph is set"
    )


def test_unmatched_memory_lines_are_reported() -> None:
    records = list(
        split_records(
            Segment(
                "t.log",
                9,
                b"[2026-08-01 23:37:38] Reported total GPU memory (MiB): "
                b"[124546], using min: 124546 MiB.",
            )
        )
    )
    unmatched = UnmatchedCounter()
    assert list(iter_events(records, unmatched)) == []
    summary = unmatched.summary()
    assert [(u.rank, u.source.line_no) for u in summary.examples] == [("", 9)]
    assert [(s.shape, s.count) for s in summary.shapes] == [
        ("Reported total GPU memory (MiB): [N], using min: N MiB.", 1)
    ]
