"""Attribution: phases, causes and conservation on real logs, worked figures and generated logs."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import logmem.analysis.findings as fd
from conftest import FIXTURES, corpus_log, corpus_logs, fixture_logs
from logmem.analysis.attribution import build_ledger, rank_ledger
from logmem.analysis.ledger import Bound, Lazy, What
from logmem.api import read_log
from logmem.model.records import Rank
from logmem.parse import events as ev
from logmem.report.causes import cause_name, cause_note, ledger_note
from logmem.report.sentences import finding_text
from logmem.sglang.rules import DIFFERENCE_RESOLUTION_BYTES as ROUNDING_BYTES
from logmem.units import GIB, gib


def _ledger(path: Path, launch: int = 0):  # type: ignore[no-untyped-def]
    return build_ledger(read_log(str(path)).launches[launch])


def _texts(led) -> list[str]:  # type: ignore[no-untyped-def]
    return [finding_text(f) for f in led.findings]


def _cause(phase, prefix):  # type: ignore[no-untyped-def]
    return next(c for c in phase.causes if cause_name(c).startswith(prefix))


def _raw_ends(rank: Rank) -> tuple[int, int] | None:
    """First and last free memory of a rank, read from its raw events (not from the ledger):
    the first reading plus the distributed init's usage when init came first, and the last
    reading, or the last bar sample when the log stops inside a capture."""
    vals: list[tuple[int, ev.Event]] = []
    opened_by_bar = {
        g.samples[0].source for g in rank.graphs if g.samples and g.begin_bytes is None
    }
    for e in rank.events:
        m = None
        if isinstance(
            e, (ev.WeightsBegin, ev.WeightsEnd, ev.PoolEnd, ev.CaptureBegin, ev.CaptureEnd)
        ):
            m = e.avail
        elif isinstance(e, ev.Summary):
            m = e.available
        elif isinstance(e, ev.PostCaptureKV):
            m = e.avail  # post-capture KV sizing (sglang 0.5.17 on): free after the pool
        elif isinstance(e, ev.BarRender) and e.source in opened_by_bar:
            m = e.avail  # a capture with no begin reading (a fragment) opens at its first bar
        if m is not None:
            vals.append((m.bytes, e))
    if not vals:
        return None
    figures = len(vals)
    first, first_event = vals[0]
    if isinstance(first_event, ev.WeightsBegin) and rank.init_end is not None:
        first += rank.init_end.usage.bytes
        figures += 1
    last, last_event = vals[-1]
    if isinstance(last_event, (ev.CaptureBegin, ev.BarRender)):
        g = next(
            (
                g
                for g in rank.graphs
                if g.begin is last_event or (g.samples and g.samples[0].source == last_event.source)
            ),
            None,
        )
        if g is not None and g.samples:
            last = g.samples[-1].avail.bytes
            figures += 1
    return (first, last) if figures >= 2 else None


@pytest.mark.parametrize("path", corpus_logs() + fixture_logs(), ids=lambda p: p.name)
def test_every_log_conserves(path: Path) -> None:
    a = read_log(str(path))
    for L in a.launches:
        led = build_ledger(L)
        for rank, r in zip(L.ranks, led.ranks):
            r.check()
            for p in r.phases:
                assert sum(c.bytes for c in p.causes) == p.delta_bytes
            ends = _raw_ends(rank)
            if not r.phases:
                continue
            # The phases' drops add up to first - last as the log printed them.
            assert ends is not None
            assert sum(p.delta_bytes for p in r.phases) == ends[0] - ends[1], rank.label


def test_qwq32b_worked_figures() -> None:
    """Issue 3: corpus 001 (QwQ-32B, 4 x L4, TP4)."""
    led = _ledger(corpus_log("001-"))
    sz = led.sizing
    assert sz is not None
    assert gib(sz.pre_load_bytes) == 21.63
    assert sz.mem_fraction_static == 0.85
    assert gib(sz.after_weights_bytes) == 6.09
    # rest = 6.09 - 21.63 x 0.15 = 2.8455 -> 2.85, against K+V = 2.84 logged
    assert sz.rest_bytes == round(6.09 * GIB) - round(round(21.63 * GIB) * 0.15)
    assert gib(sz.rest_bytes) == 2.85
    assert gib(sz.logged_pool_bytes) == 2.84
    assert sz.likely_bytes_per_token == 65_536
    tp0 = led.rank("TP0")
    assert tp0 is not None
    pools = tp0.phase("target_pools")
    assert pools is not None
    assert gib(pools.delta_bytes) == 4.00
    assert gib(_cause(pools, "KV pool").bytes) == 2.84
    req = _cause(pools, "request-to-token")
    assert req.kind == "estimated"
    # sglang 0.4.3.post4 builds ReqToTokenPool(size=max_num_reqs + 1) and prints that size:
    # the printed 2049 already counts the padding row (about 1.0 GiB).
    assert req.bytes == 2049 * (131072 + 4) * 4
    assert gib(_cause(pools, "unlogged").bytes) == 0.16
    pre = tp0.phase("pre_capture:decode")
    assert pre is not None and gib(pre.delta_bytes) == 0.64
    cap = tp0.phase("capture:decode")
    assert cap is not None and gib(cap.after_bytes) == 0.53
    kv = next(f for f in led.findings if isinstance(f, fd.KVBudget))
    assert kv.sizing.likely_bytes_per_token == 65_536
    # The sentence gives the range print rounding allows (class 7), then the round cell in it.
    lo, hi = kv.sizing.bytes_per_token_range or (0, 0)
    assert lo <= 65_536 <= hi
    assert any(
        f"{lo:,} to {hi:,} bytes per token by print rounding, likely 65,536" in f
        for f in _texts(led)
    )


def test_kimi_k3_target_verify_split() -> None:
    """Issue 3: static 1.33, largest bucket (bs 192) 10.24, other 22 buckets 1.35, 0.37 for bs 184."""
    led = _ledger(FIXTURES / "kimi-k3-b200-dp2-dcp8-target-verify-constructed.log")
    main = next(r for r in led.launch.ranks if r.prints_bars)
    rl = led.rank(main.label)
    assert rl is not None
    cap = rl.phase("capture:target verify")
    assert cap is not None
    assert gib(cap.before_bytes) == 22.33 and gib(cap.after_bytes) == 9.41
    assert gib(_cause(cap, "static").bytes) == 1.33
    # Verify graphs capture bs x speculative_num_draft_tokens (4) tokens per bucket.
    largest = _cause(cap, "largest bucket (bs 192 = 768 tokens)")
    assert gib(largest.bytes) == 10.24
    # DeepEP's one buffer per process is created at the first dispatch: the launch's first
    # capture (target prefill) holds it, never a later family (issue 14). It is the MoE
    # all-to-all (moe_a2a_backend='deepep'), so no other all-to-all buffer comes with a later
    # family either (review25 #6: all-to-all buffers only for a backend the dump names).
    assert "DeepEP" not in cause_note(largest) and "all-to-all" not in cause_note(largest)
    assert "DP-attention gather buffers" in cause_note(largest)
    prefill = rl.phase("capture:target prefill")
    assert prefill is not None and any(Lazy.DEEPEP in c.facts.lazy for c in prefill.causes)
    other = _cause(cap, "other 22 buckets")
    assert gib(other.bytes) == 1.35
    assert cap.buckets[1].size == 184 and gib(cap.buckets[1].cost_bytes) == 0.37
    later = [gib(b.cost_bytes) for b in cap.buckets[2:]]
    assert all(c is not None and 0.03 <= c <= 0.08 for c in later)
    split = next(
        f for f in led.findings if isinstance(f, fd.GraphSplit) and f.graph == "target verify"
    )
    assert (gib(split.static.bytes), gib(split.largest.bytes), gib(split.other.bytes)) == (
        1.33,
        10.24,
        1.35,
    )
    assert split.largest_dominates and split.lines == cap.lines
    text = " ".join(_texts(led))
    assert (
        "static 1.33, largest bucket (bs 192 = 768 tokens) 10.24, the other 22 buckets 1.35 in all"
        in text
    )
    assert "the largest bucket does" in text


def test_negative_capture_is_a_release_not_a_graph_cost() -> None:
    # 041's end line logs mem usage=-5.29 GB: the net of the graphs and a larger release. The
    # drop stays negative; the graphs' own cost is unknown, the -5.29 is shown as the release.
    led = _ledger(corpus_log("041-"))
    cap = led.rank("TP0").phase("capture:decode")  # type: ignore[union-attr]
    assert cap is not None and gib(cap.delta_bytes) == -5.30
    total = _cause(cap, "graph capture")
    assert total.bound is Bound.MASKED and not total.bound.known
    released = next(c for c in cap.causes if c.what is What.RELEASED)
    assert gib(released.bytes) == -5.29 and released.kind == "logged"
    unmeasured = next(f for f in led.findings if isinstance(f, fd.CaptureUnmeasured))
    assert unmeasured.bound is Bound.MASKED and gib(unmeasured.released_bytes) == 5.29
    assert gib(unmeasured.rose_bytes) == 5.30
    assert any("free memory rose by 5.30 GiB" in f for f in _texts(led))


def test_mamba_and_kv_pools() -> None:
    led = _ledger(corpus_log("014-"))
    pools = led.rank("TP0").phase("target_pools")  # type: ignore[union-attr]
    assert pools is not None
    assert gib(_cause(pools, "Mamba").bytes) == 4.48
    assert gib(_cause(pools, "KV pool").bytes) == 5.00


def test_draft_pools_and_swa_labels() -> None:
    led = _ledger(corpus_log("021-"))
    rl = led.rank("")
    assert rl is not None
    keys = [p.key for p in rl.phases]
    assert keys.index("target_weights") < keys.index("draft_weights") < keys.index("target_pools")
    assert keys.index("target_pools") < keys.index("draft_pools")
    names = [cause_name(c) for c in rl.phase("target_pools").causes]  # type: ignore[union-attr]
    assert names[0].startswith("SWA KV pool") and names[1].startswith("full-attention KV pool")


def test_ranks_without_readings_are_labelled() -> None:
    # Ranks that print no free-memory line (E3 logs, excerpts) get an explicit note.
    led = _ledger(corpus_log("031-"))
    quiet = [r for r in led.ranks if not r.phases]
    assert quiet and all(ledger_note(r) for r in quiet)


def test_binding_rank_and_imbalance() -> None:
    led = _ledger(corpus_log("023-"))
    assert led.binding_rank == "TP0"
    assert led.imbalance_bytes is not None and gib(led.imbalance_bytes) == round(19.15 - 18.73, 2)


# --- generated logs: conservation holds for any sequence of readings ---------------------------

_reading = st.integers(min_value=-500, max_value=8000).map(lambda n: n / 100)


@st.composite
def _startup(draw: st.DrawFn) -> str:
    lines = ["[2026-05-10 10:00:00] server_args=ServerArgs(mem_fraction_static=0.8, tp_size=1)"]
    ts = "[2026-05-10 10:00:01 TP0] "
    free = draw(st.integers(min_value=1000, max_value=9000)) / 100
    lines.append(ts + f"Init torch distributed ends. mem usage={draw(_reading) / 10:.2f} GB")
    lines.append(ts + f"Load weight begin. avail mem={free:.2f} GB")
    used = draw(_reading)
    lines.append(
        ts + f"Load weight end. type=M, dtype=torch.bfloat16, avail mem={free - used:.2f} GB, "
        f"mem usage={used + draw(st.sampled_from([0, 0.01, -0.01])):.2f} GB."
    )
    free -= used
    if draw(st.booleans()):
        lines.append(
            ts + f"KV Cache is allocated. #tokens: 1000, K size: {draw(_reading) / 4:.2f} GB, "
            f"V size: {draw(_reading) / 4:.2f} GB"
        )
    free -= draw(_reading)
    lines.append(ts + f"Memory pool end. avail mem={free:.2f} GB")
    for name in draw(
        st.lists(st.sampled_from(["cuda", "draft cuda", "piecewise CUDA"]), max_size=3)
    ):
        free -= draw(_reading) / 10
        lines.append(
            ts
            + f"Capture {name} graph begin. This can take up to several minutes. avail mem={free:.2f} GB"
        )
        begin = free
        for bs in draw(st.lists(st.sampled_from([64, 32, 16, 8, 4, 1]), unique=True, max_size=5)):
            free -= draw(_reading) / 20
            lines.append(
                f"Capturing batches (bs={bs} avail_mem={free:.2f} GB):   0%|   | 0/5 [00:00<?, ?it/s]"
            )
        if draw(st.integers(0, 9)) == 0:
            break  # the log stops mid-capture
        free -= draw(_reading) / 20
        lines.append(
            ts
            + f"Capture {name} graph end. Time elapsed: 1.00 s. mem usage={begin - free:.2f} GB. "
            f"avail mem={free:.2f} GB."
        )
    return "\n".join(lines) + "\n"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_startup())
def test_conservation_on_generated_logs(text: str) -> None:
    with tempfile.NamedTemporaryFile("w", suffix=".log", delete=False) as f:
        f.write(text)
    try:
        L = read_log(f.name).launches[0]
        for r in L.ranks:
            led = rank_ledger(L, r)  # check() runs inside
            if led.phases:
                explained = sum(c.bytes for p in led.phases for c in p.causes)
                assert explained == led.first_bytes - led.last_bytes  # type: ignore[operator]
                for p in led.phases:
                    small = [c for c in p.causes if c.what is What.ROUNDING]
                    assert all(abs(c.bytes) <= ROUNDING_BYTES for c in small)
    finally:
        Path(f.name).unlink()


PP_LOG = """\
[2026-01-30 20:54:50] server_args=ServerArgs(model_path='Qwen/Qwen3-8B', tp_size=2, pp_size=2, mem_fraction_static=0.8)
[2026-01-30 20:55:01 PP0 TP0] Capture cuda graph begin. This can take up to several minutes. avail mem=19.00 GB
[2026-01-30 20:55:01 PP0 TP0] Capture cuda graph bs [1, 2, 4]
[2026-01-30 20:55:01 PP1 TP0] Capture cuda graph begin. This can take up to several minutes. avail mem=29.00 GB
[2026-01-30 20:55:01 PP1 TP0] Capture cuda graph bs [1, 2, 4]
Capturing batches (bs=4 avail_mem=18.90 GB):   0%|          | 0/3 [00:00<?, ?it/s]
Capturing batches (bs=4 avail_mem=28.90 GB):   0%|          | 0/3 [00:00<?, ?it/s]
Capturing batches (bs=2 avail_mem=18.70 GB):  33%|###       | 1/3 [00:01<00:02,  1.00it/s]
Capturing batches (bs=2 avail_mem=28.70 GB):  33%|###       | 1/3 [00:01<00:02,  1.00it/s]
Capturing batches (bs=1 avail_mem=18.60 GB):  67%|######    | 2/3 [00:02<00:01,  1.00it/s]
Capturing batches (bs=1 avail_mem=28.60 GB):  67%|######    | 2/3 [00:02<00:01,  1.00it/s]
[2026-01-30 20:55:05 PP0 TP0] Capture cuda graph end. Time elapsed: 4.00 s. mem usage=0.45 GB. avail mem=18.55 GB.
[2026-01-30 20:55:05 PP1 TP0] Capture cuda graph end. Time elapsed: 4.00 s. mem usage=0.45 GB. avail mem=28.55 GB.
"""


def test_two_pipeline_stages_keep_their_own_bars(tmp_path: Path) -> None:
    """Each PP stage has a TP rank 0 that draws a bar; interleaved renders go to the capture they continue."""
    log = tmp_path / "pp.log"
    log.write_text(PP_LOG)
    L = read_log(str(log)).launches[0]
    got = {r.label: [s.avail.gib for s in r.graphs[0].samples] for r in L.ranks}
    assert got == {"PP0 TP0": [18.90, 18.70, 18.60], "PP1 TP0": [28.90, 28.70, 28.60]}
    for r in build_ledger(L).ranks:
        cap = r.phase("capture:decode")
        assert cap is not None and gib(_cause(cap, "static").bytes) == 0.10


def test_sparse_bars_never_call_a_stretch_the_largest_bucket() -> None:
    """011 kept only the 0% (bs 160) and 100% (bs 1) renders: 0.64 GiB is 22 buckets, not one."""
    cap = _ledger(corpus_log("011-")).rank("TP0").phase("capture:decode")  # type: ignore[union-attr]
    assert cap is not None and cap.part("largest") is None
    names = [cause_name(c) for c in cap.causes]
    assert names[0] == "static buffers (before the first bucket)"
    # The last bar to the end line is bucket bs 1's cost less what the end line's empty_cache
    # gave back (rules.END_LINE_EMPTIES_CACHE): named so, not as a per-bucket cost.
    assert names[1] == "22 buckets, bs 160 to 2"
    assert names[2] == "bucket bs 1 to the end line (not a per-bucket cost)"
    assert [gib(c.bytes) for c in cap.causes[:3]] == [0.24, 0.64, 0.02]


def test_only_a_closing_bar_is_not_static_buffers() -> None:
    cap = _ledger(corpus_log("017-")).rank("").phase("capture:decode")  # type: ignore[union-attr]
    assert cap is not None and cap.causes[0].part == "mixed"
    assert cause_name(cap.causes[0]).startswith("static buffers + first 51 buckets")


def test_pool_lines_without_a_pool_end_are_still_causes() -> None:
    """016 prints Mamba and KV lines but no Memory pool end before the capture."""
    led = _ledger(corpus_log("016-"))
    ph = led.rank("").phase("target_pools")  # type: ignore[union-attr]
    assert ph is not None
    assert gib(_cause(ph, "KV pool").bytes) == 12.45 and gib(_cause(ph, "Mamba").bytes) == 11.19
    assert gib(ph.unattributed_bytes) == 0.53
    assert not any(isinstance(f, fd.Workspaces) for f in led.findings)


def test_old_logs_get_the_kv_pool_from_sglangs_rule() -> None:
    """024 (Oct 2024) prints no KV line: the pool is SGLang's rule, marked estimated."""
    ph = _ledger(corpus_log("024-")).rank("TP0").phase("target_pools")  # type: ignore[union-attr]
    assert ph is not None
    # Named by the summary's max_total_num_tokens (class 1: the KV cache for N tokens).
    kv = _cause(ph, "KV cache for 217,512 tokens (rule, no KV line)")
    assert kv.kind == "estimated" and gib(kv.bytes) == round(32.22 - 47.27 * (1 - 0.88), 2)
    # The rule and N bound the cell: Llama-3.1-8B's 32 x 8 x 128 x 2 x 2 B = 131,072 inside.
    sz = _ledger(corpus_log("024-")).sizing
    assert sz is not None and sz.rule_tokens == 217_512 and sz.likely_bytes_per_token == 131_072
    lo, hi = sz.bytes_per_token_range or (0, 0)
    assert lo <= 131_072 <= hi and hi - lo < 100


