"""whatif --cuda-graph-max-bs against launches that were actually run at the new max bs, review
28: the pair-e7 fixtures are one model and GPU at max bs 128, 256 and 512 (E7, capture list
generated up to max bs). A prediction from one of them at another max bs must land on the launch
that ran there, within the error it states."""

from __future__ import annotations

import json

from click.testing import CliRunner

from conftest import FIXTURES
from logmem.cli.main import cli
from logmem.sglang.capture_lists import GpuFacts, ListContext, largest_at_max_bs

E7 = {n: str(FIXTURES / f"pair-e7-maxbs{n}-constructed.log") for n in (128, 256, 512)}


def _json(*args: str) -> dict:  # type: ignore[type-arg]
    r = CliRunner().invoke(cli, ["whatif", *args, "-f", "json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.output)  # type: ignore[no-any-return]


def _measured_graphs(n: int) -> float:
    return float(_json(E7[n])["measured"]["graph_gib"])


def test_raising_max_bs_prices_the_buckets_the_list_adds() -> None:
    """256 -> 512 adds bs 272-496 (15 buckets, about 0.02 GiB each) below the new top: the old
    prediction priced only the largest bucket and static buffers (3.64 +- 0.08 GiB against the
    3.95 the 512 launch measured)."""
    doc = _json(E7[256], "--cuda-graph-max-bs", "512", "--slope-from", E7[128], E7[256])
    p = doc["predicted"]
    assert doc["added_buckets"]["sizes"] == list(range(272, 512, 16))
    assert abs(p["graph_gib"] - _measured_graphs(512)) <= p["graph_error_gib"] + 0.01


def test_lowering_max_bs_with_a_measured_slope_shrinks_the_first_buckets_pool() -> None:
    """256 -> 64 with a slope measured on 128 and 512: the first bucket's extra allocation holds
    the graph pool the largest batch sizes, so it shrinks by slope x rows. The old prediction kept
    it whole (2.27 GiB at max bs 64, more than the 1.96 the 128 launch measured)."""
    doc = _json(E7[256], "--cuda-graph-max-bs", "64", "--slope-from", E7[128], E7[512])
    p = doc["predicted"]
    assert p["graph_gib"] < _measured_graphs(128)
    # The e7 launches: static 0.05 + 0.4 MiB/row, largest bucket 1.10 + 3.2 MiB/row, 0.02 GiB
    # per later bucket: at 64, 0.075 + 1.30 + 11 x 0.02 = 1.595 GiB.
    assert abs(p["graph_gib"] - 1.595) <= p["graph_error_gib"] + 0.01
    assert doc["first_bucket_shrink"]["pool_gib"] == 0.6
    assert p["graph_bound"] == "estimated"
    # And the same from 256 -> 128 lands on the 128 launch.
    down = _json(E7[256], "--cuda-graph-max-bs", "128", "--slope-from", E7[128], E7[512])
    q = down["predicted"]
    assert abs(q["graph_gib"] - _measured_graphs(128)) <= q["graph_error_gib"] + 0.01


def test_lowering_max_bs_without_a_slope_says_the_buckets_give_an_upper_bound() -> None:
    r = CliRunner().invoke(cli, ["whatif", E7[256], "--cuda-graph-max-bs", "64"])
    assert r.exit_code == 0, r.output
    flat = " ".join(r.output.split())
    assert "extra allocation stays whole" in flat
    assert "this is at most what max bs 64 takes" in flat
    assert "lines 12-12" not in flat and "(progress bar avail_mem, line 12)" in flat


def test_capture_top_lists_every_captured_list() -> None:
    ctx = ListContext.from_args({"cuda_graph_max_bs": 256}, 3199)
    from dataclasses import replace

    top = largest_at_max_bs(512, replace(ctx, month=(2026, 9)), GpuFacts(None, 80_000))
    assert top is not None and top.sizes == (512,)
    assert all(x[-1] == 512 for x in top.lists)
    assert any(256 in x and 272 in x and 264 not in x for x in top.lists)


def test_the_window_top_carries_the_slopes_error() -> None:
    """The window's top is where the estimated headroom stays >= the reserve; the slope's
    printing bound on the graphs moves it, and the report gives that range (before, the top was
    the last value whose verdict the error left open: graphs at the low end of their error)."""
    args = ("--cuda-graph-max-bs", "512", "--slope-from", E7[128], E7[256])
    doc = _json(E7[256], *args)
    lo, hi = doc["mem_fraction_static_window"]
    low, high = doc["window_top_low"], doc["window_top_high"]
    assert low is not None and high is not None and low < hi < high
    at_top = _json(E7[256], *args, "--mem-fraction-static", f"{hi:.3f}")["predicted"]
    above = _json(E7[256], *args, "--mem-fraction-static", f"{hi + 0.001:.3f}")["predicted"]
    assert at_top["headroom_gib"] >= 0 > above["headroom_gib"]
    r = CliRunner().invoke(cli, ["whatif", E7[256], *args])
    flat = " ".join(r.output.split())
    assert f"the top is from {low:.3f} to {high:.3f}" in flat


def test_whatif_on_a_kv_sizing_failure_says_no_prediction_first_and_which_way() -> None:
    """A launch that died sizing its KV cache has no KV line: exit 1 (README: an error logmem
    explains), the message leading with why there is no table and then the rule's answer."""
    for name in (
        "not-enough-memory-kv-v0514-constructed.log",
        "not-enough-memory-kv-constructed.log",
    ):
        r = CliRunner().invoke(
            cli, ["whatif", str(FIXTURES / name), "--mem-fraction-static", "0.9"]
        )
        assert r.exit_code == 1
        flat = " ".join(r.output.split())
        assert flat.startswith("Error: no prediction: start-up died sizing the KV cache"), flat
        assert "2.92 GiB at 0.9" in flat and "-1.00 GiB at 0.85 (as logged)" in flat
        assert "positive above mem_fraction_static 0.8628 (1 - 10.76 / 78.40): raise it" in flat


def test_a_logged_mfs_the_log_contradicts_is_named_before_sglang() -> None:
    """--logged-mem-fraction-static 0.9 on a log whose readings give back 0.970: the note on
    SGLang allocating more than its rule gives must not be the only reading of the gap."""
    log = str(FIXTURES / "capture-oom-no-server-args-constructed.log")
    r = CliRunner().invoke(cli, ["whatif", log, "--logged-mem-fraction-static", "0.9"])
    assert r.exit_code == 0, r.output
    flat = " ".join(r.output.split())
    said = flat.index("--logged-mem-fraction-static 0.9 does not give back the logged KV pool")
    assert "gives back about 0.970" in flat and said < flat.index("more tokens")
    ok = CliRunner().invoke(cli, ["whatif", log, "--logged-mem-fraction-static", "0.97"])
    assert "does not give back" not in ok.output


def test_other_batch_sized_graphs_held_say_which_way_the_figure_errs() -> None:
    """SGLang's draft runners capture the same bs list (kimi-k3: draft decode 16-192 like target
    verify): held as measured, graphs are at most the figure when max bs falls, too low when
    it rises; the families are named once (not 'draft extend#2')."""
    from logmem.compare import notes as cn
    from logmem.report.compare.notes import note_text

    log = str(FIXTURES / "kimi-k3-b200-dp2-dcp8-target-verify-constructed.log")
    r = CliRunner().invoke(cli, ["whatif", log, "--cuda-graph-max-bs", "64"])
    flat = " ".join(r.output.split())
    assert "(draft decode, draft extend) stay as measured" in flat
    assert "so graph memory is at most this" in flat and "#2" not in flat
    up = note_text(cn.OnlyMainGraph("decode", ("draft",), True))
    assert "too low by their growth" in up


def test_unknown_context_length_does_not_deny_a_summary_line() -> None:
    """017 prints a summary line, cut with '...' before context_len: 'no summary line' was
    wrong there."""
    log = str(FIXTURES / "017-qwen3-8b-b200-piecewise-reference-log-apr2026.log")
    doc = _json(log, "--logged-mem-fraction-static", "0.854")
    assert doc["full_context"] == (
        "context length unknown (the log prints no context_len); pass --context-length"
    )


def test_a_log_without_summary_caps_max_bs_at_server_args_request_pool() -> None:
    """023 stops mid-capture (no summary line) and ran with max_running_requests=1 and
    cuda_graph_max_bs=8, capturing bs [1]: --cuda-graph-max-bs 8 changes nothing (it was priced
    as bs 1 -> 8 by the heuristic)."""
    log = str(FIXTURES / "023-qwen3-14b-tp2-fp16-truncated-mid-capture.log")
    doc = _json(log, "--cuda-graph-max-bs", "8")
    assert doc["predicted"]["largest_bs"] == 1
    assert doc["predicted"]["graph_change_gib"] == 0
    assert any(
        "capped by the request pool (max_running_requests 1, line 3)" in n for n in doc["notes"]
    )


def test_a_slope_from_unlike_launches_claims_no_printing_error() -> None:
    """A slope from pair-e2 (another model, GPU, TP and era) priced e7 with '+- 0.13', as if
    printing were its only error."""
    e2 = [str(FIXTURES / f"pair-e2-maxbs{n}-constructed.log") for n in (80, 160)]
    doc = _json(
        E7[256], "--cuda-graph-max-bs", "512", "--slope-from", *e2, "--allow-diff", "model_path"
    )
    assert doc["predicted"]["graph_bound"] == "estimated"
    assert doc["predicted"]["graph_error_gib"] is None
    same = _json(E7[256], "--cuda-graph-max-bs", "512", "--slope-from", E7[128], E7[512])
    assert same["predicted"]["graph_error_gib"] is not None


def test_a_setting_without_kv_pool_says_why_it_is_no_and_which_way() -> None:
    log = str(FIXTURES / "001-qwq32b-tp4-l4-docs.log")
    doc = _json(log, "--mem-fraction-static", "0.7")
    assert doc["predicted"]["kv_tokens"] == 0 and doc["feasible"] is False
    assert doc["notes"][0].startswith(
        "At mem_fraction_static 0.700 SGLang's KV budget is -0.40 GiB"
    )
    assert "raise mem_fraction_static to 0.719 or more" in doc["notes"][0]
