"""Review 27b, the estimate / --model-config / snapshot / API items (fix27b_est)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import FIXTURES, corpus_log
from logmem.api import read_log
from logmem.cli.main import cli

# ----------------------------------------------------------------- 9: one list of findings


@pytest.mark.parametrize("prefix", ["001", "008", "024"])
def test_api_findings_are_the_reports(prefix: str) -> None:
    """Analysis.findings is what the JSON's findings[] holds, graph sentences included (024's
    "captured, memory not printed" was missing from the API)."""
    a = read_log(str(corpus_log(prefix)))
    doc = a.to_json()
    assert a.findings == [f for L in doc["launches"] for f in L["findings"]]
    if prefix in ("008", "024"):
        assert any("memory not printed" in f for f in a.findings)


# ----------------------------------------------------------------- 1: --model-config

QWQ = FIXTURES / "configs" / "qwq-32b.json"
LLAMA = FIXTURES / "configs" / "llama-3-70b.json"
LOG001 = FIXTURES / "001-qwq32b-tp4-l4-docs.log"


def _analyze(*args: str) -> str:
    res = CliRunner().invoke(cli, ["analyze", *args])
    assert res.exit_code == 0, res.output
    return res.stdout


def test_config_for_another_model_is_said_first_and_no_cause_is_guessed() -> None:
    text = _analyze("--model-config", str(LLAMA), str(LOG001))
    findings = text.split("Findings\n", 1)[1].split("\n\n", 1)[0]
    first = findings.split("\n- ")[0]
    assert "config.json is for LlamaForCausalLM" in first
    assert "the log loads Qwen2ForCausalLM" in first and "line 53" in first
    # The old findings blamed a KV layout ("holds more per token") and CPU offload.
    assert "holds more per token" not in text
    assert "cpu_offload_gb" not in text
    doc = json.loads(_analyze("--model-config", str(LLAMA), str(LOG001), "-f", "json"))
    found = doc["launches"][0]["expected"]["findings"]
    assert len(found) == 1 and found[0].startswith("config.json is for LlamaForCausalLM")


def test_same_architecture_smaller_cell_is_less_and_ruled_out_causes_are_not_offered(
    tmp_path: Path,
) -> None:
    cfg = json.loads(QWQ.read_text())
    cfg["num_hidden_layers"] = 80  # a bigger sibling: more KV per token, more weights
    p = tmp_path / "bigger.json"
    p.write_text(json.dumps(cfg))
    text = _analyze("--model-config", str(p), str(LOG001))
    joined = " ".join(text.split())
    assert "(0.80x): the pool holds less per token than the config's attention layers" in joined
    assert "holds more per token" not in joined
    # 001 prints cpu_offload_gb=0 and quantization=None: neither is offered as the cause.
    assert "likely CPU offload" not in joined
    assert "stronger quantisation" not in joined
    assert "rules out the usual causes (cpu_offload_gb=0, quantization=None)" in joined


# ----------------------------------------------------------------- 8: the init step's label


@pytest.mark.parametrize(
    ("prefix", "car"),
    # disabled (line 17); TP 1; TP 8 on H100; a TP group across two nodes
    [("001", False), ("040", False), ("011", True), ("multinode-node1", False)],
)
def test_init_label_names_custom_all_reduce_only_where_the_launch_has_it(
    prefix: str, car: bool
) -> None:
    from logmem.analysis.attribution import build_ledger
    from logmem.report.causes import cause_name

    L = read_log(str(corpus_log(prefix))).launches[0]
    led = build_ledger(L)
    init = led.ranks[0].phases[0]
    labels = [cause_name(c) for c in init.causes]
    assert any(lb.startswith("NCCL / gloo") for lb in labels), labels
    assert any("custom all-reduce" in lb for lb in labels) is car, labels


# ----------------------------------------------------------------- 5, 9b, 9c: estimate with a LOG

DSV3 = FIXTURES / "configs" / "deepseek-v3.json"


def _estimate_json(*args: str) -> dict:
    res = CliRunner().invoke(cli, ["estimate", *args, "-f", "json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def test_npu_deepep_has_no_cuda_formula_and_dp_lm_head_splits_over_attention_tp() -> None:
    doc = _estimate_json("--model-config", str(DSV3), str(corpus_log("019")))
    assert doc["deepep_buffer_bytes"] is None and doc["deepep_masked_gemm_bytes"] is None
    why = {u["figure"]: u["reason"] for u in doc["unknown"]}
    assert "npu" in why["deepep_buffer_bytes"] and "no formula" in why["deepep_buffer_bytes"]
    assert "deepep_masked_gemm_bytes" in why
    head = next(c for c in doc["components"] if c["name"] == "lm_head")
    # enable_dp_lm_head=True, tp 16, dp 4, DP attention: attention TP 4.
    assert head["bytes_per_rank"] == 129280 // 4 * 7168 * 2
    assert "attention TP 4" in head["why"]
    # modelslim came from the log: no "--quantization" to pass.
    w = next(u for u in doc["unknown"] if u["figure"] == "weights_bytes_per_rank")
    assert w["flags"] == []


def test_logits_buffer_follows_the_logs_version() -> None:
    old = _estimate_json("--model-config", str(QWQ), str(LOG001))  # 2025-03-08, v0.4.3
    assert old["logits_buffer_bytes"] is None and old["logits_buffer_static"] is False
    assert all(u["figure"] != "logits_buffer_bytes" for u in old["unknown"])
    assert any("none as a static buffer in this version" in n for n in old["notes"])
    new = _estimate_json(
        "--model-config", str(QWQ), str(FIXTURES / "pair-e7-maxbs128-constructed.log")
    )
    assert new["logits_buffer_static"] is True and new["logits_buffer_bytes"]
    bare = _estimate_json("--model-config", str(QWQ), "--cuda-graph-max-bs", "8")
    assert bare["logits_buffer_static"] is None and bare["logits_buffer_bytes"]
    assert any("from SGLang 0.5.1 on" in n for n in bare["notes"])


def test_tp_from_rank_tags_without_server_args_and_another_model_said_first() -> None:
    doc = _estimate_json("--model-config", str(QWQ), str(corpus_log("014")))
    assert doc["parallel"]["tp"] == 2
    assert any("TP 2 from the rank tags (TP0-TP1; no server_args)" in n for n in doc["notes"])
    res = CliRunner().invoke(cli, ["estimate", "--model-config", str(QWQ), str(corpus_log("014"))])
    head = res.stdout.split("Expected per rank")[0]
    assert "the log loads Qwen3_5ForConditionalGeneration" in head
    given = _estimate_json("--model-config", str(QWQ), str(corpus_log("014")), "--tp", "4")
    assert given["parallel"]["tp"] == 4
    assert not any("rank tags" in n for n in given["notes"])


def test_static_buffers_above_the_logits_buffer_are_consistent() -> None:
    from logmem.estimate.crosscheck import Check, Checked

    above = Check(Checked.STATIC_VS_LOGITS, 96 << 20, 72 << 20, 1 << 20, "decode")
    below = Check(Checked.STATIC_VS_LOGITS, 40 << 20, 72 << 20, 1 << 20, "decode")
    assert not above.differs and below.differs
    text = _analyze("--model-config", str(DSV3), str(corpus_log("019")))
    row = next(ln for ln in text.splitlines() if "static buffers vs logits buffer" in ln)
    assert row.rstrip().endswith("consistent"), row


# ----------------------------------------------------------------- 4, 10a: snapshot --log

SNAP = FIXTURES / "snapshots" / "capture-join.pickle"


def _snapshot(*args: str) -> str:
    res = CliRunner().invoke(cli, ["snapshot", str(SNAP), *args])
    assert res.exit_code == 0, res.output
    return " ".join(res.stdout.split())


def test_negative_outside_is_a_mismatch_not_a_split() -> None:
    text = _snapshot("--log", str(corpus_log("017")))
    assert "Outside PyTorch" not in text and "-0.65" not in text
    assert "more than the 0.60 GiB the log's capture took" in text
    assert "the snapshot is not of this capture" in text
    # 10a: the untagged rank has a subject.
    assert "The GPU (no rank tag) also captured piecewise" in text
    assert " also captured piecewise" not in text.replace("The GPU (no rank tag) also", "")


def test_outside_causes_follow_the_launch() -> None:
    text = _snapshot("--log", str(FIXTURES / "snapshots" / "capture-join-constructed.log"))
    assert "Outside PyTorch: 2.00 - 1.25 = 0.75 GiB" in text
    assert "DeepEP" not in text.split("Outside PyTorch")[1].split("no DeepEP")[0]
    assert "one GPU: no NCCL peers, no DeepEP" in text


def test_device_of_another_rank_is_flagged() -> None:
    text = _snapshot("--log", str(LOG001), "--rank", "TP2")
    assert "TP2 ran on cuda:2" in text and "snapshot is of device 0" in text
    assert "Outside PyTorch" not in text
    assert "TP2 ran on" not in _snapshot("--log", str(LOG001), "--rank", "TP0")


# ----------------------------------------------------------------- 7, 10e: snapshot trace


def test_oom_entry_is_described() -> None:
    p = FIXTURES / "snapshots" / "dict-2.5-full.pickle"
    res = CliRunner().invoke(cli, ["snapshot", str(p)])
    text = " ".join(res.stdout.split())
    assert (
        "Entry 10 (0.009 s): an allocation of 64.00 MiB failed with 3.00 MiB free on the device; "
        "PyTorch then held 40.00 MiB reserved, 20.00 MiB allocated." in text
    )
    assert "1 out-of-memory event." in text and "event(s)" not in text
    assert "1 segments" not in text
    doc = json.loads(CliRunner().invoke(cli, ["snapshot", str(p), "-f", "json"]).stdout)
    ooms = [o for t in doc["trace"]["devices"] for o in t["ooms"]]
    assert ooms == [
        {
            "entry": 10,
            "time_us": 1700000000009005,
            "size_bytes": 64 << 20,
            "device_free_bytes": 3 << 20,
            "reserved_bytes": 40 << 20,
            "allocated_bytes": 20 << 20,
        }
    ]


def test_trace_table_has_a_peak_and_names_its_active_change() -> None:
    p = FIXTURES / "snapshots" / "expandable-segments.pickle"
    text = CliRunner().invoke(cli, ["snapshot", str(p)]).stdout
    header = next(ln for ln in text.splitlines() if ln.startswith("pool ") and "peak" in ln)
    assert "active change" in header and "allocated change" not in header
    row = next(ln for ln in text.splitlines() if ln.startswith("(0, 0)") and "60.00 MiB" in ln)
    assert row.split()[7:9] == ["60.00", "MiB"]  # the peak of the levels 20, 40, 60, 60, 40


def test_embedding_under_dp_attention_is_hedged_by_version() -> None:
    doc = _estimate_json("--model-config", str(DSV3), str(corpus_log("019")))
    note = next(n for n in doc["notes"] if n.startswith("embedding under DP attention"))
    assert "0.5.1-0.5.7" in note and "attention TP 4" in note
