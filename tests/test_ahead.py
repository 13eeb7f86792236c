"""Reading ahead in a child process (logmem.parse.ahead) gives what one process gives: the same
segments in the same order, the same ReadStats, the same warnings and errors; and it leaves no
child behind, whether the caller reads to the end or stops early."""

from __future__ import annotations

import dataclasses
import gzip
import os
import threading
import warnings
from pathlib import Path

import pytest

from conftest import corpus_logs, fixture_logs, reaped
from logmem.errors import InputError
from logmem.parse import ahead
from logmem.parse.patterns import KEYWORD_BYTES, ONCE_BYTES
from logmem.parse.read import ReadStats, Segment, read_segments

P = "[2026-04-14 16:08:49 TP0] "


def _read(path: Path, mode: str, chunk: int | None = None) -> tuple[list[Segment], ReadStats]:
    before = os.environ.get("LOGMEM_READ_AHEAD")
    os.environ["LOGMEM_READ_AHEAD"] = mode
    try:
        assert ahead.wanted(str(path)) == (mode == "1")  # the child really reads, or really not
        stats: list[ReadStats] = []
        segs = list(
            read_segments([str(path)], KEYWORD_BYTES, stats, ONCE_BYTES, True, chunk_bytes=chunk)
        )
    finally:
        if before is None:
            del os.environ["LOGMEM_READ_AHEAD"]
        else:
            os.environ["LOGMEM_READ_AHEAD"] = before
    return segs, stats[0]


@pytest.mark.parametrize("log", (corpus_logs() + fixture_logs())[:12], ids=lambda p: p.name[:12])
def test_ahead_reads_what_one_process_reads(log: Path, forked: list[int]) -> None:
    one, st_one = _read(log, "0")
    two, st_two = _read(log, "1")
    assert two == one
    assert dataclasses.asdict(st_two) == dataclasses.asdict(st_one)
    assert reaped(forked)


def test_batches_and_small_chunks_change_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = [f"{P}HiCache host pool: {i}.5 GB used" for i in range(3000)]
    lines[1500] = "ValueError: bad\n  more of the message"
    path = tmp_path / "x.log"
    path.write_text("\n".join(lines) + "\r" + f"{P}avail mem=1.0 GB")  # no final newline
    monkeypatch.setattr(ahead, "BATCH_SEGMENTS", 7)
    monkeypatch.setattr(ahead, "BATCH_BYTES", 300)
    one, st_one = _read(path, "0", chunk=61)
    two, st_two = _read(path, "1", chunk=61)
    assert len(one) > 3000 and two == one
    assert dataclasses.asdict(st_two) == dataclasses.asdict(st_one)


def test_a_warning_is_raised_in_the_parent_before_the_segments_after_it(tmp_path: Path) -> None:
    data = gzip.compress(("\n".join(f"{P}x {i} GB" for i in range(20000)) + "\n").encode())
    path = tmp_path / "cut.log.gz"
    path.write_bytes(data[: len(data) // 2])  # a gzip stream cut short: a warning at its end
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        one, st_one = _read(path, "0")
    with warnings.catch_warnings(record=True) as caught_two:
        warnings.simplefilter("always")
        two, st_two = _read(path, "1")
    assert [str(w.message) for w in caught_two] == [str(w.message) for w in caught]
    assert caught and st_two.stopped == st_one.stopped == "truncated"
    assert two == one
    assert dataclasses.asdict(st_two) == dataclasses.asdict(st_one)


def test_an_error_is_raised_in_the_parent(tmp_path: Path, forked: list[int]) -> None:
    path = tmp_path / "empty.gz"
    path.write_bytes(gzip.compress(b"x" * 1000)[:10])  # the header only: no data
    with pytest.raises(InputError) as one:
        _read(path, "0")
    with pytest.raises(InputError) as two:
        _read(path, "1")
    assert str(two.value) == str(one.value)
    assert reaped(forked)


def test_stopping_early_ends_the_child(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, forked: list[int]
) -> None:
    path = tmp_path / "big.log"
    path.write_text("".join(f"{P}x {i} GB\n" for i in range(200_000)))
    monkeypatch.setenv("LOGMEM_READ_AHEAD", "1")
    segs = read_segments([str(path)], KEYWORD_BYTES)
    assert next(segs).line_no == 1
    segs.close()  # the child is blocked on a full pipe: it must not be left behind
    assert reaped(forked)


def test_what_is_read_ahead(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    small, big = tmp_path / "small.log", tmp_path / "big.log"
    small.write_bytes(b"x GB\n")
    with open(big, "wb") as f:
        f.truncate(ahead.AHEAD_BYTES)  # sparse: the size counts, not the disk
    quarter = gzip.compress(b"x GB\n").ljust(ahead.AHEAD_BYTES // ahead.COMPRESSION_RATIO, b"\0")
    packed, plain = tmp_path / "quarter.gz", tmp_path / "quarter.log"
    packed.write_bytes(quarter)
    plain.write_bytes(b"x" * len(quarter))
    monkeypatch.delenv("LOGMEM_READ_AHEAD", raising=False)
    assert ahead.wanted(str(big)) and not ahead.wanted(str(small))
    assert ahead.wanted(str(packed)) and not ahead.wanted(
        str(plain)
    )  # a compressed one counts more
    assert not ahead.wanted("-") and not ahead.wanted(str(tmp_path))
    assert not ahead.wanted(str(tmp_path / "missing.log"))
    monkeypatch.setenv("LOGMEM_READ_AHEAD", "0")
    assert not ahead.wanted(str(big))
    monkeypatch.setenv("LOGMEM_READ_AHEAD", "1")
    assert ahead.wanted(str(small))
    stop = threading.Event()
    t = threading.Thread(target=stop.wait)
    t.start()
    try:
        assert not ahead.wanted(str(small))  # forking a process that runs threads is unsafe
    finally:
        stop.set()
        t.join()


def test_one_core_reads_in_one_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "x.log"
    path.write_bytes(b"x GB\n")
    monkeypatch.setenv("LOGMEM_READ_AHEAD", "1")
    assert ahead.wanted(str(path))
    monkeypatch.setattr(ahead, "_cores", lambda: 1)
    assert not ahead.wanted(str(path))


def test_the_parent_unpickles_no_global_but_exceptions() -> None:
    """The pipe's messages may name exception classes only: not os.system, not a record."""
    import io
    import os
    import pickle

    from logmem.parse import ahead

    ok = pickle.dumps(("error", OSError(2, "gone")))
    assert isinstance(ahead._Unpickler(io.BytesIO(ok)).load()[1], OSError)
    for bad in (pickle.dumps(("error", os.system)), pickle.dumps(("x", io.BytesIO))):
        with pytest.raises(pickle.UnpicklingError):
            ahead._Unpickler(io.BytesIO(bad)).load()
    assert isinstance(ahead._picklable(ValueError(io.BytesIO())), RuntimeError)
