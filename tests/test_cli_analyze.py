"""`logmem analyze` through click's CliRunner: files and stdin, formats, -o, --rank, --launch, errors."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import FIXTURES
from logmem.cli.commands import COMMANDS
from logmem.cli.main import cli, main

LOG = FIXTURES / "001-qwq32b-tp4-l4-docs.log"


def run(args: list[str], stdin: bytes | None = None):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(cli, args, input=stdin, catch_exceptions=False)


@pytest.mark.parametrize("use_stdin", [False, True])
@pytest.mark.parametrize("fmt", ["text", "markdown", "json"])
def test_formats_from_file_and_stdin(fmt: str, use_stdin: bool) -> None:
    args = ["analyze", "-" if use_stdin else str(LOG), "-f", fmt]
    res = run(args, LOG.read_bytes() if use_stdin else None)
    assert res.exit_code == 0, res.output
    if fmt == "json":
        doc = json.loads(res.output)
        assert doc["schema"] == "logmem.analysis/1"
        assert doc["launches"][0]["max_total_num_tokens"] == 46611
    elif fmt == "markdown":
        assert res.output.startswith("## Launch")
        assert "| phase / cause |" in res.output
    else:
        assert res.output.splitlines()[2].startswith("Ready")
        assert max(len(line) for line in res.output.splitlines()) <= 100


@pytest.mark.parametrize(
    ("short", "full"), [("md", "markdown"), ("txt", "text"), ("MD", "markdown")]
)
@pytest.mark.parametrize("command", ["analyze", "diff"])
def test_format_short_names(short: str, full: str, command: str) -> None:
    """-f md / -f txt are the formats .md / .txt name (users type them; the review did)."""
    logs = [str(LOG)] * (2 if command == "diff" else 1)
    a = run([command, *logs, "-f", short])
    b = run([command, *logs, "-f", full])
    assert a.exit_code == 0, a.output
    assert a.output == b.output
    assert run([command, *logs, "-f", "mdx"]).exit_code == 2


def test_stdin_and_file_agree() -> None:
    a = run(["analyze", str(LOG), "-f", "json"]).output
    b = run(["analyze", "-", "-f", "json"], LOG.read_bytes()).output
    assert json.loads(a)["launches"][0]["ranks"] == json.loads(b)["launches"][0]["ranks"]


@pytest.mark.parametrize(
    ("name", "check"), [("r.json", "{"), ("r.md", "## Launch"), ("r.txt", "Launch")]
)
def test_output_extension_picks_format(tmp_path: Path, name: str, check: str) -> None:
    out = tmp_path / name
    res = run(["analyze", str(LOG), "-o", str(out)])
    assert res.exit_code == 0
    assert out.read_text().startswith(check)
    assert res.stdout == ""  # nothing on stdout; "Wrote ..." goes to stderr
    assert res.stderr.startswith("Wrote ")


def test_no_force_refuses_to_overwrite(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    out.write_text("keep")
    res = CliRunner().invoke(cli, ["analyze", str(LOG), "-o", str(out), "--no-force"])
    assert res.exit_code == 1
    assert out.read_text() == "keep"


def test_rank_selection() -> None:
    doc = json.loads(run(["analyze", str(LOG), "-f", "json", "--rank", "TP2"]).output)
    assert [r["rank"] for r in doc["launches"][0]["ranks"]] == ["TP2"]


def test_unknown_rank_lists_the_ranks() -> None:
    res = CliRunner().invoke(cli, ["analyze", str(LOG), "--rank", "TP9"])
    assert res.exit_code == 1
    assert (
        "Error: --rank 'TP9' is not in the log; ranks seen: 'TP0', 'TP1', 'TP2', 'TP3'"
        in res.output
    )


def test_unknown_launch() -> None:
    res = CliRunner().invoke(cli, ["analyze", str(LOG), "--launch", "3"])
    assert res.exit_code == 1
    assert "Error: --launch 3: the input holds 1 launch(es), numbered 0 to 0" in res.output


def test_missing_file_is_exit_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nope.log"
    assert main(["analyze", str(missing)]) == 1
    assert f"Error: cannot open {missing}: No such file or directory" in capsys.readouterr().err


def test_not_a_sglang_log(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    other = tmp_path / "other.log"
    other.write_text("hello\nworld\n")
    assert main(["analyze", str(other)]) == 1
    assert f"Error: no SGLang start-up lines found in {other}" in capsys.readouterr().err


def test_usage_error_is_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["analyze"]) == 2
    assert main(["analyze", str(LOG), "-f", "pdf"]) == 2


def test_all_ranks_in_text_when_few(tmp_path: Path) -> None:
    text = run(
        ["analyze", str(FIXTURES / "014-qwen35-9b-tp2-rtx4090-gdn-mamba-apr2026.log")]
    ).output
    assert "Ledger of TP0" in text and "Ledger of TP1" in text
    four = run(["analyze", str(LOG)]).output
    assert "Ledger of TP1" not in four and "3 more ranks" in four


def test_output_extension_for_another_command_is_a_usage_error(tmp_path: Path) -> None:
    res = CliRunner().invoke(cli, ["analyze", str(LOG), "-o", str(tmp_path / "r.png")])
    assert res.exit_code == 2
    assert "this command writes text, markdown, json, html, not png" in res.output


def test_analyze_imports_no_other_command() -> None:
    """Subcommands are imported on use: `logmem analyze` loads none of the others' modules."""
    from conftest import cli_in_fresh_process

    others = tuple(f"logmem.cli.{m}" for m in COMMANDS if m != "analyze")
    rc, imported, out = cli_in_fresh_process(["analyze", str(LOG), "-f", "json"], others)
    assert rc == "0" and imported == [] and out.startswith("{")


def test_help_lists_every_command() -> None:
    listed = CliRunner().invoke(cli, ["--help"]).output.split("Commands:")[1].split()
    assert set(COMMANDS) <= set(listed)


def test_a_launch_without_server_args_is_titled_by_the_line_that_names_its_model() -> None:
    """014 prints no server_args dump, but line 46 'Found local HF snapshot for Qwen/Qwen3.5-9B'
    names the model; 018's echoed command passes --model-path (line 1). A log that names no
    model at all is titled by the architecture its Load weight end printed."""
    from conftest import corpus_log

    path = corpus_log("014-")
    text = path.read_text()
    assert "server_args" not in text
    lines = text.splitlines()
    assert "Found local HF snapshot for Qwen/Qwen3.5-9B at " in lines[45]
    out = run(["analyze", str(path)]).output
    assert out.splitlines()[0] == "Launch: Qwen/Qwen3.5-9B (HF snapshot, line 46; no server_args)"
    head = run(["analyze", str(corpus_log("018-"))]).output.splitlines()[0]
    assert head == "Launch: /z_data/syxin/Hanrui/gpt-oss-20b (command line, line 1; no server_args)"


def test_a_log_that_names_no_model_is_titled_by_its_architecture(tmp_path: Path) -> None:
    from conftest import corpus_log

    text = corpus_log("014-").read_text()
    path = tmp_path / "no-name.log"
    path.write_text("\n".join(x for x in text.splitlines() if "HF snapshot" not in x) + "\n")
    arch = re.search(r"Load weight end\..*?type=(\w+)", text)
    assert arch is not None
    out = run(["analyze", str(path)]).output
    assert out.splitlines()[0] == f"Launch: {arch[1]} (no line names the model)"
