"""Every printed capture figure is used (issue 12, class 4): end lines without a begin, captures
announced by their sizes list, fragments that start mid-capture, captures without memory
readings, and the largest bucket when the sizes list is elided or only the last bar is kept."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import FIXTURES, corpus_log
from logmem.analysis.attribution import build_ledger, rank_ledger
from logmem.analysis.ledger import What
from logmem.api import read_log
from logmem.model.records import (
    OPENED_BY_BARS,
    OPENED_BY_END,
    OPENED_BY_SIZES,
    Graph,
    Launch,
)
from logmem.report.causes import cause_name
from logmem.units import GIB

ROUNDING = round(0.01 * GIB)


def only_launch(path: Path) -> Launch:
    (L,) = read_log(str(path)).launches
    return L


def graph(L: Launch, rank: str, name: str) -> Graph:
    r = L.rank(rank)
    assert r is not None
    return next(g for g in r.graphs if g.name == name)


# --- an end line with its figures, but no begin line ------------------------------------------


def test_npu_end_line_without_begin_is_a_graph_phase() -> None:
    L = only_launch(FIXTURES / "npu-capture-end-without-begin-constructed.log")
    for label, pool_end in (("TP0", 12.14), ("TP1", 12.16)):
        g = graph(L, label, "decode")
        assert (g.opened_by, g.backend, g.begin) == (OPENED_BY_END, "npu graph", None)
        assert g.end is not None and g.end.usage is not None and g.end.avail is not None
        led = rank_ledger(L, L.rank(label))  # type: ignore[arg-type]
        phase = led.phase("capture:decode")
        assert phase is not None, [p.key for p in led.phases]
        assert phase.before_bytes == round(pool_end * GIB)
        assert phase.after_bytes == g.end.avail.bytes
        total = phase.part("total")
        assert total is not None and (total.kind, total.bytes) == ("logged", g.end.usage.bytes)
        # What came before the (unprinted) begin is said to be outside the capture.
        rest = [c for c in phase.causes if c.kind == "unattributed"]
        assert [c.what for c in rest] == [What.WORKSPACES_BEFORE]
        assert [cause_name(c) for c in rest] == ["workspaces before it began (unlogged)"]
        assert abs(rest[0].bytes - round(0.60 * GIB)) <= ROUNDING
        assert not any(p.key.startswith("gap:") for p in led.phases)


def test_real_npu_captures_each_rank_its_own_printed_usage() -> None:
    """Corpus 019 (Ascend): every rank's `Capture npu graph end ... mem usage=8.79 GB` is its
    decode phase's logged total on the ranks without bar readings."""
    L = only_launch(corpus_log("019-"))
    led = build_ledger(L)
    for r in L.ranks:
        g = next(g for g in r.graphs if g.name == "decode")
        assert g.backend == "npu graph" and g.end is not None and g.end.usage is not None
        phase = led.rank(r.label).phase("capture:decode")  # type: ignore[union-attr]
        assert phase is not None, r.label
        if not r.prints_bars:
            total = phase.part("total")
            assert total is not None and total.bytes == g.end.usage.bytes, r.label


# --- a capture announced by its sizes list ------------------------------------------------------


def test_sizes_line_after_the_decode_end_opens_a_capture() -> None:
    L = only_launch(FIXTURES / "piecewise-sizes-only-nov2025-constructed.log")
    tp0 = L.rank("TP0")
    assert tp0 is not None
    assert [g.name for g in tp0.graphs] == ["decode", "piecewise"]
    pw = tp0.graphs[1]
    assert (pw.opened_by, pw.begin, pw.end) == (OPENED_BY_SIZES, None, None)
    assert pw.sizes == (4, 8, 12, 16, 20, 24, 28, 32) and pw.sizes_source == "num tokens line"
    assert [s.size for s in pw.samples] == [32, 28, 24, 20, 16, 12, 8, 4]
    assert pw.complete and pw.closed_by is tp0.summary  # the summary shows it finished
    assert pw.largest_size == 32
    assert L.stray_bars == 0
    led = rank_ledger(L, tp0)
    phase = led.phase("capture:piecewise")
    assert phase is not None
    assert phase.before_bytes == pw.samples[0].avail.bytes
    largest = phase.part("largest")
    assert largest is not None
    assert largest.bytes == pw.samples[0].avail.bytes - pw.samples[1].avail.bytes
    before = led.phase("pre_capture:piecewise")
    assert before is not None and before.before_bytes == graph(L, "TP0", "decode").end_bytes


