"""Where a new launch begins inside one file, and a rank's lines out of time order (review 25
#1, #5, #10).

Inputs are real logs joined, reordered or cut (fixtures/make_joins.py), or real lines of
fixture 001 and corpus 037 recombined here; the expected line numbers and values are read off
those lines, never copied from logmem's output.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import FIXTURES, corpus_log
from logmem.analysis.failures import outcome
from logmem.analysis.findings import LaunchStarted, LeftFree, OutOfOrder
from logmem.api import read_log
from logmem.model.records import Launch
from logmem.report.model import verdict_lines
from logmem.report.sentences import finding_text


def _text(p: Path) -> str:
    return p.read_bytes().decode()


def _lines(prefix: str) -> list[str]:
    return _text(corpus_log(prefix)).split("\n")


def _read_text(text: str, name: str = "joined.log") -> tuple[Launch, ...]:
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / name
        p.write_bytes(text.encode())
        return read_log(str(p)).launches


def _sentences(path: str) -> list[list[str]]:
    a = read_log(path)
    return [[finding_text(f) for f in a.ledger(L).findings] for L in a.launches]


# --- joined logs -----------------------------------------------------------------------------


def test_a_paste_without_server_args_after_a_ready_launch_is_a_launch_of_its_own() -> None:
    """001 (TP0-TP3, ready) then 037 (untagged, from `Load weight end`, file line 90)."""
    a = read_log(str(FIXTURES / "joined-001-037-constructed.log"))
    assert len(a.launches) == 2
    first, second = a.launches
    assert [r.label for r in first.ranks] == ["TP0", "TP1", "TP2", "TP3"]
    assert [r.label for r in second.ranks] == [""]
    assert second.ranks[0].target is not None and second.ranks[0].target.weights_end is not None
    assert second.ranks[0].target.weights_end.model_type == "LlamaForCausalLM"
    assert second.start is not None and second.start.kind == "after_ready"
    assert second.start.line.line_no == 90 and second.start.rank == ""
    assert first.next_start is not None and first.next_start.line_no == 90
    said = [finding_text(f) for f in a.ledger(second).findings]
    # Lines 84-89 (health checks, no keyword) are not read: 037's first line may be among them.
    assert said[0].startswith(
        "This launch begins at or before line 90 (2025-07-14 05:48:43; lines 84-89 before it"
    )
    assert "): the untagged rank" in said[0]
    # Launch 0 reads as 001 alone: nothing of 037 mixed into it (the invented 745% spread).
    alone = _sentences(str(corpus_log("001-")))[0]
    assert _sentences(str(FIXTURES / "joined-001-037-constructed.log"))[0] == alone
    assert not any("more than the main rank" in s for s in said)


def test_an_untagged_rank_beside_tagged_ranks_opens_a_launch_before_any_came_up() -> None:
    """001 cut after line 57 (no ready, no summary) then 037: only the ranks differ."""
    text = "\n".join(_lines("001-")[:57]) + "\n" + _text(corpus_log("037-"))
    launches = _read_text(text)
    assert len(launches) == 2
    s = launches[1].start
    assert s is not None and (s.kind, s.line.line_no, s.rank) == ("untagged", 58, "")
    assert s.evidence is not None and s.evidence.line_no == 9  # TP3's first step in 001


def test_tagged_ranks_after_an_untagged_launch_open_a_launch() -> None:
    """037 then 001 from its first rank line (line 9, `[... TP3] Init torch distributed begin`)."""
    text = _text(corpus_log("037-")) + "\n".join(_lines("001-")[8:])
    launches = _read_text(text)
    assert len(launches) == 2
    s = launches[1].start
    # InitBegin is no load step: the ranks, not the ready line, open it.
    assert s is not None and s.kind == "tagged" and s.line.line_no == 13
    assert [r.label for r in launches[1].ranks] == ["TP0", "TP1", "TP2", "TP3"]


def _shift_day(line: str, day: str) -> str:
    return line.replace("[2025-03-08 ", f"[{day} ", 1)


def test_a_start_up_step_days_away_from_the_last_one_opens_a_launch() -> None:
    """001's lines 58 on (TP0's `Memory pool end` first) printed a day later, then a day
    earlier: far more than one start-up's quiet stretch; an hour later stays one launch."""
    lines = _lines("001-")
    for day, kind in (("2025-03-09", "clock"), ("2025-03-07", "clock")):
        text = "\n".join(lines[:57] + [_shift_day(x, day) for x in lines[57:]])
        launches = _read_text(text)
        assert len(launches) == 2, day
        s = launches[1].start
        assert s is not None and s.kind == kind and s.line.line_no == 58
        assert s.values is not None and s.values[1].startswith(day)
        assert s.values[2] == "2025-03-08 12:29:21"  # the last step before it (line 57)
    hour = "\n".join(
        lines[:57] + [x.replace("[2025-03-08 12:", "[2025-03-08 13:") for x in lines[57:]]
    )
    assert len(_read_text(hour)) == 1
    # Load weight end three hours after its begin (a slow download) ends that load: one launch.
    slow = [
        x.replace("[2025-03-08 12:29:21 ", "[2025-03-08 15:29:21 ") if "Load weight end" in x else x
        for x in lines[:53]
    ]
    assert len(_read_text("\n".join(slow) + "\n")) == 1


