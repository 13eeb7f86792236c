"""Hypothesis properties of reading: noise, rank interleaving, truncation and \\r vs \\n change nothing.

The bases are small real logs (fixtures/, else the shared corpus): 001 (TP4, a bar glued to a TP1
record), 014 (TP2, one bar render per line), 021 (single GPU, renders joined by \\r, target and
draft) and 023 (TP2, cut mid-capture, no final newline).
"""

from __future__ import annotations

import random
import re
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from conftest import corpus_log
from logmem.api import collect_events, read_log
from logmem.model.build import build_launches
from logmem.model.records import Launch
from logmem.parse import events as ev
from logmem.report.jsonout import analysis_json

BASES = ("001-", "014-", "021-", "023-")
SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
_SCRATCH = Path(tempfile.mkdtemp(prefix="logmem-props-"))


def base_log(prefix: str) -> bytes:
    return corpus_log(prefix).read_bytes()


def parse(data: bytes, name: str = "log.log") -> tuple[list[ev.Event], tuple[Launch, ...]]:
    path = _SCRATCH / name
    path.write_bytes(data)
    events = collect_events([str(path)])
    return events, build_launches(events)


def rank_views(launches: tuple[Launch, ...]) -> list[dict[str, object]]:
    return [{r.label: r for r in L.ranks} for L in launches]


def samples(launches: tuple[Launch, ...]) -> list[object]:
    return [
        (r.label, g.name, g.samples, g.bars) for L in launches for r in L.ranks for g in r.graphs
    ]


# --- foreign lines ------------------------------------------------------------------------------

# Lines SGLang logs are full of that carry no memory fact (and none of the prefilter keywords).
FOREIGN = (
    b"",
    b"   ",
    b"[Gloo] Rank 0 is connected to 1 peer ranks. Expected number of connected peer ranks is : 1",
    b'[2025-03-08 12:29:29] INFO:     127.0.0.1:45678 - "POST /generate HTTP/1.1" 200 OK',
    b"[2025-03-08 12:29:29] INFO:     Started server process [3207]",
    b"[2025-03-08 12:29:29] INFO:     Waiting for application startup.",
    b"INFO 03-07 12:29:02 __init__.py:190] Automatically detected platform cuda.",
    b"/usr/lib/python3/dist-packages/torch/cuda/__init__.py:52: UserWarning: Can't initialize NVML",
    b"  warnings.warn(",
    b"`torch_dtype` is deprecated! Use `dtype` instead!",
    b"[2026-04-14 16:08:44 TP1] sglang is using nccl==2.27.5",
    b"[2026-04-14 16:08:44 TP0] Using default HuggingFace chat template with detected content format: openai",
    b"Loading safetensors checkpoint shards:   0% Completed | 0/14 [00:00<?, ?it/s]",
    b"Loading safetensors checkpoint shards:  50% Completed | 7/14 [00:03<00:04,  1.74it/s]",
    b"Multi-thread loading shards: 100% Completed | 4/4 [00:03<00:00,  1.08it/s]",
    b"Fetching 4 files: 100%|\xe2\x96\x88\xe2\x96\x88\xe2\x96\x88\xe2\x96\x88| 4/4 [00:00<00:00, 10.20it/s]",
    b"2026-04-14 16:08:51,862 - CUTE_DSL - WARNING - [handle_import_error] - cannot import name",
    b"\x1b[33m[aiter] import [module_aiter_enum] under /opt/aiter\x1b[0m",
)


def test_foreign_lines_carry_nothing() -> None:
    events, _ = parse(b"\n".join(FOREIGN) + b"\n", "foreign.log")
    assert events == []


