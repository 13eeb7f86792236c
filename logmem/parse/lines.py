"""Lines stage: raw segments -> records with timestamp, rank tags and message.

SGLang's prefix is ``[date time TAGS] `` (``[time TAGS] `` before Nov 2024); it is
searched anywhere in a segment, so docker/kubectl/compose prefixes and records glued
after a tqdm render both work. One segment can hold several records.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Iterator
from dataclasses import field

import regex

from logmem.frozen import frozen
from logmem.parse.lazy import lazy
from logmem.parse.read import Segment

# ESC may be lost in pastes, leaving "[32m": strip both forms. Bounded repeats keep it linear.
_ANSI = lazy(r"\x1b\[[0-9;?]{0,20}[A-Za-z]|\[[0-9;]{1,20}m")
PREFIX = lazy(
    r"\[(?P<ts>\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}|\d{2}:\d{2}:\d{2})"
    r"(?P<tags>(?: [A-Z][A-Z_]{0,30}\d{1,6}){0,12})\] ?",
    regex.ASCII,
)
_TAG = lazy(r"([A-Z][A-Z_]*?)(\d+)", regex.ASCII)
# sglang 0.2.9 (srt/model_executor/model_runner.py, managers/tp_worker.py): the logger's format is
# "%(message)s" (srt/server.py basicConfig), and each GPU's lines start "[gpu={gpu_id}] "
# ("[gpu_id=N] " in v0.1's summary): the GPU is that record's rank (tag GPU), not text.
_GPU_TAG = lazy(r"\[gpu(?:_id)?=(\d{1,4})\] ", regex.ASCII)


# What a record keeps of its own text: every report quotes far less (an OOM message is ~600
# characters; server_args lines, 10-40 KB, are parsed, never quoted). A longer record keeps
# its head and says how much was dropped, so 200 unmatched 4 MiB lines cost 1 MB, not 3 GB.
MAX_SOURCE_CHARS = 4096


@frozen
class Source:
    """Where a record came from: file, 1-based line number, and the record's text (an
    excerpt of at most MAX_SOURCE_CHARS, ending with a note of what was cut; see excerpt()).
    ``ts`` is the timestamp of the SGLang prefix the text starts with, as printed: the lines
    stage reads it once, so the model dates a record without matching the prefix again
    (model.clock; a Source made without it is dated from its text)."""

    path: str
    line_no: int
    text: str
    ts: str | None = field(default=None, compare=False, repr=False)

    def __str__(self) -> str:
        return f"{self.path}:{self.line_no}"


def excerpt(path: str, line_no: int, text: str, ts: str | None = None) -> Source:
    """A Source that keeps at most MAX_SOURCE_CHARS of `text`."""
    if len(text) > MAX_SOURCE_CHARS:
        cut = len(text) - MAX_SOURCE_CHARS
        text = f"{text[:MAX_SOURCE_CHARS]} [... {cut:,} more characters not kept]"
    return Source(path, line_no, text, ts)


@frozen
class Record:
    """One log record. ``rank`` is None when the text had no SGLang prefix at all,
    "" for a prefix without rank tags (single GPU or the main process)."""

    rank: str | None
    tags: tuple[tuple[str, int], ...]
    timestamp: str | None
    message: str
    source: Source = field(compare=False, repr=False)


# Ranks repeat on every line: each distinct rank string is parsed once (the result is immutable).
# Room for every rank of a big launch: at 4,096 entries, 8,192 interleaved ranks missed on every
# line (0.38 s against 0.01 at 2,048 ranks); a hostile log's distinct strings stay bounded.
@functools.lru_cache(maxsize=1 << 16)
def rank_tags(rank: str) -> tuple[tuple[str, int], ...]:
    """Parse "DP0 TP3 EP3" into (("DP", 0), ("TP", 3), ("EP", 3)); unknown tags are kept."""
    out = []
    for tok in rank.split():
        m = _TAG.fullmatch(tok)
        if m:
            out.append((m.group(1), int(m.group(2))))
    return tuple(out)


# What every _ANSI match holds besides ESC: a digit or ';' right before an 'm'. Most records
# hold an 'm' ("mem usage") but not this, and the search costs half of the substitution.
_COLOUR_END = re.compile(r"[0-9;]m")


def decode(data: bytes) -> str:
    text = data.decode("utf-8", errors="replace")
    if "\x1b" in text or _COLOUR_END.search(text) is not None:
        text = _ANSI.sub("", text)
    return text.replace("\x00", "")


def split_records(seg: Segment) -> Iterator[Record]:
    """Cut a segment into records at every SGLang prefix."""
    text = decode(seg.data)
    matches = list(PREFIX.finditer(text))
    if not matches:
        if text.strip():
            body = strip_wrapper(text)
            g = _GPU_TAG.match(body)
            src = excerpt(seg.path, seg.line_no, text)
            if g is None:
                yield Record(None, (), None, body, src)
            else:
                yield Record(
                    f"GPU{g.group(1)}", (("GPU", int(g.group(1))),), None, body[g.end() :], src
                )
        return
    head = text[: matches[0].start()]
    # Text before the first prefix is a tqdm render or a foreign prefix (docker, kubectl).
    if head.strip() and not _is_wrapper_prefix(head):
        yield Record(None, (), None, strip_wrapper(head), excerpt(seg.path, seg.line_no, head))
    for i, m in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(text)
        body = text[m.end() : end]
        tags = m.group("tags").strip()
        raw = text[m.start() : end]
        ts = m.group("ts")
        yield Record(tags, rank_tags(tags), ts, body, excerpt(seg.path, seg.line_no, raw, ts))


# What log tooling puts in front of every physical line: docker --timestamps and
# `kubectl logs --timestamps` (RFC 3339, Z or an offset), a container runtime's own files
# (CRI, /var/log/pods: `TIME stdout F `), compose `name | `, `kubectl logs --prefix`
# (`[pod/NAME/CONTAINER] `), shippers (`pod INFO `), journald / syslog (`Dec  3 22:00:01 host
# python3[4242]: `) and `srun --label` (`3: `). SGLang's own lines are found anywhere in a
# segment, but a bare tqdm render or a traceback line only after this is taken off.
_WRAPPER_PART = (
    r"(?:\d{4}-\d{2}-\d{2}T[\d:.]{8,20}(?:Z|[+-]\d{2}:?\d{2})?\s{0,4}"
    r"(?:(?:stdout|stderr)\s[FP]\s)?"
    r"|[\w.-]{1,80}\s{0,40}\|\s{0,4}"
    r"|\[pod/[\w.-]{1,253}/[\w.-]{1,63}\]\s{1,4}|[\w.-]{1,80}\s{1,4}(?:INFO|WARNING|ERROR|DEBUG)\s{1,4}"
    r"|[A-Z][a-z]{2}\s[\s\d]\d\s\d{2}:\d{2}:\d{2}\s[\w.-]{1,253}\s[\w./-]{1,80}(?:\[\d{1,10}\])?:\s"
    r"|\d{1,5}:\s)"
)
_WRAPPER = lazy(rf"^\s{{0,40}}{_WRAPPER_PART}{{0,4}}\s{{0,40}}$")
_WRAPPER_LEAD = lazy(rf"^\s{{0,40}}{_WRAPPER_PART}{{1,4}}")


def _is_wrapper_prefix(head: str) -> bool:
    """Docker --timestamps, compose `name | ` or shipper prefixes carry nothing of ours."""
    return len(head) < 200 and _WRAPPER.match(head) is not None


def strip_wrapper(text: str) -> str:
    """Text without an SGLang prefix, minus the container tooling's own prefix: under docker or
    compose, traceback lines and bare tqdm renders must still start where the patterns expect."""
    m = _WRAPPER_LEAD.match(text)
    return text[m.end() :] if m else text


def iter_records(segments: Iterable[Segment]) -> Iterator[Record]:
    for seg in segments:
        yield from split_records(seg)
