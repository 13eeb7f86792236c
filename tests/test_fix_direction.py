"""Fixes that point the right way (issue 12, class 5): never against SGLang's own advice or the
value in use, PyTorch's own OOM split used, caps and relative mfs changes without server_args,
and --disable-cuda-graph only where the capture machinery itself fails.

Corpus 003 and the constructed fixtures of fixtures/make_verdicts.py / make_failures.py; small
inline logs in SGLang's wording. Expected figures come from the log text, never from logmem.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import FIXTURES, corpus_log
from logmem.analysis.failures import outcome, verdict
from logmem.analysis.failures.facts import (
    ChangeComponent,
    Failure,
    Fix,
    LowerByAtLeast,
    LowerMfs,
    NativeImpl,
)
from logmem.analysis.failures.fallback import native_version_flag
from logmem.analysis.failures.traces import Where, raised_in
from logmem.api import read_log
from logmem.model.records import Traceback
from logmem.parse import events as ev
from logmem.parse.lines import Source
from logmem.report.fixes import fix_text, fix_value
from logmem.report.verdict import verdict_lines

GIB = 1 << 30


def failure_of(path: Path) -> Failure:
    (L,) = read_log(str(path)).launches
    f = outcome(L).failure
    assert f is not None
    return f


def mfs_values(f: Failure) -> list[float]:
    """The numeric --mem-fraction-static values the fixes propose."""
    return [
        float(x.value)
        for x in f.fixes
        if x.flag == "--mem-fraction-static"
        and x.value is not None
        and re.fullmatch(r"\d+(?:\.\d+)?", x.value)
    ]


# --- "Not enough memory": only ever up from the value in use --------------------------------


def kv_log(pre: float, after: float, mfs: float) -> str:
    return "\n".join(
        [
            f"[2026-05-06 17:42:10] server_args=ServerArgs(model_path='m', tp_size=1, mem_fraction_static={mfs})",
            "[2026-05-06 17:42:20] Init torch distributed begin.",
            "[2026-05-06 17:42:21] Init torch distributed ends. mem usage=0.33 GB",
            f"[2026-05-06 17:42:21] Load weight begin. avail mem={pre:.2f} GB",
            f"[2026-05-06 17:43:40] Load weight end. type=Qwen2ForCausalLM, avail mem={after:.2f} GB, mem usage={pre - after:.2f} GB.",
            "[2026-05-06 17:43:41] Scheduler hit an exception: Traceback (most recent call last):",
            '  File "/sgl/python/sglang/srt/model_executor/pool_configurator.py", line 212, in configure',
            "    raise RuntimeError(",
            "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. "
            f"Current value: mem_fraction_static={mfs}",
            "",
            "[2026-05-06 17:43:41] Received sigquit from a child process. It usually means the child failed.",
            "",
        ]
    )


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    pre=st.integers(2000, 20000).map(lambda c: c / 100),
    used=st.floats(0.05, 0.99),
    mfs=st.integers(50, 97).map(lambda c: c / 100),
)
def test_not_enough_memory_never_proposes_a_value_at_or_below_the_one_in_use(
    tmp_path: Path, pre: float, used: float, mfs: float
) -> None:
    after = round(pre * (1 - used), 2)
    p = tmp_path / "kv.log"
    p.write_text(kv_log(pre, after, mfs))
    f = failure_of(p)
    assert f.kind == "not_enough_memory"
    assert all(v > mfs for v in mfs_values(f)), (pre, after, mfs, f.fixes)
    rest = after - pre * (1 - mfs)
    says = " ".join(verdict_lines(verdict(read_log(str(p)).launches[0])))
    if rest > 0.01:  # beyond print rounding: the rule says there was room
        assert "does not explain" in says


def test_rule_positive_fixture_says_the_rule_does_not_explain_it() -> None:
    f = failure_of(FIXTURES / "not-enough-memory-rule-positive-constructed.log")
    assert mfs_values(f) == []
    (fix,) = [x for x in f.fixes if x.flag == "--mem-fraction-static"]
    assert fix.value is None  # the rule gives no amount
    # 10.76 - 78.40 x 0.12 = 1.352 GiB: positive
    assert pytest.approx(1.352) == 10.76 - 78.40 * (1 - 0.88)


# --- PyTorch's own split: memory outside PyTorch ---------------------------------------------


def test_memory_outside_pytorch_points_at_nvidia_smi_and_not_at_the_model() -> None:
    f = failure_of(FIXTURES / "oom-outside-pytorch-constructed.log")
    assert [x.flag for x in f.fixes] == ["nvidia-smi"]
    text = " ".join(
        verdict_lines(
            verdict(read_log(str(FIXTURES / "oom-outside-pytorch-constructed.log")).launches[0])
        )
    )
    # capacity 44.42 - free 88 MiB - (allocated 23.51 + reserved 41.55 MiB)
    outside = 44.42 - 88 / 1024 - (23.51 + 41.55 / 1024)
    assert f"{outside:.2f} GiB is outside PyTorch" in text
    assert "loading peaks above" not in text


def test_a_load_that_needs_more_gpus_keeps_its_fixes() -> None:
    """oom-load-weights: PyTorch holds nearly all (77.62 of 78.17 in use): the model is too big."""
    f = failure_of(FIXTURES / "oom-load-weights-constructed.log")
    assert "--tp-size" in {x.flag for x in f.fixes}
    assert "nvidia-smi" not in {x.flag for x in f.fixes}


def test_transformers_fallback_gets_the_native_implementation_not_more_gpus() -> None:
    f = failure_of(FIXTURES / "hip-oom-rocm-constructed.log")
    # model_impl='auto' fell back: this build has no native implementation, so the flag alone
    # would fail here: the fix is a version that has one, not the flag (review23 #9, review25 #7).
    assert "model_impl='auto'" in (FIXTURES / "hip-oom-rocm-constructed.log").read_text()
    assert [(x.flag, x.value) for x in f.fixes] == [
        ("an SGLang version that implements this model's architecture", None)
    ]
    (native,) = [x.effect for x in f.fixes]
    # No rank printed Load weight end, so the log names no architecture; the model path is
    # the checkpoint, never called "the architecture".
    assert isinstance(native, NativeImpl)
    assert native.architecture is None and native.model == "zai-org/GLM-5-FP8"
    said = " ".join(
        verdict_lines(verdict(read_log(str(FIXTURES / "hip-oom-rocm-constructed.log")).launches[0]))
    )
    assert "Fix: --model-impl" not in said and "on this build the flag fails" not in said
    assert "architecture (zai-org/GLM-5-FP8)" not in said
    assert "the log names no architecture" in said
    assert "pass --model-impl sglang there if 'auto' still falls back" in said


def test_transformers_fallback_fix_names_the_weights_line_type() -> None:
    """With a Load weight end's type=, the headline names that architecture (review25 #7)."""
    auto = NativeImpl("GlmMoeDsaForCausalLM", True, "zai-org/GLM-5-FP8")
    text = fix_text(Fix(native_version_flag(auto.architecture), None, auto))
    assert text.startswith("Fix: an SGLang version that implements GlmMoeDsaForCausalLM: ")
    assert "zai-org" not in text
    # model_impl='transformers' chose the fallback itself: then the flag is the fix.
    chosen = NativeImpl("GlmMoeDsaForCausalLM", False, "zai-org/GLM-5-FP8")
    assert fix_text(Fix("--model-impl", "sglang", chosen)).startswith("Fix: --model-impl sglang: ")


