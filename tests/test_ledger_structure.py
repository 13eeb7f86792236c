"""Ledger stage: launches, ranks, target and draft models, graph captures and their samples."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from conftest import corpus_log
from logmem.api import read_log
from logmem.model.analysis import Analysis
from logmem.model.records import Launch, Rank

TS = "[2026-04-14 16:08:{:02d}{}] "


def rec(rank: str, message: str, second: int = 0) -> str:
    return TS.format(second, f" {rank}" if rank else "") + message


def startup(
    ranks: tuple[str, ...] = ("TP0", "TP1"),
    *,
    avail: float = 23.5,
    ready: bool = True,
    server_args: bool = True,
) -> list[str]:
    """A small start-up in the E3-E6 wording: every rank loads, allocates and captures; TP0 prints bars."""
    out = (
        [rec("", f"server_args=ServerArgs(model_path='m', tp_size={len(ranks)})")]
        if server_args
        else []
    )
    for r in ranks:
        out.append(rec(r, "Init torch distributed begin."))
    for r in ranks:
        out += [
            rec(r, "Init torch distributed ends. mem usage=0.13 GB"),
            rec(r, f"Load weight begin. avail mem={avail:.2f} GB"),
            rec(
                r,
                f"Load weight end. type=Qwen2ForCausalLM, dtype=torch.bfloat16, avail mem={avail - 15:.2f} GB, "
                "mem usage=15.00 GB.",
            ),
            rec(r, "KV Cache is allocated. #tokens: 46611, K size: 2.00 GB, V size: 2.00 GB"),
            rec(r, f"Memory pool end. avail mem={avail - 19.5:.2f} GB"),
            rec(
                r,
                f"Capture cuda graph begin. This can take up to several minutes. avail mem={avail - 20:.2f} GB",
            ),
        ]
    out.append(rec(ranks[0], "Capture cuda graph bs [1, 2, 4]"))
    out += bars(avail - 20.05)
    for r in ranks:
        out.append(
            rec(
                r,
                f"Capture cuda graph end. Time elapsed: 2.00 s. mem usage=0.30 GB. avail mem={avail - 20.3:.2f} GB.",
            )
        )
        out.append(
            rec(
                r,
                "max_total_num_tokens=46611, chunked_prefill_size=2048, max_prefill_tokens=16384, "
                "max_running_requests=2049, context_len=131072",
            )
        )
    if ready:
        out.append(rec("", "The server is fired up and ready to roll!"))
    return out


def bars(first: float, sizes: tuple[int, ...] = (4, 2, 1), step: float = 0.05) -> list[str]:
    """tqdm renders as a paste shows them: a bare first render, then two renders per bucket."""
    n = len(sizes)
    out = [f"  0%|          | 0/{n} [00:00<?, ?it/s]"]
    for i, bs in enumerate(sizes):
        desc = f"Capturing batches (bs={bs} avail_mem={first - i * step:.2f} GB)"
        out.append(f"{desc}: {100 * i // n:3d}%|█         | {i}/{n} [00:01<00:01,  1.00it/s]")
        out.append(
            f"{desc}: {100 * (i + 1) // n:3d}%|██        | {i + 1}/{n} [00:01<00:01,  1.00it/s]"
        )
    return out


def read_text(tmp_path: Path, lines: list[str], name: str = "server.log") -> Analysis:
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return read_log(str(path))


def renumbered(launch: Launch, index: int) -> Launch:
    return dataclasses.replace(launch, index=index, paths=())


# --- launches ---------------------------------------------------------------------------------


def test_one_startup_is_one_launch(tmp_path: Path) -> None:
    a = read_text(tmp_path, startup())
    (L,) = a.launches
    assert [r.label for r in L.ranks] == ["TP0", "TP1"]
    assert L.args == {"model_path": "m", "tp_size": 2}
    assert L.ready is not None
    assert L.stray_bars == 0


def test_a_second_server_args_starts_a_second_launch(tmp_path: Path) -> None:
    a = read_text(tmp_path, startup(avail=23.5) + startup(avail=40.0))
    first, second = a.launches
    assert (first.index, second.index) == (0, 1)
    assert first.ranks[0].target and first.ranks[0].target.weights_begin
    assert first.ranks[0].target.weights_begin.avail.gib == 23.5
    assert second.ranks[0].target and second.ranks[0].target.weights_begin
    assert second.ranks[0].target.weights_begin.avail.gib == 40.0
    assert all(len(r.models) == 1 and len(r.graphs) == 1 for L in a.launches for r in L.ranks)


def test_a_crashed_launch_then_a_second_server_args(tmp_path: Path) -> None:
    crashed = startup(ready=False)[:8]  # stops after TP1's weights begin
    a = read_text(tmp_path, crashed + startup())
    assert len(a.launches) == 2
    assert a.launches[0].ready is None
    assert a.launches[1].ready is not None


def test_a_restart_without_server_args_is_a_second_launch(tmp_path: Path) -> None:
    """Two start-ups of the same ranks, the second without its own server_args (e.g. a log that
    starts after it, as corpus 014 does): distributed init again after the summary is a restart."""
    a = read_text(tmp_path, startup(server_args=False) + startup(server_args=False, avail=30.0))
    assert len(a.launches) == 2
    for L, avail in zip(a.launches, (23.5, 30.0)):
        assert {r.label for r in L.ranks} == {"TP0", "TP1"}
        for r in L.ranks:
            assert r.target is not None and r.target.weights_begin is not None
            assert r.target.weights_begin.avail.gib == avail
            assert len(r.graphs) == 1


@pytest.mark.parametrize("prefix", ["001-", "014-", "021-"])
def test_a_real_log_twice_in_one_file_is_two_equal_launches(tmp_path: Path, prefix: str) -> None:
    log = corpus_log(prefix)
    data = log.read_bytes()
    if not data.endswith(b"\n"):
        data += b"\n"
    (tmp_path / "twice.log").write_bytes(data + data)
    (tmp_path / "once.log").write_bytes(data)
    once = read_log(str(tmp_path / "once.log"))
    twice = read_log(str(tmp_path / "twice.log"))
    assert len(once.launches) == 1
    assert len(twice.launches) == 2
    assert renumbered(twice.launches[0], 0) == renumbered(once.launches[0], 0)
    assert renumbered(twice.launches[1], 0) == renumbered(once.launches[0], 0)


# --- per-rank files -----------------------------------------------------------------------------

_PREFIX = re.compile(rb"\[\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}((?: [A-Z][A-Z_]*\d+)*)\]")


def split_by_rank(data: bytes) -> dict[str, bytes]:
    """One file per rank, as per-rank stderr files or per-pod logs give them. A physical line goes
    to the rank of its first prefix. Unprefixed lines go with the rank that printed them: tqdm bars
    to the bar-printing rank (the one that prints the bs list), anything else (tracebacks, warnings)
    to the rank of the line before; lines before any rank go to the bar rank's file."""

    def rank_of(line: bytes) -> str | None:
        m = _PREFIX.search(line)
        return m.group(1).decode().strip() if m else None

    lines = []
    for line in data.splitlines(keepends=True):
        m = _PREFIX.search(line)
        if m and b"%|" in line[: m.start()]:  # a bar render with a record glued after it
            lines += [line[: m.start()] + b"\n", line[m.start() :]]
        else:
            lines.append(line)
    ranks = [r for r in map(rank_of, lines) if r]
    sizes = [rank_of(x) for x in lines if b"Capture cuda graph bs [" in x]
    bar_rank = sizes[0] if sizes and sizes[0] else min(ranks, key=_rank_key)
    files: dict[str, list[bytes]] = {r: [] for r in ranks}
    last = bar_rank
    for line in lines:
        rank = rank_of(line)
        if rank:
            last = rank
            files[rank].append(line)
        elif b"%|" in line or b"Capturing " in line or b"Compiling " in line:
            files[bar_rank].append(line)
        else:
            files[last].append(line)
    return {rank: b"".join(lines) for rank, lines in files.items()}