# --- a fragment that starts mid-capture ------------------------------------------------------


def test_bars_before_any_begin_belong_to_the_capture_whose_end_follows() -> None:
    L = only_launch(FIXTURES / "fragment-mid-capture-constructed.log")
    assert L.stray_bars == 0
    g = graph(L, "TP0", "decode")  # TP1 prints its end line first: the bars are still TP0's
    assert g.opened_by == OPENED_BY_BARS and g.end is not None
    assert g.bars == 24 and len(g.samples) == 12
    assert (g.samples[0].size, g.samples[0].index) == (64, 8)
    for label in ("TP1", "TP2", "TP3"):
        other = graph(L, label, "decode")
        assert (other.opened_by, other.samples, other.bars) == (OPENED_BY_END, (), 0)
    tp0 = L.rank("TP0")
    assert tp0 is not None and tp0.prints_bars
    phase = rank_ledger(L, tp0).phase("capture:decode")
    assert phase is not None
    assert (phase.before_bytes, phase.after_bytes) == (g.samples[0].avail.bytes, g.end_bytes)
    assert phase.part("static") is None  # nothing before the first bar is in the fragment


def test_bars_with_no_capture_end_after_them_stay_stray(tmp_path: Path) -> None:
    path = tmp_path / "bars.log"
    path.write_text(
        "Capturing batches (bs=4 avail_mem=1.00 GB):   0%|          | 0/3 [00:00<?, ?it/s]\n"
        "[2026-04-14 16:08:49 TP0] Capture cuda graph begin. This can take up to several minutes."
        " avail mem=2.00 GB\n"
        "[2026-04-14 16:08:55 TP0] Capture cuda graph end. Time elapsed: 4.78 s. mem usage=0.26 GB."
        " avail mem=1.74 GB.\n"
    )
    L = only_launch(path)
    assert L.stray_bars == 1  # a begin line came between: the renders were not this capture's
    (g,) = L.ranks[0].graphs
    assert g.samples == ()


# --- captured, memory not printed --------------------------------------------------------------


@pytest.mark.parametrize(("prefix", "buckets"), [("008-", 23), ("024-", None)])
def test_captures_without_readings_are_captured(prefix: str, buckets: int | None) -> None:
    """E0/E1: the begin line has no avail mem, the end line (008) only its time, 024 none at all:
    the graphs were captured, their memory was not printed."""
    L = only_launch(corpus_log(prefix))
    ((label, g),) = L.captures_without_memory
    assert label == "TP0" and g.name == "decode"
    assert g.complete and not g.memory_printed and g.captured_without_memory
    assert g.bucket_count == buckets


@pytest.mark.parametrize("prefix", ["005-", "006-", "018-"])
def test_launches_without_graphs_have_no_unmeasured_capture(prefix: str) -> None:
    L = only_launch(corpus_log(prefix))
    assert not any(r.graphs for r in L.ranks)
    assert L.captures_without_memory == ()


def test_measured_captures_are_not_unmeasured() -> None:
    L = only_launch(corpus_log("014-"))
    assert all(g.memory_printed for r in L.ranks for g in r.graphs)
    assert L.captures_without_memory == ()


# --- the largest captured size ---------------------------------------------------------------


@pytest.mark.parametrize(("prefix", "largest"), [("037-", 8), ("040-", 4), ("016-", 2)])
def test_a_lone_last_bar_is_not_the_largest_bucket(prefix: str, largest: int) -> None:
    """These pastes keep only the final render (`bs=1 ... 100% N/N`): the list rules."""
    L = only_launch(corpus_log(prefix))
    g = L.ranks[0].graphs[0]
    assert g.samples[-1].size == 1 and g.sizes is not None
    assert (g.largest_size, g.largest_size_source) == (largest, "sizes list")


def test_elided_list_and_bar_total_give_the_largest_bucket() -> None:
    """Corpus 017 prints `Capture cuda graph bs [1, 2, 4, ...]` and one bar `bs=1 ... 52/52`:
    52 sizes of SGLang's list since Oct 2025 end at 512. The piecewise list (74 tokens sizes) is
    not decided: the Oct-2025 and later token lists end at different sizes for 74 entries."""
    L = only_launch(corpus_log("017-"))
    decode, piecewise = L.ranks[0].graphs
    assert decode.sizes is None and decode.bucket_count == 52
    assert (decode.largest_size, decode.largest_size_source) == (
        512,
        "SGLang's list since Oct 2025",
    )
    assert piecewise.bucket_count == 74 and piecewise.largest_size is None


