"""The reader's two ways of finding separators give the same segments and line numbers.

logmem.parse.separators counts newlines with bytes.count, or, for big ranges of big inputs,
with numpy's running popcount; the reader must not be able to tell them apart."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from logmem.parse import separators
from logmem.parse.patterns import KEYWORD_BYTES, ONCE_BYTES
from logmem.parse.read import ReadStats, Segment, iter_segments

pytest.importorskip("numpy")

_TEXT = st.lists(
    st.sampled_from([b"\n", b"\r", b"x", b"GB", b"\r\n", b"abc" * 30, b"\n" * 70]), max_size=120
).map(b"".join)


@settings(max_examples=300, deadline=None)
@given(_TEXT, st.data())
def test_numpy_counts_equal_bytes_counts(buf: bytes, data: st.DataObject) -> None:
    lo = data.draw(st.integers(0, len(buf)))
    hi = data.draw(st.integers(lo, len(buf)))
    points = sorted(data.draw(st.lists(st.integers(lo, hi), max_size=20)))
    plain = separators.Separators(buf, lo, hi)
    counted = separators.Separators(buf, lo, hi, separators._blocks(buf, lo, hi))
    for x in [*points, hi]:
        assert counted.newlines_before(x) == plain.newlines_before(x) == buf.count(b"\n", lo, x)


def _read(path: Path, numpy_ok: bool, chunk: int | None) -> tuple[list[Segment], ReadStats]:
    mp = pytest.MonkeyPatch()
    # numpy from the first byte and for ranges of any size, or never
    mp.setattr(separators, "NUMPY_AFTER_BYTES", 0 if numpy_ok else 1 << 62)
    mp.setattr(separators, "SPARSE_GAP", 0)  # however dense
    mp.setattr(separators, "ARRAY_MIN_BYTES", 0)
    try:
        stats = ReadStats(str(path))
        segs = list(
            iter_segments(str(path), KEYWORD_BYTES, stats, ONCE_BYTES, True, chunk_bytes=chunk)
        )
    finally:
        mp.undo()
    return segs, stats


_LINES = st.lists(
    st.sampled_from(
        [
            b"[2026-01-01 10:00:00 TP0] Load weight end. avail mem=10.00 GB, mem usage=5.00 GB.",
            b"[2026-01-01 10:00:01 TP1] Decode batch. #running-req: 1, mem usage=2.00 GB",
            b"[2026-01-01 10:00:02] max_total_num_tokens=1000, chunked_prefill_size=8192",
            b"Capturing batches (bs=8 avail_mem=9.50 GB):  50%|#####     | 1/2",
            b"RuntimeError: CUDA error: out of memory",
            b"  Last error:",
            b"plain noise line without anything",
            b"",
        ]
    ),
    max_size=60,
)


@settings(max_examples=60, deadline=None)
@given(_LINES, st.sampled_from([b"\n", b"\r", b"\r\n"]), st.sampled_from([None, 61, 4096]))
def test_reader_is_the_same_with_numpy_counts(
    tmp_path_factory: pytest.TempPathFactory, lines: list[bytes], sep: bytes, chunk: int | None
) -> None:
    path = tmp_path_factory.mktemp("sep") / "a.log"
    path.write_bytes(sep.join(lines) + (sep if lines and len(lines) % 2 else b""))
    assert _read(path, True, chunk) == _read(path, False, chunk)


def test_a_small_input_never_imports_numpy_for_counting(tmp_path: Path) -> None:
    # The threshold is on the bytes read so far: a small log keeps the bytes searches.
    path = tmp_path / "small.log"
    path.write_bytes(b"[2026-01-01 10:00:00 TP0] Load weight end. avail mem=10.00 GB\n" * 100)
    seen: list[object] = []
    real = separators.Separators.__init__

    def spy(self: separators.Separators, *args: object) -> None:
        real(self, *args)  # type: ignore[arg-type]
        seen.append(self._blocks)

    mp = pytest.MonkeyPatch()
    mp.setattr(separators.Separators, "__init__", spy)
    try:
        list(iter_segments(str(path), KEYWORD_BYTES, ReadStats(str(path)), ONCE_BYTES, True))
    finally:
        mp.undo()
    assert seen and all(b is None for b in seen)


def test_numpy_counts_only_sparse_inputs() -> None:
    # numpy's import costs memory, and a dense input is where memory binds.
    mb = separators.NUMPY_AFTER_BYTES
    assert not separators.numpy_ok(mb - 1, 0)  # too little read yet
    assert separators.numpy_ok(mb, mb // separators.SPARSE_GAP - 1)
    assert not separators.numpy_ok(mb, mb // separators.SPARSE_GAP)  # 8 KiB apart: dense