def _rank_key(label: str) -> tuple[int, ...]:
    return tuple(int(n) for n in re.findall(r"\d+", label))


@pytest.mark.parametrize("prefix", ["001-", "003-", "011-", "014-", "019-", "023-", "026-", "036-"])
def test_per_rank_files_give_the_merged_view_of_each_rank(tmp_path: Path, prefix: str) -> None:
    log = corpus_log(prefix)
    merged = read_log(str(log))
    paths = []
    for i, (rank, data) in enumerate(sorted(split_by_rank(log.read_bytes()).items())):
        path = tmp_path / f"rank{i}-{rank.replace(' ', '_')}.log"
        path.write_bytes(data)
        paths.append(str(path))
    assert len(paths) >= 2
    split = read_log(*paths)
    assert len(split.launches) == len(merged.launches)
    for L_split, L_merged in zip(split.launches, merged.launches):
        assert L_split.server_args == L_merged.server_args
        assert [r.label for r in L_split.ranks] == [r.label for r in L_merged.ranks]
        for r_split, r_merged in zip(L_split.ranks, L_merged.ranks):
            assert r_split == r_merged, r_merged.label
        assert set(L_split.paths) <= set(paths)


def test_files_of_one_launch_merge_by_launch_index(tmp_path: Path) -> None:
    """Two per-rank files, each holding two start-ups: launch i of every file is one launch."""
    both = startup(avail=23.5) + startup(avail=40.0)
    tp0 = [x for x in both if "TP1]" not in x]
    tp1 = [x for x in both if "TP1]" in x]
    (tmp_path / "tp0.log").write_text("\n".join(tp0) + "\n")
    (tmp_path / "tp1.log").write_text("\n".join(tp1) + "\n")
    # TP1's file has no server_args: its start-ups are told apart by the restart rule
    a = read_log(str(tmp_path / "tp0.log"), str(tmp_path / "tp1.log"))
    assert len(a.launches) == 2
    for L, avail in zip(a.launches, (23.5, 40.0)):
        assert [r.label for r in L.ranks] == ["TP0", "TP1"]
        for r in L.ranks:
            assert r.target is not None and r.target.weights_begin is not None
            assert r.target.weights_begin.avail.gib == avail


