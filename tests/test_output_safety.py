"""-o never destroys a user's file: never an input, never a special file replaced, no temp left.

Issue 16 items 1, 2 and the -o parts of 8 and 4 (/dev/full). Every command that writes a
report is tried with -o naming one of its inputs: by the same path, through a symlink, a
hard link, a compressed input, and stdin redirected from the file. The input must come out
byte-identical whatever --force says. Special targets (a FIFO, /dev/null, /dev/stdout, a
symlink to /proc/self/fd/1) are written through and stay what they were.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import os
import shutil
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from conftest import FIXTURES
from logmem.cli.main import main

LOG = FIXTURES / "001-qwq32b-tp4-l4-docs.log"
PAIR_A = FIXTURES / "pair-e2-maxbs80-constructed.log"
PAIR_B = FIXTURES / "pair-e2-maxbs160-constructed.log"
CONFIG = FIXTURES / "configs" / "qwq-32b.json"


def run_cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["-q", *args])
    return code, out.getvalue(), err.getvalue()


def run_proc(
    *args: str, stdin: object = None, stdout: object = subprocess.PIPE
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "logmem", "-q", *args],
        stdin=stdin,  # type: ignore[arg-type]
        stdout=stdout,  # type: ignore[arg-type]
        stderr=subprocess.PIPE,
        timeout=120,
        check=False,
    )


def temps(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


# Each command with its inputs; {0} {1} are the copies of the inputs the test makes.
COMMANDS = {
    "analyze": (["analyze", "{0}"], [LOG]),
    "analyze-model-config": (["analyze", "{1}", "--model-config", "{0}"], [CONFIG, LOG]),
    "lines": (["lines", "{0}"], [LOG]),
    "diff-b": (["diff", "{1}", "{0}"], [PAIR_B, PAIR_A]),
    "diff-spec": (["diff", "{1}", "{0},{0}"], [PAIR_B, PAIR_A]),
    "fit": (["fit", "{1}", "{0}"], [PAIR_B, PAIR_A]),
    "whatif": (["whatif", "{0}", "--cuda-graph-max-bs", "96"], [PAIR_A]),
    "whatif-slope-from": (
        ["whatif", "{1}", "--slope-from", "{1}", "{0}", "--cuda-graph-max-bs", "96"],
        [PAIR_B, PAIR_A],
    ),
    "plot": (["plot", "{0}", "-f", "png"], [LOG]),
    "estimate": (["estimate", "--model-config", "{0}"], [CONFIG]),
    "estimate-log": (["estimate", "{0}", "--model-config", "{1}"], [LOG, CONFIG]),
}


def _copies(tmp_path: Path, sources: list[Path], gz: bool = False) -> list[Path]:
    out = []
    for i, src in enumerate(sources):
        name = f"in{i}{src.suffix}" + (".gz" if gz and src.suffix == ".log" else "")
        dst = tmp_path / name
        data = src.read_bytes()
        dst.write_bytes(gzip.compress(data, mtime=0) if name.endswith(".gz") else data)
        out.append(dst)
    return out


@pytest.mark.parametrize("how", ["same", "symlink", "hardlink", "gzip"])
@pytest.mark.parametrize("force", ["--force", "--no-force"])
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_output_onto_an_input_is_refused(
    tmp_path: Path, command: str, force: str, how: str
) -> None:
    args, sources = COMMANDS[command]
    inputs = _copies(tmp_path, sources, gz=how == "gzip")
    before = [p.read_bytes() for p in inputs]
    victim = inputs[0]
    target = victim
    if how == "symlink":
        target = tmp_path / "link.txt"
        target.symlink_to(victim)
    elif how == "hardlink":
        target = tmp_path / "hard.txt"
        os.link(victim, target)
    filled = [a.format(*map(str, inputs)) for a in args]
    flags = [] if command == "lines" else [force]  # lines always overwrites (no --force)
    code, _, err = run_cli(*filled, "-o", str(target), *flags)
    assert code == 1, err
    assert "refusing to write the report" in err and "Traceback" not in err
    assert [p.read_bytes() for p in inputs] == before
    assert temps(tmp_path) == []


def test_output_onto_redirected_stdin_is_refused(tmp_path: Path) -> None:
    victim = tmp_path / "v.log"
    shutil.copy(LOG, victim)
    with victim.open("rb") as f:
        res = run_proc("analyze", "-", "-o", str(victim), stdin=f)
    assert res.returncode == 1
    assert b"it is the input standard input" in res.stderr
    assert victim.read_bytes() == LOG.read_bytes()


def test_a_report_still_goes_to_an_ordinary_file(tmp_path: Path) -> None:
    out = tmp_path / "r.txt"
    out.write_text("old")
    out.chmod(0o640)
    code, _, err = run_cli("analyze", str(LOG), "-o", str(out))
    assert code == 0, err
    assert out.read_text().startswith("logmem") or "Launch" in out.read_text()
    assert stat.S_IMODE(out.stat().st_mode) == 0o640  # an existing file keeps its mode
    assert temps(tmp_path) == []


def test_a_symlink_to_a_file_stays_a_symlink(tmp_path: Path) -> None:
    real = tmp_path / "real.txt"
    real.write_text("old")
    link = tmp_path / "link.txt"
    link.symlink_to(real)
    code, _, err = run_cli("analyze", str(LOG), "-o", str(link))
    assert code == 0, err
    assert link.is_symlink() and "Launch" in real.read_text()


def test_a_fifo_is_written_through(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    code, _, err = run_cli("analyze", str(LOG), "-o", str(fifo))
    reader.join(30)
    assert code == 0, err
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert b"Launch" in got[0]
    assert temps(tmp_path) == []


def test_dev_null_stays_a_device() -> None:
    code, _, err = run_cli("analyze", str(LOG), "-o", os.devnull)
    assert code == 0, err
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)


def test_a_symlink_to_proc_self_fd_1_reaches_stdout(tmp_path: Path) -> None:
    link = tmp_path / "out.txt"
    link.symlink_to("/proc/self/fd/1")
    res = run_proc("analyze", str(LOG), "-o", str(link))
    assert res.returncode == 0, res.stderr
    assert b"Launch" in res.stdout
    assert link.is_symlink()


def test_dev_stdout_appends_to_what_the_shell_opened(tmp_path: Path) -> None:
    """`>> file` then -o /dev/stdout: the earlier content stays, the report follows it."""
    out = tmp_path / "log.txt"
    out.write_bytes(b"earlier\n")
    with out.open("ab") as f:
        res = run_proc("analyze", str(LOG), "-o", "/dev/stdout", stdout=f)
    assert res.returncode == 0, res.stderr
    data = out.read_bytes()
    assert data.startswith(b"earlier\n") and b"Launch" in data


@pytest.mark.parametrize(
    ("target", "code", "words"),
    [
        ("", 2, "the output file name is empty"),
        (".", 1, "is a folder"),
        ("{tmp}", 1, "is a folder"),
        ("{tmp}/missing/deeper/r.txt", 1, "does not exist (create it first)"),
    ],
    ids=["empty", "dot", "folder", "missing-folder"],
)
def test_bad_targets_are_refused_before_reading(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, target: str, code: int, words: str
) -> None:
    monkeypatch.chdir(tmp_path)
    got, _, err = run_cli("analyze", str(LOG), "-o", target.format(tmp=tmp_path))
    assert got == code, err
    assert words in err and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []  # no temp, no folder created


def test_an_unencodable_report_leaves_no_empty_temp(tmp_path: Path) -> None:
    """A lone surrogate in server_args used to raise UnicodeEncodeError after the temp
    file was made, leaving a 0-byte `.r.txt.*.tmp` behind."""
    log = tmp_path / "s.log"
    log.write_bytes(LOG.read_bytes().replace(b"model_path='", b"model_path='\\ud800", 1))
    for name in ("r.txt", "r.md", "r.html", "r.json"):
        code, _, err = run_cli("analyze", str(log), "-o", str(tmp_path / name))
        assert code == 0, err
        assert (tmp_path / name).stat().st_size > 0
    assert temps(tmp_path) == []


@pytest.mark.parametrize("via", ["stdout", "-o"])
def test_a_full_device_is_a_message(via: str) -> None:
    if via == "stdout":
        with open("/dev/full", "wb") as full:
            res = run_proc("analyze", str(LOG), stdout=full)
    else:
        res = run_proc("analyze", str(LOG), "-o", "/dev/full")
    assert res.returncode == 1
    err = res.stderr.decode()
    assert "cannot write the report: no space left" in err
    assert "Traceback" not in err and "Exception ignored" not in err