@pytest.mark.parametrize("prefix", ["001-", "008-"])
def test_bare_bar_totals_agree_with_the_resolved_max_bs(prefix: str) -> None:
    """E1/E2 bars have no description: tqdm's total (13, 23) and SGLang's 2025 list give the
    largest size, which must be the cuda_graph_max_bs the server_args dump resolved."""
    L = only_launch(corpus_log(prefix))
    g = next(g for r in L.ranks for g in r.graphs if g.bars)
    assert g.largest_size == L.args["cuda_graph_max_bs"]
    assert g.largest_size_source == "SGLang's 2025 list"


def test_whatif_starts_from_the_largest_captured_bucket() -> None:
    """Corpus 040 keeps only the bar `bs=1 ... 3/3` of the list [1, 2, 4]: a what-if at
    another max bs starts from bs 4, never from "largest captured bs 1"."""
    import logmem

    w = logmem.whatif(read_log(str(corpus_log("040-"))), cuda_graph_max_bs=16).to_json()
    assert (w["measured"]["largest_bs"], w["predicted"]["largest_bs"]) == (4, 16)


def test_graphs_are_named_by_the_backend_the_log_prints() -> None:
    """019 prints 'Capture npu graph': its findings say NPU graphs, never CUDA graphs."""
    from logmem.report.sentences import graphs_name

    assert graphs_name("npu graph") == "NPU graphs"
    assert graphs_name("cuda graph") == graphs_name("CUDA graph") == "CUDA graphs"
    assert graphs_name("hip graph") == "HIP graphs"
    assert graphs_name("musa graph") == "MUSA graphs"


# --- a capture the log stops in: its first bucket is measured (review25 #6) -------------------


def test_stopped_capture_splits_its_first_bucket_out() -> None:
    # 026 l.11 bs=32 27.49, l.13 bs=24 21.80, l.15 bs=16 21.80 and the excerpt ends: the first
    # bucket took 5.69 GiB, bs 24 0.00; bs 16's own cost is unknown.
    from logmem.analysis import findings as fd
    from logmem.report.sentences import finding_text

    led = build_ledger(only_launch(corpus_log("026-")))
    rl = led.rank("DP0 TP0 EP0")
    assert rl is not None
    p = rl.phase("capture:decode")
    assert p is not None
    big, rest = p.part("largest"), p.part("buckets")
    assert big is not None and rest is not None
    assert (round(big.bytes / GIB, 2), big.lines) == (5.69, (11, 13))
    assert cause_name(big) == "largest bucket (bs 32)"
    assert (round(rest.bytes / GIB, 2), rest.lines, cause_name(rest)) == (
        0.0,
        (13, 15),
        "bucket bs 24, before the stop",
    )
    (f,) = [x for x in led.findings if isinstance(x, fd.StoppedFirstBucket)]
    t = finding_text(f)
    assert t.startswith(
        "Capture decode on DP0 TP0 EP0 did not finish, but its first bucket is measured: the "
        "largest bucket (bs 32) took 5.69 GiB (lines 11-13), and bucket bs 24 took 0.00 up to "
        "the last bar reading (lines 13-15)."
    )
    assert "all-to-all buffers" not in t  # no moe_a2a_backend in the excerpt


def test_cut_bar_line_keeps_the_largest_bucket_of_the_whole_log(tmp_path: Path) -> None:
    # 021 cut inside its CR-joined bar line 160: the largest bucket (num_tokens 8192) took
    # 5.04 GiB, as the whole log says, instead of "20 buckets ... before the stop".
    lines = corpus_log("021-").read_bytes().decode().split("\n")
    cut = tmp_path / "cut021.log"
    cut.write_text("\n".join([*lines[:159], lines[159][: len(lines[159]) // 2]]))
    whole = build_ledger(only_launch(corpus_log("021-"))).ranks[0].phase("capture:target prefill")
    part = build_ledger(only_launch(cut)).ranks[0].phase("capture:target prefill")
    assert whole is not None and part is not None
    a, b = whole.part("largest"), part.part("largest")
    assert a is not None and b is not None
    assert round(b.bytes / GIB, 2) == round(a.bytes / GIB, 2) == 5.04
    assert cause_name(b) == "largest bucket (num_tokens 8192)"
