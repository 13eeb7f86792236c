"""SGLang's wording by version: which form of each memory line a launch printed, the era it
suggests (E0-E7, docs/reference.md), and the graph families E7 renamed.

Used by ``logmem diff`` to say when two launches come from different SGLang versions, and to
match a graph family across them.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date

from logmem.frozen import frozen
from logmem.model.clock import printed_at
from logmem.model.records import Launch
from logmem.parse import events as ev
from logmem.sglang.releases import RELEASES


def printed_on(launch: Launch) -> date | None:
    """The date the launch's first dated line was printed: what bounds its SGLang version from
    above (an old image can run later), and so its era by date."""
    for r in launch.ranks:
        for e in r.events:
            when = printed_at(e)
            if when is not None:
                return when.date()
    return None


# sglang 0.5.1, srt/model_executor/cuda_graph_runner.py, CudaGraphRunner.__init__: first
# release with ``next_token_logits_buffer = torch.zeros((max_num_token, vocab_size),
# dtype=torch.float)``; 0.4.10 (wheel of 2025-07-31) and every earlier wheel have none (the
# logits are graph outputs in the graph pool). 0.5.1's wheel is dated 2025-08-23.
STATIC_LOGITS_FIRST = "0.5.1"
STATIC_LOGITS_RELEASED = RELEASES[STATIC_LOGITS_FIRST]
_STATIC_LOGITS_LATER = ("E5", "E6", "E7")  # wording that first appears after 0.5.1
_STATIC_LOGITS_EARLIER = ("E0-E1", "E2")  # wording of versions before it


def static_logits_buffer(launch: Launch) -> bool | None:
    """Whether the launch's SGLang allocates the decode graph's static logits buffer: False
    when a line is dated before 0.5.1 was released or the wording is older, True when the
    wording is newer, None when neither tells (E3-E4 wording printed after August 2025)."""
    when = printed_on(launch)
    era = era_of(era_markers(launch))
    if (when is not None and when < STATIC_LOGITS_RELEASED) or (
        era is not None and era.name in _STATIC_LOGITS_EARLIER
    ):
        return False
    if era is not None and era.name in _STATIC_LOGITS_LATER:
        return True
    return None


@frozen
class Marker:
    name: str
    values: tuple[str, ...]  # one per launch

    @property
    def differs(self) -> bool:
        return any(v != self.values[0] for v in self.values[1:])


MARKER_NAMES = (
    "server_args form",
    "capture lines",
    "capture end fields",
    "elapsed= in init/load lines",
    "Load weight end details",
    "Load weight end mem usage",
    "KV line",
    "bucket bar",
    "bs list line",
    "ranks printing model-runner lines",
)


def era_markers(launch: Launch) -> dict[str, str]:
    """Which wording of each memory line a launch used (docs/reference.md, eras)."""
    events = launch.all_events()
    out: dict[str, str] = {}
    sa = launch.server_args
    out["server_args form"] = (
        "not printed" if sa is None else ("dict" if sa.form == "dict" else "ServerArgs(...)")
    )
    begins = [e for e in events if isinstance(e, ev.CaptureBegin)]
    ends = [e for e in events if isinstance(e, ev.CaptureEnd)]
    if not begins and not ends:
        out["capture lines"] = "none"
    elif any("backend=" in e.source.text for e in begins):
        out["capture lines"] = "Capture target decode CUDA graph (E7)"
    else:
        out["capture lines"] = "Capture cuda graph (G0-G2)"
    if ends:
        t = ends[0].source.text
        ia, iu = t.find("avail mem="), t.find("mem usage=")
        if "elapsed=" in t:
            out["capture end fields"] = "elapsed=, usage, avail (E7)"
        elif ia >= 0 and iu >= 0:
            out["capture end fields"] = "avail, usage (E2)" if ia < iu else "usage, avail (E3-E6)"
        else:
            out["capture end fields"] = "elapsed only (E0-E1)"
    else:
        out["capture end fields"] = "no end line"
    inits = [e for e in events if isinstance(e, ev.InitEnd)]
    loads = [e for e in events if isinstance(e, ev.WeightsEnd)]
    has_elapsed = any(e.elapsed_s is not None for e in inits) or any(
        e.elapsed_s is not None for e in loads
    )
    out["elapsed= in init/load lines"] = (
        "yes (E5 on)" if has_elapsed else ("no" if inits or loads else "no lines")
    )
    if loads:
        # E2 added "mem usage=" to Load weight end (reference 0.1): a field inside the line, so
        # a truncated or filtered paste cannot drop it the way it drops whole lines.
        out["Load weight end mem usage"] = (
            "yes (E2 on)" if any(e.usage is not None for e in loads) else "no (E0-E1)"
        )
        keys = sorted({k for e in loads for k, _ in e.details})
        out["Load weight end details"] = (
            ", ".join(f"{k}=" for k in keys) if keys else "none (E6 on)"
        )
    else:
        out["Load weight end details"] = "no line"
    kvs = [e for e in events if isinstance(e, ev.KVPool)]
    if kvs:
        form = "KV size" if kvs[0].kv is not None else "K size, V size"
        out["KV line"] = form + (" + dtype (E7)" if kvs[0].dtype is not None else "")
    else:
        out["KV line"] = "no line"
    graphs = [g for r in launch.ranks for g in r.graphs]
    if any(s.size is not None for g in graphs for s in g.samples):
        out["bucket bar"] = "(bs=N avail_mem=X)"
    elif any(g.samples for g in graphs):
        out["bucket bar"] = "(avail_mem=X)"
    elif any(g.bars for g in graphs) or launch.stray_bars:
        out["bucket bar"] = "no description"
    else:
        out["bucket bar"] = "none"
    out["bs list line"] = (
        "yes (E3-E6)" if any(isinstance(e, ev.CaptureSizes) for e in events) else "no"
    )
    with_lines = [r.label for r in launch.ranks if r.models]
    if len(launch.ranks) <= 1:
        out["ranks printing model-runner lines"] = "single rank"
    elif len(with_lines) == 1 and len(launch.ranks) > 1:
        out["ranks printing model-runner lines"] = f"{with_lines[0]} only (E3 rank filter)"
    else:
        out["ranks printing model-runner lines"] = f"all {len(with_lines)}"
    return out


@frozen
class Era:
    """An era of SGLang's wording (reference, eras table) and the months it was current."""

    name: str  # "E2", "E3-E4"
    window: str  # "about Feb-Apr 2025"
    first: tuple[int, int] | None  # (year, month) the wording appears; None: open
    last: tuple[int, int] | None  # (year, month) it was last current; None: still current


