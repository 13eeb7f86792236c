"""Issue 12, the remaining items: the printed KV dtype reaches the pools and the sizing, a launch
that died loading weights gets no "left free" finding, a proposed --mem-fraction-static goes
through SGLang's own scaling, and the text of crashed launches says only what is true.

Corpus logs where one shows it (018, 019, 041), constructed logs in SGLang's wording otherwise.
Expected figures come from the log text, never from logmem's output.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from conftest import FIXTURES, corpus_log
from logmem.analysis.attribution import build_ledger
from logmem.analysis.failures import outcome
from logmem.analysis.failures.effects import LowerByAtLeast, LowerMfs
from logmem.analysis.failures.facts import Fix
from logmem.api import read_log
from logmem.compare.diff import kv_change
from logmem.compare.notes import TermKind
from logmem.estimate.crosscheck import Checked, crosscheck
from logmem.report import render
from logmem.report.fixes import effect_text, fix_value
from logmem.sglang import rules
from logmem.units import GIB


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
    kv = next(c for c in crosscheck(led, config).checks if c.what is Checked.KV_PER_TOKEN)
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


# --- item 3: a proposed --mem-fraction-static goes through SGLang's own scaling ----------------

# The multimodal start-up of Nov 2024 (fixtures/multimodal-mfs-nov2024-constructed.log: Qwen2-VL,
# mfs 0.88, which SGLang 0.3.5 - 0.4.4 scales by 0.95 before its KV rule), up to Memory pool
# end, then an OOM with 1.10 GiB free for a 3.00 GiB request: 1.90 GiB short.
MM = FIXTURES / "multimodal-mfs-nov2024-constructed.log"
MM_OOM = """\
[2024-11-25 10:02:33 TP0] Scheduler hit an exception: Traceback (most recent call last):
  File "/sgl-workspace/sglang/python/sglang/srt/model_executor/cuda_graph_runner.py", line 254, in capture
    ) = self.capture_one_batch_size(bs, forward)
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which 1.10 GiB is free. Of the allocated memory 75.20 GiB is allocated by PyTorch, and 0.40 GiB is reserved by PyTorch but unallocated.

