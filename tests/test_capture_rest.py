"""A capture OOM's lower-mfs fix says what it leaves out (the buckets still to capture), and
cites another launch of the same input that came up (review D#2)."""

from __future__ import annotations

from pathlib import Path

import logmem
import logmem.analysis.failures.facts as fx
from logmem.analysis.failures import outcome
from logmem.analysis.failures.capture_rest import peer_up
from logmem.report.model import verdict_lines

FIX = Path(__file__).resolve().parent.parent / "fixtures"


def _lower(L: logmem.model.records.Launch) -> fx.LowerMfs:
    f = outcome(L).failure
    assert f is not None
    return next(x.effect for x in f.fixes if isinstance(x.effect, fx.LowerMfs))


def test_piecewise_rest_not_priced_is_labelled_minimum() -> None:
    a = logmem.read_log(str(FIX / "oom-piecewise-constructed.log"))
    e = _lower(a.launches[0])
    assert e.rest is not None and e.rest.failed == 3840 and e.rest.remaining == 48
    assert e.rest.rest_bytes is None
    text = "\n".join(verdict_lines(a.launches[0]))
    assert "the minimum for this one allocation, not a working value" in text.replace("\n", " ")


def test_two_launches_cites_the_launch_that_came_up() -> None:
    a = logmem.read_log(str(FIX / "two-launches-restart-constructed.log"))
    L0 = a.launches[0]
    p = peer_up(L0, a.all_launches)
    assert p is not None and p.index == 1 and p.mfs == 0.9
    assert p.remaining == 9 and p.rest_bytes is not None
    assert round(p.rest_bytes / 2**30, 2) == 0.06 and p.free_line == 135
    # The shortfall plus the peer's rest: lower than the one-allocation minimum 0.967.
    assert p.covers is not None and p.covers.value == "0.964"
    text = " ".join(verdict_lines(L0, a.ledger(L0), a.all_launches))
    assert "--mem-fraction-static 0.9, came up with 1.60 GiB free" in text
    # Without the other launches there is nothing to cite.
    assert "Launch 1 of this input" not in " ".join(verdict_lines(L0, a.ledger(L0)))


def test_rest_priced_from_measured_later_buckets() -> None:
    rest = fx.CaptureRest("bs", 32, 5, 2.0 * 2**20, 3)
    assert rest.rest_bytes == 10 * 2**20
    assert fx.CaptureRest("bs", 1, 0, None, 0).rest_bytes == 0
    assert fx.CaptureRest("bs", 32, None, 2.0, 3).rest_bytes is None


def test_threshold_fixes_are_labelled_not_working_values() -> None:
    """Review D#3: the smallest mfs with a pool and the offload that only makes the pool positive
    are thresholds, not working values."""
    a = logmem.read_log(str(FIX / "not-enough-memory-kv-constructed.log"))
    text = " ".join(verdict_lines(a.launches[0]))
    assert "only the threshold" in text and "not a working value" in text
    a = logmem.read_log(str(FIX / "oom-load-weights-constructed.log"))
    text = " ".join(verdict_lines(a.launches[0]))
    assert "the minimum that makes a KV pool at all" in text
    assert "the pool gets only the 0.41 GiB the rounding leaves" in text
