"""Hostile and odd input of issue 16: each case a message or a report, never a traceback.

Items 3-8: bounded source text, surrogates, mangled OOM sizes, absurd sizes in server_args
and config.json, non-finite options, truncated and multi-stream compression, terminal
escapes, UTF-16/32 logs, text that starts like bz2, inputs given twice, unreadable files,
empty input, --max-bytes, Ctrl-C. The inputs come from tests/attacks.py or are made here.
"""

from __future__ import annotations

import bz2
import contextlib
import gzip
import io
import json
import lzma
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import attacks
import pytest
import zstandard

from conftest import FIXTURES
from logmem.cli.main import main
from logmem.parse import source

LOG = attacks.BASE_LOG
PAIR_A = FIXTURES / "pair-e2-maxbs80-constructed.log"
PAIR_B = FIXTURES / "pair-e2-maxbs160-constructed.log"


def run_cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["-q", *args])
    assert "Traceback" not in err.getvalue()
    return code, out.getvalue(), err.getvalue()


def write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def doc(path: Path, *extra: str) -> dict[str, object]:
    code, out, err = run_cli("analyze", "-f", "json", str(path), *extra)
    assert code == 0, err
    result: dict[str, object] = json.loads(out)
    return result


def ranks_of(d: dict[str, object]) -> object:
    launches = d["launches"]
    assert isinstance(launches, list)
    return [L["ranks"] for L in launches]


# --- item 3: bounded source text -----------------------------------------------------------


def test_a_giant_record_keeps_an_excerpt_that_says_what_was_cut() -> None:
    from logmem.parse.lines import MAX_SOURCE_CHARS, Segment, split_records

    text = b"[2025-03-08 12:30:01 TP0] weird 1.5 GB " + b"x" * 100_000
    (rec,) = split_records(Segment("a.log", 7, text))
    assert len(rec.message) > 100_000  # the patterns still see the whole record
    assert rec.source.text.startswith("[2025-03-08 12:30:01 TP0] weird 1.5 GB xxx")
    assert len(rec.source.text) < MAX_SOURCE_CHARS + 60
    assert rec.source.text.endswith(
        f"[... {len(text) - MAX_SOURCE_CHARS:,} more characters not kept]"
    )
    assert (rec.source.path, rec.source.line_no) == ("a.log", 7)


# --- item 4: what used to raise -------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["text", "markdown", "html", "json"])
def test_lone_surrogates_in_server_args_render_everywhere(tmp_path: Path, fmt: str) -> None:
    path = write(tmp_path, "s.log", attacks.surrogates(1))
    code, out, err = run_cli("analyze", "-f", fmt, str(path))
    assert code == 0, err
    # The escaped pair \ud83d\udfff... is not a pair; each lone half is shown as U+FFFD.
    assert "\ufffd" in out or "\\ufffd" in out
    out_file = tmp_path / f"r.{fmt}"
    assert run_cli("analyze", "-f", fmt, str(path), "-o", str(out_file))[0] == 0
    assert out_file.stat().st_size > 0


def test_mangled_oom_sizes_are_unknown(tmp_path: Path) -> None:
    path = write(tmp_path, "oom.log", attacks.bad_oom_sizes(1))
    code, out, err = run_cli("lines", str(path))
    assert code == 0, err
    line = next(x for x in out.splitlines() if "TorchOOM" in x)
    assert "tried=" not in line and "capacity=" not in line and "free=" not in line
    assert run_cli("analyze", str(path))[0] == 0


def test_absurd_parallel_sizes_with_a_model_config_are_a_message(tmp_path: Path) -> None:
    path = write(tmp_path, "pp.log", attacks.absurd_parallel(1))
    for args in (
        ["analyze", str(path), "--model-config", str(attacks.CONFIG)],
        ["estimate", str(path), "--model-config", str(attacks.CONFIG)],
    ):
        code, _, err = run_cli(*args)
        assert code == 1
        assert "pp=1,000,000,000,000 is beyond any real deployment" in err


@pytest.mark.parametrize("name", sorted(attacks.CONFIG_ATTACKS))
def test_absurd_config_values_are_a_message(tmp_path: Path, name: str) -> None:
    cfg = write(tmp_path, "config.json", attacks.CONFIG_ATTACKS[name]())
    t0 = time.monotonic()
    code, _, err = run_cli("estimate", "--model-config", str(cfg))
    assert code == 1 and err.startswith(f"Error: {cfg}: ")
    assert time.monotonic() - t0 < 5