"""
P, NEED = 78.50 * GIB, 1.90 * GIB


def _mm_oom(tmp_path: Path, server_args: bool = True) -> Path:
    lines = MM.read_text(encoding="utf-8").splitlines()[:8]
    return _write(tmp_path, "\n".join(lines[0 if server_args else 1 :]) + "\n" + MM_OOM)


def _mfs_fix(path: Path) -> Fix:
    (L,) = read_log(str(path)).launches
    f = outcome(L).failure
    assert f is not None
    return next(x for x in f.fixes if x.flag == "--mem-fraction-static")


def test_lower_mfs_frees_what_it_claims_through_the_multimodal_scaling(tmp_path: Path) -> None:
    """The rule runs with flag x 0.95, so lowering the flag by d frees P x 0.95 x d: 0.854
    frees 78.50 x 0.95 x 0.026 = 1.94 GiB >= 1.90, and 0.855 (what need / P alone gives)
    would free only 1.86 GiB."""
    fix = _mfs_fix(_mm_oom(tmp_path))
    x = float(fix.value or 0)
    assert x == 0.854
    assert P * 0.95 * (0.88 - x) >= NEED > P * 0.95 * (0.88 - (x + 0.001))
    assert isinstance(fix.effect, LowerMfs)
    assert fix.effect.freed_bytes == math.floor(P * (0.88 * 0.95 - x * 0.95))
    text = " ".join(effect_text(fix.effect).split())
    assert "1.90 / (78.50 x 0.95) = 0.0255" in text and "scales the flag by 0.95" in text
    # The budget at the proposed flag, by the same rule the sizing quotes, is what it claims.
    sz = build_ledger(read_log(str(_mm_oom(tmp_path))).launches[0]).sizing
    assert sz is not None
    gained = rules.kv_budget_bytes(sz.after_weights_bytes, sz.pre_load_bytes, sz.rule_mfs)
    gained -= rules.kv_budget_bytes(sz.after_weights_bytes, sz.pre_load_bytes, sz.rule_mfs_for(x))
    assert abs(gained - fix.effect.freed_bytes) <= 1


def test_flag_and_rule_values_are_inverse() -> None:
    sz = build_ledger(read_log(str(MM)).launches[0]).sizing
    assert sz is not None and sz.scaling.factor == 0.95
    for flag in (0.5, 0.836, 0.88, 0.95):
        assert sz.flag_mfs_for(sz.rule_mfs_for(flag)) == pytest.approx(flag)


def test_a_relative_mfs_change_uses_the_scaling_without_server_args(tmp_path: Path) -> None:
    """No server_args: the value in use is unknown, but the date and Load weight end's type
    (Qwen2VLForConditionalGeneration) say the 0.95 applies: d >= 1.90 / (78.50 x 0.95) =
    0.02548, so 0.026 (need / P alone gives 0.025)."""
    fix = _mfs_fix(_mm_oom(tmp_path, server_args=False))
    assert fix.value is None and fix.change == LowerByAtLeast(0.026)
    assert fix_value(fix) == "at least 0.026 lower than this launch used"
    assert "P x 0.95 x d must cover" in " ".join(effect_text(fix.effect).split())


def test_diff_terms_add_up_under_the_scaling(tmp_path: Path) -> None:
    """The same multimodal start-up at mfs 0.85: only the mfs term moves, and it is the change
    of the rule's budget, P x 0.95 x (0.85 - 0.88), not P x (0.85 - 0.88). B's pool is the
    rule's at 0.85 x 0.95: 62.73 - 78.50 x 0.1925 = 47.62 GiB (2.24 less: pool end 14.60),
    891,614 tokens of 57,344 B (A: 933,506, the same 26 short of rest // cell)."""
    b = MM.read_text(encoding="utf-8")
    for old, new in (
        ("mem_fraction_static=0.88", "mem_fraction_static=0.85"),
        ("Memory pool end. avail mem=12.36 GB", "Memory pool end. avail mem=14.60 GB"),
        ("max_total_num_tokens=933506", "max_total_num_tokens=891614"),
    ):
        assert old in b
        b = b.replace(old, new)
    a_launch = read_log(str(MM)).launches[0]
    b_launch = read_log(str(_write(tmp_path, b, "b.log"))).launches[0]
    la, lb = build_ledger(a_launch), build_ledger(b_launch)
    kv = kv_change(a_launch, la, b_launch, lb)
    assert kv is not None and la.sizing is not None and lb.sizing is not None
    term = next(t for t in kv.terms if t.name is TermKind.MFS)
    assert term.bytes == math.floor(P * 0.95 * (0.85 - 0.88))
    assert sum(t.bytes for t in kv.terms if t.bytes is not None) == pytest.approx(
        lb.sizing.rest_bytes - la.sizing.rest_bytes, abs=2
    )


# --- item 4: sentences of the crashed and cut corpus logs ----------------------------------------


def test_a_cut_log_names_its_last_recognised_line_not_the_files_end() -> None:
    """031 has 16 lines; the last one is a cut '[20'. Line 15 (DP5's Memory pool end) is the
    last line logmem recognises, which is not 'the last line' of the log; DP1 TP1's own last
    line is 14 (its Memory pool end)."""
    text = _text(corpus_log("031-"))
    said = "on DP1 TP1 (its last line 14; the last recognised line of the log is 15)"
    assert said in text and "(last line" not in text


def test_a_cut_log_after_one_capture_says_where_start_up_stood() -> None:
    """027: TP0's decode capture ended at 10.81 (line 7) and the piecewise capture began at 10.81
    (line 8) before the excerpt is cut; TP1 printed no decode begin (its first capture line is
    the end), so its capture begin is not the piecewise begin's 10.88."""
    path = corpus_log("027-")
    text = _text(path)
    assert (
        "10.81 GiB was free on TP0 when the piecewise capture began, the last reading before the "
        "log stops" in text
    )
    row = next(
        ln for ln in render(read_log(str(path)), "text").splitlines() if ln.startswith("TP1 ")
    )
    assert row.split()[1:] == ["-", "-", "-", "-", "10.88", "0.83"]


def test_pools_above_the_budget_quote_the_cell_sglang_assumed() -> None:
    """003: SGLang sized 3,199,575 tokens from a 164.57 GiB budget (55,227 B per token) but the
    KV line allocates 183.15 GiB (61,463 B per token): its cell size left something out (the
    old sentence blamed 'the cell size the sizing assumed' without saying whose, or which)."""
    text = _text(corpus_log("003-"))
    assert (
        "164.57 GiB / 3,199,575 tokens = 55,227 bytes per token, but the pools allocate 61,463"
        in text
    )


def test_one_step_and_the_headroom_use_the_scaling(tmp_path: Path) -> None:
    """'CUDA error: out of memory' prints no figures: the fix is one 0.01 step of the flag
    (0.88 -> 0.87), which frees P x 0.95 x 0.01 = 0.75 GiB; the headroom lazy buffers must fit in
    is P x (1 - 0.88 x 0.95) = 12.87 GiB, not P x 0.12 = 9.42."""
    lines = MM.read_text(encoding="utf-8").splitlines()[:8]
    crash = MM_OOM.splitlines()[:3] + ["RuntimeError: CUDA error: out of memory", ""]
    fix = _mfs_fix(_write(tmp_path, "\n".join(lines + crash) + "\n"))
    assert fix.value == "0.87" and isinstance(fix.effect, LowerMfs)
    assert fix.effect.freed_bytes == math.floor(P * 0.95 * 0.01)
    doc = _json(MM)
    comm = doc["launches"][0]["communication"]
    assert "12.87" in json.dumps(comm) and "9.42" not in json.dumps(comm)
