"""The reader's result does not depend on where its chunk boundaries fall (issue 12).

logmem.parse.read reads 4 MiB chunks; `chunk_bytes` cuts them smaller, so every boundary
effect shows on small inputs: a continuation line after an exception line in the next chunk,
a `\\r` bar, a CRLF or a multi-byte UTF-8 character split in two. Segments, events and the
analyze JSON must be the same at any chunk size."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import logmem.api as api
from conftest import CORPUS, FIXTURES
from logmem.parse.match import iter_segment_events
from logmem.parse.patterns import KEYWORD_BYTES, ONCE_BYTES
from logmem.parse.read import ReadStats, Segment, read_segments
from logmem.report.jsonout import analysis_json

P = "[2026-04-14 16:08:49 TP0] "


def _read(path: Path, chunk: int | None) -> tuple[list[Segment], ReadStats]:
    stats: list[ReadStats] = []
    segs = read_segments(
        [str(path)], KEYWORD_BYTES, stats, ONCE_BYTES, continuations=True, chunk_bytes=chunk
    )
    return list(segs), stats[0]


def _same_at(path: Path, chunks: tuple[int, ...]) -> None:
    whole, st = _read(path, None)
    for n in chunks:
        segs, st_n = _read(path, n)
        assert segs == whole, f"{path.name} at {n}-byte chunks"
        assert (st_n.lines, st_n.ends_with_newline) == (st.lines, st.ends_with_newline)
        assert list(iter_segment_events(segs)) == list(iter_segment_events(whole))


def _logs() -> list[Path]:
    found = sorted(FIXTURES.glob("*.log"))
    if CORPUS.is_dir():
        found += sorted(CORPUS.glob("*.log"))
    return found


@pytest.mark.parametrize("path", _logs(), ids=lambda p: p.name[:12])
def test_corpus_segments_do_not_depend_on_the_chunk_size(path: Path) -> None:
    _same_at(path, (97, 4096))


# --- constructed logs -------------------------------------------------------------------

LINES = [
    f"{P}Load weight end. type=Qwen2ForCausalLM, avail mem=6.09 GB, mem usage=15.54 GB.",
    f"{P}Scheduler hit an exception: Traceback (most recent call last):",
    '  File "/sgl/scheduler.py", line 12, in run',
    "    self.init()",
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.",
    "RuntimeError: NCCL error in: /pytorch/ProcessGroupNCCL.cpp:3356, unhandled cuda error",
    "Last error:",
    "Cuda failure 'out of memory'",
    "ValueError: bad sizes",
    "  [1, 2, 4]",
    "ncclUnhandledCudaError: Call to CUDA function failed.",
    "  while it said ünïcödé ✓ 内存",
    f"{P}Capture cuda graph begin. This can take up to several minutes. avail mem=5.45 GB",
    "Capturing batches (bs=80 avail_mem=5.41 GB):  10%|█         | 1/10 [00:01<00:09]",
    f"{P}max_total_num_tokens=46611, chunked_prefill_size=8192, max_prefill_tokens=16384",
    f"{P}The server is fired up and ready to roll!",
    "",
    "some other tool said GB",
]


@st.composite
def logs(draw: st.DrawFn) -> bytes:
    parts = draw(st.lists(st.sampled_from(LINES), min_size=1, max_size=40))
    out = []
    for line in parts:
        # A tqdm bar's renders are joined by \r; other lines end in \n or CRLF.
        bar = line.startswith("Capturing")
        sep = "\r" if bar else draw(st.sampled_from(["\n", "\n", "\r\n"]))
        out.append(line + sep)
    data = "".join(out).encode("utf-8")
    return data[: draw(st.integers(len(data) - 3, len(data)))]  # maybe no final newline


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=logs(), chunk=st.integers(1, 80))
def test_constructed_segments_do_not_depend_on_the_chunk_size(
    tmp_path: Path, data: bytes, chunk: int
) -> None:
    p = tmp_path / "x.log"
    p.write_bytes(data)
    _same_at(p, (chunk,))


def test_a_continuation_in_the_next_chunk_is_still_joined(tmp_path: Path) -> None:
    head = "RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:3356, unhandled cuda error\n"
    p = tmp_path / "nccl.log"
    p.write_bytes((head + "Last error:\nCuda failure 'out of memory'\n").encode())
    whole, _ = _read(p, None)
    assert [s.data for s in whole if s.continuation] == [
        b"Last error:",
        b"Cuda failure 'out of memory'",
    ]
    assert _read(p, len(head))[0] == whole  # the boundary right after the exception line
    assert _read(p, len(head) + 5)[0] == whole  # and inside its first continuation line


CONTINUED = [p for p in _logs() if p.name.startswith(("003-", "023-", "036-"))]


@pytest.mark.parametrize("path", CONTINUED, ids=lambda p: p.name[:12])
def test_analyze_json_does_not_depend_on_the_chunk_size(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    whole = analysis_json(api.read_log(str(path)))
    monkeypatch.setattr(api, "read_segments", functools.partial(read_segments, chunk_bytes=61))
    assert analysis_json(api.read_log(str(path))) == whole
