"""whatif on the corpus, review 26: a max bs above the era's capture list (#1), a low point
after the capture (#6), the --logged-mem-fraction-static offer (#7e), the token-count gap in
analyze's words (#7f) and weights not initialized from the checkpoint (#4)."""

from __future__ import annotations

import json

from click.testing import CliRunner

from conftest import corpus_log
from logmem.cli.main import cli


def _run(prefix: str, *args: str, code: int = 0) -> str:
    r = CliRunner().invoke(cli, ["whatif", str(corpus_log(f"{prefix}-")), *args])
    assert r.exit_code == code, r.output
    return r.output


def _text(prefix: str, *args: str, code: int = 0) -> str:
    return " ".join(_run(prefix, *args, code=code).split())


def _json(prefix: str, *args: str) -> dict:
    return json.loads(_run(prefix, *args, "-f", "json"))


def test_a_smaller_graph_frees_memory_at_a_low_point_after_its_capture() -> None:
    """036's low point is the draft's pool step (line 1473), after the decode capture ended
    (line 1261): the 0.05 GiB a max bs of 16 saves is free there too, so headroom is 0.86,
    not 0.81 (review26 #6). 019 likewise: 5.47 -> 5.52. Priced from the buckets without a
    slope, both are lower bounds of the headroom (review30)."""
    for prefix, bs, now, then in (("036", "16", "0.81", "0.86"), ("019", "24", "5.47", "5.52")):
        rows = [ln for ln in _run(prefix, "--cuda-graph-max-bs", bs).splitlines()]
        head = next(ln for ln in rows if ln.startswith("headroom, GiB"))
        assert head.split()[-3:] == [now, ">=", then], (prefix, head)
    assert "It comes after the decode graphs' capture ended" in _text("036")


def test_the_logged_mfs_flag_is_offered_only_when_mfs_is_the_one_input_missing() -> None:
    """037 lacks both mem_fraction_static and 'Load weight begin': passing the flag would fail
    on the missing reading, so it is not offered (review26 #7e)."""
    out = _text("037", "--mem-fraction-static", "0.8", code=1)
    assert "'Load weight begin. avail mem=...'" in out and "mem_fraction_static (" in out
    assert "--logged-mem-fraction-static" not in out


def _row(out: str, name: str) -> list[str]:
    return next(ln for ln in out.splitlines() if ln.startswith(name)).split()


def test_a_max_bs_above_the_era_list_captures_the_list_top_not_the_request_pool() -> None:
    """001 (2025-03-08, SGLang 0.4.3-era list [1, 2, 4] + range(8, 161, 8), not extended up to
    max bs): --cuda-graph-max-bs 4096 or 200 captures bs 160, not the pool's 2049 or 200; at
    +0.16 GiB by the heuristic it may fit: an estimate, so uncertain (review26 #1, review D #1)."""
    for bs in ("4096", "200"):
        out = _run("001", "--cuda-graph-max-bs", bs)
        assert _row(out, "largest captured bs")[-2:] == ["80", "160"], bs
        # Priced by SGLang's heuristic, not measured: an estimate (review27b #2b).
        assert _row(out, "CUDA graphs, GiB")[-2:] == ["0.93", "~1.09"], bs
        assert _row(out, "headroom, GiB")[-2:] == ["0.53", "~0.37"], bs
        assert _row(out, "feasible")[-2:] == ["yes", "uncertain"], bs
        text = " ".join(out.split())
        assert "the largest captured batch becomes 160: SGLang's 2025 list tops at bs 160" in text
        assert "without extending it up to max bs" in text
        assert "(max_running_requests 2,049, line 71) does not bind" in text
        assert "extended to max bs" not in text and "becomes 2049" not in text


