"""`logmem analyze BIG.log` starts its read-ahead child before the CLI is imported
(logmem.cli.early, logmem.parse.ahead.start_early): the result is the one the late child or
one process gives, a guess that the command does not read is ended, and none is left behind."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import fixture_logs
from logmem.cli import early
from logmem.cli.main import cli
from logmem.parse import ahead

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or ahead._cores() < 2, reason="read-ahead: Linux, 2 cores"
)


@pytest.fixture
def log() -> Path:
    return next(p for p in fixture_logs() if p.name.startswith("001"))


def test_the_guess_is_narrow(log: Path, tmp_path: Path) -> None:
    f = str(log)
    assert early.first_input(["analyze", f]) == (f, False)
    assert early.first_input(["-q", "analyze", f, "-f", "json"]) == (f, True)
    assert early.first_input(["--quiet", "analyze", f]) == (f, True)
    for argv in (
        ["diff", f, f],
        ["analyze", "-f", "json", f],  # an option first: not guessed
        ["analyze", f, "--max-bytes", "100"],  # the child would read past the limit
        ["analyze", f, "--max-bytes=100"],
        ["analyze", str(tmp_path)],  # a folder
        ["analyze", str(tmp_path / "missing.log")],
        ["analyze", f"{f},{f}"],
        ["analyze"],
        [],
        ["--version"],
    ):
        assert early.first_input(argv) is None, argv


def _analyze(path: Path, *extra: str) -> str:
    result = CliRunner().invoke(cli, ["analyze", str(path), "-f", "json", *extra])
    assert result.exit_code == 0, result.output
    return result.output


def test_the_early_child_is_taken_and_reads_what_one_process_reads(
    log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOGMEM_READ_AHEAD", "0")
    alone = _analyze(log)
    monkeypatch.setenv("LOGMEM_READ_AHEAD", "1")  # any regular file is "big"
    early.start(["analyze", str(log)])
    started = ahead._early
    assert started is not None
    assert _analyze(log) == alone
    assert ahead._early is None  # taken over and, at the end, reaped
    with pytest.raises(ChildProcessError):
        os.waitpid(started.pid, os.WNOHANG)


def test_a_wrong_guess_is_ended_and_the_right_file_read(
    log: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = tmp_path / "other.log"
    other.write_bytes(log.read_bytes())
    monkeypatch.setenv("LOGMEM_READ_AHEAD", "0")
    alone = json.loads(_analyze(other))
    monkeypatch.setenv("LOGMEM_READ_AHEAD", "1")
    for extra in ((), ("--max-bytes", "1000000000")):  # another file; the same under a limit
        early.start(["analyze", str(log)])
        started = ahead._early
        assert started is not None
        target = other if not extra else log
        out = json.loads(_analyze(target, *extra))
        assert ahead._early is None
        with pytest.raises(ChildProcessError):
            os.waitpid(started.pid, os.WNOHANG)
        if not extra:
            assert out == alone


def _session_processes(sid: int) -> list[int]:
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(os.path.join("/proc", name, "stat"), encoding="ascii") as f:
                    stat = f.read()
            except OSError:
                continue
            fields = stat[stat.rindex(")") + 2 :].split()
            if int(fields[3]) == sid:  # field 6 of stat: the session id
                found.append(int(name))
    return found


def test_an_unused_early_child_does_not_outlive_the_command(log: Path) -> None:
    # A usage error after the child started: exit 2, and nothing of that session remains.
    env = {**os.environ, "LOGMEM_READ_AHEAD": "1"}
    p = subprocess.Popen(
        [sys.executable, "-m", "logmem", "analyze", str(log), "--no-such-option"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,  # its session id is its pid, and its children share it
    )
    _, err = p.communicate(timeout=120)
    assert p.returncode == 2, err
    deadline = time.monotonic() + 10
    while _session_processes(p.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _session_processes(p.pid)
