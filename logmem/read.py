"""Read stage: paths or stdin -> decompressed byte chunks -> candidate segments, in bounded memory.

A *segment* is the text between two separators, where both ``\\n`` and ``\\r`` separate
(tqdm writes every progress-bar render after a ``\\r``). Line numbers count ``\\n`` only,
so they match what an editor shows. Only segments that contain one of the literal
keywords of the pattern table are decoded and passed on: a week of "Decode batch"
lines costs a byte scan, not a regex per line.
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import BinaryIO

import regex

from logmem.errors import InputError

CHUNK_BYTES = 4 << 20
# A longer segment is cut: server_args lines are 10-40 KB, nothing real is near this.
MAX_SEGMENT_BYTES = 4 << 20

_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x1f\x8b", "gzip"),
    (b"BZh", "bz2"),
    (b"\xfd7zXZ\x00", "xz"),
    (b"\x28\xb5\x2f\xfd", "zstd"),
)


@dataclass(frozen=True)
class Segment:
    """One candidate record span: where it came from and its raw bytes."""

    path: str
    line_no: int
    data: bytes
    truncated: bool = False


@dataclass
class ReadStats:
    """What the reader saw, for reports about the input itself."""

    path: str
    bytes_read: int = 0
    lines: int = 0
    truncated_segments: int = 0
    ends_with_newline: bool = True
    compression: str | None = None


def _open_raw(path: str) -> BinaryIO:
    if path == "-":
        return sys.stdin.buffer
    try:
        return open(path, "rb")  # noqa: SIM115 - closed by the caller
    except OSError as e:
        raise InputError(f"cannot open {path}: {e.strerror or e}") from None


class _Peeked:
    """A binary stream with its first bytes put back, so we can sniff compression."""

    def __init__(self, head: bytes, rest: BinaryIO) -> None:
        self._head = head
        self._rest = rest

    def read(self, n: int = -1) -> bytes:
        if self._head:
            if n < 0:
                out, self._head = self._head + self._rest.read(), b""
                return out
            out, self._head = self._head[:n], self._head[n:]
            if len(out) < n:
                out += self._rest.read(n - len(out))
            return out
        return self._rest.read(n)

    def close(self) -> None:
        self._rest.close()


def open_stream(path: str, stats: ReadStats) -> BinaryIO:
    """Open a path (or '-') and undo gzip/bz2/xz/zstd, detected by content."""
    raw = _open_raw(path)
    head = raw.read(6)
    peeked = _Peeked(head, raw)
    kind = next((k for magic, k in _MAGIC if head.startswith(magic)), None)
    stats.compression = kind
    if kind is None:
        return peeked  # type: ignore[return-value]
    if kind == "gzip":
        return gzip.GzipFile(fileobj=peeked)  # type: ignore[arg-type]
    if kind == "bz2":
        return bz2.BZ2File(peeked)  # type: ignore[arg-type]
    if kind == "xz":
        return lzma.LZMAFile(peeked)  # type: ignore[arg-type]
    try:
        import zstandard
    except ImportError:
        raise InputError(
            f"{path} is zstd-compressed; install the 'zstandard' package (pip install logmem[zstd]) "
            "or decompress it first"
        ) from None
    return zstandard.ZstdDecompressor().stream_reader(peeked)  # type: ignore[no-any-return]


def iter_chunks(path: str, stats: ReadStats) -> Iterator[bytes]:
    stream = open_stream(path, stats)
    try:
        while True:
            try:
                chunk = stream.read(CHUNK_BYTES)
            except (OSError, EOFError, lzma.LZMAError, ValueError) as e:
                raise InputError(f"{path}: cannot decompress after {stats.bytes_read} bytes: {e}") from None
            except Exception as e:  # zstandard.ZstdError has no common base we can name
                raise InputError(f"{path}: cannot read after {stats.bytes_read} bytes: {e}") from None
            if not chunk:
                return
            stats.bytes_read += len(chunk)
            yield chunk
    finally:
        if path != "-":
            stream.close()


_SEP = regex.compile(rb"[\r\n]")


def iter_segments(
    path: str, keywords: regex.Pattern[bytes], stats: ReadStats | None = None
) -> Iterator[Segment]:
    """Yield the segments of one input that contain a keyword, with their line numbers."""
    stats = stats or ReadStats(path)
    carry = b""
    carry_truncated = False
    line_no = 1  # line number at the start of `carry`
    last = b"\n"
    for chunk in iter_chunks(path, stats):
        last = chunk[-1:]
        if carry_truncated:
            # Inside a giant segment whose head we kept: drop bytes up to its end.
            sep = _SEP.search(chunk)
            if sep is None:
                continue
            chunk = chunk[sep.start():]
            carry_truncated = False
        buf = carry + chunk if carry else chunk
        # Process up to the last separator; the tail waits for the next chunk.
        cut = max(buf.rfind(b"\n"), buf.rfind(b"\r")) + 1
        body, carry = buf[:cut], buf[cut:]
        if body:
            yield from _scan(path, body, line_no, keywords, stats)
            line_no += body.count(b"\n")
        if len(carry) > MAX_SEGMENT_BYTES:
            carry = carry[:MAX_SEGMENT_BYTES]
            carry_truncated = True
            stats.truncated_segments += 1
    if carry:
        yield from _scan(path, carry, line_no, keywords, stats, final=True)
        line_no += carry.count(b"\n")
    stats.ends_with_newline = last in (b"\n", b"") and not carry
    stats.lines = line_no - (1 if stats.ends_with_newline and stats.bytes_read else 0)


def _scan(
    path: str,
    body: bytes,
    line_no: int,
    keywords: regex.Pattern[bytes],
    stats: ReadStats,
    final: bool = False,
) -> Iterator[Segment]:
    """Find keyword hits in `body` and yield each containing segment once."""
    pos = 0
    counted_to = 0
    n = len(body)
    while pos < n:
        m = keywords.search(body, pos)
        if m is None:
            return
        start = max(body.rfind(b"\n", 0, m.start()), body.rfind(b"\r", 0, m.start())) + 1
        sep = _SEP.search(body, m.end())
        end = sep.start() if sep else n
        line_no += body.count(b"\n", counted_to, start)
        counted_to = start
        data = body[start:end]
        truncated = len(data) > MAX_SEGMENT_BYTES
        if truncated:
            data = data[:MAX_SEGMENT_BYTES]
            stats.truncated_segments += 1
        yield Segment(path, line_no, data, truncated)
        pos = end + 1


def read_segments(
    paths: Iterable[str], keywords: regex.Pattern[bytes], stats: list[ReadStats] | None = None
) -> Iterator[Segment]:
    """All candidate segments of several inputs, input after input."""
    for path in paths:
        st = ReadStats(path)
        if stats is not None:
            stats.append(st)
        yield from iter_segments(path, keywords, st)