def test_estimate_options_past_physical_sense_are_usage_errors() -> None:
    for opt in ("--tp", "--pp", "--cuda-graph-max-bs"):
        code, _, err = run_cli("estimate", "--model-config", str(attacks.CONFIG), opt, str(10**12))
        assert code == 2, err
        assert "is not in the range" in err or "is beyond any real deployment" in err


@pytest.mark.parametrize(
    "option", ["--mib-per-row", "--activation-reserve", "--mem-fraction-static", "--context-length"]
)
@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1e308"])
def test_whatif_rejects_non_finite_and_absurd_numbers(option: str, value: str) -> None:
    args = ["whatif", str(PAIR_A), option, value]
    if option == "--mib-per-row":
        args += ["--static-mib-per-row", "0.1"]
    code, _, err = run_cli(*args)
    if option == "--mem-fraction-static" and value == "1e308":
        assert code == 1 and "outside (0, 1]" in err  # the library's own range check
    else:
        assert code == 2, err
        assert "Invalid value" in err


def test_whatif_static_slope_rejects_nan_too() -> None:
    code, _, err = run_cli(
        "whatif", str(PAIR_A), "--mib-per-row", "2", "--static-mib-per-row", "nan"
    )
    assert code == 2 and "not a finite number" in err


# --- item 6: truncated and multi-stream compression -------------------------------------------

COMPRESSORS = {
    "gzip": lambda b: gzip.compress(b, mtime=0),
    "bz2": bz2.compress,
    "xz": lzma.compress,
    "zstd": lambda b: zstandard.ZstdCompressor().compress(b),
}


