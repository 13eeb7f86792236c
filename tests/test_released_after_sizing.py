"""Memory released after SGLang sized the KV pool (logmem.analysis.released), review C #1, #2 and
#13, on 041 (capture `mem usage=-5.29 GB` on both ranks, grep-filtered: no bar readings) and on
small variants of it: the verdicts priced from the readings at sizing are this launch's, not the
GPU's; the weight step is paired with the release; the low point is only the lowest reading."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from conftest import corpus_log
from logmem.analysis.attribution import build_ledger
from logmem.analysis.released import LaterRelease, RankRelease, later_release
from logmem.api import read_log
from logmem.cli.main import cli
from logmem.units import GIB

_TP0_END = "mem usage=-5.29 GB. avail mem=7.20 GB"
_TP1_END = "mem usage=-5.29 GB. avail mem=7.34 GB"


def _run(*args: str) -> str:
    r = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert r.exit_code == 0, r.output
    return " ".join(r.output.split())


def _variant(tmp_path: Path, name: str, *swaps: tuple[str, str], drop: tuple[int, ...] = ()) -> str:
    """041 with some text replaced and some lines (1-based) dropped, written to tmp_path."""
    lines = corpus_log("041-").read_text().splitlines(keepends=True)
    text = "".join(x for i, x in enumerate(lines, 1) if i not in drop)
    for old, new in swaps:
        assert old in text
        text = text.replace(old, new)
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def _no_release(tmp_path: Path) -> str:
    """041 with positive capture usages and a summary at the capture end: nothing released."""
    return _variant(
        tmp_path,
        "041-no-release.log",
        (_TP0_END, "mem usage=0.10 GB. avail mem=1.80 GB"),
        (_TP1_END, "mem usage=0.10 GB. avail mem=1.94 GB"),
        ("available_gpu_mem=7.20 GB", "available_gpu_mem=1.80 GB"),
    )


def test_041_release_is_found_on_both_ranks_and_paired() -> None:
    a = read_log(str(corpus_log("041-")))
    led = build_ledger(a.launches[0], a.launches)
    r = later_release(led.ranks)
    assert r is not None
    assert [(x.rank, x.lines) for x in r.ranks] == [("TP0", (15,)), ("TP1", (16,))]
    assert round(r.least_bytes / GIB, 2) == 5.29
    assert r.likely_load_temporary
    c = led.context
    assert c is not None and c.released == r
    # SGLang's rule at mfs 0.9: A + 5.29 (the load held it) and A + 5.29, P + 5.29 (another
    # process): 202,093 + 5.29 GiB // 40,960 B and + 0.9 x that.
    assert c.tokens_if_released is not None
    other, load = c.tokens_if_released
    assert 326_000 < other < 328_000 and 340_000 < load < 342_000
    assert c.released_holds_context is True


def test_one_rank_or_unequal_releases_are_not_a_load_temporary() -> None:
    one = LaterRelease((RankRelease("TP0", 5 * GIB, (15,)),))
    assert not one.likely_load_temporary
    unequal = LaterRelease((RankRelease("TP0", 5 * GIB, (15,)), RankRelease("TP1", 4 * GIB, (16,))))
    assert not unequal.same_size and not unequal.likely_load_temporary
    assert unequal.least_bytes == 4 * GIB


def test_041_analyze_does_not_say_cannot_on_this_gpu() -> None:
    out = _run("analyze", str(corpus_log("041-")))
    assert "cannot be enlarged enough on this GPU" not in out
    assert "At the free memory SGLang read when it sized the pool, one full context needs" in out
    assert "at least 5.29 GiB was released after SGLang sized the KV pool, on both ranks" in out
    assert "(line 15 on TP0, line 16 on TP1)" in out
    assert "about 327,000 to 341,000 tokens by SGLang's rule" in out
    assert "more than one full context" in out
    assert "a temporary of the weight load, or another process on the GPU" in out
    assert "until then pass --context-length 202,093 or less" in out
    # #2: the weight step, paired with the release; no model size of its own.
    assert "Weights take" not in out
    assert "The weight step took 12.91 GiB per rank on TP0" in out
    assert "came back after sizing on both ranks, the same on each" in out
    # #13: no bar readings in the capture: the lowest reading, not the low point.
    assert "bottomed out" not in out
    assert "The lowest reading of free memory is 1.90 GiB (line 14, before capture decode)" in out
    assert "which the log does not sample (no bar readings), it may have been lower" in out


def test_041_json_holds_the_release() -> None:
    d = json.loads(_run("analyze", str(corpus_log("041-")), "-f", "json"))
    c = d["launches"][0]["context_capacity"]
    assert [x["rank"] for x in c["released_after_sizing"]] == ["TP0", "TP1"]
    assert c["tokens_if_released"][0] < c["tokens_if_released"][1]


def test_041_whatif_is_conditional_and_its_headroom_an_upper_bound() -> None:
    out = _run("whatif", str(corpus_log("041-")))
    assert "not a usable setting" not in out
    assert "at the readings SGLang sized the pool from, the KV pool holds it only from" in out
    assert "about 327,000 to 341,000 tokens" in out
    assert "until then lower --context-length" in out
    assert "headroom, GiB (TP0) <= 1.90 <= 1.90" in out
    assert "It is the lowest reading, not the lowest point" in out
    assert "below it the headroom is an upper bound" in out


def test_without_a_release_the_verdicts_stay(tmp_path: Path) -> None:
    log = _no_release(tmp_path)
    out = _run("analyze", log)
    assert "The pool cannot be enlarged enough on this GPU" in out
    assert "Weights take 12.91 GiB per rank on TP0" in out
    assert "released after SGLang sized" not in out
    assert "lowest reading" not in out and "bottomed out" not in out  # no later rise
    w = _run("whatif", log)
    # Graphs measured here: the window's top binds (today's verdict), nothing conditional.
    assert "needs mem_fraction_static >= 1.000, above the window's top" in w
    assert "released after SGLang sized" not in w and "<= " not in w


def test_a_release_on_one_rank_or_unseen_on_one_keeps_the_verdict(tmp_path: Path) -> None:
    """SGLang sizes from the least reading over ranks: TP1 releasing nothing (or having no
    reading after the capture begin, the end lines cut) does not show the budget would rise."""
    one = _variant(tmp_path, "041-tp0-only.log", (_TP1_END, "mem usage=0.10 GB. avail mem=1.94 GB"))
    cut = _variant(tmp_path, "041-cut.log", drop=(15, 16))
    for log in (one, cut):
        out = _run("analyze", log)
        assert "The pool cannot be enlarged enough on this GPU" in out
        assert "Weights take 12.91 GiB per rank on TP0" in out
        # The low reading still borders an unsampled capture on TP0.
        assert "The lowest reading of free memory is 1.90 GiB" in out
