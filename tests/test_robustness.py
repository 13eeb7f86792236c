"""Big and hostile input: the reader's matchers agree, memory stays bounded, errors are messages.

The reader has three matchers (hyperscan, pure Python, the keyword regex); each must give
exactly the segments a naive line split gives. Then: a 200 MB line without a newline, a
1 MB line of `avail mem=`, usage errors, unreadable files, deterministic output in every
format, the progress bar rule, and what `logmem --help` imports.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import os
import sys
import time
import tracemalloc
from pathlib import Path

import pytest
import regex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import MATCHERS, REPO, cli_in_fresh_process, corpus_log, corpus_logs, fixture_logs
from logmem.cli.main import main
from logmem.parse import cri, source
from logmem.parse import progress as progress
from logmem.parse import read as rd
from logmem.parse.patterns import KEYWORD_BYTES, KEYWORDS
from logmem.report import FORMATS

HAVE_HYPERSCAN = importlib.util.find_spec("hyperscan") is not None
# Report formats whose module exists in this tree (others are being written elsewhere).
PRESENT_FORMATS = [f for f, mod in FORMATS.items() if importlib.util.find_spec(mod) is not None]


def run_cli(*args: str) -> tuple[int, str, str]:
    """logmem.cli.main in-process: (exit code, stdout, stderr); any traceback fails the test."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


# --- the matchers against an oracle -----------------------------------------------------


def oracle(data: bytes) -> tuple[list[tuple[int, bytes]], int, bool]:
    """(line number, segment) of every keyword segment, line count, ends-with-newline."""
    out = []
    line = 1
    for piece in regex.split(rb"(\r|\n)", data):
        if piece == b"\n":
            line += 1
        elif piece != b"\r" and KEYWORD_BYTES.search(piece):
            out.append((line, piece))
    ends = data[-1:] in (b"\n", b"")
    lines = data.count(b"\n") + 1 - (1 if ends and data else 0)
    return out, lines, ends


def read_all(path: Path) -> tuple[list[tuple[int, bytes]], int, bool]:
    st_ = rd.ReadStats(str(path))
    segs = [(s.line_no, s.data) for s in rd.iter_segments(str(path), KEYWORD_BYTES, st_)]
    return segs, st_.lines, st_.ends_with_newline


_PIECES = [k.encode() for k in KEYWORDS] + [
    b"\n",
    b"\r",
    b"\r\n",
    b"\x00",
    b" ",
    b"[2025-03-08 12:30:01 TP0] ",
    b"Decode batch. #token: 3, ",
    b'INFO:     127.0.0.1:49540 - "GET /health HTTP/1.1" 200 OK',
    b"\xff\xfe",
    b"avail mem=1.5 GB",
    b"Init",
    b"Erro",
    b"Trac",
    b"vai",
    b"B",
    b"_",
    b"=",
    b"C",
    b"%",
    b"|",
    b"GiB",
    b"M",
]