@pytest.mark.parametrize("kind", sorted(COMPRESSORS))
def test_a_truncated_stream_reports_what_was_read_and_where_it_stops(
    tmp_path: Path, kind: str
) -> None:
    whole = attacks.big()
    packed = COMPRESSORS[kind](whole)
    path = write(tmp_path, f"cut.log.{kind}", packed[: len(packed) * 2 // 3])
    d = doc(path)
    (inp,) = d["inputs"]  # type: ignore[misc]
    stopped = inp["stopped"]
    assert inp["compression"] == kind
    assert stopped["why"] == "truncated" and 0 < stopped["at_byte"] < len(whole)
    assert stopped["at_byte"] == inp["bytes"]
    # What was read is the log's own start, line for line.
    assert inp["lines"] == whole[: inp["bytes"]].count(b"\n") + 1
    code, text, _ = run_cli("analyze", str(path))
    assert code == 0
    assert f"the {kind} stream is cut short after {inp['bytes']:,} decompressed bytes" in " ".join(
        text.split()
    )


@pytest.mark.parametrize("kind", sorted(COMPRESSORS))
def test_concatenated_streams_are_one_input(tmp_path: Path, kind: str) -> None:
    """pigz/pbzip2-style members and zstd frames: all of them are read (zstd read only one)."""
    packed = COMPRESSORS[kind](LOG.read_bytes())
    d = doc(write(tmp_path, f"two.{kind}", packed + packed))
    (inp,) = d["inputs"]  # type: ignore[misc]
    assert inp["bytes"] == 2 * LOG.stat().st_size and inp["stopped"] is None
    assert len(d["launches"]) == 2  # type: ignore[arg-type]


def test_every_command_warns_when_an_input_was_read_in_part(tmp_path: Path) -> None:
    """diff/fit/whatif/plot reports have no input notes: the warning says it for them."""
    packed = gzip.compress(PAIR_B.read_bytes() * 40, mtime=0)
    cut = write(tmp_path, "b.log.gz", packed[: len(packed) // 2])
    code, _, err = run_cli("diff", str(PAIR_A), str(cut), "--launch-b", "0")
    assert f"Warning: {cut}: the gzip stream is cut short after " in err
    code, _, err = run_cli("analyze", str(LOG), "--max-bytes", "5K")
    assert code == 0 and f"Warning: {LOG}: read only its first 5,120 bytes" in err


def test_a_stream_cut_before_any_output_is_an_error_naming_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, "tiny.bz2", bz2.compress(LOG.read_bytes())[:200])
    code, _, err = run_cli("analyze", str(path))
    assert code == 1 and f"{path}: its bz2 stream is cut short before any data" in err


def test_garbage_after_a_stream_is_noted(tmp_path: Path) -> None:
    path = write(tmp_path, "junk.gz", gzip.compress(LOG.read_bytes()) + b"not gzip")
    (inp,) = doc(path)["inputs"]  # type: ignore[misc]
    assert inp["stopped"]["why"] == "corrupt" and inp["bytes"] == LOG.stat().st_size


# --- item 7: terminal escapes ----------------------------------------------------------------

CONTROL = {chr(c) for c in [*range(0x20), *range(0x7F, 0xA0)]} - {"\n", "\t"}


@pytest.mark.parametrize("fmt", ["text", "markdown"])
def test_no_control_character_reaches_the_terminal(tmp_path: Path, fmt: str) -> None:
    path = write(tmp_path, "esc.log", attacks.terminal_escapes(1))
    code, out, err = run_cli("analyze", "-f", fmt, str(path))
    assert code == 0, err
    assert not CONTROL & set(out)
    # The escaped newline is shown as \n: no forged report line.
    assert not any(
        line.startswith("Ready: start-up finished on 4 ranks (forged)") for line in out.splitlines()
    )
    assert "\\nReady: start-up finished on 4 ranks (forged)" in out


@pytest.mark.parametrize("fmt", ["text", "markdown"])
def test_diff_and_estimate_outputs_are_inert_too(tmp_path: Path, fmt: str) -> None:
    evil = tmp_path / "evil.log"
    evil.write_bytes(
        PAIR_B.read_bytes().replace(b"model_path='", b"model_path='\\x1b]0;t\\x07\\nA: forged", 1)
    )
    code, out, err = run_cli("diff", str(PAIR_A), str(evil), "-f", fmt)
    assert code == 0, err
    assert not CONTROL & set(out)
    cfg = json.loads(attacks.CONFIG.read_text()) | {"_name_or_path": "m\x1b]52;c;eA==\x07\nX"}
    cfg_path = write(tmp_path, "config.json", json.dumps(cfg).encode())
    code, out, err = run_cli("estimate", "--model-config", str(cfg_path), "-f", fmt)
    assert code == 0, err
    assert not CONTROL & set(out)
    assert "m]52;c;eA==\\nX" in out or "m]52;c;eA==\\\\nX" in out  # Markdown escapes the \\


def test_one_line_and_strip_controls() -> None:
    from logmem.report.safe_text import one_line, strip_controls

    assert one_line("a\x1b[2Jb\r\nc\td\x9b\u202e") == "a[2Jb\\nc\td"
    assert strip_controls("a\x07b\nc\td\x08") == "ab\nc\td"
    assert one_line("plain") == "plain"


def test_svg_ids_are_rewritten_in_tags_only() -> None:
    from logmem.report.page import inline_svg

    svg = '<svg><g id="a" clip-path="url(#a)"><text>id="evil" url(#evil)</text></g></svg>'
    out = inline_svg(svg, "fig1")
    assert '<g id="fig1-a" clip-path="url(#fig1-a)">' in out
    assert '<text>id="evil" url(#evil)</text>' in out


# --- item 8: the smaller ones -----------------------------------------------------------------


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be"])
def test_utf16_and_utf32_logs_are_decoded(tmp_path: Path, encoding: str) -> None:
    """A PowerShell `>` redirect writes UTF-16 LE with a byte-order mark."""
    data = ("\ufeff" + LOG.read_text()).encode(encoding)
    d = doc(write(tmp_path, "ps.log", data))
    assert ranks_of(d) == ranks_of(doc(LOG))
    assert d["inputs"][0]["encoding"] == encoding  # type: ignore[index]
    assert d["inputs"][0]["lines"] == doc(LOG)["inputs"][0]["lines"]  # type: ignore[index]


@pytest.mark.parametrize("head", [b"BZh9 starts this line\n", b"BZh91AY&SY starts this one\n"])
def test_text_that_starts_like_bz2_is_read_as_text(tmp_path: Path, head: bytes) -> None:
    d = doc(write(tmp_path, "bzh.log", head + LOG.read_bytes()))
    assert d["inputs"][0]["compression"] is None  # type: ignore[index]
    same_lines = write(tmp_path, "ref.log", b" " + head + LOG.read_bytes())
    assert ranks_of(d) == ranks_of(doc(same_lines))


def test_the_same_file_twice_is_read_once_with_a_warning(tmp_path: Path) -> None:
    link = tmp_path / "link.log"
    link.symlink_to(LOG)
    for second in (str(LOG), str(link)):
        code, out, err = run_cli("analyze", "-f", "json", str(LOG), second)
        assert code == 0
        assert f"Warning: {second} is given twice" in err and "read once" in err
        assert len(json.loads(out)["inputs"]) == 1


def test_stdin_twice_is_an_error() -> None:
    for command in ("analyze", "lines"):
        code, _, err = run_cli(command, "-", "-")
        assert code == 1 and "only one LOG can be '-'" in err


def test_an_empty_input_has_no_lines(tmp_path: Path) -> None:
    empty = write(tmp_path, "empty.log", b"")
    d = doc(LOG, str(empty))
    assert d["inputs"][1]["lines"] == 0  # type: ignore[index]
    code, out, _ = run_cli("analyze", str(LOG), str(empty))
    assert f"{empty}: 0 lines" in out


def test_an_unreadable_file_exits_1(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """README: an unreadable file is exit 1 (click's readable check made it a usage error,
    exit 2). Root reads anything, so there the refusal the kernel would give is simulated."""
    secret = write(tmp_path, "secret.log", LOG.read_bytes())
    secret.chmod(0)
    if os.geteuid() == 0:
        real_access, real_open = os.access, open

        def access(path: object, mode: int, **kw: object) -> bool:
            return False if str(path) == str(secret) else real_access(path, mode)  # type: ignore[arg-type]

        def denied(path: object, *a: object, **kw: object) -> object:
            if str(path) == str(secret):
                raise PermissionError(13, "Permission denied", str(path))
            return real_open(path, *a, **kw)  # type: ignore[call-overload]

        monkeypatch.setattr(os, "access", access)
        monkeypatch.setattr(source, "open", denied, raising=False)
    code, _, err = run_cli("analyze", str(secret))
    assert code == 1
    assert f"cannot open {secret}: Permission denied" in err


def test_max_bytes_cuts_and_says_so(tmp_path: Path) -> None:
    d = doc(LOG, "--max-bytes", "5K")
    (inp,) = d["inputs"]  # type: ignore[misc]
    assert inp["bytes"] == 5120 and inp["stopped"] == {
        "why": "max-bytes",
        "at_byte": 5120,
        "detail": None,
    }
    code, out, _ = run_cli("analyze", str(LOG), "--max-bytes", "5120")
    assert "read only its first 5,120 bytes (--max-bytes)" in " ".join(out.split())
    # A limit past the end cuts nothing and says nothing.
    assert doc(LOG, "--max-bytes", "1G")["inputs"][0]["stopped"] is None  # type: ignore[index]
    for bad in ("0", "-3", "lots", "5Q"):
        assert run_cli("analyze", str(LOG), "--max-bytes", bad)[0] == 2


def test_max_bytes_bounds_a_compressed_bomb(tmp_path: Path) -> None:
    path = write(tmp_path, "bomb.zst", attacks.zstd_bomb(1))
    t0 = time.monotonic()
    (inp,) = doc(path, "--max-bytes", "1M")["inputs"]  # type: ignore[misc]
    assert inp["bytes"] == 1 << 20 and inp["stopped"]["why"] == "max-bytes"
    assert time.monotonic() - t0 < 10


def _wait_until_reading_stdin(pid: int) -> None:
    """Until the process sleeps in a pipe read (Linux's wchan), so the signal lands in the
    run, not in interpreter start-up; 2 s where /proc does not say (a fixed sleep alone was
    too short on a loaded machine)."""
    wchan = os.path.join("/proc", str(pid), "wchan")  # the kernel's, not a machine's path
    if not os.path.exists(wchan):
        time.sleep(2)
        return
    deadline = time.monotonic() + 60
    while "pipe_read" not in Path(wchan).read_text() and time.monotonic() < deadline:
        time.sleep(0.02)


def _sigint_as_a_shell_leaves_it() -> None:
    # A child inherits an ignored SIGINT, and Python then installs no handler for it: a test
    # earlier in the run can leave pytest's process ignoring it (the run then read stdin to
    # its end and reported "no SGLang start-up lines"). A terminal's process has the default.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_exits_130() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "logmem", "analyze", "-"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=_sigint_as_a_shell_leaves_it,
    )
    _wait_until_reading_stdin(proc.pid)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err.decode(errors="replace")
    assert b"Interrupted." in err and b"Traceback" not in err


def test_ctrl_c_while_importing_exits_130(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Ctrl-C can land while the package is still importing (its first ~0.1 s)."""
    import importlib.abc

    class Interrupting(importlib.abc.MetaPathFinder):
        def find_spec(self, name: str, *_args: object) -> None:
            if name == "logmem.cli.main":
                raise KeyboardInterrupt

    monkeypatch.delitem(sys.modules, "logmem.cli.main", raising=False)
    monkeypatch.setattr(sys, "meta_path", [Interrupting(), *sys.meta_path])
    from logmem.__main__ import run

    assert run() == 130
    assert capsys.readouterr().err == "Interrupted.\n"
