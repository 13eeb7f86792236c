"""Match stage: records -> events, running per record only the patterns it can match.

Every pattern of logmem.parse.patterns declares the literals a match cannot do without
(``LinePattern.needs``). A record's text is searched once for all of those literals with
the reader's multi-literal matcher (hyperscan, or the pure-Python finds) and only the
patterns whose literal it holds run, in table order; the first that matches wins, as if
every pattern had been tried. The cost per record is one literal scan plus the regexes
of the patterns it could match, whatever the size of the table.

Segments that hold one plain prefixed record and none of the literals skip records
altogether (``_quick``): they can only be memory lines that nothing claims, and those are
counted by shape straight from their bytes once their shape has its examples. What a
short segment is (skip, count under which shape, or one plain record and the patterns it
may match) is worked out once per *digit mask* (the segment with every digit as NUL, see
_classify) and then looked up: a server repeats a handful of masks all day.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

import regex

from logmem.frozen import mutable
from logmem.parse.builders import BUILDERS
from logmem.parse.command_lines import COMMAND, join_command
from logmem.parse.events import (
    CaptureFailed,
    Event,
    ExceptionLine,
    Imbalance,
    LaunchCommand,
    MessageMore,
    NotEnoughMemory,
    TorchOOM,
)
from logmem.parse.lazy import lazy
from logmem.parse.lines import PREFIX, Record, Source, rank_tags, split_records
from logmem.parse.matchers import Matcher, matcher_for
from logmem.parse.patterns import PATTERNS, LinePattern
from logmem.parse.read import Segment
from logmem.parse.unmatched import (
    SHAPE_BYTES,
    UnmatchedSink,
    ascii_memory_figure,
    has_memory_figure,
    message_bytes,
    shape_key,
    shape_memory_figure,
)

LITERALS: tuple[str, ...] = tuple(dict.fromkeys(lit for p in PATTERNS for lit in p.needs))
# The same literals as one keyword pattern, so that matcher_for picks the matcher for them.
LITERAL_BYTES: regex.Pattern[bytes] = lazy("|".join(regex.escape(lit) for lit in LITERALS).encode())
# literal index -> the patterns (table indexes) that need it
_BY_LITERAL: tuple[tuple[int, ...], ...] = tuple(
    tuple(i for i, p in enumerate(PATTERNS) if lit in p.needs) for lit in LITERALS
)
_ALWAYS: frozenset[int] = frozenset(i for i, p in enumerate(PATTERNS) if not p.needs)
_CACHE_LIMIT = 4096  # distinct literal sets seen; hostile input cannot grow it further
# The record prefix for ASCII bytes; the stdlib engine matches it in half the time.
_PREFIX_BYTES = re.compile(PREFIX.pattern.encode(), re.ASCII)
# The literals as they look in a shape key: a message that holds a literal has a key that
# holds its keyed form (a key may hold one its message lacks: that only costs the records path).
_KEYED_LITERALS: tuple[bytes, ...] = tuple(
    dict.fromkeys(shape_key(lit.encode()) for lit in LITERALS)
)
# What a short plain record of a shape is: no literal and no figure (nothing to do), no
# literal and a figure (an unmatched memory line), or a literal (the records path).
_SKIP, _COUNT, _RECORDS = 0, 1, 2


class _Gate:
    """The patterns a text may match, from the literals it holds (one matcher call)."""

    def __init__(self, matcher: Matcher) -> None:
        self.hits = matcher.hits
        self._cache: dict[frozenset[int], tuple[LinePattern, ...]] = {}
        self._kinds: dict[bytes, int] = {}
        # A whole segment with its digits masked (no collapsing) -> what _classify found for
        # it: every test _quick makes reads digits only as "a digit", so the answer holds
        # for every segment with that mask (see _classify), and a busy server repeats a
        # handful of masks (one per shape and per width of its numbers) all day.
        self.lines: dict[bytes, _Class] = {}

    def shape_kind(self, key: bytes) -> int:
        """_SKIP, _COUNT or _RECORDS for a short plain record whose message has this shape."""
        kind = self._kinds.get(key)
        if kind is None:
            if any(lit in key for lit in _KEYED_LITERALS):
                kind = _RECORDS
            else:
                kind = _COUNT if shape_memory_figure(key) else _SKIP
            if len(self._kinds) >= _CACHE_LIMIT:
                self._kinds.clear()
            self._kinds[key] = kind
        return kind

    def patterns(self, data: bytes) -> tuple[LinePattern, ...]:
        key = frozenset(self.hits(data))
        found = self._cache.get(key)
        if found is None:
            idx = set(_ALWAYS)
            for lit in key:
                idx.update(_BY_LITERAL[lit])
            found = tuple(PATTERNS[i] for i in sorted(idx))
            if len(self._cache) >= _CACHE_LIMIT:
                self._cache.clear()
            self._cache[key] = found
        return found


def _gate(small: bool = False) -> _Gate:
    return _Gate(matcher_for(LITERAL_BYTES, small=small))


def _match(gate: _Gate, record: Record) -> tuple[str, Event] | None:
    text = record.message
    for pat in gate.patterns(message_bytes(record)):
        m = pat.regex.search(text)
        if m is None:
            continue
        event = BUILDERS[pat.name](m, record)
        if event is not None:
            return pat.name, event
    return None


def match_record(record: Record) -> tuple[str, Event] | None:
    """The first pattern (in table order) that matches the record, and its event."""
    return _match(_gate(), record)


def _is_unmatched_memory(record: Record) -> bool:
    # Foreign lines (pip, vLLM, nvidia-smi tables) print sizes too; only SGLang's own
    # records and its progress bars are ours to recognise.
    return (record.rank is not None or "avail" in record.message) and has_memory_figure(
        record.message
    )


def _events(
    gate: _Gate, records: Iterable[Record], unmatched: UnmatchedSink | None
) -> Iterator[Event]:
    for record in records:
        hit = _match(gate, record)
        if hit is not None:
            yield hit[1]
        elif unmatched is not None and _is_unmatched_memory(record):
            unmatched.add(record)


def iter_events(
    records: Iterable[Record], unmatched: UnmatchedSink | None = None
) -> Iterator[Event]:
    """Typed events, in input order; memory-carrying records that match nothing go to `unmatched`."""
    return _events(_gate(), records, unmatched)


def iter_segment_events(
    segments: Iterable[Segment], unmatched: UnmatchedSink | None = None, small: bool = False
) -> Iterator[Event]:
    """The events of the reader's segments: iter_events(iter_records(segments)), faster;
    `small` as for the reader (logmem.parse.read.iter_segments): the pure-Python literal finds."""
    gate = _gate(small)
    lines = gate.lines
    held: _Held | None = None  # an echoed command, until its continuation lines are in
    for seg in segments:
        if held is not None and seg.continuation != COMMAND:
            yield join_command(held.cmd, held.head, held.lines)
            yield from held.after
            held = None
        if seg.continuation:
            if seg.continuation == COMMAND:
                if held is not None:  # else its head was no command after all: it says nothing
                    held.lines.append((seg.line_no, seg.data))
            else:
                yield from _continuation(gate, seg)
            continue
        data = seg.data
        if b"sglang.launch_server" in data or b"sglang.bench_" in data:
            events = list(_events(gate, split_records(seg), unmatched))
            at = next((i for i, e in enumerate(events) if isinstance(e, LaunchCommand)), None)
            if at is None:
                yield from events
            else:
                yield from events[:at]
                cmd = events[at]
                assert isinstance(cmd, LaunchCommand)
                held = _Held(cmd, data, [], events[at + 1 :])
            continue
        if unmatched is not None and not _ALWAYS and len(data) <= _MASK_BYTES and b"\0" not in data:
            # One translate and one lookup for the shapes a server repeats all day.
            mask = data.translate(_DIGITS_TO_NUL)
            found = lines.get(mask)
            if found is None:
                found = _classify(gate, data)
                if len(lines) >= _CACHE_LIMIT:
                    lines.clear()
                lines[mask] = found
            kind = found[0]
            if kind == _SIMPLE:
                event = _simple(seg, found, unmatched)
                if event is not None:
                    yield event
                continue
            if (
                kind == _SKIP
                or (kind == _COUNT and unmatched.count_known(found[1]))
                or (kind == _LONG and _quick_long(gate, data, unmatched))
            ):
                continue
        elif _quick(gate, data, unmatched):
            continue
        yield from _events(gate, split_records(seg), unmatched)
    if held is not None:
        yield join_command(held.cmd, held.head, held.lines)
        yield from held.after


@mutable
class _Held:
    """A command line's event, its line's bytes, the lines that continue it and the events
    its line gave after it, held until the next segment that is not its continuation."""

    cmd: LaunchCommand
    head: bytes
    lines: list[tuple[int, bytes]]
    after: list[Event]


def _simple(seg: Segment, found: _Class, unmatched: UnmatchedSink) -> Event | None:
    """_events() of a segment that _classify found to be one plain record (split_records
    would make exactly this Record: ASCII without ESC or a second '[', so decoding is the
    identity and the prefix is at 0) whose message holds a literal: the candidate patterns
    and the prefix's group positions come from the mask's cache entry."""
    text = seg.data.decode("ascii")
    _, _, patterns, (ts0, ts1, tags0, tags1, body0) = found
    tags = text[tags0:tags1].strip()
    body = text[body0:]
    # At most _MASK_BYTES, far below MAX_SOURCE_CHARS: excerpt() would keep all of it.
    ts = text[ts0:ts1]
    record = Record(tags, rank_tags(tags), ts, body, Source(seg.path, seg.line_no, text, ts))
    for pat in patterns:
        m = pat.regex.search(body)
        if m is None:
            continue
        event = BUILDERS[pat.name](m, record)
        if event is not None:
            return event
    if _is_unmatched_memory(record):
        unmatched.add(record)
    return None


# What a continuation line may say and still be part of the message before it (an inner
# exception, an OOM sentence, a frame-like quote); any other event is a line of its own.
_MESSAGE_EVENTS = (ExceptionLine, TorchOOM, CaptureFailed, NotEnoughMemory, Imbalance)


def _continuation(gate: _Gate, seg: Segment) -> Iterator[Event]:
    """A line the reader took as the continuation of an exception's message."""
    for record in split_records(seg):
        hit = _match(gate, record)
        if hit is not None and not isinstance(hit[1], _MESSAGE_EVENTS):
            yield hit[1]
        else:
            yield MessageMore(rank=record.rank, source=record.source, text=record.message.strip())
        return  # the line's first record only: a prefix later in it starts another record