# The windows, checked against the released wheels on PyPI (docs/log-lines-by-version.md; the
# release month is the newest file date in the wheel). The source wins over the reference's
# dates from logs: a window runs from the first release printing the wording (or the month its
# change reached main, for dev images) to the month the next wording was released.
#   E0-E1: sglang <= 0.4.2 (2025-01-27): no 'Init torch distributed ends', no capture figures.
#   E2: 0.4.3.postN-0.4.6 (2025-02/03 .. 2025-04-27); 'Init ... ends. mem usage=' in 0.4.4;
#     the capture end line avail-first in 0.4.4-0.4.6.
#   E3-E4: 0.4.6.post5 (2025-05-24: usage-first end line and the bs line together) and 0.4.7
#     (2025-06-10, RankZeroFilter) .. 0.5.8 (2026-01-23), the last release without elapsed=.
#   E5: 0.5.9 (2026-02-23; PR #15426 reached main about 2025-12-23): elapsed= with dtype=.
#   E6: 0.5.10 (2026-04-05) .. 0.5.13 (2026-06-11): no dtype=.
#   E7: 0.5.14 (2026-06-26) on: 'Capture target decode CUDA graph ...' (srt/model_executor/
#     model_runner_components/cuda_graph_setup.py); the reference's 'about Aug 2026' came from
#     the first logs seen, not the source.
ERAS = {
    "E0-E1": Era("E0-E1", "2024-Jan 2025", None, (2025, 1)),
    "E2": Era("E2", "about Feb-Apr 2025", (2025, 2), (2025, 4)),
    "E3-E4": Era("E3-E4", "about May 2025-Jan 2026", (2025, 5), (2026, 1)),
    "E5": Era("E5", "about Dec 2025-Mar 2026", (2025, 12), (2026, 3)),
    "E6": Era("E6", "about Apr-Jun 2026", (2026, 4), (2026, 6)),
    "E7": Era("E7", "about Jun 2026 on", (2026, 6), None),
}


def era_of(markers: Mapping[str, str]) -> Era | None:
    """An approximate era from the markers (docs/reference.md, eras); None: no telling line."""
    cap = markers.get("capture lines", "")
    end = markers.get("capture end fields", "")
    if "E7" in cap:
        return ERAS["E7"]
    if markers.get("elapsed= in init/load lines", "").startswith("yes"):
        return ERAS["E6" if "dtype=" not in markers.get("Load weight end details", "") else "E5"]
    if "E3-E6" in end:
        return ERAS["E3-E4"]
    if "E2" in end:
        return ERAS["E2"]
    if "E0-E1" in end or "E0-E1" in markers.get("Load weight end mem usage", ""):
        return ERAS["E0-E1"]
    return None


def era_guess(markers: Mapping[str, str]) -> str:
    """``era_of`` as a short label, "E2 (about Feb-Apr 2025)" or "unknown"."""
    e = era_of(markers)
    return f"{e.name} ({e.window})" if e is not None else "unknown"


@frozen
class EraGuess:
    """The era a launch's wording suggests, set against the date its lines were printed."""

    era: Era | None
    printed_on: date | None  # the first dated line (None: time-only or no prefixes)

    @property
    def fits_date(self) -> bool | None:
        """True: dated inside the wording's window; False: outside it (a fork, an old version
        run later, a backport); None: undated, or no era."""
        if self.era is None or self.printed_on is None:
            return None
        ym = (self.printed_on.year, self.printed_on.month)
        lo, hi = self.era.first, self.era.last
        return (lo is None or ym >= lo) and (hi is None or ym <= hi)

    @property
    def after_window(self) -> bool:
        e, d = self.era, self.printed_on
        return bool(e and d and e.last and (d.year, d.month) > e.last)


# Markers whose value says the line is absent (a trimmed paste, one GPU) rather than worded.
ABSENT_MARKERS = frozenset(
    {"not printed", "none", "no end line", "no lines", "no line", "single rank"}
)


def wording_differs(markers: tuple[Marker, ...]) -> bool:
    """Some line both launches printed is worded differently: a line one of them lacks (a
    trimmed paste), or one GPU against several, says nothing of the version."""
    return any(
        m.differs and not any(v in ABSENT_MARKERS for v in m.values)
        for m in markers
        if m.name != "bs list line"  # absent from E0-E2 and E7, and from trimmed pastes
    )


# --- graph families by era -----------------------------------------------------------------

# E7 renamed the graph families; a launch from each era still captures the same graphs.
FAMILY_ALIASES = {"target decode": "decode", "target prefill": "piecewise"}


def family_key(name: str) -> str:
    """A graph family (or a phase key naming one) in the oldest wording, for matching."""
    head, sep, fam = name.rpartition(":") if ":" in name else ("", "", name)
    base, hash_, n = fam.partition("#")
    return f"{head}{sep}{FAMILY_ALIASES.get(base, base)}{hash_}{n}"
