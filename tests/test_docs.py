"""README stays true: its set-up commands, its transcripts, and every command documented."""

from __future__ import annotations

import re
import shlex

import pytest
from click.testing import CliRunner

from conftest import REPO
from logmem.cli.main import cli

README = (REPO / "README.md").read_text(encoding="utf-8")


def _blocks() -> list[str]:
    blocks = re.findall(r"^```(\w*)\n(.*?)^```", README, flags=re.S | re.M)
    return [body for lang, body in blocks if lang in ("", "sh", "console", "text")]


def test_setup_commands_come_first_and_ci_runs_the_test_command() -> None:
    blocks = _blocks()
    install, tests = blocks[0].strip(), blocks[1].strip()
    assert "pip install -e ." in install and "logmem analyze fixtures/" in install
    fixture = re.search(r"logmem analyze (fixtures/\S+)", install)
    assert fixture and (REPO / fixture.group(1)).exists()
    assert "pip install -e '.[test]'" in tests and "pytest" in tests
    ci = (REPO / ".ci" / "run").read_text()
    assert tests in ci, "README's test command must be what .ci/run calls"


def _transcripts() -> list[tuple[str, str]]:
    """`$ logmem ...` lines with the output under them, up to the next `$` or a `...` line."""
    out = []
    for block in _blocks():
        lines = block.splitlines()
        i = 0
        while i < len(lines):
            if lines[i].startswith("$ logmem "):
                cmd = lines[i][2:]
                body = []
                i += 1
                while i < len(lines) and not lines[i].startswith("$ "):
                    body.append(lines[i])
                    i += 1
                out.append((cmd, "\n".join(body)))
            else:
                i += 1
    return out


@pytest.mark.parametrize(
    ("cmd", "expected"),
    _transcripts(),
    ids=lambda v: v if isinstance(v, str) and v.startswith("logmem") else "",
)
def test_readme_transcripts_reproduce(
    cmd: str, expected: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO)
    args = shlex.split(cmd)[1:]
    res = CliRunner().invoke(cli, args, catch_exceptions=False)
    got = res.stdout.rstrip("\n").splitlines()
    want = expected.rstrip("\n").splitlines()
    if want and want[-1].strip() == "...":  # the README shows the head of a long output
        want = want[:-1]
        got = got[: len(want)]
    assert got == want


def test_every_command_has_help_and_is_in_the_readme() -> None:
    for name, command in cli.commands.items():
        assert command.help, f"`logmem {name}` has no help text"
        assert f"logmem {name}" in README, f"`logmem {name}` is not in README.md"
        res = CliRunner().invoke(cli, [name, "--help"])
        assert res.exit_code == 0 and "Usage:" in res.output


def test_readme_paths_exist() -> None:
    for rel in set(re.findall(r"\b((?:fixtures|docs|bench|notebooks)/[\w./-]+\.\w+)", README)):
        assert (REPO / rel).exists(), rel