def test_swa_sizing_reports_each_pool() -> None:
    led = _ledger(corpus_log("006-"))
    sz = led.sizing
    assert sz is not None and [p[0] for p in sz.pools] == ["SWA", "full"]
    assert sz.kv_tokens == 61_419  # the full pool: max_total_num_tokens
    assert any(
        "SWA 2.34 GiB for 49,135 tokens, full 0.30 GiB for 61,419 tokens" in f for f in _texts(led)
    )


def test_hostile_server_args_values_do_not_crash(tmp_path: Path) -> None:
    from logmem.report import render

    log = tmp_path / "x.log"
    log.write_text(
        "[2026-01-01 00:00:00] server_args=ServerArgs(mem_fraction_static=1e999, cuda_graph_max_bs=1"
        + "0" * 400
        + ", enable_dp_attention=True, dp_size=4, x=1e999)\n"
        "[2026-01-01 00:00:01] Load weight begin. avail mem=10.00 GB\n"
        "[2026-01-01 00:00:02] Load weight end. type=X, avail mem=5.00 GB, mem usage=5.00 GB.\n"
    )
    a = read_log(str(log))
    for fmt in ("text", "markdown", "json", "html"):
        out = render(a, fmt)
        assert "Infinity" not in out and "NaN" not in out
    assert build_ledger(a.launches[0]).sizing is None  # mfs out of range: no rule to apply


