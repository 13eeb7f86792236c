"""Every command's report says an input was read only in part (issue 16): diff, fit, whatif and
plot, in every format, with analyze's words (logmem.report.input_notes), not on stderr only."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_fit import Model, make_log

import logmem
from logmem.cli.main import cli

FORMATS = ["text", "markdown", "json", "html"]
NOTE = "the gzip stream is cut short after"


@pytest.fixture
def logs(tmp_path: Path) -> dict[str, Path]:
    """A max-bs pair; `cut` is the first one gzipped and cut short after its start-up."""
    a, b = make_log(Model(max_bs=80, ranks=2)), make_log(Model(max_bs=160, ranks=2, port=30001))
    out = {"a": tmp_path / "a.log", "b": tmp_path / "b.log", "cut": tmp_path / "a.log.gz"}
    out["a"].write_text(a)
    out["b"].write_text(b)
    # A dozen filler lines after start-up, then the cut: every start-up line is still read.
    data = gzip.compress((a + "uvicorn says hello\n" * 2000).encode())
    out["cut"].write_bytes(data[: len(data) - 40])
    return out


def _run(*args: str) -> tuple[int, str, str]:
    r = CliRunner().invoke(cli, ["-q", *args])
    return r.exit_code, r.stdout, r.stderr


def _says_cut(fmt: str, out: str, who: str, path: Path) -> None:
    if fmt == "json":
        doc = json.loads(out)
        assert any(NOTE in n and f"{who} ({path})" in n for n in doc["notes"]), doc["notes"]
        sides = doc["launches"] if "launches" in doc else [doc.get(k) for k in ("a", "b", "launch")]
        stopped = [s for side in sides if side for s in side["stopped"]]
        assert stopped and stopped[0]["why"] == "truncated" and stopped[0]["path"] == str(path)
    else:
        flat = " ".join(out.split())  # text wraps at 100 columns
        assert f"{who} ({path}): {NOTE}" in flat


@pytest.mark.parametrize("fmt", FORMATS)
def test_diff_says_a_cut_input_in_the_report(logs: dict[str, Path], fmt: str) -> None:
    code, out, _ = _run("diff", str(logs["cut"]), str(logs["b"]), "-f", fmt)
    assert code == 0
    _says_cut(fmt, out, "A", logs["cut"])
    # The whole input says nothing of the kind.
    assert NOTE not in _run("diff", str(logs["a"]), str(logs["b"]), "-f", fmt)[1]


@pytest.mark.parametrize("fmt", FORMATS)
def test_fit_says_a_cut_input_in_the_report(logs: dict[str, Path], fmt: str) -> None:
    code, out, _ = _run("fit", str(logs["b"]), str(logs["cut"]), "-f", fmt)
    assert code == 0
    _says_cut(fmt, out, "2", logs["cut"])


@pytest.mark.parametrize("fmt", FORMATS)
def test_whatif_says_a_cut_input_in_the_report(logs: dict[str, Path], fmt: str) -> None:
    code, out, _ = _run("whatif", str(logs["cut"]), "--mem-fraction-static", "0.8", "-f", fmt)
    assert code == 0, out
    _says_cut(fmt, out, "LOG", logs["cut"])


def test_plot_says_a_cut_input_on_the_figure(logs: dict[str, Path], tmp_path: Path) -> None:
    svg = tmp_path / "w.svg"
    code, _, err = _run("plot", str(logs["cut"]), "-o", str(svg))
    assert code == 0, err
    assert NOTE in svg.read_text()
    code, _, err = _run("plot", "--kind", "fit", str(logs["cut"]), str(logs["b"]), "-o", str(svg))
    assert code == 0, err
    assert NOTE in svg.read_text() and "1 (" in svg.read_text()
    fig = logmem.plot(str(logs["a"]))
    assert not any(NOTE in t.get_text() for t in fig.texts)


def test_analyze_and_the_comparisons_say_it_in_the_same_words(logs: dict[str, Path]) -> None:
    text = _run("analyze", str(logs["cut"]))[1]
    diff = _run("diff", str(logs["cut"]), str(logs["b"]))[1]
    line = next(x for x in text.splitlines() if NOTE in x)
    words = line[line.index(NOTE) :].strip().rstrip(".")
    assert words.replace("\n", " ") in " ".join(diff.split())
