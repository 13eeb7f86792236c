"""A pool step's sentence lists the causes the ledger table prints, so its parts add up to
the drop as printed (round 25, task 2c): a rounding row of -0.01 is a part too (036's draft
step hid it: "drops 0.13 GiB: draft KV pool 0.14")."""

from __future__ import annotations

from conftest import FIXTURES, corpus_log
from logmem.analysis.findings import PoolStep
from logmem.api import read_log
from logmem.report.sentences import finding_text
from logmem.units import GIB


def _steps(path: str) -> list[PoolStep]:
    a = read_log(path)
    out = []
    for L in a.launches:
        for f in a.ledger(L).findings:
            if isinstance(f, PoolStep):
                out += [f] + ([f.draft] if f.draft is not None else [])
    return out


def _hundredths(n: int) -> int:
    return round(round(n / GIB, 2) * 100)


def test_the_draft_step_of_036_shows_its_rounding_row() -> None:
    a = read_log(str(corpus_log("036-")))
    (f,) = [x for x in a.ledger(a.launches[0]).findings if isinstance(x, PoolStep)]
    assert (
        "drops 0.13 GiB: draft KV pool (KV, 132,608 tokens) 0.14, rounding of printed values -0.01"
        in (finding_text(f))
    )


def test_the_printed_parts_add_up_to_the_printed_drop() -> None:
    paths = [
        str(corpus_log("036-")),
        str(corpus_log("019-")),
        str(FIXTURES / "two-launches-restart-constructed.log"),
        str(FIXTURES / "npu-capture-end-without-begin-constructed.log"),
    ]
    steps = [s for p in paths for s in _steps(p)]
    assert len(steps) >= 6
    for s in steps:
        assert sum(_hundredths(c.bytes) for c in s.causes) == _hundredths(s.drop_bytes), s