# --- target and draft ------------------------------------------------------------------------------


def _line(e: object) -> int:
    assert e is not None
    return e.source.line_no  # type: ignore[attr-defined, no-any-return]


def test_draft_after_target_pools_old_order() -> None:
    """EAGLE/MTP up to 2026: the target allocates its pools, then the draft worker loads."""
    for prefix in ("019-", "036-"):
        (L,) = read_log(str(corpus_log(prefix))).launches
        for r in L.ranks:
            assert [m.role for m in r.models] == ["target", "draft"], r.label
            target, draft = r.models
            assert target.pool_end is not None and draft.pool_end is not None
            assert target.kv_pools and draft.kv_pools
            assert _line(target.weights_end) < _line(target.pool_end) < _line(draft.weights_begin)
            assert _line(draft.weights_end) < _line(draft.kv_pools[0]) < _line(draft.pool_end)


def test_draft_loads_before_any_pool_newest_order() -> None:
    """DFlash/E7: both models load first, then the target's pools, then the draft's."""
    (L,) = read_log(str(corpus_log("021-"))).launches
    (r,) = L.ranks
    target, draft = r.models
    assert (target.role, draft.role) == ("target", "draft")
    assert _line(target.weights_end) < _line(draft.weights_begin) < _line(draft.weights_end)
    assert _line(draft.weights_end) < _line(target.pools[0])
    assert len(target.kv_pools) == 2  # SWA: a swa pool and a full pool
    assert len(draft.kv_pools) == 1
    assert target.pool_end is not None and draft.pool_end is not None
    assert _line(target.pool_end) < _line(draft.kv_pools[0]) < _line(draft.pool_end)
    assert target.weights_end is not None and target.weights_end.model_type == "LagunaForCausalLM"
    assert (
        draft.weights_end is not None and draft.weights_end.model_type == "DFlashLagunaForCausalLM"
    )


@pytest.mark.parametrize("order", ["old", "newest"])
def test_target_and_draft_synthetic(tmp_path: Path, order: str) -> None:
    load = [
        rec("", "Load weight begin. avail mem=70.00 GB"),
        rec("", "Load weight end. type=T, avail mem=50.00 GB, mem usage=20.00 GB."),
    ]
    pools = [
        rec("", "KV Cache is allocated. #tokens: 1000, K size: 10.00 GB, V size: 10.00 GB"),
        rec("", "Memory pool end. avail mem=29.00 GB"),
    ]
    dload = [
        rec(
            "",
            "Load weight begin. avail mem=29.00 GB"
            if order == "old"
            else "Load weight begin. avail mem=50.00 GB",
        ),
        rec("", "Load weight end. type=D, avail mem=28.00 GB, mem usage=1.00 GB."),
    ]
    dpools = [
        rec("", "KV Cache is allocated. #tokens: 1000, K size: 1.00 GB, V size: 1.00 GB"),
        rec("", "Memory pool end. avail mem=26.00 GB"),
    ]
    lines = load + pools + dload + dpools if order == "old" else load + dload + pools + dpools
    (L,) = read_text(tmp_path, lines).launches
    (r,) = L.ranks
    assert r.label == ""
    target, draft = r.models
    assert target.weights_end is not None and target.weights_end.model_type == "T"
    assert draft.weights_end is not None and draft.weights_end.model_type == "D"
    assert [p.k.gib for p in target.kv_pools if p.k] == [10.0]
    assert [p.k.gib for p in draft.kv_pools if p.k] == [1.0]
    assert target.pool_end is not None and target.pool_end.avail.gib == 29.0
    assert draft.pool_end is not None and draft.pool_end.avail.gib == 26.0


