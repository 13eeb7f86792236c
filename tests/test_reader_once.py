"""The reader's two additions to keyword segments: the lines that continue an exception's
message, and the once-literals (the first "Decode batch" / "Prefill batch" of each file and
each start-up), checked against a naive line split with all three matchers."""

from __future__ import annotations

from pathlib import Path

import pytest
import regex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import MATCHERS
from logmem.parse import read as rd
from logmem.parse.patterns import KEYWORD_BYTES, ONCE_BYTES


def segments(path: Path) -> list[tuple[int, bytes, bool]]:
    return [
        (s.line_no, s.data, s.continuation)
        for s in rd.iter_segments(str(path), KEYWORD_BYTES, None, ONCE_BYTES, continuations=True)
    ]


_STOP = regex.compile(
    rb"^(?:[ \t]*$|[ \t]*\[|Traceback \(most recent|During handling of|The above exception"
    rb"|[ \t]{1,8}File \"|(?:INFO|WARNING|ERROR|DEBUG|CRITICAL|FAIL):|[=*#~_-]{3,}[ \t]*$"
    rb"|[.EFsx]{1,3}[ \t]*$)"
)
_HEAD = regex.compile(
    rb"^[ \t]{0,8}(?:[a-z_][a-z0-9_]{0,40}\.){0,5}(?:[A-Z][A-Za-z0-9_]{0,60})?(?:Error|Exception)"
    rb"(?::|[ \t]*$)"
)


def oracle(data: bytes) -> list[tuple[int, bytes, bool]]:
    """A naive reading of the same rules: keyword lines; after an exception line, up to
    MAX_CONTINUATION_LINES following lines up to a stop line; the first once-line of the
    file and after each summary line."""
    out: list[tuple[int, bytes, bool]] = []
    lines = data.split(b"\n")
    armed = True
    i = 0
    while i < len(lines):
        line = lines[i]
        if line == b"" and i == len(lines) - 1:
            break
        once = armed and any(x in line for x in ONCE_BYTES)
        if KEYWORD_BYTES.search(line) or once:
            out.append((i + 1, line, False))
            if once:
                armed = False
            if b"max_total_num_tokens=" in line:
                armed = True
            if (b"Error" in line or b"Exception" in line) and _HEAD.match(line):
                for k in range(1, rd.MAX_CONTINUATION_LINES + 1):
                    if i + k >= len(lines) or (i + k == len(lines) - 1 and lines[i + k] == b""):
                        break
                    nxt = lines[i + k]
                    if _STOP.match(nxt):
                        break
                    out.append((i + k + 1, nxt, True))
                else:
                    k = rd.MAX_CONTINUATION_LINES + 1
                i += k
                continue
        i += 1
    return out


EXCEPTION = [
    b"[2026-04-14 09:41:37 TP3] Scheduler hit an exception: Traceback (most recent call last):",
    b'  File "/sgl/python/sglang/srt/managers/scheduler.py", line 1052, in event_loop_overlap',
    b"    batch_result = self.run_batch(batch)",
    b"torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:3356, unhandled cuda error",
    b"ncclUnhandledCudaError: Call to CUDA function failed.",
    b"Last error:",
    b"Cuda failure 'out of memory'",
    b"",
    b"[2026-04-14 09:41:37] Received sigquit from a child process. It usually means the child failed.",
]


@pytest.mark.parametrize("matcher", MATCHERS, indirect=True)
def test_continuation_lines_follow_their_exception_line(matcher: str, tmp_path: Path) -> None:
    p = tmp_path / "x.log"
    p.write_bytes(b"\n".join(EXCEPTION) + b"\n")
    got = segments(p)
    cont = [(n, d) for n, d, c in got if c]
    assert cont == [(5, EXCEPTION[4]), (6, EXCEPTION[5]), (7, EXCEPTION[6])]
    assert got == oracle(p.read_bytes())


@pytest.mark.parametrize("matcher", MATCHERS, indirect=True)
def test_once_lines_are_the_first_of_a_file_and_after_each_summary(
    matcher: str, tmp_path: Path
) -> None:
    decode = b"[2026-04-14 09:00:41 TP0] Decode batch. #running-req: 1, #token: 44, #queue-req: 0"
    summary = b"[2026-04-14 09:00:32 TP0] max_total_num_tokens=843202, chunked_prefill_size=8192"
    data = b"\n".join([decode] * 3 + [summary] + [decode] * 4 + [summary, decode]) + b"\n"
    p = tmp_path / "x.log"
    p.write_bytes(data)
    once = [n for n, d, _ in segments(p) if b"Decode batch" in d]
    assert once == [1, 5, 10]
    assert segments(p) == oracle(data)


_PIECES = [
    b"Decode batch. #token: 3",
    b"Prefill batch. #new-seq: 1",
    b"max_total_num_tokens=8",
    b"RuntimeError: boom",
    b"Exception",
    b"ValueError:",
    b'  File "/a.py", line 1, in f',
    b"Last error:",
    b"[2026-01-01 00:00:00 TP0] ",
    b"avail mem=1.00 GB",
    b"====",
    b"E",
    b"\n",
    b" ",
    b"x",
]


@pytest.mark.parametrize("matcher", MATCHERS, indirect=True)
@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(parts=st.lists(st.sampled_from(_PIECES), max_size=60))
def test_reader_equals_the_naive_reading(matcher: str, parts: list[bytes], tmp_path: Path) -> None:
    """Without \\r, in one chunk, ending with a newline (continuations are not joined across
    chunks, nor into a last line without one)."""
    data = b"." + b"".join(parts) + b"\n"
    p = tmp_path / "x.log"
    p.write_bytes(data)
    assert segments(p) == oracle(data)


def test_summaries_without_a_once_line_are_searched_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every rank's summary re-arms the once-literals; with no "Decode batch" anywhere, each
    # re-arm used to search to the chunk's end again: quadratic in the number of ranks.
    lines = [
        f"[2026-04-14 16:08:49 TP{i}] max_total_num_tokens=1000, context_len=4096"
        for i in range(2000)
    ]
    path = tmp_path / "ranks.log"
    path.write_text("\n".join(lines) + "\n")
    searched = [0]
    real = rd.Once.find

    def find(self: rd.Once, buf: bytes, lo: int, hi: int) -> int:
        searched[0] += hi - lo
        return real(self, buf, lo, hi)

    monkeypatch.setattr(rd.Once, "find", find)
    assert len(segments(path)) == 2000
    assert searched[0] <= 2 * path.stat().st_size  # was about 1,000 times the file
