"""The shared corpus, in-process: the same comparisons as ../shared/tools/check_corpus.py, one test per log.

check_corpus.py runs `logmem analyze --format json` per log; this runs read_log + analysis_json and
hands the result to that script's own `compare`, so the two cannot disagree about the contract.
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from conftest import CORPUS, CORPUS_MISSING, SHARED, corpus_logs
from logmem.api import read_log
from logmem.report.jsonout import analysis_json

CHECKER = SHARED / "tools" / "check_corpus.py"


def _load_checker() -> ModuleType | None:
    if not CHECKER.is_file():
        return None
    spec = importlib.util.spec_from_file_location("check_corpus", CHECKER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def compare() -> Callable[[dict[str, Any], dict[str, Any]], list[str]]:
    module = _load_checker()
    if module is None:
        pytest.skip(f"no {CHECKER} (the shared tools live beside the repo, in ../shared)")
    return module.compare  # type: ignore[no-any-return]


LOGS = [p for p in corpus_logs() if p.with_suffix(".expected.json").exists()]


@pytest.mark.skipif(not CORPUS.is_dir(), reason=CORPUS_MISSING)
def test_the_corpus_has_oracles() -> None:
    assert LOGS, f"no *.log with a *.expected.json in {CORPUS}"


@pytest.mark.parametrize(
    "log",
    [pytest.param(p, id=p.stem) for p in LOGS]
    or [pytest.param(None, marks=pytest.mark.skip(reason=CORPUS_MISSING))],
)
def test_corpus_log_matches_its_oracle(log: Path, compare: Callable[..., list[str]]) -> None:
    expected = json.loads(log.with_suffix(".expected.json").read_text(encoding="utf-8"))
    # through JSON text, as the command-line check sees it
    doc = json.loads(json.dumps(analysis_json(read_log(str(log))), default=str))
    problems = compare(doc, expected)
    assert not problems, f"{log.name}:\n  " + "\n  ".join(problems)
