"""fit / diff, review B8b: launches that capture the same largest batch size give no slope, and
the refusal says so in words, with the size (compare.slope.same_sizes, SameLargestSize)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from test_fit import Model, diff, fit, pair

from conftest import FIXTURES
from logmem.cli.main import cli
from logmem.errors import FitError
from logmem.report.compare.notes import slope_in_words
from logmem.report.compare.render import to_json

E7_256 = str(FIXTURES / "pair-e7-maxbs256-constructed.log")
LOG024 = str(FIXTURES / "024-llama31-8b-docs-notebook-output-oct2024.log")


def _fit_error(*args: str) -> str:
    r = CliRunner().invoke(cli, ["fit", *args])
    assert r.exit_code == 1, r.output
    return r.output


def test_two_launches_with_one_max_bs() -> None:
    assert _fit_error(E7_256, E7_256) == (
        "Error: no slope: both launches capture the same largest batch size 256; a slope needs "
        "two different sizes\n"
    )


def test_three_launches_with_one_max_bs() -> None:
    out = _fit_error(E7_256, E7_256, E7_256)
    assert "all 3 launches capture the same largest batch size 256;" in out


def test_a_log_without_captured_sizes_says_the_size_is_server_args() -> None:
    # 024 (Oct 2024) prints no bs list and no bars: the size is the resolved cuda_graph_max_bs.
    out = " ".join(_fit_error(LOG024, LOG024).split())
    assert (
        "both launches capture the same largest batch size 160 (server_args' cuda_graph_max_bs: "
        "neither log prints its captured sizes)" in out
    )


def test_diff_says_the_same(tmp_path: Path) -> None:
    d = diff(*pair(tmp_path, Model(max_bs=80, mfs=0.85), Model(max_bs=80, mfs=0.87)))
    assert to_json(d)["slope_note"] == (
        "none: both launches capture the same largest batch size 80; a slope needs two "
        "different sizes"
    )


def test_varied_lists_with_the_same_largest_size(tmp_path: Path) -> None:
    """cuda_graph_bs differs but both lists end at 80: the refusal names the graph and 80."""
    a = Model(era="E7", max_bs=80)
    b = Model(era="E7", max_bs=80, extra_args={"cuda_graph_bs": [1, 2, 4, 8, 80]})
    la, ra, lb, rb = pair(tmp_path, a, b)
    with pytest.raises(FitError) as e, slope_in_words():
        fit([la, lb], [ra, rb])
    assert "both launches capture the same largest batch size 80; a slope needs two" in str(e.value)