# --- capture OOM without server_args ---------------------------------------------------------


def test_capture_oom_without_server_args_caps_and_gives_a_relative_mfs_change() -> None:
    f = failure_of(FIXTURES / "capture-oom-no-server-args-constructed.log")
    flags = {x.flag: fix_value(x) for x in f.fixes}
    assert int(flags["--cuda-graph-max-bs"] or 0) < 256
    # shortfall 540.00 - 298.75 MiB over P = 78.35 GiB, rounded up to SGLang's 0.001 steps
    delta = math.ceil((540.00 - 298.75) / 1024 / 78.35 * 1000) / 1000
    assert flags["--mem-fraction-static"] == f"at least {delta:g} lower than this launch used"
    mfs = next(x for x in f.fixes if x.flag == "--mem-fraction-static")
    assert mfs.value is None and isinstance(mfs.change, LowerByAtLeast)  # a change, not a value


# --- --disable-cuda-graph only for the capture machinery -------------------------------------


def test_corpus_003_names_the_attention_code_not_disable_cuda_graph() -> None:
    f = failure_of(corpus_log("003-"))
    assert [x.flag for x in f.fixes] == ["--attention-backend", "SGLANG_ROCM_FUSED_DECODE_MLA"]
    text = " ".join(verdict_lines(verdict(read_log(str(corpus_log("003-"))).launches[0])))
    assert "forward_absorb_fused_mla_rope_prepare" in text
    assert "would not get a server up" in text


