"""A reviewer's four CUDA-graph findings: the flag that shrinks an explicit capture list (B3),
target-verify graphs sized bs x draft tokens (B4), launches with CUDA graphs off (A10), and a
bar reading against the end line read as a per-bucket cost (A7)."""

from __future__ import annotations

import json
from typing import Any

from conftest import FIXTURES, corpus_log, read_text_log
from logmem.analysis.capture_lever import Given, capture_lever
from logmem.api import analyze, read_log, whatif
from logmem.report import jsonout, text
from logmem.report.text import render as render_text
from logmem.sglang import rules


def _text(prefix: str) -> str:
    return text.render(analyze(str(corpus_log(prefix))))


def _json(prefix: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(jsonout.render(analyze(str(corpus_log(prefix)))))
    return doc


def _buckets(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        b for r in doc["launches"][0]["ranks"] for p in r["phases"] for b in p.get("buckets", [])
    ]


# --- A7: the last bar reading against the end line is not a per-bucket cost -----------------


def test_last_bar_to_end_line_is_not_a_bucket_cost() -> None:
    # 016: bs=[1, 2]; the one bar (bs=1, 72.47) and the end line (72.65, after empty_cache).
    text = _text("016-")
    assert "rose between" not in text  # the cache the end line released is not a bucket rising
    assert "bucket bs 1 to the end line (not a per-bucket cost)" in text
    (b,) = _buckets(_json("016-"))
    assert b["cost_gib"] is None and b["to_end_line_gib"] == -0.18


def test_bar_to_bar_costs_stay() -> None:
    # 019's decode buckets: every bar but the last is costed against the next bar.
    bs = [b for b in _buckets(_json("019-")) if b["line"] in (1002, 1035, 1044)]
    assert [b["cost_gib"] for b in bs] == [8.63, 0.02, None]
    assert bs[-1]["to_end_line_gib"] == 0.01
    assert bs[0]["to_end_line_gib"] is None


# --- A10: CUDA graphs off by server_args ------------------------------------------------------


def test_graphs_off_is_said_plainly() -> None:
    for prefix in ("005-", "006-"):
        text = _text(prefix)
        assert "CUDA graphs are off (disable_cuda_graph=True in server_args, line 8)" in text
        assert "no capture phase and no graph memory" in text
        # Nothing offers smaller graph sizes for a launch that captures none.
        assert "--cuda-graph-max-bs" not in text and "--cuda-graph-bs" not in text
        doc = _json(prefix)
        assert any("CUDA graphs are off" in f for f in doc["launches"][0]["findings"])


def test_graphs_on_says_nothing_of_it() -> None:
    assert "CUDA graphs are off" not in _text("019-")


# --- B3: the flag that shrinks an explicit capture list ---------------------------------------

RESTART = FIXTURES / "two-launches-restart-constructed.log"
GENERATED = "cuda_graph_bs=[1, 2, 4, 8, 12, 16, 24, 32, 40, 48]"


def test_passed_list_names_the_list_flag() -> None:
    # 019 and 036 echo their command lines with --cuda-graph-bs (Feb / Jan 2026: 0.5.3 on).
    for prefix in ("019-", "036-"):
        text = _text(prefix).replace("\n  ", " ")
        assert "dropping the largest sizes from --cuda-graph-bs" in text
        assert "a smaller --cuda-graph-max-bs" not in text


def test_unknown_list_says_both_and_why() -> None:
    # The restart fixture (June 2026) dumps SGLang's own generated list and echoes no command
    # line: which flag applies cannot be known, and the Fix says so.
    text = " ".join(render_text(read_text_log(RESTART.read_text())).split())
    assert "Fix: --cuda-graph-max-bs 32:" in text
    assert "or drop the largest sizes from --cuda-graph-bs if the launch passed one" in text


def test_list_no_generator_gives_is_the_launchs_own() -> None:
    # The same launch with a list SGLang never generates: the user's; the Fix cuts that list.
    own = RESTART.read_text().replace(GENERATED, "cuda_graph_bs=[1, 2, 4, 8, 16, 32, 48]")
    assert own != RESTART.read_text()
    a = read_text_log(own)
    lever = capture_lever(a.launches[-1])
    assert lever is not None and lever.given and lever.basis == Given.NOT_GENERATED
    text = " ".join(render_text(a).split())
    assert "Fix: --cuda-graph-bs 1 2 4 8 16 32:" in text  # the passed list, cut
    assert "--cuda-graph-max-bs 32 would not do it" in text


def test_era_up_to_0_5_2_cuts_a_passed_list() -> None:
    # cuda_graph_runner.py 0.5.2 cuts a passed list at cuda_graph_max_bs: the cap flag works.
    flags = rules.capture_list_flags("decode", {"cuda_graph_bs": [1, 2, 3]}, (2025, 6))
    assert flags is not None and flags.overrides is False
    assert rules.list_given_by_dump({"cuda_graph_bs": None}, (2025, 6)) is False
    assert rules.list_given_by_dump({"cuda_graph_bs": [1, 2, 3]}, (2025, 6)) is True
    # From 0.5.3 the dump prints the generated list too: unknown from the dump alone.
    assert rules.list_given_by_dump({"cuda_graph_bs": [1, 2, 4, 8]}, (2026, 3)) is None
    assert rules.capture_list_flags("decode", {}, (2025, 9)) == rules.CaptureListFlags(
        "--cuda-graph-max-bs", "--cuda-graph-bs", None
    )
    e7 = rules.capture_list_flags("decode", {"cuda_graph_bs_decode": None}, (2026, 9))
    assert e7 is not None and e7.listed == "--cuda-graph-bs-decode" and e7.overrides
    assert rules.capture_list_flags("piecewise", {}, (2026, 1)) is None
    # 011 (v0.5.2, cuda_graph_bs=None): the cap flag, certain.
    lever = capture_lever(read_log(str(corpus_log("011-"))).launches[0])
    assert lever is not None and lever.cap_works and not lever.given


def test_whatif_on_a_passed_list_says_the_cap_is_ignored() -> None:
    w = whatif(str(corpus_log("019-")), cuda_graph_max_bs=16)
    text = " ".join(w.render("text").split())
    assert "This launch passed --cuda-graph-bs, which sets the largest size" in text


# --- B4: target-verify graphs run bs x draft tokens per bucket ---------------------------------


def test_pre_e7_speculative_target_graph_is_the_verify_graph() -> None:
    # 019: NEXTN with speculative_num_draft_tokens=4; the target's graph prints as plain decode.
    text = " ".join(_text("019-").split())
    assert "NPU graphs (decode: the target's verify graph, bs x 4 draft tokens per bucket)" in text
    assert "largest bucket (bs 36 = 144 tokens) 8.63" in text
    assert (
        "CUDA graphs (draft) take 0.41 GiB on DP0 TP0 EP0: static 0.00, largest bucket (bs 36) "
        in text
    )
    phase = next(
        p
        for p in _json("019-")["launches"][0]["ranks"][0]["phases"]
        if p.get("verify_tokens_per_req")
    )
    assert phase["verify_tokens_per_req"] == 4
    assert [b["tokens"] for b in phase["buckets"]][:2] == [144, 128]


def test_e7_target_verify_takes_the_begin_lines_tokens() -> None:
    path = str(FIXTURES / "kimi-k3-b200-dp2-dcp8-target-verify-constructed.log")
    text = " ".join(render_text(analyze(path)).split())
    assert "CUDA graphs (target verify, bs x 4 draft tokens per bucket)" in text
    assert "largest bucket (bs 192 = 768 tokens)" in text


def test_no_verify_without_speculation() -> None:
    assert rules.verify_tokens_per_req("decode", {"speculative_algorithm": None}, None) is None
    assert rules.verify_tokens_per_req("target decode", {}, 1) is None
    spec = {"speculative_algorithm": "EAGLE", "speculative_num_draft_tokens": 4}
    assert rules.verify_tokens_per_req("draft", spec, None) is None
    assert rules.verify_tokens_per_req("decode", spec, None) == 4
    assert "verify" not in _text("011-")


def test_buckets_over_which_free_memory_rose_are_not_given_a_negative_cost() -> None:
    """021 (GB10): the 57 buckets after the largest end 0.25 GiB higher than they start; a
    graph costs no negative memory, so the sentence says free memory rose over them."""
    from conftest import corpus_log
    from logmem.analysis import findings as fd
    from logmem.analysis.attribution import build_ledger
    from logmem.api import read_log
    from logmem.report.sentences import finding_text

    (L,) = read_log(str(corpus_log("021-"))).launches
    split = [f for f in build_ledger(L).findings if isinstance(f, fd.GraphSplit)]
    prefill = next(f for f in split if f.other.bytes < 0)
    text = finding_text(prefill)
    assert "over the other 57 buckets free memory rose 0.25 GiB" in text
    assert "-0.25" not in text
