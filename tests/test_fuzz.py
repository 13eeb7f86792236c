"""Mutation fuzzing of real logs through the CLI: never a traceback, truncation is never "ready".

Bases are the corpus logs (../shared/corpus) and the fixtures; big ones are cut to a window
so that each example stays fast. Mutations: truncate at any byte, delete / duplicate /
shuffle lines, flip bytes, insert NULs, interleave two logs line by line. Every run ends
in exit 0 with JSON, or exit 1 with a message naming the file. Bounded: modest
max_examples, no deadline; the whole file runs in well under a minute.
"""

from __future__ import annotations

import atexit
import contextlib
import io
import json
import random
import shutil
import subprocess
import sys
import tempfile
import time
import tracemalloc
from functools import cache
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import corpus_logs, fixture_logs
from logmem.cli.main import main
from logmem.parse import read as rd
from logmem.parse.patterns import KEYWORD_BYTES

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
_SCRATCH = Path(tempfile.mkdtemp(prefix="logmem-fuzz-"))
atexit.register(shutil.rmtree, _SCRATCH, ignore_errors=True)
WINDOW = 120_000  # bytes of a big base log kept per example
# What the outcome logic takes as "start-up finished" (failures._finished).
FINISH_MARKERS = (
    b"ready to roll",
    b"Uvicorn running on ",
    b"Application startup complete.",
    b"max_total_num_tokens=",
)


def _bases() -> list[Path]:
    seen: dict[str, Path] = {}
    for p in fixture_logs() + corpus_logs():
        seen.setdefault(p.name, p)
    return [seen[k] for k in sorted(seen)]


BASES = _bases()


def test_the_fuzz_has_logs_to_mutate() -> None:
    assert BASES, "no fixture logs: the fuzz tests below would mutate nothing"


@cache
def base_bytes(i: int) -> bytes:
    return BASES[i].read_bytes()


def analyze(data: bytes, name: str = "fuzz.log") -> tuple[int, str, str, str]:
    path = _SCRATCH / name
    path.write_bytes(data)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["-q", "analyze", "-f", "json", str(path)])
    return code, out.getvalue(), err.getvalue(), str(path)


def check_calm(code: int, out: str, err: str, path: str) -> dict[str, object] | None:
    """Exit 0 with a JSON document, or exit 1 with one message that names the file."""
    assert "Traceback" not in err
    if code == 0:
        doc: dict[str, object] = json.loads(out)
        assert isinstance(doc.get("launches"), list)
        return doc
    assert code == 1, (code, err)
    assert path in err, err
    return None


def window(data: bytes, rnd: random.Random) -> bytes:
    if len(data) <= WINDOW:
        return data
    start = rnd.randrange(len(data) - WINDOW)
    return data[start : start + WINDOW]


def mutate(data: bytes, ops: list[str], rnd: random.Random, other: bytes) -> bytes:
    lines = data.splitlines(keepends=True)
    for op in ops:
        if op == "delete" and lines:
            del lines[rnd.randrange(len(lines))]
        elif op == "duplicate" and lines:
            i = rnd.randrange(len(lines))
            lines[i:i] = [lines[i]] * rnd.randrange(1, 4)
        elif op == "shuffle" and len(lines) > 1:
            i = rnd.randrange(len(lines) - 1)
            j = min(len(lines), i + rnd.randrange(2, 40))
            part = lines[i:j]
            rnd.shuffle(part)
            lines[i:j] = part
        elif op == "interleave":
            theirs = other.splitlines(keepends=True)
            mixed: list[bytes] = []
            while lines or theirs:
                src = lines if (lines and (not theirs or rnd.random() < 0.5)) else theirs
                mixed.append(src.pop(0))
            lines = mixed
        elif op in ("flip", "nul"):
            blob = bytearray(b"".join(lines))
            for _ in range(rnd.randrange(1, 20)):
                if not blob:
                    break
                i = rnd.randrange(len(blob))
                if op == "flip":
                    blob[i] ^= 1 << rnd.randrange(8)
                else:
                    blob[i:i] = b"\x00" * rnd.randrange(1, 9)
            lines = bytes(blob).splitlines(keepends=True)
    return b"".join(lines)