@pytest.mark.parametrize("prefix", BASES)
@SETTINGS
@given(inserts=st.lists(st.tuples(st.integers(min_value=0), st.sampled_from(FOREIGN)), max_size=25))
@example(inserts=[(0, FOREIGN[2]), (10**9, FOREIGN[12])])
def test_inserting_foreign_lines_changes_nothing(
    prefix: str, inserts: list[tuple[int, bytes]]
) -> None:
    data = base_log(prefix)
    lines = data.splitlines(keepends=True)
    if lines and not lines[-1].endswith((b"\n", b"\r")):
        lines[-1] += b"\n"
    want_events, want_launches = parse(b"".join(lines), "base.log")
    for pos, text in sorted(inserts, key=lambda x: x[0] % (len(lines) + 1), reverse=True):
        i = pos % (len(lines) + 1)
        lines.insert(i, text + b"\n")
    got_events, got_launches = parse(b"".join(lines), "base.log")
    assert got_events == want_events
    assert got_launches == want_launches


# --- rank interleaving ------------------------------------------------------------------------

_PREFIX = re.compile(rb"\[\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}((?: [A-Z][A-Z_]*\d+)*)\] ?")


def streams(data: bytes) -> tuple[list[bytes], dict[str, list[bytes]]]:
    """Cut a log into a fixed head and one stream of physical lines per rank (main process: "").

    A bar glued before a record is split off first. Bar renders belong to the rank that prints
    bars (the one that printed the bs list, else the lowest rank); other unprefixed lines
    (tracebacks, warnings) stay with the line before them."""
    lines: list[bytes] = []
    for line in data.splitlines(keepends=True):
        m = _PREFIX.search(line)
        if m and m.start() > 0 and b"%|" in line[: m.start()]:
            lines += [line[: m.start()] + b"\n", line[m.start() :]]
        else:
            lines.append(line if line.endswith((b"\n", b"\r")) else line + b"\n")

    def rank(line: bytes) -> str | None:
        m = _PREFIX.search(line)
        return m.group(1).decode().strip() if m else None

    ranked = [r for r in map(rank, lines) if r]
    listed = [rank(x) for x in lines if b"Capture cuda graph bs [" in x]
    bar_rank = listed[0] if listed and listed[0] else min(ranked, key=_tag_numbers, default="")
    head: list[bytes] = []
    out: dict[str, list[bytes]] = {}
    last: str | None = None
    for line in lines:
        r = rank(line)
        if r is None and (b"%|" in line or b"Capturing " in line or b"Compiling " in line):
            r = bar_rank
        elif r is None:
            r = last
        if r is None:
            head.append(line)
            continue
        if last is None and r == "":
            head.append(line)  # the launcher's lines before any rank: server_args stays first
            continue
        last = r
        out.setdefault(r, []).append(line)
    return head, out


def _tag_numbers(label: str) -> list[int]:
    return [int(n) for n in re.findall(r"\d+", label)]


def interleave(parts: dict[str, list[bytes]], rnd: random.Random) -> list[bytes]:
    order = [k for k, v in parts.items() for _ in v]
    rnd.shuffle(order)
    its = {k: iter(v) for k, v in parts.items()}
    return [next(its[k]) for k in order]


@pytest.mark.parametrize("prefix", ("001-", "014-", "023-"))
@SETTINGS
@given(rnd=st.randoms(use_true_random=False))
def test_shuffling_the_interleaving_of_ranks_changes_no_rank(
    prefix: str, rnd: random.Random
) -> None:
    data = base_log(prefix)
    head, parts = streams(data)
    assert len([k for k in parts if k]) >= 2
    _, want = parse(data, "orig.log")
    _, got = parse(b"".join(head + interleave(parts, rnd)), "shuffled.log")
    assert len(got) == len(want)
    for v_got, v_want in zip(rank_views(got), rank_views(want)):
        assert v_got.keys() == v_want.keys()
        for label in v_want:
            assert v_got[label] == v_want[label], label


# --- any prefix ------------------------------------------------------------------------------


