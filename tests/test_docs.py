"""README stays true: its set-up commands, its transcripts, and every command documented."""

from __future__ import annotations

import re
import shlex

import click
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
    ctx = click.Context(cli)
    for name in cli.list_commands(ctx):
        command = cli.get_command(ctx, name)
        assert command is not None, name
        assert command.help, f"`logmem {name}` has no help text"
        assert f"logmem {name}" in README, f"`logmem {name}` is not in README.md"
        res = CliRunner().invoke(cli, [name, "--help"])
        assert res.exit_code == 0 and "Usage:" in res.output


def test_readme_paths_exist() -> None:
    for rel in set(re.findall(r"\b((?:fixtures|docs|bench|notebooks)/[\w./-]+\.\w+)", README)):
        assert (REPO / rel).exists(), rel


# --------------------------------------------------------------------------- docs/reference.md

REFERENCE = REPO / "docs" / "reference.md"
# "reference 12.2", "reference 0.1 and 7", "docs/reference.md 12.5", "reference.md, 4.3".
CITATION = re.compile(
    r"\breference(?:\.md)?,? (\d+(?:\.\d+)?)((?:(?:, | and | or )\d+(?:\.\d+)?)*)(?![\d.]*\d)"
)
ERA = re.compile(r"\bE([0-7])(?:\s?[-\u2013]\s?E([0-7]))?\b")
ANCHOR = re.compile(r'^<a id="(ref|era)-([\w.]+)"></a>\n(#+) (\S+)', re.M)


def _cited_sources() -> list[tuple[str, str]]:
    """(name, text) of every file that can cite the reference: the package's source, the docs,
    the README and the reports the tests pin (tests/golden)."""
    paths = sorted((REPO / "logmem").rglob("*.py"))
    paths += sorted((REPO / "docs").glob("*.md")) + [REPO / "README.md"]
    paths += sorted(p for p in (REPO / "tests" / "golden").rglob("*") if p.is_file())
    return [(str(p.relative_to(REPO)), p.read_text(encoding="utf-8")) for p in paths]


def _anchors() -> dict[str, str]:
    """Anchor id -> the heading it sits on; each anchor must be right above its heading."""
    text = REFERENCE.read_text(encoding="utf-8")
    found = {f"{kind}-{key}": heading for kind, key, _, heading in ANCHOR.findall(text)}
    assert len(found) == text.count('<a id="'), "an anchor that is not right above a heading"
    for anchor, heading in found.items():
        key = anchor.split("-", 1)[1]
        # "## 12. Formulas", "### 12.2 KV-pool sizing", "#### E3: mid-May ..."
        assert heading.rstrip(".:") == key, f"{anchor} sits on heading {heading!r}"
    return found


def test_reference_anchors_sit_on_their_headings() -> None:
    anchors = _anchors()
    assert {f"era-E{i}" for i in range(8)} <= set(anchors)
    assert {"ref-12.2", "ref-12.3", "ref-12.5", "ref-0.1", "ref-4.3", "ref-7"} <= set(anchors)
    # Links inside the document resolve to its own anchors.
    text = REFERENCE.read_text(encoding="utf-8")
    for target in re.findall(r"\]\(#([\w.-]+)\)", text):
        assert target in anchors, f"docs/reference.md links to #{target}, which is not there"


def test_every_citation_resolves_to_a_section_of_docs_reference() -> None:
    anchors = _anchors()
    checked = 0
    for name, text in _cited_sources():
        for m in CITATION.finditer(text):
            for number in re.findall(r"\d+(?:\.\d+)?", m.group(0)):
                assert f"ref-{number}" in anchors, f"{name}: '{m.group(0)}' cites no section"
                checked += 1
        for m in ERA.finditer(text):
            first = int(m.group(1))
            last = int(m.group(2)) if m.group(2) else first
            assert first <= last, f"{name}: era range {m.group(0)} runs backwards"
            for era in range(first, last + 1):
                assert f"era-E{era}" in anchors, f"{name}: era E{era} has no section"
                checked += 1
    assert checked > 50  # the package cites the reference throughout


def test_no_citation_points_outside_the_repository() -> None:
    for name, text in _cited_sources():
        if name.startswith("tests/golden"):
            continue
        assert "../shared" not in text, f"{name} points at ../shared, which a clone lacks"
        assert "log-formats.md" not in text, f"{name} cites log-formats.md: use docs/reference.md"


def test_tests_name_no_absolute_machine_paths() -> None:
    """Tests find the repo and the corpus relative to themselves (conftest.REPO, CORPUS), so a
    clone anywhere runs them; a Path built from an absolute literal works on one machine only."""
    for path in sorted((REPO / "tests").glob("*.py")):
        found = re.findall(r"Path\(\s*[rbf]?[\"']/[^\"']*", path.read_text(encoding="utf-8"))
        assert not found, f"{path.name}: {found}"