def _said(path: Path) -> str:
    return " ".join(verdict_lines(verdict(read_log(str(path)).launches[0])))


def test_corpus_003_attention_fix_points_at_the_nsa_backends_line_11() -> None:
    """Line 11 "Set NSA backends for fp8_e4m3 KV Cache: prefill=flashmla_auto,
    decode=flashmla_kv." while server_args passed attention_backend='triton' (review25 #9)."""
    path = corpus_log("003-")
    raw = path.read_bytes().decode().split("\n")
    assert "Set NSA backends for fp8_e4m3 KV Cache: prefill=flashmla_auto" in raw[10]
    (L,) = read_log(str(path)).launches
    assert len(L.ranks) == 8 and L.rank("") is None  # a launcher line, not a rank
    fix = failure_of(path).fixes[0]
    assert isinstance(fix.effect, ChangeComponent) and fix.effect.nsa is not None
    assert fix.effect.nsa.source.line_no == 11
    text = _said(path)
    assert (
        "line 11 set this model's NSA backends for its fp8_e4m3 KV cache (prefill=flashmla_auto, "
        "decode=flashmla_kv), but attention_backend='triton' was passed: try --attention-backend "
        "nsa, or drop --attention-backend"
    ) in text
    assert "the log does not show" in text  # a try, not a promise


def test_attention_fix_without_the_nsa_line_or_with_nsa_in_use(tmp_path: Path) -> None:
    raw = corpus_log("003-").read_bytes().decode().split("\n")
    without = tmp_path / "no-nsa-line.log"
    without.write_text("\n".join(raw[:10] + raw[11:]))
    text = _said(without)
    assert (
        "NSA backends" not in text and "try another attention backend than the one in use" in text
    )
    nsa = tmp_path / "nsa-in-use.log"
    nsa.write_text("\n".join(raw).replace("attention_backend='triton'", "attention_backend='nsa'"))
    text = _said(nsa)
    assert "try --attention-backend nsa" not in text
    assert "try another attention backend than the one in use (attention_backend='nsa')" in text


def _tb(*frames: tuple[str, str]) -> Traceback:
    src = Source("x.log", 1, "")
    fr = tuple(ev.Frame(rank=None, source=src, path=p, line=1, func=fn) for p, fn in frames)
    return Traceback(None, None, (), fr)


RUNNER = ("/sgl/python/sglang/srt/model_executor/cuda_graph_runner.py", "capture_one_batch_size")
MODULE = ("/venv/lib/python3.10/site-packages/torch/nn/modules/module.py", "_call_impl")


@pytest.mark.parametrize(
    ("frames", "message", "where", "component"),
    [
        ((RUNNER, ("/venv/lib/python3.10/site-packages/torch/cuda/graphs.py", "capture_end")), "", Where.CAPTURE, None),
        ((RUNNER, MODULE, ("/venv/lib/python3.12/site-packages/sgl_kernel/elementwise.py", "rmsnorm")), "", Where.KERNEL, "sgl_kernel"),
        ((RUNNER, ("/sgl/python/sglang/srt/layers/attention/flashinfer_backend.py", "init_forward_metadata")), "", Where.ATTENTION, "flashinfer_backend"),
        ((RUNNER, MODULE, ("/sgl/python/sglang/srt/models/qwen3_moe.py", "forward")), "", Where.MODEL, "qwen3_moe"),
        ((RUNNER, MODULE, ("/sgl/python/sglang/srt/models/llama.py", "forward")), "operation not permitted when stream is capturing", Where.CAPTURE, None),
        ((), "", Where.UNKNOWN, None),
    ],
)  # fmt: skip
def test_raised_in_names_the_innermost_component(
    frames: tuple[tuple[str, str], ...], message: str, where: Where, component: str | None
) -> None:
    r = raised_in(_tb(*frames), message)
    assert (r.where, r.component) == (where, component)


