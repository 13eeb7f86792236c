"""CRI container logs (logmem.parse.cri): P/F pieces joined per stream before matching.

The oracle: a real fixture wrapped into CRI records (fixtures/make_cri.py), its lines cut at
arbitrary byte offsets (mid-number, mid-UTF-8) and the two streams interleaved, gives the
analysis of the log itself, except that every line number is the physical line of the first
piece of the line it names, and the inputs' own byte and line counts.
"""

from __future__ import annotations

import json
import random
import re
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from conftest import FIXTURES
from logmem.api import read_log
from logmem.parse import cri, patterns
from logmem.parse.read import ReadStats, chunks_of, iter_segments, read_segments
from logmem.report.jsonout import render

sys.path.insert(0, str(FIXTURES))
import make_cri  # noqa: E402

SOURCES = ["001-", "023-", "021-", "003-"]
_NUMBER = re.compile(r"\d+(?:,\d{3})*")
TS = "2026-01-02T03:04:05.123456789Z"


def _fixture(prefix: str) -> Path:
    return next(p for p in sorted(FIXTURES.glob(f"{prefix}*.log")))


def _cuts(data: bytes, rng: random.Random, p_split: float) -> dict[int, list[int]]:
    """Cut offsets for some lines: anywhere, and inside a number or a multi-byte character."""
    cuts: dict[int, list[int]] = {}
    for i, line in enumerate(data.split(b"\n")):
        if len(line) < 2 or rng.random() >= p_split:
            continue
        inside = [m.start() + 1 for m in re.finditer(rb"\d\d|[\x80-\xff]{2}", line)]
        c = [rng.randrange(1, len(line)) for _ in range(rng.randint(1, 4))]
        if inside:
            c.append(rng.choice(inside))
        cuts[i] = c
    return cuts


# Keys whose numbers are line numbers (a list under one of them: each of its numbers).
_LINE_KEYS = {"line", "lines", "after", "again"}


def _agree(p: Any, c: Any, first: list[int], where: str, lines: bool = False) -> None:
    """`c` (the CRI file's JSON) is `p` (the log's), each line number n read as first[n - 1]."""
    assert type(p) is type(c), where
    if isinstance(p, dict):
        assert p.keys() == c.keys(), where
        for k in p:
            is_line = k in _LINE_KEYS or k.endswith("_line")
            _agree(p[k], c[k], first, f"{where}.{k}", is_line)
    elif isinstance(p, list):
        assert len(p) == len(c), where
        for i, (x, y) in enumerate(zip(p, c)):
            _agree(x, y, first, f"{where}[{i}]", lines)
    elif isinstance(p, int) and not isinstance(p, bool) and lines:
        assert c == first[p - 1], (where, p, c)
    elif isinstance(p, str) and p != c:
        # Prose quotes line numbers ("TP0, line 37"): the same words, the numbers mapped.
        assert _NUMBER.split(p) == _NUMBER.split(c), (where, p, c)
        for x, y in zip(_NUMBER.findall(p), _NUMBER.findall(c)):
            n, m = int(x.replace(",", "")), int(y.replace(",", ""))
            assert n == m or (1 <= n <= len(first) and first[n - 1] == m), (where, p, c)
    else:
        assert p == c, where


def _analysis(path: Path) -> dict[str, Any]:
    doc = json.loads(render(read_log(str(path))))
    for d in doc["inputs"]:
        d["path"] = "LOG"
    return doc


def _same_analysis(plain: Path, wrapped: Path, first: list[int]) -> dict[str, Any]:
    a, b = _analysis(plain), _analysis(wrapped)
    text = json.dumps(b).replace(json.dumps(str(wrapped))[1:-1], json.dumps(str(plain))[1:-1])
    b = json.loads(text)
    ins_a, ins_b = a.pop("inputs"), b.pop("inputs")
    _agree(a, b, first, "$")
    assert [i["cri"] is None for i in ins_a] == [True]
    return dict(ins_b[0])


# No shrinking: a failing example is printed as drawn (shrinking one takes minutes).
FAST = {
    "deadline": None,
    "suppress_health_check": [HealthCheck.too_slow],
    "phases": [Phase.explicit, Phase.reuse, Phase.generate],
}


@settings(max_examples=12, **FAST)
@given(
    source=st.sampled_from(SOURCES),
    seed=st.integers(0, 2**32 - 1),
    p_split=st.sampled_from([0.05, 0.3, 1.0]),
    p_stdout=st.sampled_from([0.0, 0.2, 0.5]),
    interleave=st.sampled_from([0.0, 0.5, 1.0]),
)
def test_wrapped_log_gives_the_logs_analysis(
    tmp_path_factory: pytest.TempPathFactory,
    source: str,
    seed: int,
    p_split: float,
    p_stdout: float,
    interleave: float,
) -> None:
    plain = _fixture(source)
    data = plain.read_bytes()
    rng = random.Random(seed)
    n = data.count(b"\n") + 1
    stdout = {i for i in range(n) if rng.random() < p_stdout}
    wrapped_bytes, first = make_cri.wrap(data, _cuts(data, rng, p_split), stdout, rng, interleave)
    wrapped = tmp_path_factory.mktemp("cri") / plain.name
    wrapped.write_bytes(wrapped_bytes)
    ins = _same_analysis(plain, wrapped, first)
    assert ins["cri"]["cut_lines"] == 0
    assert ins["lines"] == wrapped_bytes.count(b"\n")