def test_a_2025_list_extended_to_max_bs_in_steps_of_16() -> None:
    """011 (v0.5.2, 2025-09-11): this SGLang extends its list in steps of 16 up to max bs, so
    256 captures 256 (whatever the GPU), 4096 stops at 3,520 (the last step at or below the
    pool of 3529), and 200 is 192 or 200 by the GPU's capacity, which the log does not print."""
    assert _row(_run("011", "--cuda-graph-max-bs", "256"), "largest captured bs")[-1] == "256"
    text = _text("011", "--cuda-graph-max-bs", "4096")
    assert "the largest captured batch becomes 3,520" in text
    assert "is extended in steps of 16 up to max bs" in text
    text = _text("011", "--cuda-graph-max-bs", "200")
    assert "--cuda-graph-max-bs 200: the largest captured batch is 192 or 200" in text
    assert "the log prints no device total" in text and "The figures are for 200" in text


def test_the_capture_list_top_by_era() -> None:
    from logmem.sglang.capture_lists import GpuFacts, ListContext, largest_at_max_bs

    def top(month: tuple[int, int] | None, bs: int, pool: int | None, **gpu: object) -> tuple:
        ctx = ListContext(speculative=False, no_padding=False, request_pool=pool, month=month)
        t = largest_at_max_bs(bs, ctx, GpuFacts(**gpu))  # type: ignore[arg-type]
        assert t is not None
        return t.sizes

    assert top((2025, 3), 4096, 2049) == (160,)
    assert top((2025, 3), 4096, 2049, rocm=True) == (256,)  # 0.4.3 adds 168-256 on ROCm
    assert top((2025, 3), 100, 64) == (64,)  # the pool is added, then binds
    assert top((2025, 8), 200, None, capacity_mib=81559) == (192,)
    assert top((2025, 8), 200, None, capacity_mib=143771) == (200,)  # H200: over 96 GiB
    assert top((2025, 8), 200, None) == (192, 200)  # no device total: both
    assert top((2025, 8), 200, None, at_least_mib=120000) == (200,)  # free memory bounds it
    assert top((2026, 4), 4096, 2049) == (2049,)  # generated to max bs, clamped to the pool
    assert top((2026, 4), 200, None) == (200,)


def test_weights_not_initialized_from_the_checkpoint_are_noted() -> None:
    """006 l.48 (and TP1 l.43): 60 MoE expert weights the checkpoint did not fill; the weights
    whatif holds (24.13 GiB, line 51) are a broken load's (review26 #4, whatif part)."""
    text = _text("006", "--mem-fraction-static", "0.9")
    assert "Line 48 (TP0; also TP1 at line 43): 60 weights were not initialized" in text
    assert "(24.13 GiB per rank on TP0, line 51) are those of a broken load" in text
    assert "not initialized" not in _text("001", "--mem-fraction-static", "0.9")


def test_the_token_count_gap_is_cited_in_analyzes_figure_and_words() -> None:
    """036: analyze says SGLang allocated about 2,800 more tokens than its logged KV budget
    (8.50 GiB, line 1139) holds (129,792 against 132,608); whatif cites that figure, not a
    second count of 129,920 with another explanation (review26 #7f)."""
    text = _text("036")
    assert "than its own logged KV budget (8.50 GiB, line 1139) holds at that cell" in text
    assert "(129,792 tokens against the 132,608 it allocated)" in text
    assert "129,920" not in text and "sizes KV differently" not in text


def test_early_2025_speculative_lists_top_at_32() -> None:
    """SGLang 0.4.3 (Mar 2025) captured range(1, 33) for speculative decoding: a max bs of 100
    gives 32 then, and 32 or 88 in April 2025, when 0.4.5 brought the longer list (the date
    tells which), and 96 from Jun 2025 (0.4.7's list)."""
    from logmem.sglang.capture_lists import GpuFacts, ListContext, largest_at_max_bs

    def top(month: tuple[int, int]) -> tuple[int, ...]:
        ctx = ListContext(speculative=True, no_padding=False, month=month)
        t = largest_at_max_bs(100, ctx, GpuFacts())
        assert t is not None
        assert t.why == ("date" if month == (2025, 4) else None)
        return t.sizes

    assert top((2025, 3)) == (32,)
    assert top((2025, 4)) == (32, 88)
    # 0.4.7 - 0.5.2: range(40, 64, 8) + range(80, 161, 16): 96 is the last at or below 100
    # (srt/model_executor/cuda_graph_runner.py, get_batch_sizes_to_capture).
    assert top((2025, 7)) == (96,)