def test_another_model_type_with_no_draft_configured_opens_a_launch() -> None:
    """001 to line 53 (every rank's Load weight end), then TP0 prints a Llama Load weight end
    with no begin waiting for it; server_args has speculative_algorithm=None."""
    lines = _lines("001-")
    end = "[2025-03-08 12:31:00 TP0] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=7.37 GB, mem usage=15.02 GB."
    launches = _read_text("\n".join(lines[:53] + [end]) + "\n")
    assert len(launches) == 2
    s = launches[1].start
    assert s is not None and s.kind == "model" and s.line.line_no == 54
    assert s.values == ("model type", "LlamaForCausalLM", "Qwen2ForCausalLM")
    begin = "[2025-03-08 12:31:00 TP0] Load weight begin. avail mem=21.63 GB"
    again = _read_text("\n".join(lines[:53] + [begin]) + "\n")
    assert len(again) == 2 and again[1].start is not None and again[1].start.kind == "model"


def test_a_launch_followed_by_another_says_where_the_next_begins_not_that_it_was_cut() -> None:
    """023 (stops at its 0% bar, line 59) then 014, whose TP0 inits again at line 68."""
    a = read_log(str(FIXTURES / "joined-023-014-constructed.log"))
    assert len(a.launches) == 2
    first = a.launches[0]
    oc = outcome(first)
    assert oc.status == "incomplete"
    words = " ".join(verdict_lines(first))
    # Lines 60-67 (014's first lines: warnings, no keyword) are not read.
    assert "The next launch begins at or before line 68 (lines 60-67 before it" in words
    assert words.startswith("Incomplete: this start-up stops while capturing")
    assert "killed or restarted" in words and "it was cut" not in words
    s = a.launches[1].start
    assert s is not None and s.kind == "restart" and s.line.line_no == 68 and s.rank == "TP0"
    # 023 alone still says it was cut.
    assert "it was cut" in " ".join(verdict_lines(read_log(str(corpus_log("023-"))).launches[0]))


def test_a_cut_log_names_the_stopped_ranks_own_last_line() -> None:
    """001 cut after line 57: TP0's last line is 54 (its KV line); 57 is TP3's."""
    L = read_log(str(FIXTURES / "cut-001-after-57-constructed.log")).launches[0]
    f = outcome(L).failure
    assert f is not None and f.kind == "stopped" and f.ranks == ("TP0",)
    assert f.line is not None and f.line.line_no == 57
    assert f.rank_line is not None and f.rank_line.line_no == 54
    assert "its last line 54; the last recognised line of the log is 57" in verdict_lines(L)[0]
    # TP0's last reading (6.09 after weights, line 53) comes before its 2.84 GiB pool (line 54).
    a = read_log(str(FIXTURES / "cut-001-after-57-constructed.log"))
    left = [f for f in a.ledger(L).findings if isinstance(f, LeftFree)]
    assert len(left) == 1 and left[0].rank == "TP0" and left[0].pools_after is not None
    assert left[0].pools_after[1] == 54
    assert "before its KV pool (2.84 GiB, line 54)" in finding_text(left[0])