def _segments(path: Path, chunk_bytes: int | None = None) -> list[tuple[int, bytes, bool]]:
    st_ = ReadStats(str(path))
    segs = iter_segments(
        str(path), patterns.KEYWORD_BYTES, st_, patterns.ONCE_BYTES, True, chunk_bytes
    )
    return [(s.line_no, s.data, s.continuation) for s in segs]


@settings(max_examples=25, **FAST)
@given(
    seed=st.integers(0, 2**32 - 1),
    chunk_bytes=st.sampled_from([1, 7, 63, 64, 65, 500, 4096]),
)
def test_segments_match_the_logs_at_any_chunk_size(
    tmp_path_factory: pytest.TempPathFactory, seed: int, chunk_bytes: int
) -> None:
    """The reader's segments: the log's, numbered at the first pieces, however the input is cut
    into chunks (the joiner holds a record's prefix and the reader's carry across them)."""
    plain = _fixture("023-")  # CR-separated bars, no final newline
    data = plain.read_bytes()
    rng = random.Random(seed)
    stdout = {i for i in range(60) if rng.random() < 0.3}
    wrapped_bytes, first = make_cri.wrap(data, _cuts(data, rng, 0.5), stdout, rng, 0.7)
    wrapped = tmp_path_factory.mktemp("cri") / "w.log"
    wrapped.write_bytes(wrapped_bytes)
    want = [(first[n - 1], d, c) for n, d, c in _segments(plain)]
    assert _segments(wrapped, chunk_bytes) == want


def test_the_constructed_fixture_is_001_with_its_lines_split() -> None:
    wrapped = FIXTURES / "cri-partial-lines-constructed.log"
    data, first = make_cri.partial_lines_001()
    assert wrapped.read_bytes() == data  # the fixture is what make_cri.py writes
    assert b" stdout P " in data and "█".encode()[:1] + b"\n" in data  # mid-UTF-8 cut
    ins = _same_analysis(_fixture("001-"), wrapped, first)
    assert ins["cri"] == {"joined_lines": 22, "cut_lines": 1, "first_cut_line": first[-1]}
    assert ins["lines"] == data.count(b"\n")


def _read(tmp_path: Path, data: bytes, chunk_bytes: int | None = None) -> tuple[str, ReadStats]:
    path = tmp_path / "x.log"
    path.write_bytes(data)
    st_ = ReadStats(str(path))
    return b"".join(chunks_of(str(path), st_, chunk_bytes)).decode(), st_


def test_an_unfinished_line_at_the_end_keeps_its_whole_words(tmp_path: Path) -> None:
    data = (
        f"{TS} stderr F [2026-01-02 03:04:05 TP0] Load weight begin. avail mem=78.50 GB\n"
        f"{TS} stderr P [2026-01-02 03:04:09 TP0] Load weight end. type=Qwen3ForCausalLM, "
        f"dtype=torch.bfloat16, avail mem=62.9\n"
    ).encode()
    for chunk_bytes in (None, 5):
        text, st_ = _read(tmp_path, data, chunk_bytes)
        # "62.9" may be half of 62.93: the cut drops the word it ends in.
        assert text.endswith("torch.bfloat16, avail \n") or text.endswith("bfloat16, avail ")
        assert "62" not in text
        assert (st_.cut_lines, st_.first_cut_line, st_.container) == (1, 2, "cri")
    # A record cut before its newline (the file cut mid-write) is cut the same way.
    text, st_ = _read(tmp_path, data[:-1])
    assert "62" not in text and st_.cut_lines == 1


def test_too_much_held_behind_an_open_line_cuts_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stderr line left open while stdout goes on: past HELD_BYTES it is cut, and its
    later pieces are dropped up to its F; stdout's lines are all kept, numbered."""
    monkeypatch.setattr(cri, "HELD_BYTES", 1000)
    lines = [f"{TS} stderr P bar 1.5 GB 2"]
    lines += [f"{TS} stdout F line {i}" for i in range(2, 60)]
    lines += [f"{TS} stderr P 5 more", f"{TS} stderr F end", f"{TS} stderr F after"]
    text, st_ = _read(tmp_path, ("\n".join(lines) + "\n").encode())
    assert text.split("\n")[0] == "bar 1.5 GB "  # the open word "2" dropped
    assert "more" not in text and "end" not in text
    assert text.split("\n")[1:] == [f"line {i}" for i in range(2, 60)] + ["after", ""]
    assert (st_.cut_lines, st_.first_cut_line) == (1, 1)


