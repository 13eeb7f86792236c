"""logmem whatif rows on the corpus logs: pools, disabled graphs, bucket-priced max bs, an
unknown window top (see docs/compare.md)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from conftest import corpus_log
from logmem.cli.main import cli


def _json(prefix: str, *args: str) -> dict:
    log = corpus_log(f"{prefix}-")
    r = CliRunner().invoke(cli, ["whatif", str(log), *args, "-f", "json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.output)


def test_draft_pool_outside_budget_follows_tokens() -> None:
    d = _json("021", "--mem-fraction-static", "0.88")
    pools = {p["name"]: p for p in d["predicted"]["pools"]}
    assert pools["draft KV"]["in_budget"] is False
    assert pools["SWA KV"]["in_budget"] is True
    assert d["predicted"]["draft_pool_change_gib"] == pytest.approx(0.51, abs=0.01)
    # Held at the low point, the prefill capture's bar (5.62 GiB, line 160), not the last
    # reading (6.22): 0.60 less than before whatif counted bar readings.
    assert d["predicted"]["headroom_gib"] == pytest.approx(1.65, abs=0.01)


def test_graphs_disabled_are_dash_and_named() -> None:
    d = _json("006", "--cuda-graph-max-bs", "16")
    assert d["graphs_disabled_by"] == "--disable-cuda-graph"
    assert d["predicted"]["largest_bs"] is None and d["predicted"]["graph_gib"] is None
    assert any("does not apply" in n for n in d["notes"])


def test_smaller_max_bs_from_buckets() -> None:
    d = _json("019", "--cuda-graph-max-bs", "16")
    assert d["max_bs_method"] == "buckets"
    assert d["predicted"]["graph_gib"] == pytest.approx(9.50, abs=0.005)


def test_masked_capture_top_unknown() -> None:
    d = _json("041")
    assert d["mem_fraction_static_window"][1] is None
    assert d["window_top_bound"] == "unknown" and not d["window_empty"]
    assert d["window_top_at_least"] == 0.9


def test_a_context_fit_that_leaves_too_little_outside_the_pool_is_not_offered() -> None:
    """041: one full context needs mfs 1.000, leaving nothing for what the launch used outside
    the pool; whatif says so, in step with analyze's context finding (review23 #4)."""
    d = _json("041")
    assert d["lo_full_context"] == 1.0
    assert "leaves 0.00 GiB outside the pool" in d["full_context"], d["full_context"]
    log = corpus_log("041-")
    r = CliRunner().invoke(cli, ["whatif", str(log)])
    # 041 released 5.29 GiB after sizing: the readings' verdict, conditional (review C #1).
    out = " ".join(r.output.split())
    assert "less than this launch used there after sizing (at least 0.39 GiB)" in out
    assert "until then lower --context-length" in out


def test_the_window_top_keeps_the_low_point_after_the_pool_not_only_the_end() -> None:
    """036: free memory bottoms out at 0.81 GiB (the draft's Memory pool end, line 1473) before
    captures give memory back (2.74 at the end). A larger pool must fit at that low point: the
    top is about mfs 0.80 + 0.81 / P (review24 #1), not what the final reading allows."""
    import re

    text = corpus_log("036-").read_bytes().decode("utf-8", "replace").split("\n")
    assert "Memory pool end. avail mem=0.81 GB" in text[1472]
    # P: the target's Load weight begin on the binding rank (the draft loads later, lower).
    p = next(
        float(m[1])
        for x in text
        if "DP0 TP0 EP0" in x and (m := re.search(r"Load weight begin\. avail mem=([\d.]+)", x))
    )
    d = _json("036")
    lo, hi = d["mem_fraction_static_window"]
    assert abs(hi - (0.80 + 0.81 / p)) <= 0.002, (hi, 0.80 + 0.81 / p)
    assert any("fell to 0.81 GiB (line 1473)" in a for a in d["assumptions"])


def test_the_held_mfs_note_follows_the_default_mfs_rule() -> None:
    """The 'its default moves with max bs' aside only where SGLang's default can depend on max
    bs (review24 #6): 019 passed --mem-fraction-static, 001 is era a (tp table)."""
    passed = _json("019", "--cuda-graph-max-bs", "16")["assumptions"]
    assert any("held at 0.71, as passed on the command line" in a for a in passed)
    table = _json("001", "--cuda-graph-max-bs", "40")["assumptions"]
    assert any("comes from tp_size alone" in a for a in table)
    assert not any("if SGLang chose it" in a for a in passed + table)


def test_the_kv_rule_note_says_whose_readings_and_which_share() -> None:
    """011 prints P on TP0 only (of 8 ranks); 006's full pool gets 11.1% of the SWA-split budget
    (its 61,419 tokens x 5,120 B of the rule's 2.64 GiB; the printed 0.30 GB would say 11.4%):
    the note says so instead of 'minimums over ranks' and 'rest // cell' (review24 #7)."""
    one = _json("011")["assumptions"][0]
    assert "TP0's readings (the other 7 ranks print none" in one
    swa = _json("006")["assumptions"][0]
    assert "tokens = 11.1% of rest //" in swa
