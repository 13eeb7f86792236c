"""An echoed launch command over several physical lines (parse.command_lines, model.command):
which lines the reader follows it onto, how they join, and which flags are sure."""

from __future__ import annotations

import time
import tracemalloc
from pathlib import Path

import pytest

from conftest import CORPUS, CORPUS_MISSING
from logmem.analysis.attribution import build_ledger
from logmem.analysis.comm_inputs import mfs_passed
from logmem.analysis.findings_sizing import GapReason, PoolsVsBudget
from logmem.api import collect_events, read_log
from logmem.model.command import CommandFlags
from logmem.model.records import Launch
from logmem.parse import events as ev

LOG_018 = CORPUS / "018-gpt-oss-20b-dummy-1layer-nograph-bench-one-batch-sep2025.log"
PROMPT = "(sglang) root@box:/work# "
# Enough of a start-up for a launch: its records follow the command.
RECORDS = (
    "[2025-09-28 17:07:09 TP0] Init torch distributed begin.\n"
    "[2025-09-28 17:07:10 TP0] Load weight begin. avail mem=94.63 GB\n"
)


def _write(tmp_path: Path, text: str, name: str = "cmd.log") -> str:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return str(p)


def _command(path: str, chunk: int | None = None) -> ev.LaunchCommand:
    from logmem.parse.match import iter_segment_events
    from logmem.parse.patterns import KEYWORD_BYTES, ONCE_BYTES
    from logmem.parse.read import read_segments

    if chunk is None:
        events = collect_events([path])
    else:
        segs = read_segments([path], KEYWORD_BYTES, None, ONCE_BYTES, True, chunk)
        events = list(iter_segment_events(segs))
    cmds = [e for e in events if isinstance(e, ev.LaunchCommand)]
    assert len(cmds) == 1
    return cmds[0]


def _launch(path: str) -> Launch:
    return read_log(path, require_startup=False).launches[0]


def _flags(path: str) -> CommandFlags:
    flags = _launch(path).command_flags
    assert flags is not None
    return flags


def test_wrap_at_a_word_boundary_reads_the_continuation(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "python -m sglang.launch_server --model-path m --tp-size 2\n"
        "   --mem-fraction-static 0.8 --max-total-tokens 1000\n" + RECORDS,
    )
    cmd = _command(path)
    assert cmd.source.line_no == 1 and cmd.last_line == 2
    assert [s.kind for s in cmd.seams] == ["space"]
    flags = _flags(path)
    assert flags.passed("--mem-fraction-static") is True
    assert flags.args() == {
        "model_path": "m",
        "tp_size": 2,
        "mem_fraction_static": 0.8,
        "max_total_tokens": 1000,
    }
    assert flags.get("--max-total-tokens").line == 2  # type: ignore[union-attr]


def test_shell_continuations_join_as_the_shell_does(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "$ python3 -m sglang.launch_server \\\n"
        "    --model-path /m \\\n"
        "    /ignored-positional \\\n"  # no flag: taken because the line before asks for it
        "    --mem-fraction-static 0.7\n"
        "All deep_gemm operations loaded successfully!\n" + RECORDS,
    )
    cmd = _command(path)
    assert cmd.last_line == 4 and {s.kind for s in cmd.seams} == {"shell"}
    assert "\\" not in cmd.argv
    assert _flags(path).args()["mem_fraction_static"] == 0.7


def test_a_number_cut_mid_value_is_unknown_not_its_first_part(tmp_path: Path) -> None:
    # One cut, so no width the rows share: 0.1 / 2 may be 0.12 or a lost blank.
    path = _write(
        tmp_path,
        "python -m sglang.launch_server --model-path m --max-total-tokens 4096 --mem-fraction-static 0.1\n"
        "2 --disable-cuda-graph\n" + RECORDS,
    )
    cmd = _command(path)
    assert [s.kind for s in cmd.seams] == ["cut"] and not cmd.cuts_whole
    flags = _flags(path)
    f = flags.get("--mem-fraction-static")
    assert f is not None and f.split
    assert flags.passed("--mem-fraction-static") is True
    args = flags.args()
    assert "mem_fraction_static" not in args and args["max_total_tokens"] == 4096
    launch = _launch(path)
    assert mfs_passed(launch) is True
    assert "mem_fraction_static" not in launch.args


def test_a_terminal_wrap_at_a_shared_width_keeps_a_cut_number_whole(tmp_path: Path) -> None:
    head = PROMPT + "python -m sglang.launch_server --model-path m"
    text = (
        head
        + " --max-total-tokens 4096 --mem-fraction-static 0.12 --tp-size 2 --disable-cuda-graph"
    )
    width = 60
    rows = [text[i : i + width] for i in range(0, len(text), width)]
    assert len(rows) >= 3 and any(
        r[-1] != " " and rows[k + 1][0] != " " for k, r in enumerate(rows[:-1])
    )
    path = _write(tmp_path, "\n".join(rows) + "\n" + RECORDS)
    cmd = _command(path)
    assert cmd.cuts_whole and cmd.argv == text.split("launch_server ", 1)[1]
    assert _flags(path).args()["mem_fraction_static"] == 0.12


