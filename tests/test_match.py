"""Gated matching: a record runs only the patterns whose literal it holds, with the same result
as running the whole table; segments that can only be unmatched memory lines are counted by
shape without records, with the same summary as the records path."""

from __future__ import annotations

import importlib.util
import random
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from conftest import REPO, bench_module, corpus_logs, fixture_logs
from logmem.parse.builders import BUILDERS
from logmem.parse.events import Event
from logmem.parse.lines import Record, Source, iter_records
from logmem.parse.match import LITERALS, iter_events, iter_segment_events, match_record
from logmem.parse.patterns import KEYWORD_BYTES, MEMORY_FIGURE, PATTERNS
from logmem.parse.read import Segment, read_segments
from logmem.parse.unmatched import (
    EXAMPLES_PER_SHAPE,
    MAX_SHAPES,
    UnmatchedCounter,
    has_memory_figure,
    shape_key,
)


def ungated(record: Record) -> tuple[str, Event] | None:
    """The table tried in order, every pattern on every record: what gating must reproduce."""
    for pat in PATTERNS:
        m = pat.regex.search(record.message)
        if m is None:
            continue
        event = BUILDERS[pat.name](m, record)
        if event is not None:
            return pat.name, event
    return None


def _record(message: str, rank: str | None = "TP0") -> Record:
    return Record(rank, (), None, message, Source("t.log", 1, message))


@cache
def real_logs() -> tuple[Path, ...]:
    logs = tuple(corpus_logs()) + tuple(fixture_logs())
    # The fixtures are in the repo, the corpus beside it: without both this test means little.
    assert len(logs) >= 40, f"expected the corpus and the fixtures, found {len(logs)} logs"
    return logs


@cache
def real_records() -> tuple[Record, ...]:
    """Every line of every real log, keyword or not (the gate must hold on any text)."""
    segs = []
    for path in real_logs():
        data = path.read_bytes().replace(b"\r", b"\n")
        segs += [Segment(str(path), i, line) for i, line in enumerate(data.split(b"\n")) if line]
    return tuple(iter_records(segs))


def test_gated_matching_equals_the_whole_table_on_every_real_record() -> None:
    records = real_records()
    assert len(records) > 40_000
    for r in records:
        got, want = match_record(r), ungated(r)
        assert got == want, r.source
        if got is not None and want is not None:
            assert got[1].source == want[1].source


def test_every_pattern_declares_the_literals_its_matches_need() -> None:
    for pat in PATTERNS:
        assert pat.needs, f"{pat.name} declares no literal: it would run on every record"
        assert any(lit in pat.example for lit in pat.needs), pat.name


def test_a_literal_of_a_pattern_is_in_every_real_text_it_matches() -> None:
    for r in real_records():
        for pat in PATTERNS:
            if pat.regex.search(r.message):
                assert any(lit in r.message for lit in pat.needs), (pat.name, r.source)


# Text made of what the patterns look for, cut and glued at random places.
_PIECES = [p.example for p in PATTERNS] + list(LITERALS) + ["1", "0.5 GB", " ", "Error: ", "["]


@st.composite
def _spliced(draw: st.DrawFn) -> str:
    parts = draw(st.lists(st.sampled_from(_PIECES), min_size=1, max_size=4))
    out = []
    for part in parts:
        a = draw(st.integers(0, len(part)))
        b = draw(st.integers(a, len(part)))
        out.append(part[a:b] if draw(st.booleans()) else part)
    return draw(st.sampled_from(["", " ", "RuntimeError: ", "  "])) + "".join(out)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_spliced())
def test_gated_matching_equals_the_whole_table_on_spliced_text(text: str) -> None:
    r = _record(text)
    assert match_record(r) == ungated(r)
    for pat in PATTERNS:
        if pat.regex.search(text):
            assert any(lit in text for lit in pat.needs), pat.name