# --- graphs, bars and samples ------------------------------------------------------------------


def test_graphs_in_log_order_per_rank() -> None:
    (L,) = read_log(str(corpus_log("019-"))).launches
    for r in L.ranks:
        assert [g.name for g in r.graphs] == ["decode", "draft", "draft extend"], r.label
        lines = [_line(g.begin) for g in r.graphs]
        assert lines == sorted(lines)
        assert all(g.complete for g in r.graphs)


def test_bars_go_to_the_rank_that_printed_the_bs_list() -> None:
    (L,) = read_log(str(corpus_log("019-"))).launches
    by_label = {r.label: r for r in L.ranks}
    assert [r.label for r in L.ranks if r.prints_bars] == ["DP0 TP0 EP0"]
    bar_rank = by_label["DP0 TP0 EP0"]
    assert all(g.samples and g.bars for g in bar_rank.graphs)
    assert bar_rank.graphs[0].sizes == (8, 16, 24, 28, 32, 36)
    for r in L.ranks:
        if r is not bar_rank:
            assert all(not g.samples and g.bars == 0 for g in r.graphs), r.label


def _capture(ranks: tuple[str, ...], sizes_rank: str | None) -> list[str]:
    out = [
        rec(r, "Capture cuda graph begin. This can take up to several minutes. avail mem=5.00 GB")
        for r in ranks
    ]
    if sizes_rank is not None:
        out.append(rec(sizes_rank, "Capture cuda graph bs [1, 2, 4]"))
    out += bars(4.90)
    out += [
        rec(
            r, "Capture cuda graph end. Time elapsed: 2.00 s. mem usage=0.30 GB. avail mem=4.70 GB."
        )
        for r in ranks
    ]
    return out


@pytest.mark.parametrize(
    ("ranks", "sizes_rank", "owner"),
    [
        (("TP1", "TP0"), None, "TP0"),
        (("TP0", "TP1"), "TP1", "TP1"),  # the bs list names the rank that prints bars
        (("DP1 TP0", "DP0 TP1", "DP0 TP0"), None, "DP0 TP0"),
        (("PP1 TP0", "PP0 TP1"), None, "PP1 TP0"),
        (("",), None, ""),
    ],
)
def test_bar_owner(
    tmp_path: Path, ranks: tuple[str, ...], sizes_rank: str | None, owner: str
) -> None:
    (L,) = read_text(tmp_path, _capture(ranks, sizes_rank)).launches
    for r in L.ranks:
        (g,) = r.graphs
        if r.label == owner:
            assert r.prints_bars
            assert g.bars == 7
            assert [(s.size, s.avail.gib) for s in g.samples] == [(4, 4.90), (2, 4.85), (1, 4.80)]
        else:
            assert not r.prints_bars
            assert (g.bars, g.samples) == (0, ())
    assert L.stray_bars == 0


def test_one_sample_per_bucket_in_capture_order() -> None:
    (L,) = read_log(str(corpus_log("014-"))).launches
    tp0 = L.rank("TP0")
    assert tp0 is not None
    (g,) = tp0.graphs
    assert g.sizes == (1, 2, 4, 8, 12, 16, 24)
    assert [s.size for s in g.samples] == [24, 16, 12, 8, 4, 2, 1]  # largest first, each once
    assert [s.avail.gib for s in g.samples] == [4.00, 3.93, 3.89, 3.88, 3.85, 3.84, 3.80]
    assert g.bars == 16  # every render counts, the bare first one included
    assert g.begin_bytes is not None and g.samples[0].avail.bytes < g.begin_bytes
    assert g.static_bytes == g.begin_bytes - g.samples[0].avail.bytes
    assert g.largest_bucket_bytes == g.samples[0].avail.bytes - g.samples[1].avail.bytes
    assert g.other_buckets_bytes == g.samples[1].avail.bytes - (g.end_bytes or 0)


