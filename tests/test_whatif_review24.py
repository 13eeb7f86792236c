"""whatif on the corpus, review 24: a window top with no activation room, a max bs the
request pool caps, an elided server_args line, hybrid Mamba request counts."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from conftest import corpus_log
from logmem.cli.main import cli


def _text(prefix: str, *args: str, code: int = 0) -> str:
    r = CliRunner().invoke(cli, ["whatif", str(corpus_log(f"{prefix}-")), *args])
    assert r.exit_code == code, r.output
    return " ".join(r.output.split())


def test_a_top_with_no_activation_room_is_not_offered_as_a_setting() -> None:
    """006 (graphs off): 0.993 leaves nothing for 2048-token prefill activations (review24 #10);
    with a reserve the top is a setting again and the sentence goes."""
    out = _text("006")
    assert "up to 0.993 the headroom stays >= 0.00 GiB" in out
    assert "0.993 is an upper bound, not a usable setting" in out
    assert "no room for prefill activations" in out
    assert "not a usable setting" not in _text("006", "--activation-reserve", "1")


def test_a_max_bs_the_request_pool_caps_at_the_captured_size_changes_nothing() -> None:
    """019 --cuda-graph-max-bs 64: max_running_requests 36 (l.1458) caps the list at the 36 the
    launch captured, so nothing is extended or priced, and no heuristic is quoted (review24 #6)."""
    out = _text("019", "--cuda-graph-max-bs", "64")
    assert "the largest captured batch stays 36: capped by the request pool" in out
    assert "(max_running_requests 36, line 1458)" in out and "nothing changes" in out
    for gone in ("extended to max bs", "heuristic", "Graph slope", "if SGLang chose it"):
        assert gone not in out, gone
    assert "held at 0.71, as passed on the command line" in out


def test_the_heuristic_slope_is_quoted_with_the_figure_it_uses(tmp_path: Path) -> None:
    """A growing max bs priced by SGLang's heuristic names one figure: 019 with DP attention
    (dp_size 4) is 2 + 3 x 4 = 14 MiB per unit of bs, not '2 MB-per-bs' in one note and 14 in
    the slope assumption (review24 #6). 019's summary is edited to a pool of 128 so that the
    list can grow past 36."""
    text = corpus_log("019-").read_bytes().decode()
    assert text.count("max_running_requests=36, context_len") == 1
    log = tmp_path / "019-pool128.log"
    # Without its bar readings, so that SGLang's heuristic (not the bars) prices the growth.
    text = "\n".join(x for x in text.split("\n") if "Capturing batches" not in x)
    log.write_text(
        text.replace(
            "max_running_requests=36, context_len", "max_running_requests=128, context_len"
        )
    )
    r = CliRunner().invoke(cli, ["whatif", str(log), "--cuda-graph-max-bs", "64"])
    assert r.exit_code == 0, r.output
    out = " ".join(r.output.split())
    assert "heuristic, 14 MiB per unit of max bs" in out
    assert "Graph slope 14.000 MiB per unit of bs" in out
    assert "2 MB-per-bs" not in out
    assert "The largest captured batch becomes 64" in out


def test_the_default_moves_with_max_bs_only_where_sglang_derived_it() -> None:
    """'its default moves by 2 MiB per unit of max bs' only where the reserve formula gave the
    dump's value: 021's 0.85 is not what the formula gives, 019's was passed (review24 #6)."""
    for prefix in ("021", "019", "041"):
        out = _text(prefix, "--cuda-graph-max-bs", "2")
        assert "default moves" not in out and "if SGLang chose it" not in out, prefix


def test_mfs_held_sentence_follows_the_default_mfs_rule() -> None:
    from logmem.compare import whatif_facts as wf
    from logmem.report.compare.notes import note_text
    from logmem.report.compare.whatif_words import flag  # noqa: F401  (registers the whatif sentences)
    from logmem.sglang.default_mfs import Rule

    derived = note_text(wf.MfsHeld(0.841, Rule.RESERVE, True))
    assert "the default SGLang derived" in derived and "moves by 2 MiB per unit" in derived
    contradicted = note_text(wf.MfsHeld(0.85, Rule.RESERVE, False))
    assert "as passed" in contradicted and "moves" not in contradicted
    for unknown in (
        wf.MfsHeld(0.9, Rule.RESERVE, None),
        wf.MfsHeld(0.9, Rule.UNKNOWN),
        wf.MfsHeld(0.9),
    ):
        assert "cannot be told" in note_text(unknown) and "moves" not in note_text(unknown)


def _json(log: Path | str, *args: str) -> dict:
    import json

    r = CliRunner().invoke(cli, ["whatif", str(log), *args, "-f", "json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.output)


_014 = ("--logged-mem-fraction-static", "0.8")


def test_hybrid_mamba_requests_follow_the_mamba_slots() -> None:
    """014: l.57 max_mamba_cache_size 186, l.97 max_running_requests 62 = 186 // 3. At 0.9 the
    Mamba pool grows 4.48 -> 5.56 GiB, about 230 slots: 76 requests, not 62 (review24 #4)."""
    log = corpus_log("014-")
    d = _json(log, *_014, "--mem-fraction-static", "0.9")
    assert d["measured"]["max_running_requests"] == 62
    assert d["predicted"]["max_running_requests"] == 76
    out = _text("014", *_014, "--mem-fraction-static", "0.9")
    assert "max_running_requests 62 (line 97) = max_mamba_cache_size 186 (line 57) // 3" in out
    assert "about 230 slots, 76 requests" in out
    # The decode graphs follow: a larger max bs is capped at the predicted 76, a smaller
    # setting's request count caps the captured 24.
    d = _json(log, *_014, "--mem-fraction-static", "0.9", "--cuda-graph-max-bs", "100")
    assert d["predicted"]["largest_bs"] == 76
    d = _json(log, *_014, "--mem-fraction-static", "0.45")
    assert d["predicted"]["max_running_requests"] == 9
    assert d["predicted"]["largest_bs"] == 9
    assert d["predicted"]["graph_gib"] < d["measured"]["graph_gib"]
    assert "9 requests cap the decode graphs at bs 9" in _text(
        "014", *_014, "--mem-fraction-static", "0.45"
    )


def test_hybrid_mamba_requests_are_held_where_the_log_does_not_show_the_relation(
    tmp_path: Path,
) -> None:
    """014 with its summary edited to 50 requests (not 186 // 3): the count is held, and said
    to be (review24 #4)."""
    text = corpus_log("014-").read_bytes().decode()
    assert text.count("max_running_requests=62,") == 1
    log = tmp_path / "014-held.log"
    log.write_text(text.replace("max_running_requests=62,", "max_running_requests=50,"))
    d = _json(log, *_014, "--mem-fraction-static", "0.9")
    assert d["predicted"]["max_running_requests"] == 50
    assert any("max_running_requests is held as logged" in a for a in d["assumptions"])


def test_an_elided_server_args_line_is_named_and_the_value_back_solved() -> None:
    """017 l.3 is `ServerArgs(model_path='Qwen/Qwen3-8B', ...)`: whatif says the line is
    elided (not 'no server_args line?') and offers 1 - (162.30 - 136.36) / 177.57 = 0.854 as
    an estimate, still to be passed by the user (review24 #7)."""
    out = _text("017", code=1)
    assert "no server_args line?" not in out
    assert "server_args elided: line 3 leaves it out with '...'" in out
    assert "1 - (after-weights free 162.30 - KV pools 136.36 GiB) / P 177.57 GiB = 0.854" in out
    assert "an estimate" in out and "pass --logged-mem-fraction-static 0.854" in out
    ran = _text("017", "--logged-mem-fraction-static", "0.854")
    assert "its log does not print it" in ran and "prints no server_args" not in ran


def test_elided_server_args_error() -> None:
    from logmem.parse.server_args import ELIDED_SERVER_ARGS, parse_server_args

    args, _, error = parse_server_args("ServerArgs(model_path='Qwen/Qwen3-8B', ...)")
    assert args == {"model_path": "Qwen/Qwen3-8B"}
    assert error is not None and error.startswith(ELIDED_SERVER_ARGS)
    _, _, cut = parse_server_args("ServerArgs(model_path='m', tp_size=2, mem_frac")
    assert cut is not None and not cut.startswith(ELIDED_SERVER_ARGS)


def test_a_split_budget_pool_is_positive_where_rest_is() -> None:
    """014 / 006: rest = A - P x (1 - mfs) is positive from 1 - A/P = 0.386 / 0.767 (grid), and
    so is the full pool: its share of rest is what its logged tokens take, not the printed
    sizes' (006 printed 0.30 GB for 0.29), which held a gap that emptied it at 0.388 / 0.769
    (review24 #7)."""
    assert "[0.386, " in _text("014", *_014) and "from 0.386 the KV pool is positive" in _text(
        "014", *_014
    )
    assert "from 0.767 the KV pool is positive" in _text("006")


def test_a_single_gpu_headroom_row_has_one_pair_of_parentheses() -> None:
    """021 (one GPU, no rank label): 'headroom, GiB (the GPU)', not '((GPU))' (review24 #7)."""
    out = _text("021", "--mem-fraction-static", "0.88")
    assert "headroom, GiB (the GPU)" in out and "((GPU))" not in out
