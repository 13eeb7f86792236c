"""What every report says about its inputs being read only in part, the same words everywhere.

An input whose reading ended early (a compressed stream cut short or corrupt, ``--max-bytes``)
is told in analyze's Input section and in the notes of diff, fit, whatif and a plot, from the
facts the reader left (:class:`logmem.parse.read.ReadStats`): one sentence per input, here.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from logmem.compare.load import LaunchRef
from logmem.model.cap import KEEP_FIRST, KEEP_LAST
from logmem.model.records import LaunchBrief
from logmem.parse.read import ReadStats
from logmem.report.figures.scene import Scene, text_width


def input_stop_note(why: str, compression: str | None, at: int, detail: str | None) -> str:
    """Why reading an input ended early, and where (decompressed bytes)."""
    if why == "max-bytes":
        return f"read only its first {at:,} bytes (--max-bytes): later lines are not in this report"
    what = "cut short" if why == "truncated" else f"undecodable ({detail})" if detail else "corrupt"
    return (
        f"the {compression} stream is {what} after {at:,} decompressed bytes: "
        "this report covers what was read up to there"
    )


def cri_note(st: ReadStats) -> str:
    """What joining a CRI container log's pieces did (logmem.parse.cri)."""
    note = f"a CRI container log: {st.joined_lines:,} line(s) split into P/F pieces joined"
    if st.cut_lines:
        note += (
            f"; {st.cut_lines:,} line(s) never finished (first at line {st.first_cut_line}) "
            "are read up to their last whole word"
        )
    return note


def stop_sentence(st: ReadStats, who: str = "") -> str:
    """'A (x.log.gz): the gzip stream is cut short after ...' for one input that stopped."""
    assert st.stopped is not None
    name = f"{who} ({st.path})" if who else st.path
    note = input_stop_note(st.stopped, st.compression, st.bytes_read, st.stop_detail)
    return f"{name}: {note}."


def stop_sentences(stats: Iterable[ReadStats], who: str = "") -> tuple[str, ...]:
    return tuple(stop_sentence(st, who) for st in stats if st.stopped)


def ref_notes(refs: Sequence[LaunchRef]) -> tuple[str, ...]:
    """The notes of a comparison's launches read in part, in launch order, each input once."""
    out: list[str] = []
    for ref in refs:
        out.extend(s for s in stop_sentences(ref.stopped, ref.label) if s not in out)
    return tuple(out)


# Runs of like briefs listed in text, Markdown and HTML (JSON lists every brief).
MAX_BRIEF_RUNS = 12


def summarised_sentences(briefs: Sequence[LaunchBrief]) -> tuple[str, ...]:
    """How many launches of which input are kept only as briefs, why, and what they were."""
    out: list[str] = []
    for path in dict.fromkeys(b.path for b in briefs):
        mine = [b for b in briefs if b.path == path]
        out.append(
            f"{path}: {len(mine):,} launches ({mine[0].index} to {mine[-1].index}) are summarised, "
            f"not analysed: of an input with more than {KEEP_FIRST + KEEP_LAST} launches logmem keeps "
            f"the first {KEEP_FIRST} and the last {KEEP_LAST} in full, so that its memory stays "
            "bounded however often the server restarted (-f json lists each one)."
        )
        runs = _runs(mine)
        for first, last, b in runs[:MAX_BRIEF_RUNS]:
            which = f"launch {first}" if first == last else f"launches {first} to {last}"
            tokens = f"{b.tokens:,} KV tokens" if b.tokens is not None else "no KV tokens printed"
            out.append(f"{which} ({path}, from line {b.lines[0]:,}): {b.outcome}, {tokens}.")
        if len(runs) > MAX_BRIEF_RUNS:
            out.append(f"... and {len(runs) - MAX_BRIEF_RUNS:,} more runs of summarised launches.")
    return tuple(out)


def _runs(briefs: Sequence[LaunchBrief]) -> list[tuple[int, int, LaunchBrief]]:
    """Consecutive briefs with the same outcome and tokens: (first, last number, first brief)."""
    runs: list[tuple[int, int, LaunchBrief]] = []
    for b in briefs:
        if runs and (runs[-1][2].outcome, runs[-1][2].tokens) == (b.outcome, b.tokens):
            runs[-1] = (runs[-1][0], b.index, runs[-1][2])
        else:
            runs.append((b.index, b.index, b))
    return runs


def summarised_json(briefs: Sequence[LaunchBrief]) -> dict[str, Any]:
    """The briefs for JSON, with why they are briefs."""
    return {
        "count": len(briefs),
        "keep_first": KEEP_FIRST,
        "keep_last": KEEP_LAST,
        "why": summarised_sentences(briefs)[0] if briefs else None,
        "launches": [
            {
                "launch": b.index,
                "path": b.path,
                "lines": list(b.lines),
                "outcome": b.outcome,
                "max_total_num_tokens": b.tokens,
            }
            for b in briefs
        ],
    }


def launch_refs(model: Any) -> tuple[LaunchRef, ...]:
    """The launches of a Diff (a, b), a Fit (launches) or a WhatIf (launch), in order."""
    if hasattr(model, "launches"):
        return tuple(model.launches)
    return tuple(getattr(model, k) for k in ("a", "b", "launch") if hasattr(model, k))


def stopped_json(stats: Iterable[ReadStats]) -> list[dict[str, Any]]:
    """The same facts for JSON: analyze's ``stopped`` object, with the input's path."""
    return [
        {"path": st.path, "why": st.stopped, "at_byte": st.bytes_read, "detail": st.stop_detail}
        for st in stats
        if st.stopped
    ]


def note_scene(scene: Scene, notes: Sequence[str]) -> Scene:
    """A figure with its input notes written along its foot (an image has no notes section),
    each wrapped at the figure's width."""
    size = 6.5
    for note in notes:
        line = ""
        for word in note.split(" "):
            wider = f"{line} {word}" if line else word
            if line and text_width(wider, size) > scene.width - 12:
                scene.text(6, scene.height + size, line, size)
                scene.height += size * 1.3
                wider = word
            line = wider
        scene.text(6, scene.height + size, line, size)
        scene.height += size * 1.3
    if notes:
        scene.height += 4
    return scene
