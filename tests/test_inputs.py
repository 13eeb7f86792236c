"""Files given together (issue 12, class 8): parts of one launch merge, different launches never.

Per-rank, per-node and rotated files of one launch are one launch; files whose server_args,
model or clocks say they are different launches are separate launches, each with its own
file, and Analysis.apart says why.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from test_ledger_structure import startup

from conftest import corpus_log
from logmem.api import read_log
from logmem.model.inputs import MAX_QUIET
from logmem.report import render

_TS = re.compile(r"^\[\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}")


def spread(lines: list[str], start: datetime, step: float = 2.0) -> list[str]:
    """Give the prefixed lines increasing times from `start` (a start-up that takes a while)."""
    out = []
    for i, line in enumerate(lines):
        ts = start + timedelta(seconds=i * step)
        out.append(_TS.sub(f"[{ts:%Y-%m-%d %H:%M:%S}", line))
    return out


def write(path: Path, lines: list[str]) -> str:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


T0 = datetime(2026, 4, 14, 16, 0, 0)


# --- different launches are never merged ------------------------------------------------------


@pytest.mark.parametrize(
    ("first", "second"), [("037-", "040-"), ("016-", "040-"), ("014-", "041-")]
)
def test_unrelated_corpus_logs_are_separate_launches(first: str, second: str) -> None:
    """Two single-GPU servers months apart (or a TP2 Qwen3.5 and a TP2 Devstral) used to merge
    into one launch whose rank held two "target" models and "finished on 2 ranks"."""
    a, b = str(corpus_log(first)), str(corpus_log(second))
    both = read_log(a, b)
    assert len(both.launches) == 2
    for path in (a, b):
        (L,) = both.launches_of(path)
        assert L.paths == (path,)
        (alone,) = read_log(path).launches
        assert L.ranks == alone.ranks
        assert all(len(r.models) == len(alone.rank(r.label).models) for r in L.ranks)  # type: ignore[union-attr]
    (why,) = both.apart
    assert (why.path, why.other, why.kind) == (b, a, "clock")
    (what, mine, theirs), *_ = why.differences
    assert what == "printed from" and mine != theirs
    # Each launch's verdict counts its own ranks ("finished on 1 rank", not "on 2 ranks").
    verdicts = [x for x in render(both, "text").splitlines() if x.startswith("Ready:")]
    alone = [x for p in (a, b) for x in render(read_log(p), "text").splitlines()]
    assert verdicts == [x for x in alone if x.startswith("Ready:")]


def test_other_server_args_are_another_launch(tmp_path: Path) -> None:
    a = write(tmp_path / "a.log", spread(startup(), T0))
    other = [x.replace("model_path='m'", "model_path='other'") for x in startup()]
    b = write(tmp_path / "b.log", spread(other, T0))
    an = read_log(a, b)
    assert [L.paths for L in an.launches] == [(a,), (b,)]
    (why,) = an.apart
    assert why.kind == "server_args"
    assert why.differences == (("model_path", "'other'", "'m'"),)


def test_files_printing_at_the_same_time_with_other_models_are_apart(tmp_path: Path) -> None:
    """No server_args in either (a log that starts after it): concurrent files whose first
    model differs are two servers, not two halves of one."""
    a = write(tmp_path / "a.log", spread(startup(server_args=False), T0))
    llama = [
        x.replace("TP0]", "TP2]").replace("TP1]", "TP3]").replace("Qwen2For", "LlamaFor")
        for x in startup(server_args=False)
    ]
    b = write(tmp_path / "b.log", spread(llama, T0 + timedelta(seconds=1)))
    an = read_log(a, b)
    assert len(an.launches) == 2
    (why,) = an.apart
    assert why.kind == "model"
    assert why.differences == (("first model loaded", "LlamaForCausalLM", "Qwen2ForCausalLM"),)


def test_a_single_gpu_file_and_a_tagged_file_are_apart(tmp_path: Path) -> None:
    a = write(tmp_path / "a.log", spread(startup(("",), server_args=False), T0))
    b = write(tmp_path / "b.log", spread(startup(server_args=False), T0))
    an = read_log(a, b)
    assert [[r.label for r in L.ranks] for L in an.launches] == [[""], ["TP0", "TP1"]]
    assert [w.kind for w in an.apart] == ["ranks"]


def test_time_only_and_dated_prefixes_are_different_versions(tmp_path: Path) -> None:
    """Before about Nov 2024 SGLang printed time-only prefixes ([19:01:01 TP0])."""
    a = write(tmp_path / "a.log", spread(startup(server_args=False), T0))
    old = [_TS.sub("[16:08:00", x) for x in startup(server_args=False)]
    b = write(tmp_path / "b.log", old)
    an = read_log(a, b)
    assert len(an.launches) == 2
    (why,) = an.apart
    assert (why.kind, why.differences) == ("clock", (("prefix", "time only", "date and time"),))


def test_same_settings_far_apart_in_time_are_two_launches(tmp_path: Path) -> None:
    a = write(tmp_path / "a.log", spread(startup(("TP0",)), T0))
    later = [x.replace("TP0]", "TP1]") for x in startup(("TP0",))]
    b = write(tmp_path / "b.log", spread(later, T0 + MAX_QUIET + timedelta(minutes=5)))
    an = read_log(a, b)
    assert [[r.label for r in L.ranks] for L in an.launches] == [["TP0"], ["TP1"]]
    assert [w.kind for w in an.apart] == ["clock"]


# --- parts of one launch still merge ----------------------------------------------------------


def test_per_node_files_of_a_multi_node_launch_are_one_launch(tmp_path: Path) -> None:
    """Each node runs its own launcher: its dump differs in node_rank and random_seed only,
    and its log holds its own ranks (reference 1.5)."""

    def node(rank: int, ranks: tuple[str, ...]) -> list[str]:
        lines = startup(ranks)
        lines[0] = lines[0].replace(
            f"tp_size={len(ranks)})",
            f"tp_size=4, nnodes=2, node_rank={rank}, random_seed={1000 + rank})",
        )
        return spread(lines, T0)

    a = write(tmp_path / "node0.log", node(0, ("TP0", "TP1")))
    b = write(tmp_path / "node1.log", node(1, ("TP2", "TP3")))
    an = read_log(a, b)
    (L,) = an.launches
    assert [r.label for r in L.ranks] == ["TP0", "TP1", "TP2", "TP3"]
    assert L.paths == (a, b) and an.apart == ()
    assert L.args["node_rank"] == 0  # the first node's dump


@pytest.mark.parametrize("prefix", ["001-", "019-", "036-"])
def test_rotated_parts_of_one_log_are_one_launch(tmp_path: Path, prefix: str) -> None:
    log = corpus_log(prefix)
    (whole,) = read_log(str(log)).launches
    lines = log.read_bytes().split(b"\n")
    for frac in (0.2, 0.5, 0.8):
        cut = int(len(lines) * frac)
        (tmp_path / "p1.log").write_bytes(b"\n".join(lines[:cut]) + b"\n")
        (tmp_path / "p2.log").write_bytes(b"\n".join(lines[cut:]))
        an = read_log(str(tmp_path / "p1.log"), str(tmp_path / "p2.log"))
        assert an.apart == (), frac
        (L,) = an.launches
        assert L.ranks == whole.ranks, frac


@pytest.mark.parametrize("fmt", ["text", "markdown", "html"])
def test_every_format_says_which_file_is_which_launch_and_why(fmt: str) -> None:
    """037 (Llama 3.1 8B, Jul 2025) and 040 (Qwen2.5 0.5B, Feb 2026) are unrelated servers:
    each report names each file's launch and the reason they were kept apart."""
    a_path, b_path = str(corpus_log("037-")), str(corpus_log("040-"))
    a = read_log(a_path, b_path)
    assert [len(a.launches_of(p)) for p in (a_path, b_path)] == [1, 1]
    out = _squash(render(a, fmt))
    for p in (a_path, b_path):
        (launch,) = a.launches_of(p)
        assert f"{p}: launch {launch.index}." in out
    (why,) = a.apart
    assert why.path == b_path and why.other == a_path
    assert f"{b_path} is not part of the launch of {a_path}" in out
    # The reason quotes the differing figures the model found (here the print times).
    for _what, this, other in why.differences:
        assert this in out and other in out


