"""Start-up of a small log (issue 15): `logmem analyze small.log -f json` imports none of the
big-file reader's machinery. Structural facts, checked in a fresh interpreter; no timings."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "001-qwq32b-tp4-l4-docs.log"

# The read-ahead child, its keyword scanner, their pickling and hyperscan: a big file's only.
NOT_FOR_A_SMALL_LOG = (
    "logmem.parse.ahead",
    "logmem.parse.prescan",
    "pickle",
    "hyperscan",
)

_PROBE = """
import json, sys
from logmem.cli import early
early.start(sys.argv[1:])
from logmem.cli.main import main
import io, contextlib
with contextlib.redirect_stdout(io.StringIO()):
    code = main(sys.argv[1:])
sys.stderr.write(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


def _modules(*args: str, env: dict[str, str] | None = None) -> tuple[int, set[str]]:
    full = {k: v for k, v in os.environ.items() if not k.startswith("LOGMEM_")}
    full.update(env or {})
    p = subprocess.run(
        [sys.executable, "-c", _PROBE, *args], capture_output=True, text=True, env=full
    )
    got = json.loads(p.stderr.strip().splitlines()[-1])
    return got["code"], set(got["modules"])


def test_small_json_imports_no_big_file_machinery() -> None:
    code, modules = _modules("-q", "analyze", str(FIXTURE), "-f", "json")
    assert code == 0
    assert "logmem.parse.read" in modules  # the probe did read the log
    loaded = [m for m in NOT_FOR_A_SMALL_LOG if m in modules]
    assert not loaded, f"a small log imported {loaded}"


def test_read_ahead_forced_still_imports_it() -> None:
    """The gate is about size only: LOGMEM_READ_AHEAD=1 still takes the child path."""
    code, modules = _modules(
        "-q", "analyze", str(FIXTURE), "-f", "json", env={"LOGMEM_READ_AHEAD": "1"}
    )
    assert code == 0
    assert "logmem.parse.ahead" in modules


def test_small_inputs_picks_python_matcher_unless_forced(monkeypatch: object) -> None:
    from logmem.parse.matchers import matcher_for
    from logmem.parse.patterns import KEYWORD_BYTES
    from logmem.parse.sizes import small_inputs

    assert small_inputs([str(FIXTURE)])
    assert not small_inputs(["-"])
    assert not small_inputs([])
    if "LOGMEM_MATCHER" not in os.environ:
        assert matcher_for(KEYWORD_BYTES, small=True).name == "python"
    assert matcher_for(KEYWORD_BYTES, kind="regex", small=True).name == "regex"


def test_small_and_big_paths_give_the_same_json() -> None:
    base = [sys.executable, "-m", "logmem", "-q", "analyze", str(FIXTURE), "-f", "json"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOGMEM_")}
    small = subprocess.run(base, capture_output=True, env=env, check=True).stdout
    forced = subprocess.run(
        base, capture_output=True, env={**env, "LOGMEM_READ_AHEAD": "1"}, check=True
    ).stdout
    assert small == forced
    json.loads(small)
