"""--model-config fills what the log lacks, labelled as config.json's: the context length SGLang
serves when server_args has context_length=None (023), and the mem_fraction_static holding one
full context after a "Not enough memory" threshold fix (not-enough-memory-kv fixture)."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import corpus_log
from logmem import api
from logmem.report.text import render as _render
from logmem.sglang import rules

ROOT = Path(__file__).resolve().parents[1]
LOG_023 = corpus_log("023-")
NEM = ROOT / "fixtures" / "not-enough-memory-kv-constructed.log"


def render(a: api.Analysis) -> str:
    """The text report with its line wrapping undone."""
    return " ".join(_render(a).split())


def _config(tmp: Path, **cfg: object) -> str:
    p = tmp / "config.json"
    p.write_text(json.dumps(cfg), encoding="utf-8")
    return str(p)


def _qwen3_14b(tmp: Path) -> str:
    return _config(
        tmp,
        architectures=["Qwen3ForCausalLM"],
        model_type="qwen3",
        hidden_size=5120,
        intermediate_size=17408,
        num_hidden_layers=40,
        num_attention_heads=40,
        num_key_value_heads=8,
        head_dim=128,
        max_position_embeddings=40960,
        torch_dtype="bfloat16",
        vocab_size=151936,
    )


def _qwen25_72b(tmp: Path) -> str:
    return _config(
        tmp,
        architectures=["Qwen2ForCausalLM"],
        model_type="qwen2",
        hidden_size=8192,
        intermediate_size=29568,
        num_hidden_layers=80,
        num_attention_heads=64,
        num_key_value_heads=8,
        max_position_embeddings=32768,
        torch_dtype="bfloat16",
        vocab_size=152064,
    )


def test_config_context_length_follows_sglang_keys_and_rope_scaling() -> None:
    assert rules.config_context_length({"max_position_embeddings": 40960}) == (
        40960,
        "max_position_embeddings",
    )
    # seq_length comes before max_position_embeddings in SGLang's list
    both = {"seq_length": 8192, "max_position_embeddings": 32768}
    assert rules.config_context_length(both) == (8192, "seq_length")
    yarn = {"max_position_embeddings": 32768, "rope_scaling": {"factor": 4.0, "type": "yarn"}}
    assert rules.config_context_length(yarn) == (131072, "max_position_embeddings")
    orig = {"factor": 4.0, "original_max_position_embeddings": 8192}
    assert (
        rules.config_context_length({"max_position_embeddings": 32768, "rope_scaling": orig})[0]
        == 32768
    )
    llama3 = {"factor": 8.0, "rope_type": "llama3"}
    assert (
        rules.config_context_length({"max_position_embeddings": 131072, "rope_scaling": llama3})[0]
        == 131072
    )
    assert rules.config_context_length({}) is None  # not SGLang's 2048: the class may default it


def test_023_context_from_config_only_with_model_config(tmp_path: Path) -> None:
    plain = api.analyze(str(LOG_023))
    c0 = plain.ledger(plain.launches[0]).context
    assert c0 is not None and c0.context_len is None and c0.context_source is None
    a = api.analyze(str(LOG_023), model_config=_qwen3_14b(tmp_path))
    c = a.ledger(a.launches[0]).context
    assert c is not None and c.context_len == 40960 and c.context_source == "config"
    assert c.slots_short and c.unused_by_slots_tokens == 139814 - 40960
    text = render(a)
    assert (
        "the context length 40,960 from config.json (--model-config: max_position_embeddings"
        in text
    )
    assert "context_len 40,960" not in text  # never as if the log printed it
    assert "--max-total-tokens 40,960" in text
    assert "the context length 40,960" not in render(plain)


def test_not_enough_memory_fix_holds_one_context_with_config(tmp_path: Path) -> None:
    plain = render(api.analyze(str(NEM)))
    assert "from config.json" not in plain
    a = api.analyze(str(NEM), model_config=_qwen25_72b(tmp_path))
    led = a.ledger(a.launches[0])
    assert led.config is not None and led.config.cell_bytes == 163840
    fit = led.config.fit
    assert fit is not None and fit.mfs == 0.927 and not fit.context_from_log
    text = render(a)
    assert (
        "Fix: --mem-fraction-static 0.927 for a pool of one full context, from config.json" in text
    )
    assert "32,768 (max_position_embeddings" in text and "= 5.00 GiB" in text
    # the threshold fix stays first, as without --model-config
    assert text.index("Fix: --mem-fraction-static 0.863") < text.index("0.927")


def test_other_architecture_config_adds_nothing(tmp_path: Path) -> None:
    a = api.analyze(str(NEM), model_config=_qwen3_14b(tmp_path))
    assert a.ledger(a.launches[0]).config is None
    assert "from config.json (--model-config), not the log" not in render(a)
