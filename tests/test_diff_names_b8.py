"""diff / fit, review B8a: a setting that only names a place or a label (a path, a directory,
a served name, host and port) cannot change GPU memory, so it is never offered as a cause of a
change, nor stands in the way of a slope; one rule decides it (rules.memory_neutral_arg)."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_fit import Model, diff, pair

from logmem.compare.args import compare_args
from logmem.report.compare.render import render_markdown, render_text, to_json
from logmem.sglang.rules import memory_neutral_arg

# Two launches of one model at max bs 80 and 160 that differ besides in names and places only,
# spelled as SGLang's server_args printed them (file_storage_pth is the 2024 spelling).
NAMES_A = {
    "file_storage_pth": "sglang_storage",
    "served_model_name": "qwen",
    "tokenizer_path": "/models/test",
    "download_dir": None,
    "crash_dump_folder": None,
    "export_metrics_to_file_dir": None,
    "debug_tensor_dump_output_folder": None,
    "dist_init_addr": None,
    "disaggregation_bootstrap_port": 8998,
}
NAMES_B = {
    "file_storage_pth": "SGLang_storage",
    "served_model_name": "qwen-prod",
    "tokenizer_path": "/data/tokenizers/test",
    "download_dir": "/cache/hf",
    "crash_dump_folder": "/tmp/crash",
    "export_metrics_to_file_dir": "/var/log/sglang",
    "debug_tensor_dump_output_folder": "/tmp/dump",
    "dist_init_addr": "10.0.0.1:5000",
    "disaggregation_bootstrap_port": 9000,
    "spec_trace_dir": "/tmp/trace",  # only B prints it (another version)
}


def _pair(tmp: Path, extra_b: dict[str, object] | None = None):  # type: ignore[no-untyped-def]
    a = Model(max_bs=80, port=30000, extra_args=NAMES_A)
    b = Model(max_bs=160, port=30001, extra_args=NAMES_B | (extra_b or {}))
    return pair(tmp, a, b)


def test_names_and_paths_are_not_causes_and_do_not_block_the_slope(tmp_path: Path) -> None:
    d = diff(*_pair(tmp_path))
    changed = {c.key for c in d.args.changed}
    assert changed == {"cuda_graph_max_bs"}, changed
    assert d.args.confounders == ()
    assert {c.key for c in d.args.ignored} == set(NAMES_A) | {"port"}
    assert d.args.ignored_one_sided == ("spec_trace_dir",)
    assert d.slopes, "the names alone must not refuse a slope"
    text = " ".join(render_text(d).split())
    table = text[text.index("Settings that differ") : text.index("Ignored (")]
    for key in [*NAMES_B, "port"]:
        assert key not in table, key
    assert "only B prints spec_trace_dir" in text
    assert "Only in B" not in text  # not offered beside the table as a possible cause
    md = render_markdown(d)
    assert "file_storage_pth" not in md.split("Ignored (")[0]
    doc = to_json(d)
    assert set(doc["changed_args"]) == {"cuda_graph_max_bs"}
    assert doc["ignored_one_sided"] == ["spec_trace_dir"]
    assert doc["only_in"] == {"B": ["spec_trace_dir"]}  # the contract: every key B alone prints


def test_a_path_that_loads_weights_stays_a_cause(tmp_path: Path) -> None:
    """Another draft model or LoRA adapter file is another thing on the GPU."""
    d = diff(*_pair(tmp_path, {"speculative_draft_model_path": "/models/draft-b"}))
    assert "speculative_draft_model_path" in d.args.confounders
    assert not d.slopes


@pytest.mark.parametrize(
    "key,neutral",
    [
        # names and places, as SGLang 0.3-0.5.9 print them (sglang/srt/server_args.py)
        ("file_storage_pth", True),
        ("file_storage_path", True),
        ("served_model_name", True),
        ("hf_chat_template_name", True),
        ("chat_template", True),
        ("host", True),
        ("grpc_port", True),
        ("remote_instance_weight_loader_send_weights_group_ports", True),
        ("nccl_init_addr", True),
        ("encoder_urls", True),
        ("otlp_traces_endpoint", True),
        ("download_dir", True),
        ("crash_dump_folder", True),
        ("modelopt_checkpoint_save_path", True),
        ("debug_tensor_dump_input_file", True),
        ("tokenizer_path", True),
        ("model_path", True),  # the model is compared by its weights line
        # what the GPU loads or sizes
        ("speculative_draft_model_path", False),
        ("lora_paths", False),
        ("kt_weight_path", False),
        ("decrypted_config_file", False),
        ("modelopt_checkpoint_restore_path", False),
        ("mem_fraction_static", False),
        ("cuda_graph_max_bs", False),
        ("context_length", False),
    ],
)
def test_the_rule_on_sglang_keys(key: str, neutral: bool) -> None:
    assert memory_neutral_arg(key) is neutral


def test_compare_args_puts_a_renamed_path_with_the_ignored(tmp_path: Path) -> None:
    la, _, lb, _ = pair(
        tmp_path,
        Model(extra_args={"some_new_log_dir": "/a"}),
        Model(extra_args={"some_new_log_dir": "/b"}),
    )
    cmp = compare_args([la, lb], ["A", "B"])
    assert [c.key for c in cmp.ignored] == ["some_new_log_dir"] and cmp.confounders == ()
