"""The look-ups that replaced rescans (issue 15 item 4) give what the rescans gave.

The builder caches which ranks a progress bar may belong to until the next event that is
not a bar, and hands an error line to the oldest traceback still waiting for one through an
index instead of a scan of every traceback. Here both are compared with the plain rescans on
every real log and on mutated ones; the timings themselves are the bench's (bench/bench.py).
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from test_fuzz import BASES, OPS, base_bytes, mutate, window

import logmem
from conftest import bench_module, corpus_logs, fixture_logs
from logmem.model import launch_build as build
from logmem.parse import events as ev


@contextmanager
def rescanning() -> Iterator[None]:
    """The builder as it was: bar candidates recomputed for every render, error lines given to
    the first waiting traceback found by scanning them all."""
    mp = pytest.MonkeyPatch()
    fast_bar_rank = build._LaunchB.bar_rank

    def bar_rank(self: build._LaunchB, bar: ev.BarRender | None = None) -> build._RankB | None:
        self.bar_candidates = None
        return fast_bar_rank(self, bar)

    def add_error(self: build._LaunchB, e: ev.Event, rank: str | None, any_rank: bool) -> None:
        tb = next(
            (t for t in self.tracebacks if not t.errors and (any_rank or t.rank == rank)), None
        )
        if tb is None:
            tb = build._TracebackB(rank, None)
            self.tracebacks.append(tb)
        tb.errors.append(e)
        self.last_error = (tb, e.source.path, e.source.line_no)

    def add_frame(self: build._LaunchB, f: ev.Frame) -> None:
        tb = next((t for t in self.tracebacks if t.opening is not None and not t.errors), None)
        if tb is not None:
            tb.add_frame(f)
        elif self.fault_frames_left > 0:  # faulthandler's dump (not a look-up: kept as is)
            self.fault_frames_left -= 1
            self.events.append(f)

    mp.setattr(build._LaunchB, "bar_rank", bar_rank)
    mp.setattr(build._LaunchB, "add_error", add_error)
    mp.setattr(build._LaunchB, "add_frame", add_frame)
    try:
        yield
    finally:
        mp.undo()


def _same(*paths: str) -> None:
    fast = logmem.read_log(*paths, require_startup=False)
    with rescanning():
        slow = logmem.read_log(*paths, require_startup=False)
    assert fast.launches == slow.launches
    for a, b in zip(fast.launches, slow.launches):
        assert [(t.rank, t.opening, t.errors, t.frames) for t in a.tracebacks] == [
            (t.rank, t.opening, t.errors, t.frames) for t in b.tracebacks
        ]


def test_lookups_equal_rescans_on_every_real_log() -> None:
    logs = corpus_logs() + fixture_logs()
    assert len(logs) >= 40
    for p in logs:
        _same(str(p))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(base=st.integers(0, max(len(BASES) - 1, 0)), ops=OPS, seed=st.integers(0, 2**32 - 1))
# An unprefixed summary line between two renders closes the capture it asks bar_rank about.
@example(
    base=25, ops=["shuffle", "duplicate", "flip", "duplicate", "interleave", "flip"], seed=2**32 - 1
)
def test_lookups_equal_rescans_on_mutated_logs(
    tmp_path_factory: pytest.TempPathFactory, base: int, ops: list[str], seed: int
) -> None:
    rnd = random.Random(seed)
    data = window(base_bytes(base), rnd)
    other = window(base_bytes(rnd.randrange(len(BASES))), rnd)
    path = tmp_path_factory.mktemp("mut") / "m.log"
    path.write_bytes(mutate(data, ops, rnd, other))
    _same(str(path))


def test_per_rank_files_of_a_crash_each_keep_their_traceback(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    paths = bench_module("gen").write_rank_files(tmp_path_factory.mktemp("files"), 40)
    _same(*map(str, paths))
    (launch,) = logmem.read_log(*map(str, paths)).launches
    assert len(launch.tracebacks) == 40
    assert all(len(t.errors) == 1 for t in launch.tracebacks)