@pytest.mark.parametrize("prefix", BASES)
@SETTINGS
@given(cut=st.floats(min_value=0.0, max_value=1.0))
@example(cut=0.0)
@example(cut=1.0)
def test_any_prefix_parses_and_gives_a_prefix_of_the_events(prefix: str, cut: float) -> None:
    data = base_log(prefix)
    n = int(len(data) * cut)
    full, _ = parse(data, "full.log")
    part, _ = parse(data[:n], "part.log")
    # every event but the last comes from a whole line, so it equals the full log's
    assert len(part) <= len(full) + 1
    assert part[:-1] == full[: max(0, len(part) - 1)]
    if part and n < len(data) and data[n - 1 : n] in (b"\n", b"\r"):
        assert part[-1] == full[len(part) - 1]  # cut on a line end: nothing differs
    # and the whole pipeline, to the JSON report, takes it without an exception
    analysis_json(read_log(str(_SCRATCH / "part.log"), require_startup=False))


@pytest.mark.parametrize("prefix", ("001-", "021-"))
@SETTINGS
@given(n=st.integers(min_value=0, max_value=400))
def test_a_prefix_cut_near_the_interesting_lines(prefix: str, n: int) -> None:
    """Cut around the capture block, where the bytes are densest in events."""
    data = base_log(prefix)
    start = (
        data.find(b"Capture cuda graph begin")
        if b"Capture cuda graph begin" in data
        else data.find(b"Capture ")
    )
    cut = max(0, start - 200) + n * 7
    full, _ = parse(data, "full.log")
    part, _ = parse(data[:cut], "part.log")
    assert part[:-1] == full[: max(0, len(part) - 1)]


# --- \r versus \n ----------------------------------------------------------------------------


@pytest.mark.parametrize("prefix", ("021-", "023-"))
def test_cr_joined_bars_as_newlines_give_the_same_samples(prefix: str) -> None:
    data = base_log(prefix)
    assert b"\r" in data
    events_cr, launches_cr = parse(data, "cr.log")
    events_nl, launches_nl = parse(data.replace(b"\r", b"\n"), "nl.log")
    assert samples(launches_cr) == samples(launches_nl)
    assert events_cr == events_nl
    assert any(s for *_, s, _ in samples(launches_cr))  # the property is not vacuous


@pytest.mark.parametrize("prefix", ("014-", "021-", "023-"))
@SETTINGS
@given(choice=st.lists(st.booleans(), min_size=1, max_size=400))
def test_any_mix_of_cr_and_nl_between_bar_renders_gives_the_same_samples(
    prefix: str, choice: list[bool]
) -> None:
    """Each separator between two consecutive bar renders may be \\r (raw tqdm) or \\n (a paste)."""
    data = base_log(prefix).replace(b"\r\n", b"\n")
    pieces = re.split(rb"([\r\n])", data)  # text, sep, text, sep, ...
    want_events, want = parse(data.replace(b"\r", b"\n"), "ref.log")
    k = 0
    for i in range(1, len(pieces) - 1, 2):
        before, after = pieces[i - 1], pieces[i + 1]
        if b"%|" in before and b"%|" in after and not _PREFIX.search(after):
            pieces[i] = b"\r" if choice[k % len(choice)] else b"\n"
            k += 1
    assert k > 0
    got_events, got = parse(b"".join(pieces), "mixed.log")
    assert samples(got) == samples(want)
    assert got_events == want_events


WRAPPERS = (
    b"2026-02-26T05:35:13.123456789Z ",
    b"sglang-1  | ",
    b"[pod/sglang-0/sglang] ",
    b"pod INFO ",
)


@pytest.mark.parametrize(
    "wrapper", WRAPPERS, ids=["docker-timestamps", "compose", "kubectl-prefix", "shipper"]
)
@pytest.mark.parametrize("prefix", (*BASES, "003-"))
def test_a_container_prefix_on_every_line_changes_nothing(prefix: str, wrapper: bytes) -> None:
    """docker --timestamps, compose, `kubectl logs --prefix` and shippers prefix every physical line,
    tracebacks and tqdm renders included (003 crashes with six tracebacks)."""
    data = base_log(prefix)
    wrapped = b"".join(wrapper + line for line in data.splitlines(keepends=True))
    want_events, want = parse(data, "same-name.log")
    got_events, got = parse(wrapped, "same-name.log")
    assert got_events == want_events
    assert got == want