# A segment longer than this is not cached by its mask (its message is past SHAPE_BYTES
# anyway, or nearly): the cache's keys stay small, whatever the input.
_MASK_BYTES = SHAPE_BYTES + 200
# _classify's answer for a segment whose message is too long to be judged by its shape.
_LONG = 3
# _classify's answer for one plain record that holds a literal (see _simple).
_SIMPLE = 4
_DIGITS_TO_NUL = bytes.maketrans(b"0123456789", b"\0" * 10)
# The literals that hold a digit, masked: a mask that holds one may stand for segments that
# hold that literal and for segments that do not, so its candidate patterns are not kept.
_DIGIT_LITERALS: tuple[bytes, ...] = tuple(
    lit.encode().translate(_DIGITS_TO_NUL) for lit in LITERALS if any(c.isdigit() for c in lit)
)
_NO_SPANS = (0, 0, 0, 0, 0)
# (kind, shape key, candidate patterns, (ts start, ts end, tags start, tags end, body start))
_Class = tuple[int, bytes, tuple[LinePattern, ...], tuple[int, int, int, int, int]]


def _quick(gate: _Gate, data: bytes, unmatched: UnmatchedSink | None) -> bool:
    """Handle a segment without building its records, when that is certain to change
    nothing; False: the caller must take the records path.

    Certain means: the bytes are the one record split_records would make (ASCII, so
    decoding is the identity; no ESC, NUL or second '[', so no colour code to strip and no
    second prefix; an SGLang prefix at the start, so a rank and no text before it); its
    message holds no pattern's literal, so no pattern matches; and it carries no memory
    figure, or its shape already has all its examples (then it is only counted). A message
    of at most SHAPE_BYTES is judged by its shape (once per shape, see _Gate.shape_kind).
    iter_segment_events judges a short segment by its digit mask instead (_classify)."""
    if _ALWAYS or b"\0" in data:
        return False
    return _quick_long(gate, data, unmatched)