def test_patterns_compile_only_when_a_record_needs_them() -> None:
    """Lazy compilation: a command meets only some shapes, so it compiles only their regexes
    (run in a fresh interpreter, where nothing has been matched yet)."""
    import subprocess
    import sys

    code = (
        "from logmem.parse.match import match_record\n"
        "from logmem.parse.lines import Record, Source\n"
        "from logmem.parse.patterns import PATTERNS\n"
        "t = 'Load weight begin. avail mem=21.63 GB'\n"
        "print(match_record(Record('TP0', (), None, t, Source('x', 1, t)))[0])\n"
        "print(sorted(p.name for p in PATTERNS if 'regex' in vars(p)))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["load_begin", "['load_begin']"]


# --- the quick path for segments, against the records path --------------------------------


def _both(segments: Iterable[Segment]) -> tuple[list[tuple[Event, Source]], object]:
    segs = list(segments)
    quick, slow = UnmatchedCounter(), UnmatchedCounter()
    a = [(e, e.source) for e in iter_segment_events(segs, quick)]
    b = [(e, e.source) for e in iter_events(iter_records(segs), slow)]
    assert a == b
    assert quick.summary() == slow.summary()
    return a, quick.summary()


def test_quick_path_equals_records_path_on_real_logs() -> None:
    paths = [str(p) for p in real_logs()]
    events, _ = _both(read_segments(paths, KEYWORD_BYTES))
    assert len(events) > 5_000


def test_quick_path_equals_records_path_on_the_bench_mix(tmp_path: Path) -> None:
    path = tmp_path / "mix.log"
    # The densest mix the bench runs, 2 MiB of it: hundreds of unmatched memory lines.
    bench_module("gen").write_mix(path, 2 << 20, kw_per_gib=370_000)
    events, summary = _both(read_segments([str(path)], KEYWORD_BYTES))
    assert summary.total > 500  # type: ignore[attr-defined]
    assert len(summary.examples) <= EXAMPLES_PER_SHAPE * len(summary.shapes)  # type: ignore[attr-defined]
    assert {type(e).__name__ for e, _ in events} >= {"ServerArgs", "TracebackStart", "Ready"}


_BYTES = st.sampled_from(
    [b"[", b"]", b" ", b"\x1b", b"\0", b"m", b"7", b"0.5", b" GB", b"avail mem=", b"TP1",
     b"\xc3\xa9", b"\xff", b"Error", b"Load weight begin. ", b"Capture cuda graph end.", b"|"]
)  # fmt: skip
_PREFIXES = st.sampled_from([b"[2026-01-01 00:00:00 TP0] ", b"[2026-01-01 00:00:00] ", b"", b"x "])


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(_PREFIXES, st.lists(_BYTES, max_size=12)), min_size=1, max_size=20))
def test_quick_path_equals_records_path_on_any_bytes(
    parts: list[tuple[bytes, list[bytes]]],
) -> None:
    segs = [Segment("h.log", i + 1, p + b"".join(body)) for i, (p, body) in enumerate(parts)]
    _both(segs)


# The quick path judges a short segment once per digit mask (digits as NUL): segments that
# differ in their digits only must still come out as the records path makes them, whatever
# the digits say (DSv4 is a literal with a digit; a rank, a figure and a timestamp move).
_TEMPLATES = [
    b"[2026-01-01 00:00:0# TP#] DSv# memory calculation: bytes_per_full_token=#.#, "
    b"available_bytes=#.# GB, full_token=#",
    b"[2026-01-01 00:00:0# TP#] Decode batch. #running-req: #, mem usage=#.# GB, #queue-req: #",
    b"[2026-01-01 00:00:0# TP#] Load weight begin. avail mem=#.# GB",
    b"[2026-01-01 00:00:0# TP#] HiCache host pool: #.# GB used of #.# GB, # pages",
    b"[2026-01-01 00:00:0# TP#] Prefill batch, #new-seq: #, #new-token: #",
    b"[0#:00:00 TP#] Capture cuda graph end. Time elapsed: #.# s. avail mem=#.# GB.",
    b"[2026-01-01 00:00:0# DP# TP#] KV cache pool is full. #retracted_reqs: #",
    b"[2026-01-01 00:00:0#] Exception in callback loop#._read()",
]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(_TEMPLATES), st.lists(st.sampled_from("0123456789"), min_size=12)
        ),
        min_size=1,
        max_size=30,
    )
)
def test_segments_of_one_digit_mask_are_judged_by_their_own_digits(
    parts: list[tuple[bytes, list[str]]],
) -> None:
    segs = []
    for i, (template, digits) in enumerate(parts):
        pieces = template.split(b"#")
        data = pieces[0] + b"".join(d.encode() + p for d, p in zip(digits, pieces[1:]))
        segs.append(Segment("m.log", i + 1, data))
    _both(segs)


