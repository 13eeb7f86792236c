"""whatif's low point is the ledger's lowest reading from the pool step on, a capture's bar
included (RankLedger.least_free_from_pools, the same home as the low-point finding's
RankLedger.lowest_reading): a larger pool must fit at the bar too."""

from __future__ import annotations

from click.testing import CliRunner

from conftest import corpus_log
from logmem.analysis.attribution import build_ledger
from logmem.api import read_log
from logmem.cli.main import cli
from logmem.units import gib


def test_the_pool_steps_low_point_counts_capture_bars() -> None:
    """021: the prefill capture's bar at num_tokens 8 (5.62 GiB, line 160) sits below every
    phase end after the pool step (the least, 6.22, is the last)."""
    led = build_ledger(read_log(str(corpus_log("021-"))).launches[0])
    rl = led.ranks[0]
    low = rl.least_free_from_pools()
    assert low is not None and gib(low[0]) == 5.62 and low[1] == 160
    full = rl.lowest_reading()
    assert full is not None and (full[0], full[1]) == low


def test_whatif_headroom_is_held_at_the_bar() -> None:
    r = CliRunner().invoke(cli, ["whatif", str(corpus_log("021-"))])
    assert r.exit_code == 0, r.output
    out = " ".join(r.output.split())
    assert "headroom, GiB (the GPU) 5.62 5.62" in out
    assert "Free memory on the GPU fell to 5.62 GiB (line 160) after the KV pool" in out
    assert "up to 0.892 the headroom stays >= 0.00 GiB" in out
    assert "headroom figures (and where the headroom runs out) are upper bounds" not in out