def test_line_numbers_are_the_first_pieces(tmp_path: Path) -> None:
    lines = [
        f"{TS} stderr P [2026-01-02 03:04:05 TP0] Load weight end. avail mem=7",  # 1
        f"{TS} stdout F [2026-01-02 03:04:05 TP1] Load weight end. avail mem=9.00 GB",  # 2
        f"{TS} stderr P 8.",  # 3
        "a line that is not a record: avail mem=2.00 GB",  # 4
        f"{TS} stderr F 50 GB, mem usage=1.00 GB.",  # 5
        f"{TS} stderr F [2026-01-02 03:04:06 TP0] Load weight begin. avail mem=1.00 GB",  # 6
    ]
    path = tmp_path / "x.log"
    path.write_text("\n".join(lines) + "\n")
    got = [(ln, d.decode()) for ln, d, _ in _segments(path)]
    assert got == [
        (1, "[2026-01-02 03:04:05 TP0] Load weight end. avail mem=78.50 GB, mem usage=1.00 GB."),
        (2, "[2026-01-02 03:04:05 TP1] Load weight end. avail mem=9.00 GB"),
        (4, "a line that is not a record: avail mem=2.00 GB"),
        (6, "[2026-01-02 03:04:06 TP0] Load weight begin. avail mem=1.00 GB"),
    ]


def test_empty_records_and_timestamp_only_lines(tmp_path: Path) -> None:
    """A record of an empty line (`F` then the newline, with or without its space) is an empty
    line; a file whose lines carry only a timestamp (docker --timestamps) is not CRI."""
    text, st_ = _read(tmp_path, f"{TS} stdout F\n{TS} stderr F \n{TS} stdout F x\n".encode())
    assert (text, st_.container) == ("\n\nx\n", "cri")
    docker = f"{TS} [2026-01-02 03:04:05 TP0] Load weight begin. avail mem=1.00 GB\n" * 20
    text, st_ = _read(tmp_path, docker.encode())
    assert (text, st_.container) == (docker, None)


def test_detection_looks_at_the_first_lines_only() -> None:
    rec = f"{TS} stderr F [2026-01-02 03:04:05] x\n".encode()
    plain = b"[2026-01-02 03:04:05] plain line\n"
    assert cri.is_cri(rec * 3)
    assert cri.is_cri(b"some header\n" + rec * 3)  # a stray first line
    assert not cri.is_cri(plain * 10 + rec)  # one record among plain lines
    assert not cri.is_cri(b"")
    assert cri.is_cri(rec[:-1], whole=True)  # one record, no newline
    assert not cri.is_cri(rec[:40])  # a record's start: too short to tell
    # Only DETECT_LINES lines are looked at, however long the file.
    assert not cri.is_cri(plain * cri.DETECT_LINES + rec * 1000)


def test_a_plain_file_passes_through_untouched(tmp_path: Path) -> None:
    path = _fixture("001-")
    st_ = ReadStats(str(path))
    chunks = chunks_of(str(path), st_, 1000)
    assert b"".join(chunks) == path.read_bytes()
    assert chunks.cri is False and st_.container is None


@pytest.mark.parametrize("ahead", ["0", "1"])
def test_read_ahead_gives_the_same_segments(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ahead: str
) -> None:
    """The read-ahead child (and its keyword scanner) joins the same way: same segments, same
    line numbers, same stats."""
    monkeypatch.setenv("LOGMEM_READ_AHEAD", ahead)
    wrapped = FIXTURES / "cri-partial-lines-constructed.log"
    stats: list[ReadStats] = []
    segs = list(read_segments([str(wrapped)], patterns.KEYWORD_BYTES, stats, patterns.ONCE_BYTES))
    want = _segments(wrapped)
    assert [(s.line_no, s.data) for s in segs] == [(n, d) for n, d, c in want if not c]
    assert (stats[0].container, stats[0].joined_lines, stats[0].cut_lines) == ("cri", 22, 1)


def test_alternating_pieces_are_read_in_linear_time(tmp_path: Path) -> None:
    """stderr P / F pairs with no stdout P anywhere: each return to nothing-open looks for the
    next P record, and a needle that is never found must not be searched for to the end
    again each time (that was quadratic: minutes for these 2 MiB)."""
    pair = f"{TS} stderr P GB 1.5 \n{TS} stderr F 0 x\n".encode()
    data = pair * ((2 << 20) // len(pair))
    t0 = time.process_time()
    text, st_ = _read(tmp_path, data)
    assert time.process_time() - t0 < 3.0
    assert text.count("GB 1.5 0 x\n") == data.count(b"\n") // 2 == st_.joined_lines


def test_a_last_line_that_is_no_record_is_read_as_it_is(tmp_path: Path) -> None:
    data = f"{TS} stderr F a 1.5 GB\n{TS} stderr F b\nplain tail avail mem=2.25".encode()
    text, st_ = _read(tmp_path, data, 3)
    assert text == "a 1.5 GB\nb\nplain tail avail mem=2.25"  # not a record: nothing cut
    assert (st_.cut_lines, st_.container) == (0, "cri")
