"""The keyword scan done by a forked scanner (logmem.parse.prescan) finds what the reader's own
scan finds: the same segments, line numbers and stats, whatever the chunking and the matcher;
a scanner that lies, dies or meets a dense chunk only makes the reader scan for itself; and
no scanner is left behind."""

from __future__ import annotations

import dataclasses
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import corpus_logs, reaped
from logmem.parse import prescan
from logmem.parse.matchers import matcher_for
from logmem.parse.patterns import KEYWORD_BYTES, ONCE_BYTES
from logmem.parse.read import ReadStats, Segment, iter_segments

P = "[2026-04-14 16:08:49 TP0] "
MATCHERS = ("python", "hyperscan")


def _kinds() -> list[str]:
    try:
        import hyperscan  # noqa: F401
    except ImportError:
        return ["python"]
    return list(MATCHERS)


def _read(path: Path, scan_ahead: bool, chunk: int | None = None) -> tuple[list[Segment], dict]:
    stats = ReadStats(str(path))
    segs = list(iter_segments(str(path), KEYWORD_BYTES, stats, ONCE_BYTES, True, chunk, scan_ahead))
    return segs, dataclasses.asdict(stats)


def _segment_of(buf: bytes, p: int) -> int:
    """The start of the segment holding position p (-1 for none)."""
    if p < 0:
        return -1
    return max(buf.rfind(b"\n", 0, p), buf.rfind(b"\r", 0, p)) + 1


# Text made of keyword pieces, separators and filler: hits on every line, none, several in one
# segment, "\r" runs, a keyword cut by a separator.
_PIECES = st.sampled_from(
    [b"GB", b"MB", b"avail mem=", b"KV cache", b"Decode batch", b"x", b"  ", b"\n", b"\r",
     b"\r\n", b"Error", b"G", b"B", b"7.5", b"max_total_num_tokens=", b"%|"]
)  # fmt: skip


@pytest.mark.parametrize("kind", _kinds())
@settings(max_examples=150, deadline=None)
@given(data=st.lists(_PIECES, max_size=60).map(b"".join))
def test_the_list_answers_what_the_scan_answers(kind: str, data: bytes) -> None:
    matcher = matcher_for(KEYWORD_BYTES, kind)
    found = matcher.positions(data, 1 << 20)
    assert found is not None
    starts = [0] + [i + 1 for i, b in enumerate(data) if b in b"\r\n"]
    for lo in starts:
        # The reader's ranges start at a segment start and end after a separator (or the end).
        for hi in [s for s in starts if s > lo] + [len(data)]:
            listed = prescan.ListCursor(found, hi)
            scanned = matcher.cursor(data, lo, hi)
            for pos in (s for s in starts if lo <= s < hi):
                a, b = listed.next_hit(pos), scanned.next_hit(pos)
                assert _segment_of(data, a) == _segment_of(data, b), (lo, hi, pos)


def _log(tmp_path: Path, n: int = 3000) -> Path:
    lines = [
        f"{P}HiCache host pool: {i}.5 GB used" if i % 7 else f"{P}Decode batch x" for i in range(n)
    ]
    lines[1500] = "ValueError: bad\n  more of the message"
    lines[2000] = f"{P}max_total_num_tokens=1000"
    path = tmp_path / "x.log"
    path.write_text("\n".join(lines) + "\r" + f"{P}avail mem=1.0 GB")  # no final newline
    return path


@pytest.mark.parametrize("chunk", [None, 61, 4096])
def test_scanning_ahead_changes_nothing(
    tmp_path: Path, chunk: int | None, forked: list[int]
) -> None:
    path = _log(tmp_path)
    assert _read(path, True, chunk) == _read(path, False, chunk)
    assert reaped(forked)


@pytest.mark.parametrize("log", corpus_logs()[:8], ids=lambda p: p.name[:12])
def test_corpus_logs_read_the_same(log: Path) -> None:
    assert _read(log, True, 997) == _read(log, False, 997)


def test_a_dense_chunk_ends_the_scanner_and_the_reader_scans_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, forked: list[int]
) -> None:
    sparse = [f"{P}Decode batch {i}" if i % 20 else f"{P}avail mem={i}.5 GB" for i in range(600)]
    dense = [f"{P}" + "GB " * 40 for _ in range(200)]  # one position every 3 bytes
    path = tmp_path / "x.log"
    path.write_text("\n".join(sparse + dense + sparse) + "\n")
    sent: list[bool] = []
    real = prescan.Scanner.hits

    def hits(self: prescan.Scanner, chunk: bytes) -> object:
        out = real(self, chunk)
        sent.append(out is not None)
        return out

    monkeypatch.setattr(prescan.Scanner, "hits", hits)
    assert _read(path, True, 4096) == _read(path, False, 4096)
    # Lists for the sparse chunks, then none from the first dense one on (the scanner ended).
    first_none = sent.index(False)
    assert first_none > 3 and not any(sent[first_none:])
    assert reaped(forked)


