"""Repeated lines and ranks' clocks inside one file (review 26 #2, #3).

Inputs are corpus 001's own lines recombined here: a block of them pasted twice before the
server came up (overlapping pastes), TP2/TP3's timestamps moved by a constant (another
node's clock), and a second `Load weight end` of the same model. Expected line numbers are
read off the recombined lines, never copied from logmem's output.
"""

from __future__ import annotations

import re
import tempfile
from datetime import datetime, timedelta
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import corpus_log
from logmem.analysis.attribution import build_ledger
from logmem.analysis.failures import outcome
from logmem.analysis.findings import ClockOffset, OutOfOrder, RepeatedLines
from logmem.api import read_log
from logmem.model.records import Launch
from logmem.report.text import render

SETTINGS = settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
# 001: line 71 (index 70) is TP0's scheduler summary, the first line after which it is up.
_UP = 70


def _lines() -> list[str]:
    return corpus_log("001-").read_bytes().decode().split("\n")


def _read(lines: list[str], name: str = "x.log") -> str:
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / name
        p.write_bytes("\n".join(lines).encode())
        return render(read_log(str(p)))


def _flat(text: str) -> str:
    return " ".join(text.split())


def _launches(lines: list[str]) -> tuple[Launch, ...]:
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "x.log"
        p.write_bytes("\n".join(lines).encode())
        return read_log(str(p)).launches


def _ledgers(text: str) -> list[list[str]]:
    """The ledger tables' rows without their 'lines' column (repeats shift line numbers)."""
    out: list[list[str]] = []
    inside = False
    for line in text.split("\n"):
        if line.startswith("Ledger of"):
            out.append([])
            inside = True
        elif not line.strip():
            inside = False
        elif inside:
            out[-1].append(" ".join(re.sub(r"\s+[\d,\-]+$", "", line).split()))
    return out


# --- a block of lines pasted twice before ready ---------------------------------------------


def test_an_overlapping_paste_is_one_finding_and_one_ledger() -> None:
    """001 lines 1-60, then 45-89 again: 001's steps at lines 50-60 come again at 66-76."""
    t = _lines()
    joined = t[:60] + t[44:]
    assert joined[65] == t[49] and joined[75] == t[59]  # line 66 repeats 50, 76 repeats 60
    (L,) = _launches(joined)
    assert outcome(L).status == "ready"
    found = [f for f in build_ledger(L).findings if isinstance(f, RepeatedLines)]
    assert len(found) == 1
    f = found[0]
    assert (f.first, f.last, f.again, f.again_last) == (50, 60, 66, 76)
    assert f.ranks == ("TP0", "TP1", "TP2", "TP3")
    assert not any(isinstance(x, OutOfOrder) for x in build_ledger(L).findings)
    assert all(len(r.models) == 1 for r in L.ranks)
    text = _read(joined)
    assert "at lines 50-60 are printed again at lines 66-76 (same text and time)" in _flat(text)
    for word in ("draft", "second model", "given back"):
        assert word not in text, word
    assert _ledgers(text) == _ledgers(_read(t))
    assert "repeat" not in _read(t)


def test_a_repeat_from_load_weight_begin_is_no_reshuffle() -> None:
    """001 lines 1-60, then 26-89 again: the repeat is not 'not in time order'."""
    t = _lines()
    joined = t[:60] + t[25:]
    text = _read(joined)
    assert "not in time order" not in text and "second model" not in text
    assert "at lines 26-60 are printed again at lines 61-95" in _flat(text)
    assert _ledgers(text) == _ledgers(_read(t))


@SETTINGS
@given(st.integers(min_value=8, max_value=_UP - 1), st.integers(min_value=1, max_value=40))
def test_repeating_a_block_before_ready_leaves_the_ledger_unchanged(start: int, n: int) -> None:
    """Any block of 001's lines before its summary, pasted again right after itself."""
    t = _lines()
    end = min(start + n, _UP)
    joined = t[:end] + t[start:end] + t[end:]
    text = _read(joined)
    assert _ledgers(text) == _ledgers(_read(t))
    assert "draft" not in text and "second model" not in text
    assert "Launch 1" not in text


def test_the_whole_log_twice_is_still_two_launches() -> None:
    """After the server came up the same lines are the log pasted again: a launch of its own."""
    t = _lines()
    assert len(_launches(t + t)) == 2


def test_a_second_same_type_weights_end_without_a_draft_is_never_a_second_model() -> None:
    """001 with a later TP0 `Load weight end` of the same Qwen2 model (other avail), no begin:
    speculative_algorithm=None, so no second model loads: another start-up's line."""
    t = _lines()
    extra = t[52].replace("avail mem=6.09", "avail mem=5.90")
    joined = t[:61] + [extra] + t[61:]
    text = _read(joined)
    assert "second model" not in text and "draft pools" not in text and "draft's" not in text
    assert "prints 'Load weight end' of Qwen2ForCausalLM again after its model loaded" in _flat(
        text
    )