def test_samples_without_bs_are_split_on_a_new_reading(tmp_path: Path) -> None:
    """May-Jun 2025 bars print only avail_mem: a bucket starts when the reading changes."""
    renders = [
        "Capturing batches (avail_mem=5.00 GB):   0%|          | 0/3 [00:00<?, ?it/s]",
        "Capturing batches (avail_mem=5.00 GB):  33%|███       | 1/3 [00:01<00:02,  1.00s/it]",
        "Capturing batches (avail_mem=4.90 GB):  33%|███       | 1/3 [00:01<00:02,  1.00s/it]",
        "Capturing batches (avail_mem=4.90 GB):  67%|██████    | 2/3 [00:02<00:01,  1.00s/it]",
        "Capturing batches (avail_mem=4.85 GB): 100%|██████████| 3/3 [00:03<00:00,  1.00s/it]",
    ]
    lines = [
        rec("", "Capture cuda graph begin. This can take up to several minutes. avail mem=5.10 GB"),
        *renders,
        rec(
            "",
            "Capture cuda graph end. Time elapsed: 3.00 s. mem usage=0.30 GB. avail mem=4.80 GB.",
        ),
    ]
    (L,) = read_text(tmp_path, lines).launches
    (g,) = L.ranks[0].graphs
    assert [(s.size, s.avail.gib) for s in g.samples] == [(None, 5.0), (None, 4.9), (None, 4.85)]
    assert g.bars == 5


def test_stray_bars_are_counted(tmp_path: Path) -> None:
    lines = [
        rec("TP0", "Memory pool end. avail mem=2.09 GB"),
        "Capturing batches (bs=4 avail_mem=1.00 GB):   0%|          | 0/3 [00:00<?, ?it/s]",
        "Capturing batches (bs=4 avail_mem=1.00 GB):  33%|███       | 1/3 [00:01<00:02,  1.00s/it]",
        # a bare tqdm bar outside any capture (benchmark progress) is not a capture bar at all
        "  0%|          | 0/576 [00:00<?, ?it/s]",
    ]
    (L,) = read_text(tmp_path, lines).launches
    assert L.stray_bars == 2
    assert not L.ranks[0].prints_bars


def test_bars_after_the_capture_ended_are_stray(tmp_path: Path) -> None:
    lines = _capture(("TP0",), None) + [
        "Capturing batches (bs=1 avail_mem=4.00 GB): 100%|██████████| 3/3"
    ]
    (L,) = read_text(tmp_path, lines).launches
    assert L.stray_bars == 1
    (g,) = L.ranks[0].graphs
    assert g.bars == 7


def test_capture_end_without_begin_makes_its_own_graph(tmp_path: Path) -> None:
    lines = [
        rec(
            "TP0",
            "Capture cuda graph end. Time elapsed: 2.00 s. mem usage=0.30 GB. avail mem=4.70 GB.",
        )
    ]
    (L,) = read_text(tmp_path, lines).launches
    (g,) = L.ranks[0].graphs
    assert (g.begin, g.complete, g.samples) == (None, True, ())
    assert g.static_bytes is None and g.largest_bucket_bytes is None


def test_unfinished_capture_keeps_its_samples() -> None:
    """Corpus 023 stops at the first bar of the capture."""
    (L,) = read_log(str(corpus_log("023-"))).launches
    tp0 = L.rank("TP0")
    assert tp0 is not None
    (g,) = tp0.graphs
    assert not g.complete
    assert len(g.samples) == 1
    assert g.other_buckets_bytes is None


def test_ranks_are_sorted_and_tagged() -> None:
    (L,) = read_log(str(corpus_log("019-"))).launches
    ranks: list[Rank] = list(L.ranks)
    assert len(ranks) == 16
    assert [r.tags for r in ranks] == sorted(r.tags for r in ranks)
    assert ranks[0].label == "DP0 TP0 EP0"
    assert (ranks[0].tag("DP"), ranks[0].tag("TP"), ranks[0].tag("EP"), ranks[0].tag("PP")) == (
        0,
        0,
        0,
        None,
    )