OPS = st.lists(
    st.sampled_from(["delete", "duplicate", "shuffle", "flip", "nul", "interleave"]), max_size=6
)


@SETTINGS
@given(base=st.integers(0, max(len(BASES) - 1, 0)), ops=OPS, seed=st.integers(0, 2**32 - 1))
def test_mutated_logs_never_raise(base: int, ops: list[str], seed: int) -> None:
    rnd = random.Random(seed)
    data = window(base_bytes(base), rnd)
    other = window(base_bytes(rnd.randrange(len(BASES))), rnd)
    check_calm(*analyze(mutate(data, ops, rnd, other)))


@SETTINGS
@given(
    base=st.integers(0, max(len(BASES) - 1, 0)),
    frac=st.floats(0, 1),
    seed=st.integers(0, 2**32 - 1),
)
def test_truncated_logs_are_never_ready_before_the_end_of_start_up(
    base: int, frac: float, seed: int
) -> None:
    """A prefix that stops before any line that finishes start-up is reported incomplete
    (or crashed), never ready; whatever the cut, there is no traceback."""
    data = base_bytes(base)
    cut = data[: int(len(data) * frac)]
    if len(cut) > WINDOW:  # keep the tail end, where truncation bites
        cut = cut[-WINDOW:]
    doc = check_calm(*analyze(cut))
    if doc is None or any(m in cut for m in FINISH_MARKERS):
        return
    launches = doc["launches"]
    assert isinstance(launches, list)
    for launch in launches:
        assert launch["outcome"] in ("incomplete", "crashed"), launch["outcome"]


@pytest.mark.parametrize("cut", [1, 2, 3, 7, 100])
def test_cut_before_the_last_bytes(cut: int) -> None:
    """Cutting into the very last records of a ready log: calm, and lines are still counted."""
    for i in range(len(BASES)):
        data = base_bytes(i)
        if len(data) > 200_000:
            continue
        code, out, err, path = analyze(data[:-cut])
        doc = check_calm(code, out, err, path)
        if doc is not None:
            inputs = doc["inputs"]
            assert isinstance(inputs, list)
            assert inputs[0]["bytes"] == len(data) - cut


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(base=st.integers(0, max(len(BASES) - 1, 0)), ops=OPS, seed=st.integers(0, 2**32 - 1))
def test_matchers_agree_on_mutated_logs(base: int, ops: list[str], seed: int) -> None:
    """The pure-Python and regex matchers give the same JSON as the default one."""
    rnd = random.Random(seed)
    data = mutate(window(base_bytes(base), rnd), ops, rnd, window(base_bytes(0), rnd))
    outs = []
    with pytest.MonkeyPatch.context() as mp:
        for kind in ("", "python", "regex"):
            if kind:
                mp.setenv("LOGMEM_MATCHER", kind)
            rd._MATCHERS.clear()
            outs.append(analyze(data)[:3])
    rd._MATCHERS.clear()
    assert outs[1] == outs[0] and outs[2] == outs[0]


# --- worst cases: time and memory budgets per input (issue 16) --------------------------

# CPU seconds per MB of input, and tracemalloc peaks. Times are CPU time of this process
# (the machine may be shared); the \r-run budget is relative to its \n twin, so it holds
# on any machine. Before the fixes: the \r scan took 8x its twin, a line of OOM fragments
# 3.5 s per MB, 60 unmatched 1 MiB lines peaked at 71 MiB (all their text kept).
CPU_S_PER_MB = {"oom_fragments": 1.0, "fragments_of_every_unanchored_pattern": 1.5}
PEAK_MIB = {
    "unmatched_giants": 32,  # 63 MB of unmatched lines: each keeps a 4 KiB excerpt
    "zstd_bomb": 48,  # 200 MiB out of 20 KB: decompressed in bounded steps
    "many_unmatched": 100,  # 50k unmatched lines (kept as a per-shape summary)
    "restarts": 96,  # 200 launches
}


def _attack_file(name: str, data: bytes | None = None) -> Path:
    from attacks import ATTACKS

    path = _SCRATCH / f"attack-{name}.log"
    path.write_bytes(ATTACKS[name](1.0) if data is None else data)
    return path


