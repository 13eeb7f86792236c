"""The input as bytes: a path or stdin -> decompressed UTF-8 chunks, in bounded memory.

Every input is read the same way, whatever it is: compression (gzip, bz2, xz, zstd, by
content, each possibly multi-stream) is undone in bounded steps, so a small bomb never
becomes a big buffer; a stream that is cut short or corrupt yields what it decoded and
says where it stopped (:attr:`ReadStats.stopped`), in decompressed bytes; a UTF-16 or
UTF-32 byte-order mark is decoded to UTF-8; :func:`byte_limit` stops each input after
N bytes. logmem.parse.read cuts these chunks into segments.
"""

from __future__ import annotations

import codecs
import contextlib
import itertools
import os
import stat
import sys
import warnings
from collections.abc import Iterable, Iterator
from typing import Any, BinaryIO, cast

from logmem.errors import InputError, InputWarning
from logmem.frozen import mutable
from logmem.parse import progress as progress

CHUNK_BYTES = 4 << 20
# Compressed bytes fed to a decompressor at once. zstd's decompressobj cannot bound its
# output, and one compressed byte can stand for ~32 KB: 1 KiB in is at most ~32 MiB out.
_FEED_BYTES = 64 << 10
_ZSTD_FEED_BYTES = 1 << 10

# bz2 is "BZh", a level digit, then a block or end-of-stream magic: text that starts with
# "BZh" (a log line could) is not taken for bz2 without the rest.
_BZ2_BLOCK_MAGICS = (b"\x31\x41\x59\x26\x53\x59", b"\x17\x72\x45\x38\x50\x90")
_SNIFF_BYTES = 10
_BZ2_MAX_BLOCK = 900_000

# Byte-order marks, longest first (UTF-32 LE starts with UTF-16 LE's). A PowerShell `>`
# redirect writes UTF-16 LE with a BOM.
_BOMS: tuple[tuple[bytes, str], ...] = (
    (b"\xff\xfe\x00\x00", "utf-32-le"),
    (b"\x00\x00\xfe\xff", "utf-32-be"),
    (b"\xef\xbb\xbf", "utf-8"),
    (b"\xff\xfe", "utf-16-le"),
    (b"\xfe\xff", "utf-16-be"),
)


@mutable
class ReadStats:
    """What the reader saw, for reports about the input itself.

    ``stopped`` says why reading ended before the end of the input: "truncated" (the
    compressed stream is cut short), "corrupt" (it cannot be decoded further; ``stop_detail``
    has the decoder's words) or "max-bytes" (the byte limit). ``bytes_read`` is then where
    it stopped, in decompressed bytes; everything before it was read."""

    path: str
    bytes_read: int = 0
    lines: int = 0
    truncated_segments: int = 0
    ends_with_newline: bool = True
    compression: str | None = None
    encoding: str | None = None  # "utf-16-le" etc. when a byte-order mark said so
    stopped: str | None = None
    stop_detail: str | None = None
    # "cri": a container runtime's log file, its P/F pieces joined (logmem.parse.cri)
    container: str | None = None
    joined_lines: int = 0  # logical lines made of two or more pieces
    cut_lines: int = 0  # unfinished lines cut (the input ended, or too much held behind them)
    first_cut_line: int | None = None


# --- the byte limit ---------------------------------------------------------------------

_max_bytes: int | None = None


@contextlib.contextmanager
def byte_limit(n: int | None) -> Iterator[None]:
    """Within the block, read at most `n` decompressed bytes of each input."""
    global _max_bytes
    before, _max_bytes = _max_bytes, n
    try:
        yield
    finally:
        _max_bytes = before


# --- opening and decompressing ----------------------------------------------------------


def _open_raw(path: str) -> BinaryIO:
    if path == "-":
        return sys.stdin.buffer
    if os.path.isdir(path):
        raise InputError(f"cannot read {path}: it is a folder, not a log file")
    try:
        return open(path, "rb")  # noqa: SIM115 - closed by the caller
    except OSError as e:
        raise InputError(f"cannot open {path}: {e.strerror or e}") from None


def _read(raw: BinaryIO, n: int, path: str, done: int) -> bytes:
    try:
        return raw.read(n)
    except OSError as e:
        raise InputError(f"cannot read {path} after {done:,} bytes: {e.strerror or e}") from None


def _sniff(head: bytes) -> str | None:
    if head.startswith(b"\x1f\x8b"):
        return "gzip"
    if head.startswith(b"BZh") and head[3:4].isdigit() and head[3:4] != b"0":
        return "bz2" if head[4:10] in _BZ2_BLOCK_MAGICS else None
    if head.startswith(b"\xfd7zXZ\x00"):
        return "xz"
    if head.startswith(b"\x28\xb5\x2f\xfd"):
        return "zstd"
    return None


