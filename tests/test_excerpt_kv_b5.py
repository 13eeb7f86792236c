"""analyze, review B5: an excerpt's KV lines are said in the text and Markdown reports (and the
JSON's findings) even where the main rank's ledger has no pool step to hold them."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from conftest import FIXTURES, corpus_log
from logmem.cli.main import cli


def _report(prefix: str, fmt: str) -> str:
    r = CliRunner().invoke(cli, ["analyze", str(corpus_log(prefix)), "-f", fmt])
    assert r.exit_code == 0, r.output
    return r.output


CASES = {
    # 026 l.2: DP2 only, K and V sizes; the main rank DP0 prints no pool readings.
    "026-": "KV pool 1,029,389 tokens, K 47.12 + V 47.12 GiB on DP2 TP2 EP2 (line 2)",
    # 029 l.1-5: four ranks print one figure; TP0 (the main rank) has only its capture begin.
    "029-": "KV pool 2,795,207 tokens, K 53.31 + V 53.31 GiB on each of TP1, TP3, TP5 and TP6 "
    "(lines 1, 2, 3 and 5)",
    # 031 l.10-13: MLA's single 'KV size'.
    "031-": "KV pool 161,488 tokens, KV 10.57 GiB on each of DP1 TP1, DP3 TP3, DP5 TP5 and DP7 TP7 "
    "(lines 10, 11, 12 and 13)",
}


@pytest.mark.parametrize("prefix", sorted(CASES))
@pytest.mark.parametrize("fmt", ["text", "markdown"])
def test_the_logged_kv_pool_is_in_the_report(prefix: str, fmt: str) -> None:
    flat = " ".join(_report(prefix, fmt).split())
    assert CASES[prefix] in flat
    assert "no pool step in the ledger of" in flat


@pytest.mark.parametrize("prefix", sorted(CASES))
def test_json_findings_say_it_too(prefix: str) -> None:
    doc = json.loads(_report(prefix, "json"))
    findings = " ".join(doc["launches"][0]["findings"])
    assert CASES[prefix] in findings


def test_not_said_twice_where_the_ledger_or_the_budget_shows_the_pool() -> None:
    for name in ("001-qwq32b-tp4-l4-docs.log", "cut-001-after-57-constructed.log"):
        r = CliRunner().invoke(cli, ["analyze", str(FIXTURES / name)])
        assert "KV cache as the log states it" not in r.output
