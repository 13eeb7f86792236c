"""Golden text and Markdown reports for every fixture log (JSON goldens live in test_golden_json)."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import GOLDEN, REPO, fixture_logs
from golden import compare
from logmem.api import read_log
from logmem.report import render


@pytest.mark.parametrize("fmt", ["text", "markdown"])
@pytest.mark.parametrize("path", fixture_logs(), ids=lambda p: p.name)
def test_report_golden(
    path: Path, fmt: str, update_golden: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A relative path: text wraps around the input's name, so it must not depend on the checkout.
    monkeypatch.chdir(REPO)
    out = render(read_log(str(path.relative_to(REPO))), fmt)
    ext = "txt" if fmt == "text" else "md"
    compare(out, GOLDEN / path.stem / f"analyze.{ext}", update=update_golden)


@pytest.mark.parametrize("fmt", ["text", "markdown", "json"])
def test_reports_are_deterministic(fmt: str) -> None:
    for path in fixture_logs()[:4]:
        assert render(read_log(str(path)), fmt) == render(read_log(str(path)), fmt)