class _Stream:
    """One decompressor fed in bounded steps; ``feed`` yields its output in bounded pieces."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._unfed = b""  # zstd: input after the frame's end that was never fed
        self._d: Any
        # The decompressors are imported by the first compressed input: a plain log's read
        # does not load them (bz2, lzma and zlib: ~2 ms of a small log's analyze).
        if kind == "gzip":
            import zlib

            self._d = zlib.decompressobj(wbits=31)
        elif kind == "bz2":
            import bz2

            self._d = bz2.BZ2Decompressor()
        elif kind == "xz":
            import lzma

            self._d = lzma.LZMADecompressor()
        else:
            self._d = _zstd_decompressor()

    @property
    def eof(self) -> bool:
        return bool(self._d.eof)

    @property
    def unused(self) -> bytes:
        return bytes(self._d.unused_data) + self._unfed

    def feed(self, data: bytes) -> Iterator[bytes]:
        d = self._d
        if self.kind == "gzip":
            while True:
                out = d.decompress(data, CHUNK_BYTES)
                if out:
                    yield out
                data = d.unconsumed_tail
                if d.eof or (not data and len(out) < CHUNK_BYTES):
                    return
        elif self.kind in ("bz2", "xz"):
            out = d.decompress(data, CHUNK_BYTES)
            while True:
                if out:
                    yield out
                if d.eof or d.needs_input:
                    return
                out = d.decompress(b"", CHUNK_BYTES)
        else:
            for i in range(0, len(data), _ZSTD_FEED_BYTES):
                out = d.decompress(data[i : i + _ZSTD_FEED_BYTES])
                for j in range(0, len(out), CHUNK_BYTES):
                    yield out[j : j + CHUNK_BYTES]
                if d.eof:
                    self._unfed = data[i + _ZSTD_FEED_BYTES :]
                    return


def _zstd_decompressor() -> Any:
    import zstandard

    return zstandard.ZstdDecompressor().decompressobj()


def _zstd_available(path: str) -> None:
    try:
        import zstandard  # noqa: F401
    except ImportError:
        raise InputError(
            f"{path} is zstd-compressed; install the 'zstandard' package (pip install logmem[zstd]) "
            "or decompress it first"
        ) from None


def _decompressed(
    raw: BinaryIO, head: bytes, kind: str, path: str, stats: ReadStats
) -> Iterator[bytes]:
    """The decompressed bytes of a whole (multi-stream) input. A stream cut short or
    undecodable ends the output and is noted in `stats`; nothing decoded is thrown away."""
    stream = _Stream(kind)
    pending = head
    feed = _FEED_BYTES
    out_bytes = 0
    # "BZh91AY&SY" is ASCII: a text file can start with bz2's whole magic. Until bz2 output
    # appears, the bytes fed are kept (a block is at most 900 kB) to read them as text instead.
    fed: list[bytes] | None = [] if kind == "bz2" else None
    while True:
        data = pending or _read(raw, feed, path, out_bytes)
        pending = b""
        if not data:
            if not stream.eof:
                stats.stopped = "truncated"
            return
        if fed is not None:
            fed.append(data)
            if len(fed) * feed > 2 * _BZ2_MAX_BLOCK:  # far past any block: it is bz2 after all
                fed = None
        try:
            for out in stream.feed(data):
                fed = None
                out_bytes += len(out)
                yield out
        except Exception as e:  # zlib.error, OSError, EOFError, LZMAError, ZstdError
            if fed is not None:
                stats.compression = None
                yield b"".join(fed)
                yield from _raw_chunks(raw, b"", path)
                return
            stats.stopped, stats.stop_detail = "corrupt", str(e) or type(e).__name__
            return
        if stream.eof:
            # Concatenated streams (pigz, pbzip2, zstd frames) are one input; padding
            # (NUL bytes after an xz stream or a gzip member) is not another stream.
            rest = stream.unused.lstrip(b"\x00") + _read(raw, feed, path, out_bytes)
            rest = rest.lstrip(b"\x00")
            while not rest:
                more = _read(raw, feed, path, out_bytes)
                if not more:
                    return
                rest = more.lstrip(b"\x00")
            if _sniff(rest[:_SNIFF_BYTES].ljust(_SNIFF_BYTES, b"\x00")) != kind:
                stats.stopped = "corrupt"
                stats.stop_detail = f"{len(rest):,}+ bytes after the end of the {kind} stream"
                return
            stream = _Stream(kind)
            pending = rest


def _raw_chunks(raw: BinaryIO, head: bytes, path: str) -> Iterator[bytes]:
    if head:
        yield head
    done = len(head)
    while True:
        chunk = _read(raw, CHUNK_BYTES, path, done)
        if not chunk:
            return
        done += len(chunk)
        yield chunk


def _rechunked(pieces: Iterable[bytes]) -> Iterator[bytes]:
    """Pieces joined into chunks of about CHUNK_BYTES (never much more)."""
    buf: list[bytes] = []
    size = 0
    for piece in pieces:
        buf.append(piece)
        size += len(piece)
        if size >= CHUNK_BYTES:
            yield b"".join(buf)
            buf, size = [], 0
    if buf:
        yield b"".join(buf)


def _transcoded(chunks: Iterator[bytes], stats: ReadStats) -> Iterator[bytes]:
    """Chunks as UTF-8: a UTF-16/32 byte-order mark is decoded, a UTF-8 one dropped."""
    first = next(chunks, b"")
    while len(first) < 4:  # a mark split over tiny pieces (a pipe)
        more = next(chunks, b"")
        if not more:
            break
        first += more
    bom, enc = next(((b, e) for b, e in _BOMS if first.startswith(b)), (b"", None))
    if enc is None or enc == "utf-8":
        if first[len(bom) :]:
            yield first[len(bom) :]
        yield from chunks
        return
    stats.encoding = enc
    dec = codecs.getincrementaldecoder(enc)(errors="replace")
    for chunk in itertools.chain((first[len(bom) :],), chunks):
        text = dec.decode(chunk)
        if text:
            yield text.encode("utf-8")
    tail = dec.decode(b"", final=True)
    if tail:
        yield tail.encode("utf-8")


def _size_of(raw: BinaryIO) -> int | None:
    """The input's size for the progress bar, or None for a pipe or terminal."""
    try:
        st = os.fstat(raw.fileno())
    except (OSError, AttributeError, ValueError):
        return None
    return st.st_size if stat.S_ISREG(st.st_mode) else None


