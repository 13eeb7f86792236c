"""Review 27b, the estimate / --model-config / snapshot / API items (fix27b_est)."""

from __future__ import annotations

import json

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
