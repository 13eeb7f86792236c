"""Issue 16: an input with very many launches keeps its first and last ones in full and the rest
as briefs (logmem.model.cap), so memory per input is bounded; every report says so.

KEEP_FIRST and KEEP_LAST are made small here (the rule, not the numbers, is tested)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import logmem.model.cap as cap
from conftest import FIXTURES
from logmem.api import read_log, select
from logmem.cli.main import cli
from logmem.errors import SelectionError
from logmem.model.build import build_groups
from logmem.parse import events as ev
from logmem.parse.match import iter_segment_events
from logmem.parse.patterns import KEYWORD_BYTES, ONCE_BYTES
from logmem.parse.read import read_segments

READY = (FIXTURES / "001-qwq32b-tp4-l4-docs.log").read_bytes()
CRASH = (FIXTURES / "003-glm5-fp8-mi355x-tp8-rocm-capture-crash.log").read_bytes()


@pytest.fixture
def small_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cap, "KEEP_FIRST", 3)
    monkeypatch.setattr(cap, "KEEP_LAST", 2)
    import logmem.compare.load as load
    import logmem.report.input_notes as notes

    for mod in (load, notes):
        monkeypatch.setattr(mod, "KEEP_FIRST", 3)
        monkeypatch.setattr(mod, "KEEP_LAST", 2)


def _restarts(tmp_path: Path, n: int, crash_at: tuple[int, ...] = ()) -> Path:
    p = tmp_path / f"restarts{n}.log"
    p.write_bytes(b"".join(CRASH if i in crash_at else READY for i in range(n)))
    return p


def _events(p: Path) -> list[ev.Event]:
    segs = read_segments([str(p)], KEYWORD_BYTES, None, ONCE_BYTES, continuations=True)
    return list(iter_segment_events(segs))


def test_first_and_last_launches_are_kept_whole_the_rest_as_briefs(
    small_cap: None, tmp_path: Path
) -> None:
    p = _restarts(tmp_path, 10, crash_at=(5,))
    a = read_log(str(p))
    assert [L.index for L in a.launches] == [0, 1, 2, 8, 9]
    assert [b.index for b in a.summarised] == [3, 4, 5, 6, 7]
    assert [b.outcome for b in a.summarised] == ["ready", "ready", "crashed", "ready", "ready"]
    assert a.summarised[0].tokens == 46_611 and a.summarised[0].path == str(p)
    first, last = a.summarised[0].lines
    assert 0 < first < last < a.summarised[1].lines[0]
    # Each kept launch is exactly what the whole build makes of it.
    whole = {L.index: L for L in build_groups(_events(p))[0]}
    assert len(whole) == 10
    for L in a.launches:
        assert whole[L.index] == L
    # Picking by number: a kept one works, a summarised one says why it cannot.
    assert select(a, 8).launches[0].index == 8
    with pytest.raises(SelectionError, match="launch 4 is kept only as a summary line"):
        select(a, 4)


def test_below_the_cap_nothing_changes(small_cap: None, tmp_path: Path) -> None:
    p = _restarts(tmp_path, 5)
    a = read_log(str(p))
    assert [L.index for L in a.launches] == [0, 1, 2, 3, 4] and not a.summarised
    assert list(a.launches) == list(build_groups(_events(p))[0])


def test_what_is_kept_does_not_grow_with_the_restarts(small_cap: None, tmp_path: Path) -> None:
    """Memory per input is bounded: the events kept for the build are the same few launches'."""

    def kept(n: int) -> int:
        events = cap.capped(_events(_restarts(tmp_path, n)), lambda L: "ready")
        return sum(1 for e in events if not isinstance(e, ev.Summarised))

    assert kept(8) == kept(30) == 5 * kept(1)


@pytest.mark.parametrize("fmt", ["text", "markdown", "html", "json"])
def test_every_report_says_how_many_were_summarised_and_why(
    small_cap: None, tmp_path: Path, fmt: str
) -> None:
    p = _restarts(tmp_path, 10, crash_at=(5,))
    r = CliRunner().invoke(cli, ["-q", "analyze", str(p), "-f", fmt])
    assert r.exit_code == 0, r.output
    if fmt == "json":
        doc = json.loads(r.stdout)
        s = doc["summarised_launches"]
        assert s["count"] == 5 and (s["keep_first"], s["keep_last"]) == (3, 2)
        assert [x["launch"] for x in s["launches"]] == [3, 4, 5, 6, 7]
        assert s["launches"][2]["outcome"] == "crashed"
        assert "memory stays bounded" in s["why"]
        assert [L["index"] for L in doc["launches"]] == [0, 1, 2, 8, 9]
        return
    flat = " ".join(r.stdout.split())
    assert "5 launches (3 to 7) are summarised, not analysed" in flat
    assert "the first 3 and the last 2 in full" in flat
    assert "launches 3 to 4" in flat and "launch 5" in flat and "crashed" in flat


def test_json_without_a_cap_says_none_were_summarised(tmp_path: Path) -> None:
    p = _restarts(tmp_path, 2)
    doc = json.loads(CliRunner().invoke(cli, ["-q", "analyze", str(p), "-f", "json"]).stdout)
    assert doc["summarised_launches"]["count"] == 0
    assert doc["summarised_launches"]["launches"] == []