def _classify(gate: _Gate, data: bytes) -> _Class:
    """What to do with a segment of at most _MASK_BYTES without NUL: _SKIP, _COUNT (under
    its shape key), _SIMPLE (one plain record with a literal: _simple, with the candidate
    patterns and the prefix's group spans), _RECORDS (split_records), or _LONG (its message
    is past SHAPE_BYTES: _quick_long decides).

    The answer depends on the digits only through where they are, so it is the answer for
    every segment with the same digit mask: isascii, ESC and '[' ignore digits; the prefix
    regex reads them as ``\\d`` (ASCII), so its spans move with the mask only; the shape key
    masks them itself; no NUL was in the segment to be confused with a masked digit; and the
    literals the candidate patterns come from hold no digit (a mask that may hold one of
    those that do takes the records path)."""
    if not data.isascii() or b"\x1b" in data:
        return _RECORDS, b"", (), _NO_SPANS
    m = _PREFIX_BYTES.match(data)
    if m is None or data.find(b"[", m.end()) >= 0:
        return _RECORDS, b"", (), _NO_SPANS
    message = data[m.end() :]
    if len(message) > SHAPE_BYTES:
        return _LONG, b"", (), _NO_SPANS
    key = shape_key(message)
    kind = gate.shape_kind(key)
    if kind != _RECORDS:
        return kind, key, (), _NO_SPANS
    if any(lit in data.translate(_DIGITS_TO_NUL) for lit in _DIGIT_LITERALS):
        return _RECORDS, b"", (), _NO_SPANS
    spans = (*m.span("ts"), *m.span("tags"), m.end())
    return _SIMPLE, key, gate.patterns(message), spans