def test_a_literal_with_a_digit_is_found_under_a_shared_mask() -> None:
    line = b"[2026-01-01 00:00:00 TP0] DSv%d memory calculation: bytes_per_full_token=1.5, "
    line += b"available_bytes=87.26 GB, full_token=5"
    segs = [Segment("m.log", i + 1, line % d) for i, d in enumerate((5, 4, 5, 4))]
    events, _ = _both(segs)
    assert [type(e).__name__ for e, _ in events] == ["DSv4Plan", "DSv4Plan"]


# --- the summary ---------------------------------------------------------------------------


def test_shape_masks_numbers_and_keeps_the_rest() -> None:
    a = shape_key(b"HiCache host pool: 45.21 GB used of 100.00 GB, 1234 pages")
    b = shape_key(b"HiCache host pool: 1.5 GB used of 7 GB, 9 pages")
    assert a == b == b"HiCache host pool: \0 GB used of \0 GB, \0 pages"
    assert shape_key(b"a1b") != shape_key(b"ab1") != shape_key(b"ab")


def test_summary_is_bounded_at_any_density() -> None:
    counter = UnmatchedCounter()
    rng = random.Random(15)
    n = 0
    for word in range(MAX_SHAPES + 50):
        for _ in range(rng.randrange(1, 8)):
            n += 1
            text = f"pool{'x' * (word % 7)}-{chr(97 + word % 26) * (word // 26 + 1)} {n}.5 GB"
            counter.add(_record(text))
    s = counter.summary()
    assert s.total == n
    assert len(s.shapes) == MAX_SHAPES
    assert s.other_lines == n - sum(x.count for x in s.shapes) > 0
    assert all(len(x.examples) <= EXAMPLES_PER_SHAPE for x in s.shapes)
    assert [u.source for u in s.examples] == sorted(
        (u.source for u in s.examples), key=lambda src: src.line_no
    )


def test_a_long_unmatched_line_is_kept_cut() -> None:
    counter = UnmatchedCounter()
    text = "avail mem=1.00 GB " + "y" * 100_000
    counter.add(_record(text))
    (u,) = counter.summary().examples
    assert len(u.source.text) == 1000
    assert len(counter.summary().shapes[0].shape) <= 300


# Letters of the units in both cases, and the Unicode ones that fold to them (long s, Kelvin, dotted I).
_FIGURE_TEXT = st.lists(
    st.sampled_from(list("0123456789. GgBbIiMm_avilmeusſKk\u0130\u212a") + ["GB", "mem usage"]),
    max_size=30,
).map("".join)


@settings(max_examples=500, deadline=None)
@given(_FIGURE_TEXT)
@example("0M\u0130B")  # the regex takes the dotted capital I for the i of MiB
def test_memory_figure_prefilter_agrees_with_the_regex(text: str) -> None:
    assert has_memory_figure(text) == (MEMORY_FIGURE.search(text) is not None)


@pytest.mark.parametrize(
    "text", ["avail mem=3.00 GB", "12.5 gib", "540.00 MiB", "mem uſage", "AVAIL_MEM"]
)
def test_memory_figure_prefilter_finds_every_unit(text: str) -> None:
    assert has_memory_figure(text)


# --- what the commands say -------------------------------------------------------------------


def _many_unmatched(tmp_path: Path, n: int) -> Path:
    startup = (REPO / "fixtures" / "001-qwq32b-tp4-l4-docs.log").read_bytes()
    extra = b"".join(
        b"[2025-03-08 12:30:%02d TP1] HiCache host pool: %d.5 GB used\n" % (i % 60, i)
        for i in range(n)
    )
    path = tmp_path / "many.log"
    path.write_bytes(startup + extra)
    return path


def test_json_counts_every_unmatched_line_and_lists_the_first_of_each_shape(
    tmp_path: Path,
) -> None:
    import json

    from click.testing import CliRunner

    from logmem.cli.main import cli

    path = _many_unmatched(tmp_path, 50)
    done = CliRunner().invoke(cli, ["-q", "analyze", "-f", "json", str(path)])
    assert done.exit_code == 0, done.output
    doc = json.loads(done.output)
    first = 89  # the fixture's lines, then the added ones
    assert doc["unmatched_memory"]["total"] == 50
    (shape,) = doc["unmatched_memory"]["shapes"]
    assert shape["shape"] == "HiCache host pool: N GB used"
    assert shape["count"] == 50
    lines = [first + 1 + i for i in range(EXAMPLES_PER_SHAPE)]
    assert [e["line"] for e in shape["examples"]] == lines
    assert [u["line"] for u in doc["unmatched_memory_lines"]] == lines


