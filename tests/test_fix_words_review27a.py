"""How failure Fixes are written, review 27a #10: an environment variable is set as VAR=value
(the form a shell accepts), every --tp-size Fix says how many GPUs it needs, and the
Transformers backend is said to shard only its TP plan's linear layers (sglang 0.5.9
srt/models/transformers.py tensor_parallel), not to shard nothing."""

from __future__ import annotations

import pytest

from conftest import FIXTURES
from logmem.analysis.failures import verdict
from logmem.api import read_log
from logmem.report.verdict import verdict_lines


def _says(name: str) -> str:
    return " ".join(verdict_lines(verdict(read_log(str(FIXTURES / name)).launches[0])))


@pytest.mark.parametrize(
    ("name", "fix"),
    [
        ("imbalance-tp8-constructed.log", "Fix: SGLANG_ENABLE_TP_MEMORY_INBALANCE_CHECK=0: "),
        (
            "oom-decode-largest-bucket-constructed.log",
            "Fix: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True: ",
        ),
    ],
)
def test_an_env_var_fix_is_printed_as_a_shell_assignment(name: str, fix: str) -> None:
    says = _says(name)
    assert fix in says
    assert fix.replace("=", " ", 1) not in says


def test_a_relative_env_var_change_keeps_its_words() -> None:
    says = _says("deepep-buffer-failure-constructed.log")
    assert "Fix: SGLANG_DEEPEP_NUM_MAX_DISPATCH_TOKENS_PER_RANK <= " in says


@pytest.mark.parametrize(
    ("name", "gpus"),
    [("not-enough-memory-kv-constructed.log", 4), ("oom-load-weights-constructed.log", 8)],
)
def test_every_tp_size_fix_says_how_many_gpus_it_needs(name: str, gpus: int) -> None:
    says = _says(name)
    fix = says.split(f"Fix: --tp-size {gpus}: ", 1)[1].split("Fix: ", 1)[0]
    assert f"needs {gpus} GPUs" in fix, fix
    # ... beside the --tp-size change, not after the fp8 alternative the Fix also names
    if "--quantization fp8" in fix:
        flat = " ".join(fix.split())
        assert flat.index(f"needs {gpus} GPUs") < flat.index("--quantization fp8"), fix


def test_the_transformers_backend_is_said_to_shard_its_linear_layers_only() -> None:
    says = _says("hip-oom-rocm-constructed.log")
    assert "does not shard the model over the TP ranks" not in says
    assert "so the fallback does not shard the model" not in says
    assert "shards only the linear layers of the model's Transformers TP plan" in says
    assert "not fused MoE experts" in says
