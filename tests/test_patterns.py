"""The pattern table itself: every example is matched by its own pattern, claimed by no other,
passes the reader's keyword prefilter, and every regex runs in linear time on hostile input."""

from __future__ import annotations

import time

import pytest

from logmem.parse.builders import BUILDERS
from logmem.parse.lines import Record, Source
from logmem.parse.match import match_record
from logmem.parse.patterns import (
    BY_NAME,
    KEYWORD_BYTES,
    MEMORY_FIGURE,
    ONCE_LITERALS,
    PATTERNS,
    LinePattern,
)

NAMES = [p.name for p in PATTERNS]

# Pairs (pattern, other) where `other` also matches `pattern`'s example, on purpose.
# "exception" is the catch-all for the last line of a traceback (`SomeError: message`); it
# sits last in the table, so the specific error patterns before it win by first match.
ALSO_MATCHES: frozenset[tuple[str, str]] = frozenset({
    ("not_enough_memory", "exception"),
    ("kv_no_memory", "exception"),
    ("state_cache_no_memory", "exception"),
    ("unified_pool_no_memory", "exception"),
    ("swa_cap_no_room", "exception"),
    ("torch_oom", "exception"),
    ("device_oom", "exception"),
    ("vmm_oom", "exception"),
})  # fmt: skip


def _record(message: str) -> Record:
    return Record("TP0", (("TP", 0),), "2026-01-01 00:00:00", message, Source("t.log", 1, message))


def test_names_are_unique_and_every_pattern_has_a_builder() -> None:
    assert len(NAMES) == len(set(NAMES))
    assert set(BY_NAME) == set(NAMES) == set(BUILDERS)


@pytest.mark.parametrize("pat", PATTERNS, ids=NAMES)
def test_every_pattern_matches_its_example(pat: LinePattern) -> None:
    assert pat.regex.search(pat.example), f"{pat.name} does not match its own example"


@pytest.mark.parametrize("pat", PATTERNS, ids=NAMES)
def test_first_match_of_every_example_is_its_own_pattern(pat: LinePattern) -> None:
    hit = match_record(_record(pat.example))
    assert hit is not None
    assert hit[0] == pat.name


@pytest.mark.parametrize("pat", PATTERNS, ids=NAMES)
def test_no_other_pattern_matches_the_example(pat: LinePattern) -> None:
    others = {q.name for q in PATTERNS if q is not pat and q.regex.search(pat.example)}
    allowed = {o for p, o in ALSO_MATCHES if p == pat.name}
    assert others <= allowed, f"{pat.name}'s example is also matched by {sorted(others - allowed)}"


def test_documented_exceptions_are_still_needed() -> None:
    """An entry in ALSO_MATCHES that no longer overlaps should be removed."""
    for name, other in ALSO_MATCHES:
        assert BY_NAME[other].regex.search(BY_NAME[name].example), (name, other)
        assert NAMES.index(name) < NAMES.index(other), f"{other} must come after {name}"


@pytest.mark.parametrize("pat", PATTERNS, ids=NAMES)
def test_every_example_passes_the_keyword_prefilter(pat: LinePattern) -> None:
    """The reader drops segments without a keyword before decoding: examples must survive it,
    with and without the SGLang prefix in front. Lines a server prints by the thousand are
    yielded by their once-literals instead (ONCE_LITERALS; tests/test_reader_once.py)."""
    if set(pat.needs) <= set(ONCE_LITERALS):
        assert not KEYWORD_BYTES.search(pat.example.encode()), "a keyword reads every such line"
        assert any(lit in pat.example for lit in ONCE_LITERALS)
        return
    assert KEYWORD_BYTES.search(pat.example.encode()), f"no keyword in {pat.example!r}"
    assert KEYWORD_BYTES.search(f"[2026-01-01 00:00:00 TP0] {pat.example}".encode())


@pytest.mark.parametrize("pat", PATTERNS, ids=NAMES)
def test_every_example_builds_an_event(pat: LinePattern) -> None:
    m = pat.regex.search(pat.example)
    assert m is not None
    event = BUILDERS[pat.name](m, _record(pat.example))
    assert event is not None
    assert event.rank == "TP0"


def test_memory_figure_flags_the_units_sglang_prints() -> None:
    figures = ("avail mem=3.00 GB", "12.5 GiB", "540.00 MiB", "16 MB", "avail_mem=1", "mem usage=1")
    for text in figures:
        assert MEMORY_FIGURE.search(text), text
    for text in ("Decode batch. #running-req: 1", "Started server process [3207]", "GBX"):
        assert not MEMORY_FIGURE.search(text), text


# --- linear time -------------------------------------------------------------------------


def _fragments(pat: LinePattern) -> list[tuple[str, str, int]]:
    """(label, fragment, repeats at the large size). The large sizes are ~200 KB or 100k repeats."""
    ex = pat.example
    own = [
        ("half-example", ex[: max(1, len(ex) // 2)] + " "),
        ("example-minus-last-char", ex[:-1]),
        ("whole-example", ex + " "),
    ]
    out = [(label, frag, 200_000 // len(frag) + 1) for label, frag in own]
    out += [
        ("avail mem=", "avail mem=", 100_000),
        ("digits", "1", 100_000),
        ("spaces", " ", 200_000),
        ("list", "[1, ", 50_000),
        ("dotted-name", "a.", 100_000),
    ]
    return out


def _best_time(pat: LinePattern, text: str) -> float:
    # CPU time, best of three: wall time on a shared machine (CI, other jobs) counts the time
    # this process waited, which made the ratio flake without any regex being slow.
    best = float("inf")
    for _ in range(3):
        t0 = time.process_time()
        pat.regex.search(text)
        best = min(best, time.process_time() - t0)
    return best


@pytest.mark.parametrize("pat", PATTERNS, ids=NAMES)
def test_every_regex_runs_in_linear_time(pat: LinePattern) -> None:
    """Time grows about 4x from n to 4n repeats (a quadratic regex would show ~16x).

    Nothing is timed absolutely; the 2 ms floor keeps timer noise on tiny inputs out of it."""
    for label, frag, big in _fragments(pat):
        small = max(1, big // 4)
        t_small = _best_time(pat, frag * small)
        t_big = _best_time(pat, frag * (small * 4))
        ratio = t_big / max(t_small, 0.002)
        assert ratio < 12, f"{pat.name} on {label!r} x{small * 4}: {t_small:.4f}s -> {t_big:.4f}s"