def test_json_says_which_file_is_which_launch_and_why() -> None:
    import json

    a_path, b_path = str(corpus_log("037-")), str(corpus_log("040-"))
    a = read_log(a_path, b_path)
    doc = json.loads(render(a, "json"))["grouping"]
    assert doc["launches_by_path"] == {
        p: [L.index for L in a.launches_of(p)] for p in (a_path, b_path)
    }
    assert doc["launches_by_path"][a_path] != doc["launches_by_path"][b_path]
    (why,) = doc["apart"]
    assert (why["path"], why["other"], why["kind"]) == (b_path, a_path, a.apart[0].kind)
    got = [(d["what"], d["this"], d["other"]) for d in why["differences"]]
    assert got == list(a.apart[0].differences)


def test_one_file_has_no_grouping_sentences() -> None:
    a = read_log(str(corpus_log("037-")))
    assert "is not part of the launch" not in render(a, "text")


def _squash(s: str) -> str:
    """Text wraps long lines: compare with whitespace runs as one space."""
    return re.sub(r"\s+", " ", s)


def test_a_dated_prefix_reads_as_strptime_reads_it() -> None:
    """logmem.model.clock reads "YYYY-MM-DD HH:MM:SS" by its fixed fields (no strptime on
    the path, see _dated): the same datetime, or None where strptime raises."""
    from logmem.model.clock import _dated

    def strptime(ts: str) -> datetime | None:
        try:
            return datetime.strptime(ts, "%Y-%m-%d %H:%M:%S")
        except ValueError:
            return None

    stamps = [
        f"{y}-{mo:02d}-{d:02d} {h:02d}:{mi:02d}:{s:02d}"
        for y in ("0000", "0001", "1900", "2024", "2026", "9999")
        for mo in (0, 1, 2, 12, 13)
        for d in (0, 1, 28, 29, 30, 31, 32)
        for h, mi, s in ((0, 0, 0), (23, 59, 59), (24, 0, 0), (0, 60, 0), (0, 0, 60), (0, 0, 61))
    ] + ["2026-99-99 99:99:99"]
    for ts in stamps:
        assert _dated(ts) == strptime(ts), ts
