"""logmem diff compares like with like: first-captured buckets, KV cells within print
rounding, era labels the log's date does not confirm."""

from __future__ import annotations

from datetime import date
from pathlib import Path

from conftest import corpus_log
from logmem.api import read_log
from logmem.compare.diff import diff_launches
from logmem.compare.load import LaunchRef
from logmem.report.compare.jsonout import to_json
from logmem.report.compare.render import render_text
from logmem.report.compare.words import era_text
from logmem.sglang.eras import ERAS, EraGuess

FIX = Path(__file__).resolve().parent.parent / "fixtures"


def _diff(a: Path, b: Path):  # type: ignore[no-untyped-def]
    la, lb = read_log(str(a)).launches[0], read_log(str(b)).launches[0]
    ra = LaunchRef("A", (str(a),), 0)
    rb = LaunchRef("B", (str(b),), 0)
    return diff_launches(la, ra, lb, rb)


def test_first_captured_bucket_has_no_change() -> None:
    d = _diff(FIX / "pair-e2-maxbs80-constructed.log", FIX / "pair-e2-maxbs160-constructed.log")
    doc = to_json(d)
    g = next(x for x in doc["graphs"] if x["rank"] == "TP0" and x["buckets"])
    b80 = next(x for x in g["buckets"] if x["size"] == 80)
    assert b80["change_gib"] is None and b80["first_in"] == "A"
    assert "not like with like" in (g["buckets_note"] or "")
    others = [x for x in g["buckets"] if x["size"] != 80]
    assert others and all(x["change_gib"] is not None and x["first_in"] is None for x in others)


def test_kv_cells_within_print_rounding_are_the_same() -> None:
    a = corpus_log("019-")
    b = corpus_log("036-")
    d = _diff(a, b)
    assert d.kv is not None and d.kv.same_cell is True
    assert d.kv.common_range is not None and d.kv.terms  # the rule's terms apply
    kv = to_json(d)["kv"]
    assert kv["same_bytes_per_token"] is True and kv["common_bytes_per_token_range"]


def test_kv_cells_that_differ_say_by_how_much() -> None:
    a = corpus_log("001-")
    b = corpus_log("024-")
    d = _diff(a, b)
    assert d.kv is not None and d.kv.same_cell is False
    assert d.kv.apart_at_least is not None and d.kv.apart_at_least > 60000
    assert "at least" in (to_json(d)["kv"]["terms_note"] or "")


def test_era_label_after_its_window_is_approximate_once() -> None:
    late = era_text(EraGuess(ERAS["E3-E4"], date(2026, 2, 6)))
    assert "approximate" in late and late.count("approximate") == 1 and "after" in late
    undated = era_text(EraGuess(ERAS["E2"], None))
    assert "approximate" in undated
    ok = era_text(EraGuess(ERAS["E2"], date(2025, 3, 8)))
    assert "approximate" not in ok
    d = _diff(corpus_log("019-"), corpus_log("036-"))
    text = render_text(d)
    assert ") (approximate)" not in text and "approximate" in text
    assert to_json(d)["a"]["era_guess"].count("approximate") == 1


def test_missing_lines_are_not_another_wording() -> None:
    d = _diff(corpus_log("014-"), corpus_log("017-"))
    assert not any("Different SGLang wording" in h for h in to_json(d)["headlines"])


def test_a_log_that_kept_only_the_final_bar_has_no_first_bucket() -> None:
    """017 kept one render of its decode bar, the last (52/52, bs 1): bs 1 is the last bucket
    captured, not the first, so diff does not call it 'first in B' (review24 #8)."""
    from logmem.api import read_log
    from logmem.compare.points import graph_points

    path = corpus_log("017-")
    assert "bs=1 avail_mem=23.54 GB): 100% | 52/52" in path.read_text()
    (L,) = read_log(str(path)).launches
    (p,) = [x for x in graph_points(L) if x.per_bs and x.buckets]
    assert p.buckets[0][0] == 1 and p.first_size is None


def test_a_load_weight_end_without_mem_usage_reads_as_e0_e1() -> None:
    """024 (Oct 2024) prints Load weight end with no mem usage, a field E2 added (reference 0.1);
    it reads as E0-E1, in step with its date, not 'unknown' (review24 #9)."""
    from logmem.sglang.eras import era_markers, era_of

    path = corpus_log("024-")
    loads = [x for x in path.read_text().splitlines() if "Load weight end." in x]
    assert loads and not any("mem usage" in x for x in loads)
    (L,) = read_log(str(path)).launches
    e = era_of(era_markers(L))
    assert e is not None and e.name == "E0-E1"