# --- ranks' clocks ---------------------------------------------------------------------------


def _shift(line: str, ranks: tuple[str, ...], by: timedelta) -> str:
    """Every `[date time TPn]` prefix of ``ranks`` in the line moved by ``by`` (001's line 63
    holds a bar render glued to TP1's record)."""

    def move(m: re.Match[str]) -> str:
        if m.group(2) not in ranks:
            return m.group(0)
        t = datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S") + by
        return f"[{t:%Y-%m-%d %H:%M:%S} {m.group(2)}]"

    return re.sub(r"\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) (TP\d+)\]", move, line)


def test_a_clock_offset_between_ranks_is_one_launch() -> None:
    """TP2 and TP3 dated 3 h later (another node's time zone): one launch, as 001."""
    t = _lines()
    moved = [_shift(x, ("TP2", "TP3"), timedelta(hours=3)) for x in t]
    assert moved[8].startswith("[2025-03-08 15:29:11 TP3]")
    (L,) = _launches(moved)
    assert outcome(L).status == "ready" and len(L.ranks) == 4
    assert _ledgers(_read(moved)) == _ledgers(_read(t))
    notes = [f for f in build_ledger(L).findings if isinstance(f, ClockOffset)]
    assert len(notes) == 1
    assert notes[0].ranks == ("TP2", "TP3") and notes[0].reference == ("TP0", "TP1")
    assert notes[0].offset == timedelta(hours=3)
    assert "TP2, TP3 are dated 3 hours after TP0, TP1 throughout" in _flat(_read(moved))
    assert "dated" not in _read(t)


@SETTINGS
@given(
    st.sets(st.sampled_from(("TP0", "TP1", "TP2", "TP3")), min_size=1, max_size=3),
    st.integers(min_value=-3 * 86400, max_value=3 * 86400),
)
def test_any_rank_clock_offset_leaves_the_launches_unchanged(ranks: set[str], secs: int) -> None:
    t = _lines()
    moved = [_shift(x, tuple(ranks), timedelta(seconds=secs)) for x in t]
    launches = _launches(moved)
    assert len(launches) == 1
    assert outcome(launches[0]).status == "ready"
    assert _ledgers(_read(moved)) == _ledgers(_read(t))


def test_a_forward_jump_on_one_rank_still_opens_a_launch() -> None:
    """The clock rule still splits when a rank's own steps jump by days (two logs joined):
    001, then 001 from TP0's `Load weight end` on, two days later and without TP0's begin."""
    t = _lines()
    later = [_shift(x, ("TP0", "TP1", "TP2", "TP3"), timedelta(days=2)) for x in t[52:70]]
    assert len(_launches(t[:70] + later)) == 2


# --- a rank out of time order: its ledger table is marked --------------------------------------


def test_the_ledger_of_a_rank_out_of_order_is_marked_in_every_format() -> None:
    """reordered-001-tp1: TP1's table says it is not reliable (text with --rank, markdown,
    html); TP0's, in time order, does not."""
    from conftest import FIXTURES
    from logmem.report import render as render_as

    a = read_log(str(FIXTURES / "reordered-001-tp1-constructed.log"))
    led = build_ledger(a.launches[0])
    assert [r.rank for r in led.ranks if r.out_of_order] == ["TP1"]
    for fmt in ("markdown", "html"):
        out = render_as(a, fmt)
        assert "Ledger of TP1 (GiB; out of time order: not reliable)" in out, fmt
        assert "Ledger of TP0 (GiB)" in out, fmt
        assert "Ledger of TP0 (GiB;" not in out, fmt
    clean = read_log(str(corpus_log("001-")))
    assert not any(r.out_of_order for r in build_ledger(clean.launches[0]).ranks)
    assert "not reliable" not in render_as(clean, "markdown")


def test_a_clock_launch_with_a_three_digit_year_is_reported_not_raised() -> None:
    """A damaged year (0025) that opens a launch by the clock rule: the sentence is worded
    from the gap the model measured, and the times as printed ("0025-03-08"), not re-read
    from strftime's %Y, which drops the zeros on Linux (fuzz: 'Invalid isoformat string')."""
    lines = _lines()
    i = next(k for k, t in enumerate(lines) if "TP0] Load weight end." in t)
    lines[i] = lines[i].replace("[2025-03-08", "[0025-03-08", 1)
    text = _read(lines)
    assert "0025-03-08 12:29:21" in text
    assert "begins at line" in text
