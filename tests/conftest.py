"""Shared test set-up: --update-golden, a pinned terminal width, where the logs are, and the
processes a test forks."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from logmem.model.analysis import Analysis

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
FIXTURES = REPO / "fixtures"
GOLDEN = TESTS / "golden"
# CI clones the repo with shared/ beside it; the corpus is not part of the repo.
SHARED = Path(__file__).resolve().parents[2] / "shared"
CORPUS = SHARED / "corpus"
CORPUS_MISSING = f"the shared corpus is not at {CORPUS} (it lives beside the repo, in ../shared)"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        default=False,
        help="Rewrite tests/golden/** from the current output instead of comparing.",
    )


@pytest.fixture
def update_golden(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-golden"))


@pytest.fixture(autouse=True)
def _pin_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    """Click and any width-aware output see the same terminal everywhere."""
    monkeypatch.setenv("COLUMNS", "100")


# The reader's three matchers, for tests parametrized over them (the `matcher` fixture).
MATCHERS = [
    "python",
    "regex",
    pytest.param(
        "hyperscan",
        marks=pytest.mark.skipif(
            importlib.util.find_spec("hyperscan") is None, reason="no hyperscan"
        ),
    ),
]


@pytest.fixture
def matcher(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """LOGMEM_MATCHER set to the parameter, with the reader's matcher cache cleared."""
    from logmem.parse import read as rd

    monkeypatch.setenv("LOGMEM_MATCHER", request.param)
    rd._MATCHERS.clear()
    yield request.param
    rd._MATCHERS.clear()


def corpus_log(prefix: str) -> Path:
    """The real log whose name starts with `prefix` (e.g. "021-"): the copy in fixtures/ if there
    is one, else the shared corpus. Skips only when the corpus is absent (a clone without it);
    a log that neither has is a failure, not a skip."""
    for folder in (FIXTURES, CORPUS):
        found = sorted(folder.glob(f"{prefix}*.log")) if folder.is_dir() else []
        if found:
            return found[0]
    if not CORPUS.is_dir():
        pytest.skip(CORPUS_MISSING)
    pytest.fail(f"no log named {prefix}*.log in {FIXTURES} or {CORPUS}")


def corpus_logs() -> list[Path]:
    return sorted(CORPUS.glob("*.log")) if CORPUS.is_dir() else []


def fixture_logs() -> list[Path]:
    return sorted(FIXTURES.glob("*.log")) if FIXTURES.is_dir() else []


def read_text_log(text: str, name: str = "constructed.log") -> Analysis:
    """read_log of ``text`` written (as UTF-8, newlines as given) to a temporary file."""
    import tempfile

    from logmem.api import read_log

    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / name
        p.write_bytes(text.encode())
        return read_log(str(p))


def bench_module(name: str) -> ModuleType:
    """bench/<name>.py, loaded by path (bench/ is scripts, not a package)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        f"logmem_bench_{name}", REPO / "bench" / f"{name}.py"
    )
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def cli_in_fresh_process(argv: list[str], watch: tuple[str, ...]) -> tuple[str, list[str], str]:
    """Run `logmem argv` in a new interpreter: (exit code, which of `watch` it imported, the
    output). What a command imports is only visible in a process that imported nothing else."""
    import json
    import subprocess
    import sys

    code = (
        "import sys, io, contextlib, json\n"
        "from logmem.cli.main import main\n"
        "out = io.StringIO()\n"
        "with contextlib.redirect_stdout(out):\n"
        f"    rc = main({argv!r})\n"
        f"heavy = sorted(m for m in {watch!r} if m in sys.modules)\n"
        "print(json.dumps([rc, heavy, out.getvalue()]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120
    )
    assert done.returncode == 0, done.stderr
    rc, heavy, out = json.loads(done.stdout.strip().splitlines()[-1])
    return str(rc), heavy, out


@pytest.fixture
def forked(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The pids of the processes this process forks from here on (not other tests': a
    forked process's own forks are its own)."""
    pids: list[int] = []
    real = os.fork

    def fork() -> int:
        pid = real()
        if pid:
            pids.append(pid)
        return pid

    monkeypatch.setattr(os, "fork", fork)
    return pids


def reaped(pids: list[int]) -> bool:
    """Every child forked has ended and been waited for: none is left running or a zombie."""
    for pid in pids:
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            continue
        return False
    return bool(pids)


def mfs_differs_pool_at_top(tmp: Path) -> Path:
    """fixtures/pair-e7-maxbs256-mfs-differs with its summary's request pool edited to 256, its
    largest captured bs: a list the pool may have cut, so mem_fraction_static (0.83 against the
    pair's 0.85) stays a confounder of the slope (compare.mfs_aside)."""
    src = FIXTURES / "pair-e7-maxbs256-mfs-differs-constructed.log"
    text = src.read_text()
    assert text.count("max_running_requests=3071") == 1
    out = tmp / "pair-e7-maxbs256-mfs-differs-pool256.log"
    out.write_text(text.replace("max_running_requests=3071", "max_running_requests=256"))
    return out
