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