def test_lines_still_lists_every_unmatched_line(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from logmem.cli.main import cli

    path = _many_unmatched(tmp_path, 50)
    done = CliRunner().invoke(cli, ["-q", "lines", str(path)])
    assert done.exit_code == 0, done.output
    assert "; 50 lines carry a memory figure but match no pattern:" in done.output
    listed = [ln for ln in done.output.splitlines() if "HiCache host pool" in ln]
    assert len(listed) == 50
    assert listed[-1].split()[0] == str(89 + 50)


# --- judging a short record by its shape ------------------------------------------------------

_ASCII_PIECES = st.sampled_from(
    [lit.encode() for lit in LITERALS]
    + [b"1", b"42", b"0.5", b"1.", b".", b" ", b"  ", b"GB", b"gb", b"MiB", b"GiB", b"mb", b"_",
       b"x", b"avail", b" mem", b"_mem", b"mem usage", b"DSv4", b"DSv5", b"4"]
)  # fmt: skip


@settings(max_examples=1500, deadline=None)
@given(st.lists(_ASCII_PIECES, max_size=12).map(b"".join))
def test_a_shape_says_what_every_message_of_that_shape_is(message: bytes) -> None:
    """The quick path judges a short message by its shape key, once per shape: that must be
    what the message itself is (a literal may show up in the key only, which only costs the
    records path)."""
    from logmem.parse import match as m
    from logmem.parse.unmatched import ascii_memory_figure, shape_memory_figure

    key = shape_key(message)
    kind = m._Gate(m.matcher_for(m.LITERAL_BYTES)).shape_kind(key)
    has_literal = any(lit.encode() in message for lit in LITERALS)
    if has_literal:
        assert kind == m._RECORDS
    if kind != m._RECORDS:
        assert shape_memory_figure(key) == ascii_memory_figure(message)
        assert (kind == m._COUNT) == ascii_memory_figure(message)


def _cursor_segments(m: Any, buf: bytes) -> list[int]:
    """Where each segment a cursor reports starts, walked as the reader walks it."""
    cur, pos, out = m.cursor(buf, 0, len(buf)), 0, []
    while (p := cur.next_hit(pos)) >= 0:
        ends = (buf.find(b"\n", p), buf.find(b"\r", p), len(buf))
        out.append(max(buf.rfind(b"\n", pos, p), buf.rfind(b"\r", pos, p), pos - 1) + 1)
        pos = min(x for x in ends if x >= 0) + 1
    return out


@pytest.mark.skipif(importlib.util.find_spec("hyperscan") is None, reason="no hyperscan")
@pytest.mark.parametrize("batch", [1, 2, 3, 4096])
def test_hyperscan_cursor_refills_give_the_python_cursors_hits(
    batch: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hyperscan cursor collects a chunk's occurrences BATCH at a time; whatever the
    batch, it reports the segments the pure-Python cursor reports."""
    from logmem.parse import matchers

    monkeypatch.setattr(matchers._HyperscanCursor, "BATCH", batch)
    rng = random.Random(15)
    pieces = [b"avail mem=1.5 GB", b"GB", b"Init", b"\n", b"\r", b" x ", b"mem usage=", b"GiB"]
    literals = matchers._literals_of(KEYWORD_BYTES) or []
    hs, py = matchers._HyperscanMatcher(literals), matchers._FindMatcher(literals)
    for _ in range(40):
        buf = b"".join(rng.choice(pieces) for _ in range(rng.randrange(1, 300)))
        assert _cursor_segments(hs, buf) == _cursor_segments(py, buf)


def test_python_cursor_probes_and_class_bytes_are_apart() -> None:
    """A byte that is both a literal's probe and a class byte would be mapped to one code
    only, and the literals found through the other would be missed."""
    from logmem.parse import matchers

    m = matchers._FindMatcher(matchers._literals_of(KEYWORD_BYTES) or [])
    assert not set(m.by_rare) & (matchers._CLASS_FIRST | matchers._CLASS_NEXT)
    assert not set(matchers._RARE) & (matchers._CLASS_FIRST | matchers._CLASS_NEXT)
