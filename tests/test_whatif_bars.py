"""whatif --cuda-graph-max-bs above the launch's top, on a log whose bars read every bucket:
priced from the largest bucket's cost per row (an upper bound), not SGLang's heuristic; the
pair-e2 160 launch is the oracle (its measured graphs lie between the measured 80 ones and the
bound)."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from conftest import corpus_log
from logmem.cli.main import cli

FIX = Path(__file__).resolve().parents[1] / "fixtures"


def _run(log: Path, *args: str) -> str:
    r = CliRunner().invoke(cli, ["whatif", str(log), *args])
    assert r.exit_code == 0, r.output
    return r.output


def _row(out: str, name: str) -> list[str]:
    return next(ln for ln in out.splitlines() if ln.startswith(name)).split()


def test_raise_from_bars_is_an_upper_bound_holding_the_measured_160_launch() -> None:
    out = _run(FIX / "pair-e2-maxbs80-constructed.log", "--cuda-graph-max-bs", "160")
    # 0.92 + 0.60 (bs 80's 0.60 GiB per 80 rows, x 80 more) + 0.08 static + 10 x 0.020 later
    assert _row(out, "CUDA graphs")[-4:] == ["<=", "1.80", "+-", "0.03"]
    assert _row(out, "headroom")[-4:] == [">=", "3.64", "+-", "0.03"]
    # The 160 launch measured 1.33 GiB of graphs, 4.11 GiB after capture: inside the bound.
    assert 0.92 < 1.33 <= 1.80 - 0.03
    text = " ".join(out.split())
    assert "heuristic" not in text
    assert "largest bucket (bs 80, 80 rows) cost 0.60 GiB" in text
    assert "so the figure is an upper bound" in text
    assert "the launch's own top, bs 80, is captured after the new one too, 10 in all" in text


def test_raise_from_bars_verdicts() -> None:
    log = FIX / "pair-e2-maxbs80-constructed.log"
    args = ("--cuda-graph-max-bs", "160", "--activation-reserve")
    assert _row(_run(log, *args, "3.5"), "feasible")[-1] == "yes"  # 3.64 - 0.03 >= 3.5
    # The bound's printing error straddles the reserve: not settled.
    assert _row(_run(log, *args, "3.65"), "feasible")[-2:] == ["ruled", "out"]
    # Below the bound but above what the graphs as measured leave: an upper bound rules out nothing.
    assert _row(_run(log, *args, "4.2"), "feasible")[-2:] == ["ruled", "out"]
    # The graphs as measured already leave less: no larger max bs helps.
    assert _row(_run(log, *args, "4.6"), "feasible")[-1] == "NO"


def test_lower_from_160_still_prices_from_the_buckets() -> None:
    out = _run(FIX / "pair-e2-maxbs160-constructed.log", "--cuda-graph-max-bs", "80")
    assert _row(out, "CUDA graphs")[-2:] == ["<=", "1.15"]  # the 80 launch measured 0.92
    assert "per row" not in _row(out, "CUDA graphs")


def test_a_log_without_bar_readings_keeps_the_heuristic() -> None:
    # 001's bars carry no avail_mem (2025-03 tqdm had no description): no per-bucket readings.
    out = _run(corpus_log("001-"), "--cuda-graph-max-bs", "160")
    assert "graph-reserve heuristic" in " ".join(out.split())
    assert _row(out, "feasible")[-1] == "uncertain"
