"""How each launch of a diff ended, and what follows for the comparison.

The outcome is analyze's verdict (logmem.analysis.failures.verdict), not derived again here. A
launch whose start-up did not finish (crashed or incomplete) lacks the lines after the point it
stopped: a wording marker it shows as absent is then not a difference of SGLang versions, and a
capture it stopped in is not comparable with a complete one (diff.PhaseChange.stopped). The end
state is where each start-up ended: free memory after start-up and max_running_requests, with
their lines.
"""

from __future__ import annotations

from collections.abc import Sequence

from logmem.analysis.attribution import LaunchLedger
from logmem.analysis.failures.facts import Verdict
from logmem.analysis.failures.verdict import verdict
from logmem.frozen import frozen
from logmem.model.records import Launch
from logmem.sglang.eras import ABSENT_MARKERS, Marker

# era_markers' values for a line a launch did not print (logmem.sglang.eras.ABSENT_MARKERS, and
# "-" for a marker it has no value for): in a launch that stopped, the line may lie after the
# point it stopped.
_NOT_PRINTED = ABSENT_MARKERS | {"-"}


@frozen
class EndState:
    """Where one launch's start-up ended. None: the log does not show it (a start-up that did
    not finish has no free memory after start-up)."""

    free_bytes: int | None
    free_line: int | None
    free_from: str | None  # "summary" (available_gpu_mem) | "last reading" (ledger's last)
    max_running_requests: int | None
    requests_line: int | None
    requests_from: str | None  # "summary" | "server_args" (passed, no summary printed)


def verdicts(a: Launch, b: Launch) -> tuple[Verdict, Verdict]:
    return verdict(a), verdict(b)


def finished(v: Verdict) -> bool:
    return v.outcome.status == "ready"


def end_state(launch: Launch, ledger: LaunchLedger, v: Verdict) -> EndState:
    """The scheduler summary's available_gpu_mem and max_running_requests; without a summary,
    a finished launch's last reading and the max_running_requests it passed."""
    s = launch.summary
    free: tuple[int | None, int | None, str | None] = (None, None, None)
    if s is not None and s.available is not None:
        free = (s.available.bytes, s.source.line_no, "summary")
    elif finished(v):
        first = next((r for r in ledger.ranks if r.phases), None)
        if first is not None:
            free = (first.phases[-1].after_bytes, first.phases[-1].lines[1], "last reading")
    mrr = s.get_int("max_running_requests") if s is not None else None
    req: tuple[int | None, int | None, str | None] = (
        (mrr, s.source.line_no, "summary") if s is not None and mrr is not None else (None,) * 3
    )
    passed = launch.args.get("max_running_requests")
    if req[0] is None and isinstance(passed, int) and not isinstance(passed, bool):
        sa = launch.server_args
        req = (passed, sa.source.line_no if sa is not None else None, "server_args")
    return EndState(*free, *req)


def unreached_markers(
    markers: Sequence[Marker], outcomes: tuple[Verdict, Verdict]
) -> tuple[tuple[Marker, ...], tuple[tuple[str, str], ...]]:
    """The markers to compare, and (marker, side) of those set aside: a line one side lacks
    while its start-up did not finish and the other side printed it."""
    keep: list[Marker] = []
    aside: list[tuple[str, str]] = []
    for m in markers:
        side = next(
            (
                s
                for s, i in (("A", 0), ("B", 1))
                if not finished(outcomes[i])
                and m.values[i] in _NOT_PRINTED
                and m.values[1 - i] not in _NOT_PRINTED
            ),
            None,
        )
        if side is None:
            keep.append(m)
        else:
            aside.append((m.name, side))
    return tuple(keep), tuple(aside)