def test_two_files_with_their_own_start_ups_are_two_launches(tmp_path: Path) -> None:
    src = corpus_log("001-").read_text()
    a, b = tmp_path / "a.log", tmp_path / "b.log"
    a.write_text(src)
    b.write_text(src.replace("mem_fraction_static=0.85", "mem_fraction_static=0.8"))
    launches = read_log(str(a), str(b)).launches
    assert len(launches) == 2
    assert [m.role for m in launches[1].ranks[0].models] == ["target"]


def test_throttled_bar_counts_do_not_regroup_buckets() -> None:
    """021's draft verify bars skip renders (bs=7 shows at 2/8): the sizes list, not the
    lagging tqdm count, says which bucket a reading starts."""
    cap = _ledger(corpus_log("021-")).rank("").phase("capture:draft verify")  # type: ignore[union-attr]
    assert cap is not None
    assert [(c.part, gib(c.bytes)) for c in cap.causes[:3]] == [
        ("static", 0.07),
        ("largest", 0.11),
        ("other", 0.27),
    ]


def test_every_finding_type_has_a_kind_and_a_sentence() -> None:
    import typing

    types = typing.get_args(fd.Finding)
    assert len({t.kind for t in types}) == len(types) == len(fd.FindingKind)
    assert all(t in finding_text.registry for t in types)  # type: ignore[attr-defined]


def test_bucket_table_marks_a_rise_not_a_negative_cost() -> None:
    # 021 (GB10, unified memory): free memory rose across some prefill buckets; the table says
    # "rose X" as the capture finding does ("free memory rose"), never a negative cost.
    from logmem.report.ledger_tables import bucket_tables

    rl = _ledger(corpus_log("021-")).rank("")
    assert rl is not None
    table = bucket_tables(rl)[0]
    costs = [row[-2] for row in table.rows]
    assert "rose 0.52" in costs and "(rose 1.42)" in costs
    assert not any(c.lstrip("(").startswith("-") for c in costs)
    assert any(n.startswith("rose X:") for n in table.notes)