def test_an_error_in_the_capture_machinery_keeps_disable_cuda_graph_as_a_diagnostic(
    tmp_path: Path,
) -> None:
    lines = [
        "[2025-11-10 10:00:00] server_args=ServerArgs(model_path='m', mem_fraction_static=0.85, tp_size=1, cuda_graph_max_bs=8)",
        "[2025-11-10 10:00:03] Load weight begin. avail mem=14.50 GB",
        "[2025-11-10 10:00:09] Load weight end. type=LlamaForCausalLM, avail mem=7.00 GB, mem usage=7.50 GB.",
        "[2025-11-10 10:00:10] Memory pool end. avail mem=2.10 GB",
        "[2025-11-10 10:00:11] Capture cuda graph begin. This can take up to several minutes. avail mem=2.00 GB",
        "[2025-11-10 10:00:20] Scheduler hit an exception: Traceback (most recent call last):",
        f'  File "{RUNNER[0]}", line 929, in {RUNNER[1]}',
        "    run_once()",
        '  File "/venv/lib/python3.10/site-packages/torch/cuda/graphs.py", line 88, in capture_end',
        "    super().capture_end()",
        "RuntimeError: CUDA error: operation failed due to a previous error during capture",
        "",
    ]
    p = tmp_path / "c.log"
    p.write_text("\n".join(lines) + "\n")
    f = failure_of(p)
    (fix,) = f.fixes
    assert fix.flag == "--disable-cuda-graph"
    assert "the frames show the capture machinery itself raised" in " ".join(
        verdict_lines(verdict(read_log(str(p)).launches[0]))
    )


def test_not_enough_memory_uses_sglangs_own_mfs_scaling(tmp_path: Path) -> None:
    """Late-2024 multimodal: SGLang ran the rule with 0.88 x 0.95 = 0.836. At A = 11.00 the flag
    alone leaves 11.00 - 78.50 x 0.12 = 1.58 GiB (the rule would not explain the failure); the
    scaled value leaves 11.00 - 78.50 x 0.164 = -1.874: explained, and the smallest flag with a
    pool is (1 - 11.00 / 78.50) / 0.95 = 0.9050..., so 0.906."""
    lines = (FIXTURES / "multimodal-mfs-nov2024-constructed.log").read_text().split("\n")[:7]
    lines[6] = lines[6].replace("avail mem=62.73 GB", "avail mem=11.00 GB")
    lines += [
        "[2024-11-25 10:02:32 TP0] Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/sgl/python/sglang/srt/model_executor/model_runner.py", line 612, in init_memory_pool',
        "    raise RuntimeError(",
        "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.",
        "",
    ]
    p = tmp_path / "mm.log"
    p.write_text("\n".join(lines) + "\n")
    f = failure_of(p)
    assert mfs_values(f) == [math.ceil((1 - 11.00 / 78.50) / 0.95 * 1000) / 1000]
    text = " ".join(verdict_lines(verdict(read_log(str(p)).launches[0])))
    assert "(1 - 0.88 x 0.95)" in text and "does not explain" not in text


# --- DeepEP dispatch tokens: relative to the T the launch ran with (review23 #1) -------------


def _dispatch_fix_text(path: Path) -> str:
    lines = verdict_lines(verdict(read_log(str(path)).launches[0]))
    (line,) = [x for x in " ".join(lines).split("Fix: ") if x.startswith("SGLANG_DEEPEP")]
    return line


