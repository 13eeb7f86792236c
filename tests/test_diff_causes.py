"""logmem diff names what else changed beside max bs (review24 #5, #6): SGLang's graph reserve
only where it is the launches' rule, compared with all graph memory; the communication
environment; the attention TP behind a weights change; a readable per-rank layout."""

from __future__ import annotations

from pathlib import Path

from conftest import corpus_log
from logmem.api import read_log
from logmem.compare.diff import diff_launches
from logmem.compare.load import LaunchRef
from logmem.report.compare.jsonout import to_json
from logmem.report.compare.render import render_text
from logmem.sglang.comm import env_value_text

FIX = Path(__file__).resolve().parent.parent / "fixtures"
E2 = [FIX / f"pair-e2-maxbs{n}-constructed.log" for n in (80, 160)]
E7 = [FIX / f"pair-e7-maxbs{n}-constructed.log" for n in (128, 256)]


def _diff(a: Path, b: Path):  # type: ignore[no-untyped-def]
    la, lb = read_log(str(a)).launches[0], read_log(str(b)).launches[0]
    return diff_launches(la, LaunchRef("A", (str(a),), 0), lb, LaunchRef("B", (str(b),), 0))


def test_no_graph_reserve_comparison_where_the_tp_table_and_a_passed_mfs_rule() -> None:
    # pair-e2 is dated 2025-03 (era a, the tp table) and its 0.85 is not the table's 0.87.
    d = _diff(*E2)
    assert d.slopes and all(s.heuristic is None for s in d.slopes)
    text = render_text(d)
    assert "heuristic reserves" not in text
    assert all(s["heuristic"] is None for s in to_json(d)["slopes"])
    # ... and says why there is none, without naming the table as the value's source.
    why = next(n for n in to_json(d)["notes"] if "No comparison with SGLang's graph reserve" in n)
    # Named by release, not logmem's internal era letter; one clause for A and B (review 28).
    assert (
        "A and B: SGLang up to 0.4.7 sets it from a tp_size table, which does not give the value "
        "server_args prints" in why
    )
    assert "era a" not in why and "dump" not in why


def test_graph_reserve_is_set_against_all_graph_memory() -> None:
    # pair-e7 is era c: the reserve formula's era (what SGLang's default would reserve; review26
    # #5: not that these launches derived their value with it). The capture totals are 2,007 and 2,806 MiB
    # at max bs 128 and 256 (capture end mem usage): 799 / 128 = 6.24 MiB per bs.
    d = _diff(*E7)
    h = next(s.heuristic for s in d.slopes if s.heuristic is not None)
    assert round(h.measured_mib_per_bs, 1) == 6.2
    assert h.sizes == (128, 256)
    text = render_text(d)
    assert "the capture end's mem usage" in text
    assert "at max bs 128 it would set aside 256 MiB, the capture used 2,007" in " ".join(
        text.split()
    )
    assert "largest bucket + static buffers): ratio" not in text


_NATURAL: dict[str, object] = {}


def _natural():  # type: ignore[no-untyped-def]
    """diff 019 vs 036 (the same R1 checkpoint on Ascend: TP16 DP4 vs TP16 DP16), once."""
    if "d" not in _NATURAL:
        _NATURAL["d"] = _diff(corpus_log("019-"), corpus_log("036-"))
    return _NATURAL["d"]


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_the_communication_environment_that_differs_is_listed_with_its_lines() -> None:
    d = _natural()
    env = {e.key: (e.a, e.b, e.line_a, e.line_b) for e in d.env}
    # 019 l.233 "ENV_VAR_CASE HCCL_BUFFSIZE:1600", 036 l.69 "Setting ENV_VAR HCCL_BUFFSIZE=720";
    # 019 l.232 / 036 l.71 the DeepEP dispatch tokens 36 / 96 (lines counted on "\n").
    assert env["HCCL_BUFFSIZE"] == ("1600", "720", 233, 69)
    assert env["SGLANG_DEEPEP_NUM_MAX_DISPATCH_TOKENS_PER_RANK"] == ("36", "96", 232, 71)
    doc = to_json(d)
    assert {"key": "HCCL_BUFFSIZE", "a": "1600", "b": "720", "line_a": 233, "line_b": 69} in doc[
        "env_changed"
    ]
    # HCCL_BUFFSIZE is in MB (Ascend HCCL docs): the table says so; JSON keeps the echoed text.
    assert "1600 MB (l.233)" in render_text(d) and "720 MB (l.69)" in render_text(d)
    assert env_value_text("NCCL_BUFFSIZE", "8388608") == "8388608 B"
    assert env_value_text("SGLANG_DEEPEP_NUM_MAX_DISPATCH_TOKENS_PER_RANK", "96") == "96"


