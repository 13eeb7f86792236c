"""Lines stage: the SGLang prefix found anywhere in a segment, rank tags, ANSI, odd bytes."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from logmem.parse.lines import Record, decode, iter_records, rank_tags, split_records
from logmem.parse.patterns import KEYWORD_BYTES
from logmem.parse.read import Segment, read_segments

POOL_END = "Memory pool end. avail mem=2.09 GB"


def records(data: bytes) -> list[Record]:
    return list(split_records(Segment("x.log", 7, data)))


def one(data: bytes) -> Record:
    (rec,) = records(data)
    return rec


def records_of_file(tmp_path: Path, data: bytes) -> list[Record]:
    path = tmp_path / "server.log"
    path.write_bytes(data)
    return list(iter_records(read_segments([str(path)], KEYWORD_BYTES)))


@pytest.mark.parametrize(
    ("tags", "parsed"),
    [
        ("TP3", (("TP", 3),)),
        ("TP10", (("TP", 10),)),
        ("DP0 TP0 EP0", (("DP", 0), ("TP", 0), ("EP", 0))),
        (
            "DP0 PP1 ATTN_CP0 MOE_DP0 TP0 EP0",
            (("DP", 0), ("PP", 1), ("ATTN_CP", 0), ("MOE_DP", 0), ("TP", 0), ("EP", 0)),
        ),
        ("DCP3", (("DCP", 3),)),  # not printed by any SGLang we know of: kept, not dropped
        ("", ()),
    ],
)
def test_rank_tags(tags: str, parsed: tuple[tuple[str, int], ...]) -> None:
    assert rank_tags(tags) == parsed
    text = f"[2026-05-05 04:41:51{' ' + tags if tags else ''}] {POOL_END}"
    rec = one(text.encode())
    assert rec.rank == tags
    assert rec.tags == parsed
    assert rec.timestamp == "2026-05-05 04:41:51"
    assert rec.message == POOL_END


def test_time_only_prefix_of_2024() -> None:
    rec = one(b"[19:01:01 TP0] Init nccl begin.")
    assert (rec.rank, rec.tags, rec.timestamp) == ("TP0", (("TP", 0),), "19:01:01")
    assert rec.message == "Init nccl begin."
    rec = one(b"[14:39:01] server_args=ServerArgs(tp_size=1)")
    assert (rec.rank, rec.timestamp) == ("", "14:39:01")


def test_untagged_prefix_is_rank_empty_string_not_none() -> None:
    rec = one(b"[2026-08-27 03:45:39] Load weight begin. avail mem=78.50 GB")
    assert rec.rank == ""
    assert rec.tags == ()
    assert rec.message == "Load weight begin. avail mem=78.50 GB"


def test_text_without_prefix_is_rank_none() -> None:
    rec = one(b"Capturing batches (bs=24 avail_mem=4.00 GB):   0%|          | 0/7 [00:00<?, ?it/s]")
    assert rec.rank is None
    assert rec.timestamp is None
    assert rec.message.startswith("Capturing batches")


def test_blank_segment_gives_no_record() -> None:
    assert records(b"   ") == []


@pytest.mark.parametrize(
    "wrapper",
    [
        b"2026-09-22T06:49:56.336833841Z ",  # docker logs --timestamps
        b"sglang-1  | ",  # docker compose
        b"sglang-router-7f9c | ",  # kubectl logs --prefix style
        b"2026-09-26T19:55:58.468Z pod INFO ",  # a log shipper
        b"\x1b[36msglang-1  |\x1b[0m ",  # compose with colours
        b"2026-12-03T22:00:00.123456789Z stdout F ",  # CRI files (/var/log/pods)
        b"2026-12-03T22:00:00.123+00:00 ",  # RFC 3339 with an offset
        b"Dec  3 22:00:01 gpu-7 python3[4242]: ",  # journald / syslog
        b"3: ",  # srun --label
    ],
    ids=[
        "docker-timestamps",
        "compose",
        "kubectl",
        "shipper",
        "compose-colour",
        "cri",
        "offset",
        "journald",
        "srun",
    ],
)
def test_wrapper_prefixes_are_dropped(wrapper: bytes) -> None:
    rec = one(wrapper + b"[2025-03-08 12:29:21 TP1] " + POOL_END.encode())
    assert (rec.rank, rec.message) == ("TP1", POOL_END)
    assert rec.source.text == "[2025-03-08 12:29:21 TP1] " + POOL_END


def test_record_glued_after_a_tqdm_render() -> None:
    bar = "  0%|          | 0/13 [00:00<?, ?it/s]"
    line = "Capture cuda graph begin. This can take up to several minutes. avail mem=1.45 GB"
    recs = records(f"{bar}[2025-03-08 12:29:21 TP1] {line}".encode())
    assert [(r.rank, r.message) for r in recs] == [(None, bar), ("TP1", line)]
    assert all(r.source.line_no == 7 for r in recs)


def test_two_records_in_one_segment_are_cut_at_the_second_prefix() -> None:
    first = b"[2025-03-08 12:29:21 TP0] Init torch distributed begin."
    recs = records(first + b"[2025-03-08 12:29:21 TP1] " + POOL_END.encode())
    assert [(r.rank, r.message) for r in recs] == [
        ("TP0", "Init torch distributed begin."),
        ("TP1", POOL_END),
    ]


@pytest.mark.parametrize(
    "data",
    [
        b"\x1b[32m[2025-03-08 12:29:21 TP1] Memory pool end. avail mem=2.09 GB\x1b[0m",
        # the ESC byte lost in a paste:
        b"[32m[2025-03-08 12:29:21 TP1] Memory pool end. avail mem=2.09 GB[0m",
        b"[2025-03-08 12:29:21 TP1] \x1b[1;33mMemory pool end.\x1b[0m avail mem=2.09 GB",
        b"[2025-03-08 12:29:21 TP1] Memory pool end. avail mem=2.09 GB\x1b[K",
    ],
    ids=["colour", "lost-esc", "bold-inside", "erase-line"],
)
def test_ansi_codes_are_stripped(data: bytes) -> None:
    rec = one(data)
    assert (rec.rank, rec.message) == ("TP1", POOL_END)


def test_decode_replaces_invalid_utf8_and_drops_nul() -> None:
    assert decode(b"a\xff\xfeb") == "a\ufffd\ufffdb"
    assert decode(b"\x00\x00abc\x00") == "abc"
    assert decode("Capturing batches █▍".encode()) == "Capturing batches █▍"


def test_crlf_file(tmp_path: Path) -> None:
    data = (
        b"[2025-03-08 12:29:21 TP0] Init torch distributed begin.\r\n"
        b"[2025-03-08 12:29:22 TP0] Memory pool end. avail mem=2.09 GB\r\n"
    )
    recs = records_of_file(tmp_path, data)
    assert [(r.source.line_no, r.message) for r in recs] == [
        (1, "Init torch distributed begin."),
        (2, POOL_END),
    ]
    assert not any("\r" in r.source.text for r in recs)


def test_invalid_utf8_in_a_line_keeps_the_record(tmp_path: Path) -> None:
    data = (
        b"[2025-03-08 12:29:21 TP0] Load weight end. type=Qwen\xff\xfe, dtype=torch.bfloat16, "
        b"avail mem=6.09 GB, mem usage=15.54 GB.\n"
    )
    (rec,) = records_of_file(tmp_path, data)
    assert rec.rank == "TP0"
    assert "type=Qwen\ufffd\ufffd," in rec.message
    assert rec.message.endswith("avail mem=6.09 GB, mem usage=15.54 GB.")


def test_nul_bytes_from_a_truncated_rotation(tmp_path: Path) -> None:
    data = b"\x00" * 64 + b"[2025-03-08 12:29:21 TP0] Memory pool\x00 end. avail mem=2.09 GB\n"
    (rec,) = records_of_file(tmp_path, data)
    assert (rec.rank, rec.message) == ("TP0", POOL_END)


def test_bar_renders_separated_by_cr_are_separate_records(tmp_path: Path) -> None:
    renders = [
        "  0%|          | 0/2 [00:00<?, ?it/s]",
        "Capturing batches (bs=2 avail_mem=4.00 GB):   0%|          | 0/2 [00:00<?, ?it/s]",
        "Capturing batches (bs=1 avail_mem=3.90 GB):  50%|█████     | 1/2 [00:01<00:01,  1.00s/it]",
    ]
    data = ("\r".join(renders) + "\n[2025-03-08 12:29:30 TP0] " + POOL_END + "\n").encode()
    recs = records_of_file(tmp_path, data)
    bars = [r.message for r in recs if r.rank is None]
    assert bars == renders  # the bare first render too: "%|" is a keyword
    assert [r.source.line_no for r in recs] == [1, 1, 1, 2]


@pytest.mark.parametrize(
    "fragment", ["[2025-03-08 12:29:21 TP", "[32", "[00:00:00 A1 B2 C3", "x | ", "\x1b[1;"]
)
def test_record_splitting_is_linear_in_segment_length(fragment: str) -> None:
    # A guard against a quadratic prefix regex (4x the input: ~4x the work if linear, ~16x if
    # quadratic), not a speed figure: CPU time of this process (another job's load on the
    # machine does not count) and the least of 3 runs, so a stall in one run cannot fail it.
    def cost(n: int) -> float:
        data = (fragment * n).encode()
        t0 = time.process_time()
        list(split_records(Segment("x.log", 1, data)))
        return time.process_time() - t0

    small = 10_000
    t_small, t_big = min(cost(small) for _ in range(3)), min(cost(4 * small) for _ in range(3))
    assert t_big / max(t_small, 0.002) < 12, (fragment, t_small, t_big)


@pytest.mark.parametrize(
    "wrapper",
    [
        b"2026-02-26T05:35:13.123456789Z ",
        b"sglang-1  | ",
        b"[pod/sglang-0/sglang] ",
        b"pod INFO ",
        b"2026-02-26T05:35:13.123456789Z stderr F ",
        b"Feb 26 05:35:13 gpu-7 python3[4242]: ",
        b"12: ",
    ],
    ids=["docker-timestamps", "compose", "kubectl-prefix", "shipper", "cri", "journald", "srun"],
)
def test_wrapper_is_stripped_from_lines_without_an_sglang_prefix(wrapper: bytes) -> None:
    """Tracebacks and bare tqdm renders have no SGLang prefix; under docker or compose they still
    start where the anchored patterns expect them."""
    for text in (
        "Traceback (most recent call last):",
        "TypeError: cannot unpack non-iterable X object",
        "  0%|          | 0/13 [00:00<?, ?it/s]",
    ):
        rec = one(wrapper + text.encode())
        assert rec.rank is None
        assert rec.message.strip() == text.strip()
        assert rec.source.text == (wrapper + text.encode()).decode()


def test_text_that_only_looks_like_a_wrapper_is_kept() -> None:
    for text in (
        "Capturing batches (bs=1 avail_mem=3.80 GB): 100%|##########| 7/7",
        "ValueError: a | b",
    ):
        assert one(text.encode()).message == text


def test_only_ascii_digits_are_digits() -> None:
    """A hostile log's Arabic-Indic or full-width digits are neither rank tags nor figures."""
    from logmem.parse.lines import Record, Source, split_records
    from logmem.parse.match import match_record
    from logmem.parse.read import Segment

    text = "[2025-03-08 12:29:13 TP\u0663] Load weight begin. avail mem=\uff12\uff11.63 GB"
    recs = list(split_records(Segment("x", 1, text.encode())))
    assert all(r.rank != "TP\u0663" for r in recs)
    wide = "Load weight begin. avail mem=\uff12\uff11.63 GB"
    assert match_record(Record("TP0", (), None, wide, Source("x", 1, wide))) is None


def test_sglang_0_2_9_gpu_tagged_lines_are_read_per_gpu() -> None:
    """sglang 0.2.9 logs ``%(message)s`` (srt/server.py): no time, no rank prefix, each GPU's
    lines start ``[gpu={gpu_id}] `` (model_runner.py, tp_worker.py). Every GPU is its own rank
    with its own chain (before: the summary alone matched, the memory lines were unmatched)."""
    from conftest import FIXTURES
    from logmem.analysis.attribution import build_ledger
    from logmem.api import read_log

    (launch,) = read_log(str(FIXTURES / "gpu-tag-v029-tp2-constructed.log")).launches
    assert sorted(r.label for r in launch.ranks) == ["GPU0", "GPU1"]
    led = build_ledger(launch)
    for rank, pool_end in (("GPU0", 10.03), ("GPU1", 10.05)):
        rl = led.rank(rank)
        assert rl is not None
        weights, pools = rl.phase("target_weights"), rl.phase("target_pools")
        assert weights is not None and pools is not None
        assert round(weights.delta_bytes / 2**30, 2) == 7.54
        assert round(pools.after_bytes / 2**30, 2) == pool_end