def test_dispatch_tokens_fix_scales_the_t_the_launch_set(tmp_path: Path) -> None:
    """The fixture's command sets T=256 on line 1; the buffer got 1.20 of 3.55 GiB, so T must
    drop to floor(256 x 1.20 / 3.55) = 86, not to a fraction of SGLang's default 128."""
    src = FIXTURES / "deepep-buffer-failure-constructed.log"
    text = _dispatch_fix_text(src)
    assert f"{math.floor(256 * 1.20 / 3.55)} of the 256 this launch set on line 1" in text, text
    assert "default 128" not in text
    # deepep_mode='auto': two buffers (deepep.py get_deepep_buffer): NVLink from normal mode,
    # RDMA = max(normal RDMA, low-latency hint), not one "larger of" buffer (review D#6).
    assert "the larger of the normal-mode RDMA size and the low-latency size" in text
    assert "the NVLink one from the normal-mode config alone" in text
    assert "adds" not in text and "do not shrink with T" not in text
    # DeepEP's low-latency dispatch takes at most T tokens per rank and SGLang does not cap the
    # decode batch at T: the fix lowers --cuda-graph-max-bs (256 -> 80, the capture list's
    # largest <= 86) and --max-running-requests (8 DP ranks x 86) with it.
    assert (
        "lower --cuda-graph-max-bs from 256 to 80 (the capture list's largest at or below 86)"
        in (" ".join(text.split()))
    ), text
    assert "--max-running-requests to at most 8 x 86 = 688 (now 2048)" in " ".join(text.split())
    assert "capped at T" not in text

    # Without the env word on the command line T is SGLang's default.
    data = src.read_text()
    first, rest = data.split("\n", 1)
    assert first.startswith("SGLANG_DEEPEP_NUM_MAX_DISPATCH_TOKENS_PER_RANK=256 ")
    no_env = tmp_path / "default-t.log"
    no_env.write_text(first.split(" ", 1)[1] + "\n" + rest)
    text = _dispatch_fix_text(no_env)
    assert f"{math.floor(128 * 1.20 / 3.55)} of the default 128" in text, text


# --- a budget that is not positive: where it turns positive, the same in verdict and findings -


def _report_text(path: Path) -> str:
    from click.testing import CliRunner

    from logmem.cli.main import cli

    return CliRunner().invoke(cli, ["analyze", str(path)], catch_exceptions=False).output


@pytest.mark.parametrize(
    "name", ["oom-load-weights-constructed.log", "not-enough-memory-kv-constructed.log"]
)
def test_a_budget_that_is_not_positive_names_the_mfs_where_it_turns_positive(name: str) -> None:
    """rest = A - P x (1 - mfs) is zero at mfs = 1 - A / P (review23 #3): the finding names the
    next three-decimal value above it, never a bare "raise --mem-fraction-static", and the
    verdict does not claim that only smaller weights can give a pool when a value below 1 does."""
    text = (FIXTURES / name).read_text()
    p = min(float(x) for x in re.findall(r"Load weight begin\. avail mem=([\d.]+) GB", text))
    a = min(float(x) for x in re.findall(r"Load weight end\..*?avail mem=([\d.]+) GB", text))
    zero = 1 - a / p
    at = math.floor(zero * 1000) / 1000 + 0.001
    report = " ".join(_report_text(FIXTURES / name).split())
    assert f"it turns positive from --mem-fraction-static {at:.3f}" in report, report
    assert "raise --mem-fraction-static or put fewer weights" not in report
    assert "so the weights per rank must shrink" not in report


def test_the_find_outside_fix_names_the_other_processes_share_when_the_message_splits_it() -> None:
    """PyTorch's OOM says what this process has; the rest of the used memory is other processes'
    (review23 #10): the fix asks for those 20.23 GiB, not the 20.78 that includes this process's
    own non-PyTorch memory."""
    path = FIXTURES / "oom-outside-pytorch-constructed.log"
    text = path.read_text()
    m = re.search(
        r"capacity of ([\d.]+) GiB of which ([\d.]+) MiB is free\. .*?this process has "
        r"([\d.]+) GiB memory in use",
        text,
    )
    assert m is not None
    others = float(m[1]) - float(m[2]) / 1024 - float(m[3])
    says = " ".join(verdict_lines(verdict(read_log(str(path)).launches[0])))
    fix = next(x for x in says.split("Fix: ") if x.startswith("nvidia-smi"))
    assert f"find the other processes holding {others:.2f} GiB" in fix, fix


# --- A pool sized with a smaller cell than it allocates (003's FP8 indexer) -----------------

_CAPTURE_OOM = """
[2026-02-26 05:58:58 TP0] Scheduler hit an exception: Traceback (most recent call last):
  File "/sgl-workspace/sglang/python/sglang/srt/model_executor/cuda_graph_runner.py", line 497, in capture
    ) = self.capture_one_batch_size(bs, forward)
torch.OutOfMemoryError: HIP out of memory. Tried to allocate 4.00 GiB. GPU 0 has a total \
capacity of 287.98 GiB of which 1.29 GiB is free. Of the allocated memory 280.38 GiB is \
allocated by PyTorch, and 6.32 MiB is reserved by PyTorch but unallocated.
"""