def test_a_first_bucket_change_is_not_put_on_max_bs_when_comm_settings_differ() -> None:
    d = _natural()
    (c,) = d.graph_causes
    assert (c.rank, c.graph) == ("DP0 TP0 EP0", "decode")
    assert {k for k, *_ in c.env} == {
        "HCCL_BUFFSIZE",
        "SGLANG_DEEPEP_NUM_MAX_DISPATCH_TOKENS_PER_RANK",
    }
    assert ("deepep_mode", "auto", "low_latency") in c.settings
    flat = _flat(render_text(d))
    assert "HCCL_BUFFSIZE (1600 MB -> 720 MB, A l.233 / B l.69)" in flat
    assert "the change cannot be put on cuda_graph_max_bs (36 -> 24) alone" in flat
    # Nothing communication-related differs in the e2 pair: its graphs are max bs's.
    assert _diff(*E2).graph_causes == () and _diff(*E2).env == ()


def test_a_weights_change_names_the_attention_tp_from_printed_sizes_only() -> None:
    d = _natural()
    (w,) = d.phase_causes
    assert w.attn_tp == (4, 1) and w.tp_size == 16 and w.dp_size == (4, 16)
    assert w.weights[1] - w.weights[0] > 11 * 2**30
    flat = _flat(render_text(d))
    assert "16 / 4 = 4 in A, 16 / 16 = 1 in B, so a rank of B holds 4x the share" in flat
    assert "consistent with this, not computed from it" in flat
    # The same attention TP (e7: one GPU each): no such cause.
    assert _diff(*E7).phase_causes == ()


def test_graph_groups_carry_their_family_and_near_identical_ranks_fold() -> None:
    d = _natural()
    text = render_text(d)
    graphs = text.split("CUDA graphs (GiB; change = B - A)")[1].split("Buckets of")[0]
    rows = graphs.splitlines()
    assert rows[1].split()[:3] == ["rank", "graph", "part"]
    assert any(r.split()[:4] == ["draft", "extend", "largest", "size"] for r in rows)
    assert any(r.split()[:3] == ["draft", "largest", "size"] for r in rows)
    phases = text.split("Phases per rank")[1].split("KV cache:")[0]
    ranks = {r.split("  ")[0] for r in phases.splitlines() if "distributed init" in r}
    assert ranks == {"DP0 TP0 EP0", "DP0 TP1 EP1 ~ DP1 TP1 EP1"}
    assert "(14 ranks): the same as DP0 TP1 EP1 to +-0.01 GiB (print rounding)" in _flat(phases)
    # How ranks were paired, said once.
    flat = _flat(text)
    assert (
        "in every pair the TP and EP ranks are the same and the DP rank differs (dp_size 4 -> 16)"
        in flat
    )


def test_pairing_tells_a_differing_tag_from_a_tag_one_label_lacks() -> None:
    from logmem.compare.diff_causes import pairing

    assert pairing([("DP0 TP1 EP1", "DP1 TP1 EP1")]) == (("TP", "EP"), ("DP",), ())
    assert pairing([("DP0 TP0 EP0", "DP0 TP0")]) == (("DP", "TP"), (), ("EP",))


def test_the_cause_facts_have_sentences_even_when_bare() -> None:
    from logmem.compare import notes as cn
    from logmem.report.compare.notes import note_text

    bare = [
        cn.FirstBucketShared("TP0", "decode", (None, None), (None, None), (), (), None),
        cn.AttentionTPChanged("TP0", (1, 2), (2, 1), 2, (1, 2), False, ()),
        cn.NoReserveComparison((None, None), (None, None)),
    ]
    assert all(note_text(n).strip() for n in bare)
