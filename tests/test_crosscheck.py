"""`logmem estimate` and `analyze --model-config`: expected sizes beside measured ones."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from conftest import FIXTURES
from logmem.analysis.attribution import build_ledger
from logmem.analysis.ledger import What
from logmem.api import read_log
from logmem.cli.main import cli
from logmem.estimate.crosscheck import KVDiffers, KVWidth, crosscheck
from logmem.report.estimate.words import mismatch_text

QWQ = FIXTURES / "configs" / "qwq-32b.json"
LLAMA = FIXTURES / "configs" / "llama-3-70b.json"
LOG = FIXTURES / "001-qwq32b-tp4-l4-docs.log"


def test_estimate_takes_parallel_sizes_from_the_log() -> None:
    res = CliRunner().invoke(cli, ["estimate", str(LOG), "--model-config", str(QWQ), "-f", "json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["schema"] == "logmem.estimate/1"
    assert doc["parallel"]["tp"] == 4
    assert doc["kv_bytes_per_token_per_rank"] == 65_536
    # Request slots and context length from the scheduler summary (the dump has None): the
    # same table the ledger attributes in the pool step.
    led = build_ledger(read_log(str(LOG)).launches[0])
    pools = led.ranks[0].phase("target_pools")
    assert pools is not None
    table = next(c for c in pools.causes if c.what is What.REQ_TABLE)
    # 0.4.3.post4 prints the pool size, padding row included: 2049 rows.
    assert doc["req_to_token_bytes"] == table.bytes == 2049 * (131072 + 4) * 4
    assert doc["unknown"] == []


def test_estimate_options_override() -> None:
    res = CliRunner().invoke(
        cli, ["estimate", "--model-config", str(LLAMA), "--tp", "16", "-f", "json"]
    )
    doc = json.loads(res.stdout)
    assert doc["kv_bytes_per_token_per_rank"] == 40_960  # KV heads replicated past TP 8
    text = CliRunner().invoke(cli, ["estimate", "--model-config", str(LLAMA), "--tp", "8"]).stdout
    assert "40,960 B per token per rank" in text


def test_estimate_bad_config(tmp_path: Path) -> None:
    bad = tmp_path / "config.json"
    bad.write_text("{not json")
    res = CliRunner().invoke(cli, ["estimate", "--model-config", str(bad)])
    assert res.exit_code == 1 and res.output.startswith("Error: ")


def test_analyze_with_model_config_agrees_on_qwq() -> None:
    res = CliRunner().invoke(cli, ["analyze", str(LOG), "--model-config", str(QWQ), "-f", "json"])
    doc = json.loads(res.stdout)
    checks = {c["what"]: c for c in doc["launches"][0]["expected"]["checks"]}
    kv = checks["KV bytes per token per rank"]
    assert kv["measured_bytes"] == kv["expected_bytes"] == 65_536 and not kv["differs"]
    assert not checks["weights per rank"]["differs"]  # 15.54 measured vs 15.26 expected
    text = CliRunner().invoke(cli, ["analyze", str(LOG), "--model-config", str(QWQ)]).stdout
    assert "Measured against config.json" in text


def test_wrong_kv_width_is_named() -> None:
    config = json.loads(QWQ.read_text())
    config["num_key_value_heads"] = 16  # twice the real KV heads: the measured cell is half
    cc = crosscheck(build_ledger(read_log(str(LOG)).launches[0]), config)
    assert [type(f) for f in cc.findings] == [KVDiffers]
    assert cc.findings[0].width is KVWidth.HALF  # type: ignore[union-attr]
    assert "half as wide" in mismatch_text(cc.findings[0])
    config["num_key_value_heads"] = 4
    cc = crosscheck(build_ledger(read_log(str(LOG)).launches[0]), config)
    assert any("twice as wide" in mismatch_text(f) for f in cc.findings)


def test_estimate_tp_that_does_not_divide_the_heads_is_a_usage_error() -> None:
    res = CliRunner().invoke(cli, ["estimate", "--model-config", str(LLAMA), "--tp", "3"])
    assert res.exit_code == 2
    assert "Invalid value for '--tp': TP 3 does not divide the 64 attention heads" in res.output
    assert "TP sizes that fit this model: 1, 2, 4, 8, 16, 32, 64." in res.output
    assert "Traceback" not in res.output


def test_estimate_tp_from_the_log_that_does_not_fit_the_config_is_an_error(tmp_path: Path) -> None:
    config = json.loads(QWQ.read_text())
    config["num_attention_heads"] = 42  # the log ran TP 4: 42 heads cannot have been split
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    res = CliRunner().invoke(cli, ["estimate", str(LOG), "--model-config", str(path)])
    assert res.exit_code == 1
    assert "TP 4 does not divide the 42 attention heads" in res.output
    assert "tp_size is from" in res.output and LOG.name in res.output


def test_estimate_flags_fill_the_unknown_figures() -> None:
    base = ["estimate", "--model-config", str(QWQ), "--tp", "4", "-f", "json"]
    doc = json.loads(CliRunner().invoke(cli, base).stdout)
    assert {u["figure"]: u["flags"] for u in doc["unknown"]} == {
        "logits_buffer_bytes": ["--cuda-graph-max-bs"],
        "req_to_token_bytes": ["--max-running-requests"],
    }
    more = [
        "--cuda-graph-max-bs",
        "80",
        "--max-running-requests",
        "2048",
        "--context-length",
        "131072",
    ]
    doc = json.loads(CliRunner().invoke(cli, base + more).stdout)
    assert doc["unknown"] == []
    assert doc["logits_buffer_bytes"] == 80 * 152064 * 4
    assert doc["req_to_token_bytes"] == 2049 * (131072 + 4) * 4  # corpus 001 logs this table


def test_analyze_with_a_config_the_launch_cannot_split_says_so(tmp_path: Path) -> None:
    config = json.loads(QWQ.read_text())
    config["num_attention_heads"] = 42
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    res = CliRunner().invoke(cli, ["analyze", str(LOG), "--model-config", str(path)])
    assert res.exit_code == 1
    assert res.output.startswith("Error: --model-config does not fit this launch")
    assert "TP 4 does not divide the 42 attention heads" in res.output


def test_api_expected_sizes_is_what_the_command_runs() -> None:
    import logmem.api as api

    by_path = api.expected_sizes(QWQ, str(LOG))
    by_dict = api.expected_sizes(json.loads(QWQ.read_text()), read_log(str(LOG)), tp=4)
    assert by_path == by_dict
    assert by_path.parallel.tp == 4 and by_path.req_to_token_bytes == 2049 * (131072 + 4) * 4
    cli_doc = json.loads(
        CliRunner()
        .invoke(cli, ["estimate", str(LOG), "--model-config", str(QWQ), "-f", "json"])
        .stdout
    )
    assert cli_doc["weights_bytes_per_rank"] == by_path.weights_bytes_per_rank
    assert api.expected_sizes(QWQ, tp=8).parallel.tp == 8


def test_estimate_picks_the_launch_of_a_restarted_log() -> None:
    two = FIXTURES / "two-launches-restart-constructed.log"
    res = CliRunner().invoke(cli, ["estimate", str(two), "--model-config", str(QWQ)])
    assert res.exit_code == 1 and "--launch" in res.output
    res = CliRunner().invoke(
        cli, ["estimate", str(two), "--model-config", str(QWQ), "--launch", "1"]
    )
    assert res.exit_code == 0, res.output
