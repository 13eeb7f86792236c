"""whatif, review 30: the bounds a prediction carries are in its data, not only in its words. A
smaller max bs priced from the buckets without a slope is an upper bound of graphs ("at most",
headroom "at least"); a capture OOM lowered by a slope is an estimated lower bound."""

from __future__ import annotations

import json

from click.testing import CliRunner

from conftest import FIXTURES
from logmem.cli.main import cli

E7 = {n: str(FIXTURES / f"pair-e7-maxbs{n}-constructed.log") for n in (128, 256, 512)}
OOM = str(FIXTURES / "oom-decode-largest-bucket-constructed.log")


def _run(*args: str) -> str:
    r = CliRunner().invoke(cli, ["whatif", *args])
    assert r.exit_code == 0, r.output
    return r.output


def _json(*args: str) -> dict:  # type: ignore[type-arg]
    return json.loads(_run(*args, "-f", "json"))  # type: ignore[no-any-return]


def test_lowering_max_bs_without_a_slope_is_an_upper_bound_in_data_and_table() -> None:
    doc = _json(E7[256], "--cuda-graph-max-bs", "128")
    p = doc["predicted"]
    assert (p["graph_bound"], p["headroom_bound"]) == ("at most", "at least")
    assert doc["measured"]["graph_bound"] == "exact"
    # The bound holds: the 128 launch measured no more graph memory than predicted.
    assert _json(E7[128])["measured"]["graph_gib"] <= p["graph_gib"]
    assert doc["window_top_bound"] == "at least"
    text = " ".join(_run(E7[256], "--cuda-graph-max-bs", "128").split())
    assert "CUDA graphs, GiB 2.74 <= 2.41" in text
    assert "headroom, GiB (the GPU) 8.10 >= 8.43" in text
    assert "so the top is at least 0.956; it may be higher" in text


def test_a_lower_bound_of_the_headroom_below_the_reserve_rules_nothing_out() -> None:
    """>= 8.43 GiB of headroom against a reserve of 8.5: not settled, not NO."""
    doc = _json(E7[256], "--cuda-graph-max-bs", "128", "--activation-reserve", "8.5")
    assert doc["predicted"]["feasible"] is None and doc["feasible"] is None
    lo, hi = doc["mem_fraction_static_window"]
    assert hi is not None and hi < 0.85 and not doc["window_empty"]
    sure = _json(E7[256], "--cuda-graph-max-bs", "128", "--activation-reserve", "8.3")
    assert sure["predicted"]["feasible"] is True


def test_lowering_max_bs_with_a_slope_stays_an_estimate() -> None:
    p = _json(E7[256], "--cuda-graph-max-bs", "128", "--slope-from", E7[128], E7[512])["predicted"]
    assert (p["graph_bound"], p["headroom_bound"]) == ("estimated", "estimated")


def test_a_capture_oom_lowered_by_a_slope_is_an_estimated_lower_bound() -> None:
    doc = _json(OOM, "--cuda-graph-max-bs", "128")
    p = doc["predicted"]
    assert (p["graph_bound"], p["headroom_bound"]) == ("estimated at least", "estimated at most")
    assert doc["measured"]["graph_bound"] == "at least"
    text = " ".join(_run(OOM, "--cuda-graph-max-bs", "128").split())
    assert "CUDA graphs, GiB >= 1.01 >= ~0.74" in text
    assert "headroom, GiB (TP0) <= -0.24 <= ~0.03" in text
    assert "Graphs at max bs 128 are an estimated lower bound" in text


def test_a_context_above_an_at_least_top_is_not_ruled_out() -> None:
    """The window's top is a lower bound: a context needing more is unsettled, not impossible."""
    args = (E7[256], "--cuda-graph-max-bs", "128", "--activation-reserve", "8.5")
    text = " ".join(_run(*args, "--context-length", "300000").split())
    assert "above the window's top" not in text
    assert "whether the graphs then fit is unknown (the window's top, at least" in text


def test_the_larger_of_two_possible_list_tops_is_an_upper_bound() -> None:
    """011 (v0.5.2, no device total): max bs 200 captures 192 or 200; the figures priced at 200
    (by SGLang's heuristic) are an estimated upper bound of graphs, as the note says."""
    from conftest import corpus_log

    log = str(corpus_log("011"))
    p = _json(log, "--cuda-graph-max-bs", "200")["predicted"]
    assert (p["graph_bound"], p["headroom_bound"]) == ("estimated at most", "estimated at least")
    text = " ".join(_run(log, "--cuda-graph-max-bs", "200").split())
    assert "CUDA graphs, GiB 0.89 <= ~0.97" in text
    assert (
        "it may be higher if the smaller largest batch the log allows is the one captured" in text
    )


def test_held_draft_graphs_make_a_smaller_max_bs_an_upper_bound_with_a_slope() -> None:
    """019 at max bs 16 with --mib-per-row: the decode graph moves by the slope, the draft
    graphs (the same bs list in SGLang) are held as measured: an estimated upper bound."""
    log = str(FIXTURES / "019-deepseek-r1-w4a8-ascend-a3-tp16-dp4-deepep-mtp.log")
    args = (log, "--cuda-graph-max-bs", "16", "--mib-per-row", "5")
    doc = _json(*args)
    p = doc["predicted"]
    assert (p["graph_bound"], p["headroom_bound"]) == ("estimated at most", "estimated at least")
    assert doc["window_top_bound"] == "at least"
    text = " ".join(_run(*args).split())
    assert "the other batch-sized graphs held as measured, so '<=' and '>=' hold only" in text
