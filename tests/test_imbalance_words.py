"""The rank-imbalance finding (review23 #6): who has the most and the least, that a rank tied
with the least gains nothing alone, and where the gap opens, read from corpus 003's lines."""

from __future__ import annotations

import re

import logmem.analysis.findings as fd
from conftest import corpus_log
from logmem.analysis.attribution import build_ledger
from logmem.api import read_log
from logmem.report.sentences import finding_text


def test_003_names_the_tied_least_ranks_and_the_gap_in_distributed_init() -> None:
    path = corpus_log("003-")
    text = path.read_text()
    begin = {
        int(m[1]): float(m[2])
        for m in re.finditer(r"TP(\d)\] Load weight begin\. avail mem=([\d.]+) GB", text)
    }
    usage = [
        float(x) for x in re.findall(r"Init torch distributed ends\..*?mem usage=([\d.]+) GB", text)
    ]
    least, most = min(begin.values()), max(begin.values())
    tied = sorted(f"TP{r}" for r, v in begin.items() if v == least)
    assert len(tied) >= 2  # the case the finding is about: several ranks at the least

    (L,) = read_log(str(path)).launches
    (f,) = [x for x in build_ledger(L).findings if isinstance(x, fd.Imbalance)]
    assert f.richest_rank == next(f"TP{r}" for r, v in begin.items() if v == most)
    assert sorted([f.binding_rank or "", *f.tied_ranks]) == tied
    words = " ".join(finding_text(f).split())
    assert f"{' and '.join(tied)} the least" in words
    assert "alone gains nothing" in words
    assert f"distributed init (its mem usage is {min(usage):.2f} to {max(usage):.2f} GiB" in words
    assert "per rank" not in words


def test_003_prices_the_gap_at_the_cell_sglang_sized_with() -> None:
    """review25 #8: 003's sizing finding shows SGLang sized with 55,227 B per token (164.57 GiB
    / 3,199,575 tokens) while the pools allocate 61,463; the tokens the gap cost are what
    SGLang's sizing would have added: 0.908 x 0.42 GiB // 55,227 = about 7,400, not the 6,662
    the allocated cell gives."""
    (L,) = read_log(str(corpus_log("003-"))).launches
    led = build_ledger(L)
    (f,) = [x for x in led.findings if isinstance(x, fd.Imbalance)]
    assert f.sizing_cell is not None and round(f.sizing_cell) == 55_227
    assert f.kv_tokens is not None and 7_400 <= f.kv_tokens <= 7_420
    assert f.loss_bytes is not None and f.kv_tokens == int(f.loss_bytes // f.sizing_cell)
    assert led.imbalance_tokens == f.kv_tokens
    words = " ".join(finding_text(f).split())
    assert f"about {f.kv_tokens:,} tokens smaller" in words
    assert "0.38 GiB at SGLang's sizing cell of 55,227 bytes per token" in words


def test_a_launch_whose_allocated_cell_is_the_sizing_one_keeps_it() -> None:
    # 036: the pools allocate the round MLA cell; the gap is in the token count (review24 #3),
    # so the allocated cell prices the imbalance.
    (L,) = read_log(str(corpus_log("036-"))).launches
    led = build_ledger(L)
    (f,) = [x for x in led.findings if isinstance(x, fd.Imbalance)]
    assert f.sizing_cell is None and led.imbalance_sizing_cell is None
    assert "sizing cell" not in finding_text(f)


def test_019_gap_that_follows_rank_parity_is_not_blamed_on_other_processes() -> None:
    """019 (Ascend A3, TP16): every even TP rank reads 60.75-60.82 GB before loading, every odd
    one 61.08-61.10: a split on every other device is the devices', not stray processes'."""
    path = corpus_log("019-")
    text = path.read_text()
    begin: dict[int, float] = {}
    for m in re.finditer(r"TP(\d+)(?: EP\d+)?\] Load weight begin\. avail mem=([\d.]+) GB", text):
        begin.setdefault(int(m[1]), float(m[2]))  # the target's (the draft's comes later)
    assert len(begin) == 16
    even = [v for r, v in begin.items() if r % 2 == 0]
    odd = [v for r, v in begin.items() if r % 2 == 1]
    assert max(even) < min(odd)  # the pattern is the log's

    (L,) = read_log(str(path)).launches
    (f,) = [x for x in build_ledger(L).findings if isinstance(x, fd.Imbalance)]
    assert f.parity is not None and f.parity.lower == "even"
    said = finding_text(f)
    band = f"every even TP rank has {min(even):.2f}-{max(even):.2f} GiB free"
    assert band in said and f"every odd one {min(odd):.2f}-{max(odd):.2f} GiB" in said
    assert "other processes on some GPUs" not in said


def test_parity_split_needs_two_bands_apart() -> None:
    from logmem.analysis.imbalance import parity_split
    from logmem.units import GIB

    def g(x: float) -> int:
        return round(x * GIB)

    two_bands = [(0, g(60.75)), (1, g(61.1)), (2, g(60.81)), (3, g(61.09))]
    assert parity_split(two_bands) is not None
    # One rank off (stray process): no parity pattern.
    one_off = [(0, g(61.1)), (1, g(61.1)), (2, g(60.75)), (3, g(61.09))]
    assert parity_split(one_off) is None
    # Bands wider than the space between them: no pattern.
    wide = [(0, g(60.0)), (1, g(60.9)), (2, g(60.6)), (3, g(61.5))]
    assert parity_split(wide) is None
    assert parity_split([(0, g(60.0)), (1, g(61.0))]) is None  # two ranks are no pattern


def test_036_same_hardware_same_parity_words_as_019() -> None:
    """036 (the same Ascend A3 CI as 019): even ranks 60.77-60.86, odd 61.04-61.09: the same
    parity sentence, not 'other processes'."""
    (L,) = read_log(str(corpus_log("036-"))).launches
    (f,) = [x for x in build_ledger(L).findings if isinstance(x, fd.Imbalance)]
    assert f.parity is not None
    said = finding_text(f)
    assert "every even TP rank has 60.77-60.86 GiB free, every odd one 61.04-61.09 GiB" in said
    assert "other processes on some GPUs" not in said