@pytest.mark.parametrize("matcher", MATCHERS, indirect=True)
@settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    parts=st.lists(st.one_of(st.sampled_from(_PIECES), st.binary(max_size=12)), max_size=80),
    chunk=st.sampled_from([1, 5, 16, 64, 4096]),
)
def test_matcher_finds_exactly_the_keyword_segments(
    matcher: str, parts: list[bytes], chunk: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Tiny chunks put every keyword and separator across a chunk boundary somewhere."""
    data = b"." + b"".join(parts)  # never a compression magic
    path = tmp_path / "x.log"
    path.write_bytes(data)
    monkeypatch.setattr(source, "CHUNK_BYTES", chunk)
    assert read_all(path) == oracle(data)


@pytest.mark.parametrize("matcher", MATCHERS, indirect=True)
@pytest.mark.parametrize("log", corpus_logs() + fixture_logs(), ids=lambda p: p.name[:12])
def test_matcher_on_real_logs(matcher: str, log: Path) -> None:
    data = log.read_bytes()
    if cri.is_cri(data[: cri.DETECT_BYTES]):
        pytest.skip("a CRI container log: its lines are joined (tests/test_cri.py's oracle)")
    assert read_all(log) == oracle(data)


def test_python_matcher_needs_at_most_one_plain_find() -> None:
    """Every keyword but one is found by memchr or the class string: each one left to a
    bytes.find costs a pass over the input of its own (~0.08 s per 256 MiB); one of them
    ("sglang.bench_", whose only rare byte is the common '_') is cheaper so than probed."""
    m = rd.matcher_for(KEYWORD_BYTES, "python")
    assert isinstance(m, rd._FindMatcher)
    assert len(m.plain) <= 1, f"add a rare byte or a class window for {m.plain}"


def test_keyword_regex_is_read_back_as_literals() -> None:
    assert rd._literals_of(KEYWORD_BYTES) is not None
    assert sorted(rd._literals_of(KEYWORD_BYTES) or []) == sorted(k.encode() for k in KEYWORDS)
    assert rd._literals_of(regex.compile(rb"GB|a.c")) is None  # a regex keeps the regex matcher
    assert isinstance(rd.matcher_for(regex.compile(rb"GB|avail\s+mem")), rd._RegexMatcher)


# --- hostile sizes ----------------------------------------------------------------------


def _startup_lines() -> bytes:
    return corpus_log("001-").read_bytes()


def test_200mb_line_without_newline_stays_bounded(tmp_path: Path) -> None:
    """The line is written lazily; reading keeps its 4 MiB head and skips the rest."""
    path = tmp_path / "giant.log"
    block = (
        b"[2025-03-08 12:30:01 TP0] Decode batch. #token: 3, avail mem=1.5 GB, " * 14000
    )  # ~1 MB
    with path.open("wb") as f:
        f.write(_startup_lines())
        f.write(b"[2025-03-08 12:30:01 TP0] ")
        written = 0
        while written < 200_000_000:
            f.write(block)
            written += len(block)
        f.write(b"\n" + _startup_lines())
    tracemalloc.start()
    try:
        code, out, err = run_cli("-q", "analyze", "-f", "json", str(path))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert code == 0, err
    doc = json.loads(out)
    assert doc["inputs"][0]["truncated_segments"] == 1
    assert doc["inputs"][0]["bytes"] == path.stat().st_size
    assert len(doc["launches"]) == 2
    # Memory is the invariant here; its speed is bench/bench.py's to measure (a wall-clock
    # limit fails on a loaded machine and proves nothing about the code).
    assert peak < 96 << 20, f"peak {peak >> 20} MiB"


def test_a_megabyte_of_avail_mem_is_one_segment(tmp_path: Path) -> None:
    path = tmp_path / "avail.log"
    path.write_bytes(
        _startup_lines() + b"[2025-03-08 12:30:01 TP0] " + b"avail mem=" * 100_000 + b"\n"
    )
    t0 = time.monotonic()
    code, out, err = run_cli("-q", "analyze", "-f", "json", str(path))
    assert code == 0, err
    assert json.loads(out)["launches"]
    assert time.monotonic() - t0 < 10


@pytest.mark.parametrize("matcher", MATCHERS, indirect=True)
def test_a_hit_on_every_line_is_linear(matcher: str, tmp_path: Path) -> None:
    """200k short lines that all hold a keyword and no \\r: each search stops at its segment."""
    path = tmp_path / "hits.log"
    path.write_bytes(b"GB\n" * 200_000)
    t0 = time.monotonic()
    segs, lines, _ = read_all(path)
    assert len(segs) == lines == 200_000
    assert time.monotonic() - t0 < 10


# --- errors and exit codes --------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["analyze"],
        ["analyze", "-f", "bogus", "x.log"],
        ["--bogus"],
        ["analyze", "--launch", "x", "x.log"],
    ],
    ids=["no-logs", "bad-format", "bad-option", "bad-int"],
)
def test_usage_errors_exit_2(args: list[str]) -> None:
    code, _, err = run_cli(*args)
    assert code == 2
    assert "Traceback" not in err


def test_a_directory_is_an_error_naming_it(tmp_path: Path) -> None:
    """The README: an unreadable input is exit 1 (not a usage error), with its name."""
    code, _, err = run_cli("analyze", str(tmp_path))
    assert code == 1
    assert f"cannot read {tmp_path}: it is a folder" in err


@pytest.mark.parametrize(
    "content",
    [b"", b"\x00" * 1000, os.urandom(5000), b"hello\nworld\n", b"\x1f\x8b\x08garbage-not-gzip"],
    ids=["empty", "nuls", "random", "text", "bad-gzip"],
)
def test_non_logs_exit_1_naming_the_file(content: bytes, tmp_path: Path) -> None:
    path = tmp_path / "notalog.log"
    path.write_bytes(content)
    code, out, err = run_cli("-q", "analyze", "-f", "json", str(path))
    assert code == 1, (out, err)
    assert str(path) in err
    assert "Traceback" not in err


def test_missing_file_exits_1_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "missing.log"
    code, _, err = run_cli("analyze", "-f", "json", str(path))
    assert code == 1
    assert str(path) in err


# --- determinism ------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", PRESENT_FORMATS)
@pytest.mark.parametrize("prefix", ["001-", "003-", "021-", "023-"])
def test_output_is_deterministic_in_every_format(
    fmt: str, prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Twice with the default matcher, once with each other one: byte-identical."""
    log = str(corpus_log(prefix))
    outs = []
    for kind in ["", "", "python", "regex"] + (["hyperscan"] if HAVE_HYPERSCAN else []):
        if kind:
            monkeypatch.setenv("LOGMEM_MATCHER", kind)
        else:
            monkeypatch.delenv("LOGMEM_MATCHER", raising=False)
        rd._MATCHERS.clear()
        code, out, err = run_cli("-q", "analyze", "-f", fmt, log)
        assert code == 0, err
        outs.append(out)
    rd._MATCHERS.clear()
    assert all(o == outs[0] for o in outs)


# --- progress bar -----------------------------------------------------------------------


class FakeTTY(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_bar_only_for_big_inputs_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(progress, "enabled", True)
    tty = FakeTTY()
    assert progress.start("x", 200_000_000, io.StringIO()) is None  # not a terminal
    assert progress.start("x", 50_000_000, tty) is None  # small
    monkeypatch.setattr(progress, "enabled", False)
    assert progress.start("x", 200_000_000, tty) is None  # --quiet
    monkeypatch.setattr(progress, "enabled", True)
    bar = progress.start("x", 200_000_000, tty)
    assert bar is not None
    bar.update(100_000_000)
    assert "50%" in tty.getvalue()
    bar.close()
    assert tty.getvalue().endswith("\r")


def test_progress_bar_for_a_pipe_appears_past_the_threshold(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(progress, "enabled", True)
    tty = FakeTTY()
    bar = progress.start("-", None, tty, threshold=1000)
    assert bar is not None
    bar.update(500)
    assert tty.getvalue() == ""
    bar.update(5000)
    assert "MiB" in tty.getvalue()


@pytest.mark.parametrize("quiet", [False, True])
def test_reading_draws_and_clears_the_bar_unless_quiet(
    quiet: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = corpus_log("001-")
    tty = FakeTTY()
    monkeypatch.setattr(progress, "THRESHOLD", 100)
    monkeypatch.setattr(sys, "stderr", tty)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main((["-q"] if quiet else []) + ["analyze", "-f", "json", str(log)])
    assert code == 0
    assert json.loads(out.getvalue())["launches"]
    if quiet:
        assert tty.getvalue() == ""
    else:
        assert "logmem:" in tty.getvalue() and tty.getvalue().endswith("\r")


# --- start-up cost ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [["--help"], ["analyze", "-f", "json", "LOG"], ["analyze", "LOG"]],
    ids=["help", "json", "text"],
)
def test_small_commands_import_no_pandas_matplotlib_or_numpy(args: list[str]) -> None:
    log = str(corpus_log("001-"))
    argv = [log if a == "LOG" else a for a in args]
    # The estimate stage loads only with --model-config (or `logmem estimate`).
    watch = ("pandas", "matplotlib", "numpy", "logmem.estimate.build")
    rc, heavy, out = cli_in_fresh_process(argv, watch)
    assert f"{rc} {heavy}" == "0 []", out


# --- the benchmark's generator ----------------------------------------------------------


def test_bench_generator_makes_a_restart_near_the_end(tmp_path: Path) -> None:
    """bench/bench_big.py is a script, not a test; this only keeps its generator honest."""
    spec = importlib.util.spec_from_file_location("bench_big", REPO / "bench" / "bench_big.py")
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    path = tmp_path / "big.log"
    info = bench.generate(path, 4 << 20)
    data = path.read_bytes()
    assert info["bytes"] == len(data) and info["lines"] == data.count(b"\n")
    assert data.count(b"server_args=") == 2
    assert data.rfind(b"server_args=") > len(data) * 0.9
    code, out, err = run_cli("-q", "analyze", "-f", "json", str(path))
    assert code == 0, err
    assert [L["outcome"] for L in json.loads(out)["launches"]] == ["ready", "ready"]


def test_progress_bar_for_a_small_compressed_file_waits_for_its_output(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A 10 MB gzip may hold 300 MB: it gets a bar once 100 MB have come out of it."""
    monkeypatch.setattr(progress, "enabled", True)
    tty = FakeTTY()
    bar = progress.start("x.log.gz", 500, tty, threshold=1000, compressed=True)
    assert bar is not None
    bar.update(100, 900)
    assert tty.getvalue() == ""
    bar.update(250, 50_000)  # percent from the position in the file, not from the output
    assert "50%" in tty.getvalue()
    assert progress.start("x.log", 10_000, tty, threshold=100_000) is None
