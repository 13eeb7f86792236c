"""whatif review D #1: a larger max bs priced by SGLang's graph-reserve heuristic is an estimate,
so its verdict is uncertain (or NO, when the graphs as measured already leave too little), and
the note names the heuristic as a reserve and the buckets' kept logits (before 0.5.1)."""

from __future__ import annotations

from click.testing import CliRunner

from conftest import corpus_log
from logmem.cli.main import cli


def _run(prefix: str, *args: str) -> str:
    r = CliRunner().invoke(cli, ["whatif", str(corpus_log(f"{prefix}-")), *args])
    assert r.exit_code == 0, r.output
    return r.output


def _row(out: str, name: str) -> list[str]:
    return next(ln for ln in out.splitlines() if ln.startswith(name)).split()


def test_a_heuristic_priced_raise_is_uncertain_and_names_the_kept_logits() -> None:
    out = _run("001", "--cuda-graph-max-bs", "160")
    assert _row(out, "feasible")[-2:] == ["yes", "uncertain"]
    text = " ".join(out.split())
    assert "not a measurement of this launch" in text
    # 0.4.3's list adds bs 88, 96, ..., 160 (10 buckets, 1,240 rows), each with its own logits.
    assert "the 10 bucket(s) it adds (bs 88-160) hold 1,240 rows, 4,960 B per vocabulary" in text
    assert "cuda_graph_runner.py output_buffers" in text


def test_a_heuristic_priced_raise_is_no_when_the_measured_graphs_leave_too_little() -> None:
    # 001 leaves 0.53 GiB after capture: a 0.6 GiB activation reserve is short before any
    # bucket is added, and raising max bs costs no less, whatever the heuristic's error.
    out = _run("001", "--cuda-graph-max-bs", "160", "--activation-reserve", "0.6")
    assert _row(out, "feasible")[-1] == "NO"


def test_a_heuristic_priced_lower_max_bs_stays_feasible_when_measured_graphs_fit() -> None:
    # Lowering frees memory: the measured graphs already fit, so the estimate cannot undo it.
    out = _run("001", "--cuda-graph-max-bs", "40", "--mem-fraction-static", "0.85")
    assert _row(out, "feasible")[-1] in ("yes",)