def test_lowering_mfs_under_a_bigger_allocated_cell_prices_the_pools_shrink(
    tmp_path: Path,
) -> None:
    """003's pools allocate 61,463 bytes per token for the 55,227 SGLang sized them with: each
    GiB of budget the rule gives up shrinks the pools by 1.113 GiB, and SGLang counts the tokens
    lost at its sizing cell. A capture OOM there needs a smaller step down than P x d alone."""
    lines = corpus_log("003-").read_text().splitlines(keepends=True)[:515]
    log = tmp_path / "ov.log"
    log.write_text("".join(lines) + _CAPTURE_OOM)
    f = failure_of(log)
    (fix,) = [x for x in f.fixes if x.flag == "--mem-fraction-static"]
    e = fix.effect
    assert isinstance(e, LowerMfs)
    assert e.sizing_cell is not None and 55_200 < e.sizing_cell < 55_250
    assert 1.11 < e.pool_ratio < 1.12
    short = e.need_bytes
    # The budget the rule gives up, times the ratio, covers the shortfall; P x d alone would
    # ask a lower value (0.898) than needed.
    budget_freed = (0.908 - float(fix.value or 0)) * e.pre_load_bytes
    assert budget_freed < short <= e.freed_bytes
    assert fix.value == "0.899"
    assert e.lost_tokens is not None
    assert math.isclose(e.lost_tokens, budget_freed / e.sizing_cell, rel_tol=1e-3)
    text = fix_text(fix)
    assert "61,463 bytes per token the pools allocate over the 55,227 SGLang sized them" in text
    assert "55,227-byte sizing cell" in text


def test_corpus_003_switch_off_is_a_workaround_after_the_backend_fix() -> None:
    """forward_absorb_fused_mla_rope_prepare runs only with SGLANG_ROCM_FUSED_DECODE_MLA on
    (deepseek_v2.py, sglang 0.5.8-0.5.9), but the passed attention_backend='triton' is the
    cause for this DSA model: with triton its indexer is skipped (nsa_indexer.py: no indexer
    metadata), so the switch is offered second, as a workaround that runs dense attention."""
    f = failure_of(corpus_log("003-"))
    last = f.fixes[-1]
    assert (last.flag, last.value) == ("SGLANG_ROCM_FUSED_DECODE_MLA", "0")
    text = fix_text(last)
    assert text.startswith("Fix: SGLANG_ROCM_FUSED_DECODE_MLA=0: a workaround: ")
    assert "deepseek_v2.py line 2028" in text and "off by default" in text
    assert "probably set it" in text and "dense attention" in text


def test_a_function_no_switch_gates_gets_no_environment_fix() -> None:
    from logmem.sglang import rules

    assert rules.env_gate("forward_absorb_prepare") is None
    assert rules.env_gate(None) is None
    gate = rules.env_gate("forward_absorb_fused_mla_rope_prepare")
    assert gate is not None and gate.var == "SGLANG_ROCM_FUSED_DECODE_MLA"


def test_a_library_heap_that_ran_out_with_the_device_free_puts_its_own_lever_first() -> None:
    """deepep-buffer-failure: the bs 256 bar read 4.56 GiB free (line 92) and DeepEP asked 3.55
    GiB: the message's '1.20 GiB free' is the library's heap, not the device's free memory, so
    the dispatch-token fix comes before a lower mem_fraction_static, which may not help."""
    from logmem.analysis.failures.facts import LibraryHeapLimit

    path = FIXTURES / "deepep-buffer-failure-constructed.log"
    raw = path.read_bytes().decode().split("\n")
    assert "avail_mem=4.56 GB" in raw[91]
    f = failure_of(path)
    (heap,) = [n for n in f.notes if isinstance(n, LibraryHeapLimit)]
    assert heap.line == 92 and heap.reading_bytes > heap.tried_bytes
    flags = [x.flag for x in f.fixes]
    assert flags.index("SGLANG_DEEPEP_NUM_MAX_DISPATCH_TOKENS_PER_RANK") < flags.index(
        "--mem-fraction-static"
    )
    said = _said(path)
    assert "may not help" in said and "the library's own heap" in said