def _cpu_run(path: Path, *extra: str) -> tuple[float, int, str]:
    out, err = io.StringIO(), io.StringIO()
    t0 = time.process_time()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["-q", "analyze", "-f", "json", *extra, str(path)])
    return time.process_time() - t0, code, err.getvalue()


def test_a_cr_run_costs_what_its_newline_twin_costs() -> None:
    """4 MiB of `GB` + filler + `\\r`: each segment's end used to be searched to the chunk's end."""
    times = {}
    for sep in (b"\r", b"\n"):
        path = _SCRATCH / "scan.log"
        path.write_bytes((b"GB" + b"x" * 100 + sep) * ((4 << 20) // 103))
        t0 = time.process_time()
        stats: list[rd.ReadStats] = []
        n = sum(1 for _ in rd.read_segments([str(path)], KEYWORD_BYTES, stats))
        times[sep] = time.process_time() - t0
        assert n == (4 << 20) // 103
    assert times[b"\r"] < 2 * times[b"\n"] + 0.1, times


def test_a_dense_cr_run_through_the_whole_pipeline_is_linear() -> None:
    """400k `GB\\r` segments after a real log: the report, in the time of the \\n version."""
    from attacks import cr_run

    data = cr_run(1.0)
    t_cr, code, err = _cpu_run(_attack_file("cr_run", data))
    assert code == 0, err
    t_nl, _, _ = _cpu_run(_attack_file("cr_run", data.replace(b"\r", b"\n")))
    assert t_cr < 1.5 * t_nl + 0.5, (t_cr, t_nl)


@pytest.mark.parametrize("name", sorted(CPU_S_PER_MB))
def test_worst_case_lines_stay_within_their_time_budget(name: str) -> None:
    path = _attack_file(name)
    cpu, code, err = _cpu_run(path)
    assert code == 0 and "Traceback" not in err, err
    budget = CPU_S_PER_MB[name] * path.stat().st_size / 1e6 + 0.2
    assert cpu < budget, f"{name}: {cpu:.2f}s CPU, budget {budget:.2f}s"


@pytest.mark.parametrize("name", sorted(PEAK_MIB))
def test_worst_case_inputs_stay_within_their_memory_budget(name: str) -> None:
    path = _attack_file(name)
    tracemalloc.start()
    try:
        _, code, err = _cpu_run(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert code == 0, err
    assert peak < PEAK_MIB[name] << 20, f"{name}: peak {peak / 2**20:.1f} MiB"


def test_every_attack_ends_calmly_in_every_format() -> None:
    """Each worst-case input (small scale): exit 0 with a report or 1 with a message, in
    text, Markdown, HTML and JSON; never a traceback, never an empty report."""
    from attacks import ATTACKS

    for name, make in ATTACKS.items():
        if name in PEAK_MIB or name in CPU_S_PER_MB or name == "cr_run":
            continue  # the big ones are above; here every format of the small ones
        path = _attack_file(name, make(1.0))
        for fmt in ("text", "markdown", "json", "html"):
            out, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = main(["-q", "analyze", "-f", fmt, str(path)])
            assert code in (0, 1), (name, fmt, err.getvalue())
            assert "Traceback" not in err.getvalue()
            assert (code == 0 and out.getvalue()) or (code == 1 and str(path) in err.getvalue())


def test_every_attack_is_calm_under_a_1gib_address_space() -> None:
    """`ulimit -v 1048576` and every attack input (tests/run_attacks_under_ulimit.py)."""
    script = Path(__file__).resolve().parent / "run_attacks_under_ulimit.py"
    res = subprocess.run(
        [sys.executable, str(script), "--scale", "0.25", "--limit-mib", "1024"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert res.returncode == 0, res.stdout + res.stderr
    assert "0 of " in res.stdout and "BAD" not in res.stdout


def test_running_out_of_memory_is_a_message(monkeypatch: pytest.MonkeyPatch) -> None:
    """What a memory limit raises anywhere (MemoryError) ends as one line and exit 1."""

    def exhausted(*paths: str, require_startup: bool = True) -> None:
        raise MemoryError

    monkeypatch.setattr("logmem.api.read_log", exhausted)
    code, out, err, _ = analyze(b"whatever")
    assert code == 1 and "Traceback" not in err
    assert err.startswith("Error: out of memory") and "--max-bytes" in err