def test_a_scanner_that_dies_leaves_the_reader_to_scan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, forked: list[int]
) -> None:
    path = _log(tmp_path)
    real = prescan.start

    def start(keywords: object, chunks: Iterator[bytes]) -> prescan.Scanner:
        s = real(keywords, chunks)  # type: ignore[arg-type]
        os.kill(forked[-1], signal.SIGKILL)
        return s

    monkeypatch.setattr(prescan, "start", start)
    assert _read(path, True, 500) == _read(path, False, 500)
    assert reaped(forked)


def test_chunks_that_differ_from_the_scanner_s_are_not_trusted(forked: list[int]) -> None:
    scanner = prescan.start(KEYWORD_BYTES, iter([b"a GB\n", b"b GB\n", b"c GB\n"]))
    first = scanner.hits(b"a GB\n")
    assert first is not None and list(first) == [3]
    assert scanner.hits(b"b MB\n") is None  # the same length, other bytes
    assert scanner.hits(b"c GB\n") is None  # and from then on, nothing is trusted
    scanner.close()
    assert reaped(forked)


def test_stopping_early_ends_the_scanner(tmp_path: Path, forked: list[int]) -> None:
    path = _log(tmp_path, 200_000)
    segs = iter_segments(str(path), KEYWORD_BYTES, None, ONCE_BYTES, True, None, True)
    assert next(segs)
    segs.close()
    assert reaped(forked)


def test_only_an_uncompressed_file_gets_a_scanner(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import gzip

    from logmem.parse import ahead

    plain, packed = tmp_path / "a.log", tmp_path / "a.log.gz"
    plain.write_bytes(b"x GB\n" * 10)
    packed.write_bytes(gzip.compress(b"x GB\n" * 10))
    monkeypatch.delenv("LOGMEM_SCAN_AHEAD", raising=False)
    assert ahead.scan_ahead(str(plain)) and not ahead.scan_ahead(str(packed))
    monkeypatch.setenv("LOGMEM_SCAN_AHEAD", "0")
    assert not ahead.scan_ahead(str(plain))


def test_a_dense_input_ends_its_scanner_and_reads_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, forked: list[int]
) -> None:
    assert prescan.worth_keeping(prescan.JUDGE_AFTER_BYTES - 1, 10**9)  # too early to judge
    assert not prescan.worth_keeping(prescan.JUDGE_AFTER_BYTES, prescan.JUDGE_AFTER_BYTES)
    assert prescan.worth_keeping(prescan.JUDGE_AFTER_BYTES, 10)
    path = _log(tmp_path)
    monkeypatch.setattr(prescan, "JUDGE_AFTER_BYTES", 4000)
    asked: list[int] = []
    real = prescan.Scanner.hits

    def hits(self: prescan.Scanner, chunk: bytes) -> object:
        asked.append(len(chunk))
        return real(self, chunk)

    monkeypatch.setattr(prescan.Scanner, "hits", hits)
    assert _read(path, True, 1000) == _read(path, False, 1000)
    assert 3 <= len(asked) <= 6  # asked until 4,000 bytes were read, then ended
    assert reaped(forked)


def test_a_giant_line_of_keywords_costs_the_scanner_one_chunk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, forked: list[int]
) -> None:
    # The reader skips a line without separators (it keeps its first 4 MiB); a scanner that
    # went on listing its keyword positions would make the reader wait for them.
    path = tmp_path / "gb.log"
    path.write_bytes(f"{P}avail mem=1.0 GB\n".encode() + b"GB" * 50_000 + b"\n")
    sent: list[tuple[bool, bool]] = []  # (a list came, the scanner is still there)
    real = prescan.Scanner.hits

    def hits(self: prescan.Scanner, chunk: bytes) -> object:
        out = real(self, chunk)
        sent.append((out is not None, self._in is not None))
        return out

    monkeypatch.setattr(prescan.Scanner, "hits", hits)
    assert _read(path, True, 4096) == _read(path, False, 4096)
    assert sent[0] == (False, False)  # the first chunk is dense: the scanner ended there
    assert reaped(forked)