# --- one rank out of time order --------------------------------------------------------------


def test_a_rank_out_of_time_order_is_a_finding_not_a_draft_or_a_launch() -> None:
    """TP1's 11 lines of 001 reversed among their positions: line 18 (`Memory pool end`,
    12:29:21) follows line 10 (its summary, 12:29:29); line 14 (12:29:28) is within a second."""
    a = read_log(str(FIXTURES / "reordered-001-tp1-constructed.log"))
    assert len(a.launches) == 1
    L = a.launches[0]
    assert outcome(L).status == "ready"
    found = [f for f in a.ledger(L).findings if isinstance(f, OutOfOrder)]
    assert len(found) == 1
    f = found[0]
    assert (f.rank, f.earlier_line, f.later_line) == ("TP1", 10, 18)
    assert f"{f.earlier_time:%H:%M:%S}" == "12:29:29" and f"{f.later_time:%H:%M:%S}" == "12:29:21"
    text = finding_text(f)
    assert "TP1's lines are not in time order" in text and "not reliable" in text
    tp1 = L.rank("TP1")
    # Read in reverse, pools, weights end and begin make later "models": none is a draft.
    assert tp1 is not None and [m.role for m in tp1.models][0] == "target"
    assert {m.role for m in tp1.models[1:]} == {"second"}
    from logmem.report.text import render

    assert "draft" not in render(a)
    # The untouched log has no such finding.
    clean = read_log(str(corpus_log("001-")))
    assert not any(isinstance(x, OutOfOrder) for x in clean.ledger(clean.launches[0]).findings)


def test_a_second_model_with_evidence_of_a_draft_is_still_the_draft() -> None:
    """021 (DFlash: speculative_algorithm set) and 019 (EAGLE/MTP) keep their draft."""
    for prefix in ("021-", "019-"):
        L = read_log(str(corpus_log(prefix))).launches[0]
        assert any(m.role == "draft" for r in L.ranks for m in r.models), prefix
        assert not any(m.role == "second" for r in L.ranks for m in r.models), prefix


# --- the concatenation algebra ---------------------------------------------------------------

# Single-launch logs of different kinds: tagged ready (001), tagged without ready line (014),
# untagged with server_args (017, 024), untagged paste without server_args (037).
_ONE = ("001-", "014-", "017-", "024-", "037-")


def _facts(L: Launch) -> tuple[object, ...]:
    """What a launch's report rests on, independent of where it sits in the file."""
    t = [r.target for r in L.ranks]
    return (
        tuple(r.label for r in L.ranks),
        outcome(L).status,
        tuple(m.weights_end.model_type if m and m.weights_end else None for m in t),
        tuple(
            m.weights_end.usage.bytes if m and m.weights_end and m.weights_end.usage else None
            for m in t
        ),
        L.summary.max_total_num_tokens if L.summary else None,
        tuple(len(r.graphs) for r in L.ranks),
    )


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(_ONE), min_size=2, max_size=3))
def test_joined_start_ups_read_as_the_launches_of_each(parts: list[str]) -> None:
    """Concatenating start-ups gives one launch per part, each with the facts it has alone,
    each after the first saying why it begins where the part begins."""
    texts = [_text(corpus_log(p)) for p in parts]
    texts = [t if t.endswith("\n") else t + "\n" for t in texts]
    alone = [_read_text(t)[0] for t in texts]
    joined = _read_text("".join(texts))
    assert len(joined) == len(parts), parts
    assert [_facts(L) for L in joined] == [_facts(L) for L in alone], parts
    offset = 0
    for i, (L, t) in enumerate(zip(joined, texts)):
        if i == 0:
            assert L.start is None
        else:
            assert L.start is not None
            first = min(e.source.line_no for e in L.all_events())
            assert offset < L.start.line.line_no <= first or L.start.line.line_no == first
            assert isinstance(read_findings(L)[0], LaunchStarted)
        offset += t.count("\n")


def read_findings(L: Launch) -> list[object]:
    from logmem.analysis.attribution import build_ledger

    return list(build_ledger(L).findings)
