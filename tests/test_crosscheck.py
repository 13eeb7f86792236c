"""`logmem estimate` and `analyze --model-config`: expected sizes beside measured ones."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from conftest import FIXTURES
from logmem.analysis.attribution import build_ledger
from logmem.api import read_log
from logmem.cli.main import cli
from logmem.estimate.crosscheck import crosscheck

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
    assert any("half as wide" in f for f in cc.findings)
    config["num_key_value_heads"] = 4
    cc = crosscheck(build_ledger(read_log(str(LOG)).launches[0]), config)
    assert any("twice as wide" in f for f in cc.findings)
