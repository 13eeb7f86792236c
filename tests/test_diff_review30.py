"""diff, review 30: the KV section of launches without server_args; like-with-like pool steps of
a post-capture launch; mem_fraction_static set aside as a slope confounder where no capture list
is clamped; a rank only B has; the KV rule's missing inputs named (diff and analyze)."""

from __future__ import annotations

import json

from click.testing import CliRunner

from conftest import FIXTURES
from logmem.cli.main import cli

LOG016 = FIXTURES / "016-ling3-tiny-dgx-spark-kda-mla-aug2026.log"


def _diff_json(*args: str) -> dict:
    r = CliRunner().invoke(cli, ["diff", *args, "-f", "json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.output)


def test_kv_section_of_launches_without_server_args() -> None:
    """016 prints a KV line but no server_args (so no sizing): the tokens are its #tokens."""
    kv = _diff_json(str(LOG016), str(LOG016))["kv"]
    assert kv is not None
    assert kv["tokens"] == [1_933_682, 1_933_682] and kv["change_tokens"] == 0
    assert kv["tokens_source"] == "KV line #tokens"
    assert kv["mem_fraction_static"] == [None, None] and kv["terms"] == []
    assert kv["terms_note"] == (
        "No split into the rule's terms: A and B printed no server_args, so no mem_fraction_static."
    )


def test_a_list_is_whole_only_below_the_request_pool() -> None:
    """SGLang cuts the list at req_to_token_pool.size and adds that size: a largest bs equal to
    the pool may be the cut, so only a smaller one proves the list whole."""
    from logmem.sglang.capture_tops import pool_left_list_whole

    assert pool_left_list_whole(256, 3071)
    assert not pool_left_list_whole(256, 256)
    assert not pool_left_list_whole(300, 256)


E7_256 = FIXTURES / "pair-e7-maxbs256-constructed.log"
POSTCAP = FIXTURES / "postcap-kv-0517-constructed.log"


def test_a_post_capture_launch_sets_kv_pool_beside_kv_pool() -> None:
    """pair-e7 sizes its KV pool in its pool step (39.57 GiB), postcap-kv-0517 backs it after
    capture (61.56 GiB) and its pool step holds only the other pools (0.22): the old diff set
    39.57 beside 0.22 as one change of -39.35."""
    for a, b, post in ((E7_256, POSTCAP, "B"), (POSTCAP, E7_256, "A")):
        d = _diff_json(str(a), str(b))
        first = [p for p in d["phases"] if p["rank_b"] is not None][:8]
        pools = [p for p in first if p["key"] in ("target_pools", "target_kv_after_capture")]
        alone, pair = pools
        kv = {"A": (61.56, 39.57), "B": (39.57, 61.56)}[post]
        assert (pair["a_gib"], pair["b_gib"]) == kv
        assert pair["name"] in (
            "KV and other pools ~ KV pool after capture (post-capture KV sizing)",
            "KV pool after capture (post-capture KV sizing) ~ KV and other pools",
        )
        assert alone["change_gib"] is None and 0.22 in (alone["a_gib"], alone["b_gib"])
        said = " ".join(d["phase_causes"])
        assert "The launches size the KV pool in different modes" in said
        assert f"{post}'s own pool step (0.22 GiB) has no counterpart" in said
        assert "different modes" in d["kv"]["terms_note"] and d["kv"]["terms"] == []


def test_rank_only_b_has_is_labelled_once() -> None:
    """024 runs one rank, 014 two: B's TP1 has no partner in A, so its rows carry its own label
    and no pairing ('TP1 ~ TP1' read as if A had a TP1 matched to it)."""
    a = FIXTURES / "024-llama31-8b-docs-notebook-output-oct2024.log"
    b = FIXTURES / "014-qwen35-9b-tp2-rtx4090-gdn-mamba-apr2026.log"
    d = _diff_json(str(a), str(b))
    tp1 = [p for p in d["phases"] if p["rank"] == "TP1"]
    assert tp1 and all(p["rank_b"] is None and p["a_gib"] is None for p in tp1)
    r = CliRunner().invoke(cli, ["diff", str(a), str(b)])
    assert r.exit_code == 0 and "TP1 ~ TP1" not in r.output and "'X ~ Y'" not in r.output


def test_no_term_split_names_the_missing_rule_input() -> None:
    """017's ServerArgs line has no mem_fraction_static; its readings are there: the note says
    which input is missing, not 'mem_fraction_static or the free-memory readings'."""
    from logmem.api import read_log
    from logmem.sglang.rules import rule_inputs_missing

    a017 = FIXTURES / "017-qwen3-8b-b200-piecewise-reference-log-apr2026.log"
    assert rule_inputs_missing(read_log(str(a017)).launches[0]) == ("mem_fraction_static",)
    note = _diff_json(str(a017), str(FIXTURES / "014-qwen35-9b-tp2-rtx4090-gdn-mamba-apr2026.log"))[
        "kv"
    ]["terms_note"]
    assert "A's log lacks mem_fraction_static in its server_args, an input of the KV rule" in note
    assert "or the free-memory readings" not in note


def test_rule_inputs_missing_lists_each_absent_reading() -> None:
    from conftest import read_text_log
    from logmem.report.compare.comparable import rule_inputs_missing_text
    from logmem.sglang.rules import rule_inputs_missing

    text = (
        "[2026-04-01 10:00:00] server_args=ServerArgs(model_path='m', mem_fraction_static=0.8)\n"
        "[2026-04-01 10:00:05 TP0] Memory pool end. avail mem=10.00 GB\n"
    )
    missing = rule_inputs_missing(read_text_log(text).launches[0])
    assert missing == ("free_before_weights", "free_after_weights")
    said = rule_inputs_missing_text("B", True, missing)
    assert said == (
        "B's log lacks the free memory before the weights load (Load weight begin) and the free "
        "memory after them (Load weight end), inputs of the KV rule"
    )


def test_analyze_says_why_the_kv_rule_is_not_checked() -> None:
    """analyze of a launch with a pool step but no Sizing names the missing input (017: its
    ServerArgs line has no mem_fraction_static); a launch with the inputs has no such line."""
    from logmem.analysis.findings import NoRuleCheck, findings
    from logmem.api import read_log

    a = read_log(str(FIXTURES / "017-qwen3-8b-b200-piecewise-reference-log-apr2026.log"))
    found = [f for f in findings(a.ledger(a.launches[0])) if isinstance(f, NoRuleCheck)]
    assert [(f.missing, f.args_line, f.args_elided) for f in found] == [
        (("mem_fraction_static",), 3, True)
    ]
    assert found[0].inferred is not None and found[0].inferred.mfs == 0.854
    b = read_log(str(FIXTURES / "001-qwq32b-tp4-l4-docs.log"))
    assert not [f for f in findings(b.ledger(b.launches[0])) if isinstance(f, NoRuleCheck)]
