"""SGLang's newer pool-sizing errors (review27a #1): every error whose text asks to raise
--mem-fraction-static is memory-related whatever its exception type, and the KV-sizing
errors of sglang 0.5.13+ get the same KV-budget Fixes as "Not enough memory", with SGLang's
own suggested value quoted.

Wordings copied from the released wheels (sglang 0.5.14 model_runner_kv_cache_mixin.py
_profile_available_bytes; 0.5.23 kv_cache_configurator.py, unified_memory_pool.py,
pool_configurator.py, npu/dsv4/dsv4_allocator.py). Figures come from the log text.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import FIXTURES
from logmem.analysis.failures import KVSizing, outcome, verdict
from logmem.analysis.failures.facts import Failure
from logmem.api import read_log
from logmem.report.verdict import verdict_lines

BASE = FIXTURES / "not-enough-memory-kv-constructed.log"
OLD = (
    "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. "
    "Current value: mem_fraction_static=0.85"
)
V0514 = (
    "ValueError: Loaded weights leave no GPU memory for the KV cache under "
    "--mem-fraction-static=0.85. Raise --mem-fraction-static above 0.863 (minimum viable = "
    "1 - available/pre = 0.8628). If using speculative decoding, draft weights are now counted."
)
MAMBA = (
    "RuntimeError: Not enough GPU memory for hybrid (mamba/linear-attention) state cache. "
    "Computed max_mamba_cache_size=0 (total_rest_memory=-1.00 GB, mamba_cache_per_req=52.31 MB). "
    "Try: (1) reduce --max-running-requests, (2) increase --mem-fraction-static, (3) reduce "
    "--speculative-num-draft-tokens, or (4) use GPUs with more memory."
)
MAMBA_SMALL = (
    "RuntimeError: Hybrid (mamba/linear-attention) state cache is too small to serve any "
    "requests. max_mamba_cache_size=0, mamba_ratio=2, resulting max_num_reqs=0. Try: (1) reduce "
    "--max-running-requests, (2) increase --mem-fraction-static, or (3) use GPUs with more memory."
)
UNIFIED = (
    "RuntimeError: [unified-memory-pool] MHATokenToKVPool: byte budget 0 cannot fit ONE "
    "worst-case request (bs=1 floor 1073741824 = kv=1073741824). A pool this size "
    "retract-livelocks at runtime. Raise --mem-fraction-static, lower the model context "
    "length, or reduce reserved memory."
)
SWA = (
    "RuntimeError: SWA pool cap (65536 tokens, 12.50 GiB) leaves no room for the full KV pool "
    "within the available 10.20 GiB. Reduce --max-running-requests, lower "
    "SGLANG_SWA_EVICTION_INTERVAL, or increase --mem-fraction-static."
)
# No pattern knows these: the class rule (the text asks for a larger mfs) decides.
DSV4 = (
    "RuntimeError: DSV4 c4 state pool exhausted: need 3 new slots, available=0. Raise "
    "--mem-fraction-static, lower --max-running-requests, or check that "
    "DSV4NPUTokenToKVPoolAllocator.free(req=...) releases state slots on req finish."
)
ANY_TYPE = "KeyError: 'kv pool has no room; increase --mem-fraction-static to 0.9'"


def _with_error(tmp_path: Path, line: str) -> Path:
    text = BASE.read_text()
    assert text.count(OLD) == 2
    text = text.replace(OLD, line)
    # The `raise RuntimeError(` frame above it stays: it does not decide the type.
    p = tmp_path / "kv.log"
    p.write_text(text)
    return p


def _failure(p: Path) -> Failure:
    f = outcome(read_log(str(p)).launches[0]).failure
    assert f is not None
    return f


def _says(p: Path) -> str:
    return " ".join(verdict_lines(verdict(read_log(str(p)).launches[0])))


def _mfs_values(f: Failure) -> list[float]:
    return [float(x.value) for x in f.fixes if x.flag == "--mem-fraction-static" and x.value]


def test_the_0514_fixture_is_memory_related_with_the_kv_fixes_and_sglangs_value() -> None:
    p = FIXTURES / "not-enough-memory-kv-v0514-constructed.log"
    f = _failure(p)
    assert f.memory_related is True
    assert f.kind == "not_enough_memory"
    assert isinstance(f.record, KVSizing)
    assert f.record.form == "no_kv_memory"
    assert f.record.mem_fraction_static == 0.85
    assert f.record.suggested_mfs == 0.863
    assert f.exc_type == "ValueError"
    # The same Fixes as the old wording: 1 - 10.76 / 78.40 = 0.8628 -> 0.863; TP 2 -> 4.
    assert _mfs_values(f) == [0.863]
    assert [x.flag for x in f.fixes] == ["--mem-fraction-static", "--tp-size"]
    says = _says(p)
    assert "Memory-related" in says
    assert "code, install or version" not in says
    assert "do not change --mem-fraction-static" not in says
    assert "Raise --mem-fraction-static above 0.863" in says
    # 10.76 - 78.40 x 0.15 = -1.00
    assert "= -1.00 GiB" in says


@pytest.mark.parametrize(
    ("line", "form"),
    [
        (V0514, "no_kv_memory"),
        (MAMBA, "state_cache"),
        (MAMBA_SMALL, "state_cache"),
        (UNIFIED, "unified_pool"),
        (SWA, "swa_cap"),
        (DSV4, "asks_mfs"),
        (ANY_TYPE, "asks_mfs"),
    ],
)
def test_every_error_asking_for_a_larger_mfs_is_memory_related(
    tmp_path: Path, line: str, form: str
) -> None:
    p = _with_error(tmp_path, line)
    f = _failure(p)
    assert f.memory_related is True, line
    assert isinstance(f.record, KVSizing)
    assert f.record.form == form
    # SGLang asks for more: every mfs Fix goes up from 0.85, and the budget's lower end is 0.863.
    assert _mfs_values(f) and all(v > 0.85 for v in _mfs_values(f))
    assert min(_mfs_values(f)) == 0.863
    says = _says(p)
    assert "Not memory-related" not in says
    assert "do not change --mem-fraction-static" not in says


@pytest.mark.parametrize("line", [MAMBA, UNIFIED, SWA])
def test_a_pool_with_a_fixed_part_says_a_positive_budget_is_not_enough(
    tmp_path: Path, line: str
) -> None:
    says = _says(_with_error(tmp_path, line))
    assert "a positive budget is only the start" in says


def test_a_text_that_says_not_to_raise_mfs_is_not_taken_as_the_remedy(tmp_path: Path) -> None:
    p = _with_error(tmp_path, "ValueError: bad config; do not raise --mem-fraction-static here")
    f = _failure(p)
    assert f.memory_related is False


def test_the_rule_positive_note_says_what_not_enough_memory_means_since_0514() -> None:
    says = _says(FIXTURES / "not-enough-memory-rule-positive-constructed.log")
    assert "from sglang 0.5.14 on, this message means exactly that" in says


def test_a_generic_advice_names_its_type_once(tmp_path: Path) -> None:
    says = _says(_with_error(tmp_path, DSV4))
    assert "Crashed: RuntimeError asking to raise --mem-fraction-static (DSV4 c4 state pool" in says
