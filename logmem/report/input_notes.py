"""What every report says about its inputs being read only in part, the same words everywhere.

An input whose reading ended early (a compressed stream cut short or corrupt, ``--max-bytes``)
is told in analyze's Input section and in the notes of diff, fit, whatif and a plot, from the
facts the reader left (:class:`logmem.parse.read.ReadStats`): one sentence per input, here.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from logmem.compare.load import LaunchRef
from logmem.parse.read import ReadStats

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def input_stop_note(why: str, compression: str | None, at: int, detail: str | None) -> str:
    """Why reading an input ended early, and where (decompressed bytes)."""
    if why == "max-bytes":
        return f"read only its first {at:,} bytes (--max-bytes): later lines are not in this report"
    what = "cut short" if why == "truncated" else f"undecodable ({detail})" if detail else "corrupt"
    return (
        f"the {compression} stream is {what} after {at:,} decompressed bytes: "
        "this report covers what was read up to there"
    )


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


def note_figure(fig: Figure, notes: Sequence[str]) -> Figure:
    """A figure with its input notes written along its foot (an image has no notes section)."""
    if notes:
        fig.text(0.01, 0.01, "\n".join(notes), fontsize=6.5, ha="left", va="bottom", wrap=True)
    return fig
