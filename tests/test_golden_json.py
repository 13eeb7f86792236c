"""Golden JSON (`logmem analyze -f json`) for every fixtures/*.log; `pytest --update-golden` rewrites them.

The list of logs is the directory listing, so a new fixture without a golden fails here with the
instruction to create one. Fields that other stages add to the JSON show up as a diff to accept.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import FIXTURES, GOLDEN, fixture_logs
from golden import compare
from logmem.api import read_log
from logmem.report.jsonout import render

LOGS = fixture_logs()


def test_there_are_fixture_logs() -> None:
    assert LOGS, f"no *.log in {FIXTURES}"


@pytest.mark.parametrize("log", LOGS, ids=[p.stem for p in LOGS])
def test_analyze_json_golden(log: Path, update_golden: bool) -> None:
    out = render(read_log(str(log)))
    json.loads(out)  # valid JSON before anything else
    compare(out, GOLDEN / log.stem / "analyze.json", update=update_golden)


def test_every_golden_has_its_fixture() -> None:
    """A golden directory whose fixture was renamed or removed is stale."""
    stems = {p.stem for p in LOGS}
    stale = sorted(
        p.parent.name for p in GOLDEN.glob("*/analyze.json") if p.parent.name not in stems
    )
    assert not stale, f"golden JSON without a fixtures/*.log: {stale}; delete tests/golden/<name>/"