def test_a_flag_name_cut_is_rejoined_only_into_a_known_flag(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "python -m sglang.launch_server --model-path m --load-f\n"
        "ormat dummy --mem-frac-st\n"
        "atic-x 0.5 --tp-size 2\n" + RECORDS,
    )
    flags = _flags(path)
    lf = flags.get("--load-format")
    assert lf is not None and lf.value == "dummy" and lf.split is False
    assert flags.args()["load_format"] == "dummy"
    assert flags.get("--mem-frac-static-x") is not None  # kept as the unknown word it is
    # A cut word that makes no SGLang flag may have been --mem-fraction-static: not "no".
    assert flags.passed("--mem-fraction-static") is None


def test_a_unique_prefix_is_the_flag_argparse_reads(tmp_path: Path) -> None:
    path = _write(
        tmp_path, "python -m sglang.launch_server --model-path m --mem-frac 0.6\n" + RECORDS
    )
    flags = _flags(path)
    assert flags.passed("--mem-fraction-static") is True
    assert flags.args()["mem_fraction_static"] == 0.6


def test_a_lost_blank_after_a_whole_flag_leaves_its_value_unknown(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "python -m sglang.launch_server --model-path m --max-total-tokens\n4096 --tp-size 2\n"
        + RECORDS,
    )
    flags = _flags(path)
    f = flags.get("--max-total-tokens")
    assert f is not None and f.split
    assert "max_total_tokens" not in flags.args() and flags.args()["tp_size"] == 2


def test_a_command_on_one_line_takes_no_other(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "python -m sglang.launch_server --model-path m --mem-fraction-static 0.8\n"
        "All deep_gemm operations loaded successfully!\n"
        "WARNING:sglang.srt.server_args:use --foo instead\n"
        "usage: launch_server.py [-h] --model-path MODEL_PATH\n" + RECORDS,
    )
    cmd = _command(path)
    assert cmd.last_line is None and cmd.seams == ()
    assert _flags(path).args()["mem_fraction_static"] == 0.8


def test_a_command_followed_by_sglang_records_stops_there(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "python -m sglang.launch_server --model-path m --load-f\n"
        "[2025-09-28 17:07:09 TP0] Init torch distributed begin. --not-a-flag\n"
        "[2025-09-28 17:07:10 TP0] Load weight begin. avail mem=94.63 GB\n",
    )
    assert _command(path).last_line is None
    launch = _launch(path)
    assert launch.ranks and launch.ranks[0].init_begin is not None  # the record is read as itself


def test_a_line_holding_a_keyword_is_never_the_commands(tmp_path: Path) -> None:
    head = "python -m sglang.launch_server --model-path m\n"
    kept = _write(tmp_path, head + "--tp-size 2 chunked_prefill_size=8192\n" + RECORDS, "a.log")
    assert _command(kept).last_line == 2
    # The same line with a keyword of the reader's: it is read as itself, not as arguments.
    path = _write(tmp_path, head + "--tp-size 2 max_total_num_tokens=4096\n" + RECORDS, "b.log")
    cmd = _command(path)
    assert cmd.last_line is None and "max_total_num_tokens" not in cmd.argv


def test_the_join_does_not_depend_on_where_chunks_end(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "python -m sglang.launch_server --model-path m\n"
        "  --tp-size 2\n  --mem-fraction-static 0.8\n  --page-size 16\n" + RECORDS,
    )
    whole = _command(path)
    assert whole.last_line == 4
    for chunk in (7, 13, 31):
        assert _command(path, chunk) == whole


def test_the_continuation_is_capped(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "python -m sglang.launch_server --model-path m\n"
        + "".join(f"  --flag-{i} {i}\n" for i in range(500))
        + RECORDS,
    )
    from logmem.parse.command_lines import MAX_COMMAND_LINES

    assert _command(path).last_line == 1 + MAX_COMMAND_LINES


def test_a_hostile_10_mb_command_is_bounded(tmp_path: Path) -> None:
    word = " --mem-fraction-static 0.1"
    text = (
        "python -m sglang.launch_server --model-path m"
        + word * (10_000_000 // len(word))
        + "\n"
        + "2 --x\n" * 200_000
        + RECORDS
    )
    path = _write(tmp_path, text)
    tracemalloc.start()
    t0 = time.perf_counter()
    launch = read_log(path, require_startup=False).launches[0]
    flags = launch.command_flags
    elapsed = time.perf_counter() - t0
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert elapsed < 30 and peak < 400 << 20
    assert flags is None or flags.last_line - flags.line <= 64


@pytest.mark.skipif(not LOG_018.exists(), reason=CORPUS_MISSING)
def test_018_reads_the_wrapped_command() -> None:
    cmd = _command(str(LOG_018))
    assert cmd.source.line_no == 1 and cmd.last_line == 3 and cmd.cuts_whole
    launch = _launch(str(LOG_018))
    assert launch.server_args is None and launch.args_from == "command"
    assert mfs_passed(launch) is True
    assert launch.args["mem_fraction_static"] == 0.12
    assert launch.args["max_total_tokens"] == 4096
    assert launch.args["load_format"] == "dummy"
    led = build_ledger(launch)
    assert led.sizing is not None and led.sizing.mfs_lines == (1, 3)
    gaps = [f for f in led.findings if isinstance(f, PoolsVsBudget)]
    assert gaps and gaps[0].reason is GapReason.MAX_TOTAL_TOKENS
    assert gaps[0].max_total_tokens == 4096 and gaps[0].cap_line == 2
