"""Readings at the 0.00 floor and negative capture usages are not measured costs (review 21,
findings 2 and 13): a drop to the floor is a lower bound, a drop between floored readings and
the graphs behind a negative usage are unknown (null in JSON, "unknown" in text), never 0; and a
capture's cost is the end line's logged mem usage whenever the log prints one."""

from __future__ import annotations

import json
import re
from pathlib import Path

from click.testing import CliRunner

import logmem.analysis.findings as fd
from conftest import FIXTURES, corpus_log
from logmem.analysis.attribution import build_ledger
from logmem.analysis.captures import graph_cost, total_cost
from logmem.analysis.ledger import Bound, What, floor_bound
from logmem.api import read_log
from logmem.cli.main import cli
from logmem.report.sentences import finding_text
from logmem.sglang.rules import at_floor
from logmem.units import GIB, gib


def _ledger(path: Path):  # type: ignore[no-untyped-def]
    return build_ledger(read_log(str(path)).launches[0])


def _run(*args: str) -> str:
    res = CliRunner().invoke(cli, list(args))
    assert res.exit_code == 0, res.output
    return res.output


def test_floor_bound() -> None:
    assert at_floor(0) and not at_floor(GIB // 100)
    assert floor_bound(2 * GIB, GIB) is Bound.EXACT
    assert floor_bound(2 * GIB, 0) is Bound.AT_LEAST
    assert floor_bound(0, 0) is Bound.FLOOR
    assert Bound.AT_LEAST.known and not Bound.FLOOR.known and not Bound.MASKED.known


def test_007_floored_capture_is_unknown_not_zero() -> None:
    led = _ledger(corpus_log("007-"))
    (rl,) = led.ranks
    pools = rl.phase("target_pools")
    assert pools is not None and pools.bound is Bound.AT_LEAST
    rest = next(c for c in pools.causes if c.what is What.SMALL_POOLS)
    assert rest.bound is Bound.AT_LEAST and gib(rest.bytes) == 0.08
    kv = next(c for c in pools.causes if c.what is What.KV_POOL)
    assert kv.bound is Bound.EXACT  # logged: the floor does not touch it
    pre = rl.phase("pre_capture:decode")
    cap = rl.phase("capture:decode")
    assert pre is not None and cap is not None
    for p in (pre, cap):
        assert p.bound is Bound.FLOOR
        assert all(c.bound is Bound.FLOOR for c in p.causes)
    assert all(b.bound is Bound.FLOOR for b in cap.buckets)
    g = cap.graph
    assert g is not None
    cost = graph_cost(g)
    assert cost is not None and cost.bytes is None and cost.bound is Bound.FLOOR
    # v0.4.6 (era a): the default mfs came from the tp table, so there is no graph reserve to
    # set the floored capture against (tests/test_default_mfs.py).
    assert led.reserve is None
    assert not any(isinstance(f, fd.NegligibleCaptures) for f in led.findings)
    un = next(f for f in led.findings if isinstance(f, fd.CaptureUnmeasured))
    assert un.bound is Bound.FLOOR and "is unknown" in finding_text(un)


def test_041_masked_graph_cost() -> None:
    led = _ledger(corpus_log("041-"))
    for rank in led.launch.ranks:
        cost = graph_cost(rank.graphs[0])
        assert cost is not None and cost.bytes is None and cost.bound is Bound.MASKED
        assert cost.logged and cost.released_bytes is not None
        assert gib(cost.released_bytes) == 5.29
    # The launch's graph total is unknown too (no reserve to set it against: the default-mfs
    # rule is not confirmed for this log).
    main = led.launch.main_rank
    assert main is not None
    total = total_cost(main.graphs)
    assert total.bytes is None and total.bound is Bound.MASKED
    for rl in led.ranks:
        rl.check()  # conservation holds with the graphs unknown and the release shown


def test_logged_usage_is_preferred_to_the_readings_difference() -> None:
    # 037: end line mem usage=0.11 GB, begin - end of the printed readings 0.10.
    led = _ledger(corpus_log("037-"))
    sparse = next(f for f in led.findings if isinstance(f, (fd.GraphSparse, fd.GraphSplit)))
    assert gib(sparse.drop_bytes) == 0.11 and sparse.logged
    assert "take 0.11 GiB" in finding_text(sparse)
    # 014 TP0: logged 0.26, readings 0.25.
    led = _ledger(corpus_log("014-"))
    split = next(f for f in led.findings if isinstance(f, fd.GraphSplit))
    assert gib(split.drop_bytes) == 0.26 and split.logged
    # 011: logged 0.89, readings 0.90.
    led = _ledger(corpus_log("011-"))
    sparse = next(f for f in led.findings if isinstance(f, (fd.GraphSparse, fd.GraphSplit)))
    assert gib(sparse.drop_bytes) == 0.89


def test_report_007_says_unknown_not_zero() -> None:
    text = _run("analyze", str(corpus_log("007-")))
    assert "0.00  derived" not in text and "measured 0.00" not in text
    assert re.search(r"static buffers \(before the first bucket\) \[4\] +unknown +derived", text)
    assert ">=0.08  unattributed" in text
    # No graph-reserve row to measure against (era a); the capture's cost is unknown above.
    assert "graph reserve" not in text
    assert "took no measurable memory" not in text
    doc = json.loads(_run("analyze", "--format", "json", str(corpus_log("007-"))))
    rows = doc["launches"][0]["ranks"][0]["ledger"]
    static = next(r for r in rows if r["cause"].startswith("static buffers"))
    assert static["gib"] is None and static["bytes"] is None and static["bound"] == "floor"
    kv = next(r for r in rows if r["cause"].startswith("KV pool"))
    assert kv["gib"] == 1.64 and "bound" not in kv
    # The printed readings themselves stay as printed (check_corpus's contract).
    assert doc["launches"][0]["ranks"][0]["graphs"][0]["usage_gib"] == 0.0


def test_report_041_shows_the_release_not_graphs() -> None:
    text = _run("analyze", str(corpus_log("041-")))
    assert "-5.29  logged" in text and "released in capture (net)" in text
    assert "graph capture (total) [3]                                 unknown  logged" in text
    assert "7.20  unknown" in text  # per-rank table, graphs column
    assert "measured -5.29" not in text
    doc = json.loads(_run("analyze", "--format", "json", str(corpus_log("041-"))))
    rows = doc["launches"][0]["ranks"][0]["ledger"]
    total = next(r for r in rows if r["cause"].startswith("graph capture"))
    assert total["gib"] is None and total["bound"] == "masked"
    assert doc["launches"][0]["ranks"][0]["graphs"][0]["usage_gib"] == -5.29


def test_whatif_does_not_build_on_floored_or_masked_graphs() -> None:
    text = _run("whatif", str(corpus_log("007-")))
    assert "CUDA graphs, GiB                              unknown        unknown" in text
    assert "[0.372, ?]" in text and "0.00 GiB, the driver's zero (SGLang sets no floor)" in text
    text = _run("whatif", str(corpus_log("041-")))
    assert "CUDA graphs, GiB                         unknown  unknown" in text
    assert "-5.30" not in text
    doc = json.loads(_run("whatif", "--format", "json", str(corpus_log("041-"))))
    for side in ("measured", "predicted"):
        assert doc[side]["graph_gib"] is None and doc[side]["graph_bound"] == "unknown"


def test_report_says_where_the_capture_total_comes_from_when_it_differs() -> None:
    text = _run("analyze", str(corpus_log("014-")))
    assert (
        "take 0.26 GiB on TP0 (the end line's mem usage, line 95; the printed readings\n  give 0.25)"
        in text
    )
    # Where the logged figure prints the same as the readings, the sentence is as before.
    text = _run("analyze", str(FIXTURES / "pair-e2-maxbs80-constructed.log"))
    assert "take 0.92 GiB on TP0: static" in text


def test_frames_leave_unknown_figures_empty() -> None:
    from logmem.report.frames import ledger_records

    rows = ledger_records(read_log(str(corpus_log("007-"))))
    static = next(r for r in rows if r["cause"].startswith("static buffers"))
    assert static["gib"] is None and static["bytes"] is None


def test_a_last_reading_at_the_floor_is_unknown_headroom_and_a_served_batch_is_named(
    tmp_path: Path,
) -> None:
    """007 (WSL) ends at avail mem=0.00 GB, then serves a prefill batch (review23 #5): the
    finding says the headroom is unknown and cites that line; it does not warn that the first
    requests may run out of memory, which the log itself shows they did not."""
    path = corpus_log("007-")
    led = _ledger(path)
    (left,) = [f for f in led.findings if isinstance(f, fd.LeftFree)]
    served = next(
        n for n, line in enumerate(path.read_text().splitlines(), 1) if "Prefill batch" in line
    )
    assert left.at_floor and left.served_line == served
    text = finding_text(left)
    assert "headroom is unknown" in text and f"(line {served})" in text
    assert "may run out of memory" not in text
    # Cut the log before the batch: nothing shows a request served, so the warning stays.
    cut = path.read_text().splitlines()[: served - 1]
    cut_log = tmp_path / "cut.log"
    cut_log.write_text("\n".join(cut) + "\n")
    (left,) = [f for f in _ledger(cut_log).findings if isinstance(f, fd.LeftFree)]
    assert left.served_line is None and "may run out of memory" in finding_text(left)


def test_free_memory_before_an_unmeasured_capture_is_not_the_servers_headroom() -> None:
    """008 (Jan 2025) captures its graphs with no free-memory reading: the last reading is at the
    end of the pools, and the finding says the capture came after it, unmeasured."""
    path = corpus_log("008-")
    assert "Capture cuda graph" in path.read_text()
    (left,) = [f for f in _ledger(path).findings if isinstance(f, fd.LeftFree)]
    assert left.unmeasured_after
    assert "before graph capture" in finding_text(left)
    # 001 prints the capture's readings: its last reading is after capture, nothing to add.
    (left,) = [f for f in _ledger(corpus_log("001-")).findings if isinstance(f, fd.LeftFree)]
    assert not left.unmeasured_after and "before graph capture" not in finding_text(left)


def test_007_the_zero_reading_is_the_drivers_not_sglangs() -> None:
    # SGLang of 0.4.6 (and 0.3.6 - 0.5.9) keeps no floor of free memory: the 0.00 reading is
    # the driver's zero (rules.at_floor). No sentence, text or whatif, may say it is SGLang's.
    led = _ledger(corpus_log("007-"))
    left = next(f for f in led.findings if isinstance(f, fd.LeftFree))
    assert left.at_floor
    text = finding_text(left)
    assert "the driver reports no free memory below zero" in text
    assert "SGLang keeps no floor of its own" in text
    for out in (
        _run("analyze", str(corpus_log("007-"))),
        _run("whatif", str(corpus_log("007-")), "--mem-fraction-static", "0.9"),
    ):
        assert "SGLang's floor" not in out and "floor of SGLang" not in out
