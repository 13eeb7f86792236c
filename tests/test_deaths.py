"""Child processes that die without a Python traceback (analysis/failures/deaths.py).

SGLang's SubprocessWatchdog (0.5.23 srt/utils/watchdog.py) prints 'Subprocess NAME (pid=P)
crashed with exit code C' and raises SIGQUIT; the running phase's handler then prints 'SIGQUIT
received. ... It usually means one child failed.' (tokenizer_manager.py). Corpus 006 is the
real case: both ranks abort on a ROCm hardware exception 13 s after the ready line. A death
after 'SIGTERM received' (021: the user stopped the server) is a shutdown, not a failure.
"""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from conftest import FIXTURES
from logmem.analysis.failures import outcome, verdict
from logmem.analysis.failures.deaths import signal_name
from logmem.api import read_log
from logmem.cli.main import cli
from logmem.report.verdict import verdict_lines

BASE = (FIXTURES / "001-qwq32b-tp4-l4-docs.log").read_text().splitlines()
READY = next(i for i, x in enumerate(BASE) if "ready to roll" in x)
HSA = (
    ":0:rocdevice.cpp            :3586: 4637341784 us:  Callback: Queue 0x7f5bfe700000 aborting "
    "with error : HSA_STATUS_ERROR_EXCEPTION: An HSAIL operation resulted in a hardware "
    "exception. code: 0x1016"
)
DIED = (
    "[2025-03-08 12:30:00] Subprocess scheduler_0 (pid=22741) crashed with exit code {code}. "
    "Triggering SIGQUIT for cleanup..."
)
SIGQUIT = "[2025-03-08 12:30:00] SIGQUIT received. signum=None, frame=None. It usually means one child failed."
SIGTERM = "[2025-03-08 12:30:00] SIGTERM received. signum=None frame=None. Draining requests and shutting down..."


def _launch(tmp_path: Path, lines: list[str]):  # type: ignore[no-untyped-def]
    p = tmp_path / "x.log"
    p.write_text("\n".join(lines) + "\n")
    return read_log(p).launches[0]


def test_a_death_after_start_up_is_reported_with_its_signal_and_fatal_lines(tmp_path: Path) -> None:
    tail = [
        HSA,
        "Fatal Python error: Aborted",
        "",
        "Thread 0x00007f54bb7ff6c0 (most recent call first):",
    ]
    L = _launch(tmp_path, BASE + tail + [DIED.format(code=-6), SIGQUIT])
    oc = outcome(L)
    assert oc.status == "ready"
    (d,) = oc.runtime_deaths
    assert (d.event.process, d.event.pid, d.event.exit_code, d.signal) == (
        "scheduler_0",
        22741,
        -6,
        "SIGABRT",
    )
    assert [f.text for f in d.fatal] == [
        "HSA_STATUS_ERROR_EXCEPTION: An HSAIL operation resulted in a hardware exception. code: 0x1016",
        "Fatal Python error: Aborted",
    ]
    text = " ".join(verdict_lines(verdict(L)))
    n = len(BASE)
    assert f"After start-up, scheduler_0 died (line {n + 5}: exit code -6, SIGABRT)" in text
    assert f"'Fatal Python error: Aborted' (line {n + 2})" in text
    assert "the log shows no out-of-memory error" in text


def test_a_death_after_sigterm_is_the_shutdown(tmp_path: Path) -> None:
    L = _launch(tmp_path, BASE + [SIGTERM, DIED.format(code=-15), SIGQUIT])
    oc = outcome(L)
    assert oc.status == "ready" and oc.runtime_deaths == ()
    assert not any("died" in x for x in verdict_lines(verdict(L)))


def test_a_death_before_start_up_ended_is_the_crash(tmp_path: Path) -> None:
    # Cut before the scheduler summary: start-up had not finished when the child was killed.
    cut = next(i for i, x in enumerate(BASE) if "max_total_num_tokens=" in x)
    L = _launch(tmp_path, BASE[:cut] + [DIED.format(code=-9), SIGQUIT])
    oc = outcome(L)
    assert oc.status == "crashed" and oc.failure is not None
    assert oc.failure.message == "scheduler_0 died (exit code -9, SIGKILL)"
    assert oc.failure.line is not None and oc.failure.line.line_no == cut + 1


def test_the_new_sigquit_wording_alone_ends_start_up_as_a_crash(tmp_path: Path) -> None:
    cut = next(i for i, x in enumerate(BASE) if "max_total_num_tokens=" in x)
    oc = outcome(_launch(tmp_path, BASE[:cut] + [SIGQUIT]))
    assert oc.status == "crashed"


def test_signal_names() -> None:
    assert signal_name(-6) == "SIGABRT" and signal_name(-11) == "SIGSEGV"
    assert signal_name(1) is None and signal_name(None) is None and signal_name(-999) is None


def test_corpus_006_json_names_the_death() -> None:
    log = (
        FIXTURES.parent.parent
        / "shared"
        / "corpus"
        / "006-gemma4-26b-awq-rdna4-tp2-swa-nograph.log"
    )
    res = CliRunner().invoke(cli, ["analyze", str(log), "-f", "json"], catch_exceptions=False)
    L = json.loads(res.output)["launches"][0]
    assert L["outcome"] == "ready"
    (d,) = L["runtime_deaths"]
    assert (d["process"], d["exit_code"], d["signal"], d["line"]["line"]) == (
        "scheduler_0",
        -6,
        "SIGABRT",
        172,
    )
    assert [f["line"]["line"] for f in d["fatal"]] == [93, 94, 134, 135]


def test_faulthandler_dump_names_where_it_died_and_links_unfilled_weights() -> None:
    """006: faulthandler's dump after 'Fatal Python error: Aborted' lists the watchdog thread
    first, then the scheduler's: it died in sampler.py (top_k_top_p_min_p_sampling...), on the
    first request, with 60 expert weights the checkpoint did not fill (line 48)."""
    from conftest import corpus_log

    path = corpus_log("006-")
    raw = path.read_bytes().decode().split("\n")  # not splitlines(): the log holds \x1c-like bytes
    (L,) = read_log(str(path)).launches
    (d,) = outcome(L).runtime_deaths
    assert d.died_in is not None
    f = d.died_in
    assert f.path.endswith("/sglang/srt/layers/sampler.py")
    assert f"line {f.line} in {f.func}" in raw[f.source.line_no - 1]  # faulthandler: no comma
    text = " ".join(verdict_lines(verdict(L)))
    assert "with no Python traceback" not in text
    assert f"in SGLang's sampler.py line {f.line}, in {f.func}" in text
    assert "the 60 weights the checkpoint did not fill (line 48)" in text
    assert "likely cause" in text


def test_a_dump_of_the_watchdog_thread_alone_names_no_place(tmp_path: Path) -> None:
    tail = [
        "Fatal Python error: Aborted",
        "",
        "Thread 0x00007f54bb7ff6c0 (most recent call first):",
        '  File "/x/sglang/srt/utils/watchdog.py", line 147 in _watchdog_once',
        '  File "/usr/lib/python3.12/threading.py", line 1012 in run',
    ]
    L = _launch(tmp_path, BASE + tail + [DIED.format(code=-6)])
    (d,) = outcome(L).runtime_deaths
    assert d.died_in is None
    assert "with no Python traceback" in " ".join(verdict_lines(verdict(L)))