def _position(raw: BinaryIO, fallback: int) -> int:
    try:
        return raw.tell()
    except (OSError, AttributeError, ValueError):
        return fallback


def _stop_warning(path: str, stats: ReadStats) -> str:
    if stats.stopped == "max-bytes":
        return f"{path}: read only its first {stats.bytes_read:,} bytes (--max-bytes)"
    what = "cut short" if stats.stopped == "truncated" else "corrupt"
    return (
        f"{path}: the {stats.compression} stream is {what} after {stats.bytes_read:,} "
        "decompressed bytes; only what was read is analysed"
    )


def iter_chunks(path: str, stats: ReadStats, text: bool = True) -> Iterator[bytes]:
    """The input's bytes as UTF-8-ish chunks, decompressed, up to the byte limit.

    ``text=False`` (a binary file: a snapshot) skips the byte-order marks and the limit, and a
    stream that stops early is an error: part of a pickle is no use."""
    raw = _open_raw(path)
    limit = _max_bytes if text else None
    bar = None
    try:
        head = _read(raw, _SNIFF_BYTES, path, 0)
        kind = _sniff(head)
        stats.compression = kind
        if kind == "zstd":
            _zstd_available(path)
        pieces = (
            _decompressed(raw, head, kind, path, stats) if kind else _raw_chunks(raw, head, path)
        )
        bar = progress.start(path, _size_of(raw), compressed=kind is not None)
        chunks = _rechunked(pieces)
        for chunk in _transcoded(chunks, stats) if text else chunks:
            if limit is not None and stats.bytes_read + len(chunk) > limit:
                chunk = chunk[: limit - stats.bytes_read]
                stats.stopped, stats.stop_detail = "max-bytes", None
            stats.bytes_read += len(chunk)
            if bar is not None:
                # Compressed input: progress is how far into the file, not how much came out.
                done = _position(raw, stats.bytes_read) if kind else stats.bytes_read
                bar.update(done, stats.bytes_read)
            if chunk:
                yield chunk
            if stats.stopped == "max-bytes":
                break
        if stats.stopped and not text:
            raise InputError(
                _stop_warning(path, stats).replace("; only what was read is analysed", "")
            )
        if stats.stopped and stats.bytes_read:
            warnings.warn(InputWarning(_stop_warning(path, stats)), stacklevel=2)
        if stats.stopped in ("truncated", "corrupt") and stats.bytes_read == 0:
            what = "is cut short" if stats.stopped == "truncated" else "cannot be decoded"
            detail = f" ({stats.stop_detail})" if stats.stop_detail else ""
            raise InputError(f"{path}: its {kind} stream {what} before any data{detail}")
    finally:
        if bar is not None:
            bar.close()
        if path != "-":
            raw.close()


class _ChunkStream:
    """iter_chunks(text=False) behind read(n)/close(), for readers that want a file."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self._chunks = chunks
        self._buf = b""

    def read(self, n: int = -1) -> bytes:
        parts = [self._buf]
        size = len(self._buf)
        while n < 0 or size < n:
            chunk = next(self._chunks, b"")
            if not chunk:
                break
            parts.append(chunk)
            size += len(chunk)
        data = b"".join(parts)
        out, self._buf = (data, b"") if n < 0 else (data[:n], data[n:])
        return out

    def close(self) -> None:
        close = getattr(self._chunks, "close", None)
        if close is not None:
            close()


def open_stream(path: str, stats: ReadStats) -> BinaryIO:
    """A path (or '-') as a binary stream, gzip/bz2/xz/zstd undone (the snapshot loader's)."""
    # Only read() and close() are used; the cast names the type those readers expect.
    return cast(BinaryIO, _ChunkStream(iter_chunks(path, stats, text=False)))