def _quick_long(gate: _Gate, data: bytes, unmatched: UnmatchedSink | None) -> bool:
    """_quick for a segment that is not judged by its mask (no NUL in it: checked)."""
    if not data.isascii() or b"\x1b" in data:
        return False
    m = _PREFIX_BYTES.match(data)
    if m is None or data.find(b"[", m.end()) >= 0:
        return False
    message = data[m.end() :]
    if unmatched is not None and len(message) <= SHAPE_BYTES:
        key = shape_key(message)
        kind = gate.shape_kind(key)
        return kind != _RECORDS and (kind == _SKIP or unmatched.count_known(key))
    if gate.hits(message):
        return False
    if unmatched is None or not ascii_memory_figure(message):
        return True
    return unmatched.count_known(shape_key(message))


def reader_summary() -> str:
    """Which matcher and which zstd support a run uses (for `logmem --version`)."""
    import os
    from importlib import metadata

    def version(dist: str) -> str | None:
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            return None

    from logmem.parse.patterns import KEYWORD_BYTES

    name = matcher_for(KEYWORD_BYTES).name
    forced = os.environ.get("LOGMEM_MATCHER")
    if name == "hyperscan":
        how = f"hyperscan {version('hyperscan') or ''}".strip()
    elif forced:
        how = f"{name} (LOGMEM_MATCHER={forced})"
    else:
        how = f"{name} (hyperscan is not installed or does not load: pure-Python reader)"
    zstd = version("zstandard")
    try:
        import zstandard  # noqa: F401
    except ImportError:
        zstd = None
    return (
        f"matcher: {how}\n"
        f"zstd: {'zstandard ' + zstd if zstd else 'not installed (.zst inputs cannot be read)'}"
    )
