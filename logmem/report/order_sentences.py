"""Sentences of the input-order findings: where a launch begins in its file and why, and a
rank's lines out of time order (logmem.analysis.findings_order)."""

from __future__ import annotations

from datetime import timedelta

from logmem.analysis.findings_order import (
    ClockOffset,
    LaunchStarted,
    OutOfOrder,
    RepeatedLines,
    SharedLabel,
)
from logmem.parse import events as ev
from logmem.report.finding_base import finding_text

# How each start-up step reads, in SGLang's own words.
_STEP = {
    ev.InitBegin.__name__: "'Init torch distributed begin'",
    ev.InitEnd.__name__: "'Init torch distributed ends'",
    ev.WeightsBegin.__name__: "'Load weight begin'",
    ev.WeightsEnd.__name__: "'Load weight end'",
    ev.KVPool.__name__: "'KV Cache is allocated'",
    ev.PoolEnd.__name__: "'Memory pool end'",
    ev.CaptureBegin.__name__: "'Capture ... graph begin'",
    ev.CaptureEnd.__name__: "'Capture ... graph end'",
    ev.Summary.__name__: "its scheduler summary",
}


def _rank(label: str | None) -> str:
    if label is None:
        return "the launcher"
    return label if label else "the untagged rank (one GPU)"


def _step(f: LaunchStarted) -> str:
    return _STEP.get(f.start.step, "a start-up line")


def _span(d: timedelta) -> str:
    s = abs(d.total_seconds())
    if s >= 2 * 86400:
        return f"{s / 86400:.0f} days"
    if s >= 2 * 3600:
        return f"{s / 3600:.0f} hours"
    return f"{s / 60:.0f} minutes"


def begins_at(line: int, after: int | None, when: str | None = None) -> str:
    """ "at line N (when)", or, when lines the reader drops lie between the launch before and
    line N (LaunchStart.after), "at or before line N (when; ...)": its first line (a warning,
    the new process's first log line) may be one of them."""
    notes = [when] if when else []
    if after is None or line <= after + 1:
        return f"at line {line}" + (f" ({when})" if when else "")
    unread = f"line {after + 1}" if after + 1 == line - 1 else f"lines {after + 1}-{line - 1}"
    notes.append(
        f"{unread} before it carry no start-up step and are not read, and its first line may "
        "be among them"
    )
    return f"at or before line {line} ({'; '.join(notes)})"


@finding_text.register
def _(f: LaunchStarted) -> str:
    s = f.start
    at = f"This launch begins {begins_at(s.line.line_no, s.after, s.at)}"
    prev = f"launch {f.previous}"
    ev_line = s.evidence.line_no if s.evidence is not None else None
    who = _rank(s.rank)
    if s.kind == "server_args":
        where = f" ({prev}'s at line {ev_line})" if ev_line is not None else f" after {prev}"
        return f"{at}: server_args is printed again{where}, as a new start-up does."
    if s.kind == "restart":
        first = f" (its first at line {ev_line})" if ev_line is not None else ""
        return (
            f"{at}: {who} begins distributed init again{first}, and no draft worker of {prev} "
            f"explains it: a restart."
        )
    step = _step(f)
    joined = "two logs joined, or a restart whose first lines are missing"
    if s.kind == "after_ready":
        return (
            f"{at}: {who} prints {step} after {prev} came up (line {ev_line}), with no restart "
            f"line before it; a server that is up does not load again, so this is another "
            f"start-up ({joined})."
        )
    if s.kind == "after_summary":
        return (
            f"{at}: {who} prints {step} after its scheduler summary (line {ev_line}), which "
            f"ends its start-up, with no restart line before it: another start-up ({joined})."
        )
    if s.kind == "untagged":
        return (
            f"{at}: {who} prints {step} beside the TP-tagged ranks of {prev} (from line "
            f"{ev_line}); a launch has tagged ranks or one untagged rank, not both ({joined})."
        )
    if s.kind == "tagged":
        return (
            f"{at}: {who} prints {step} beside the untagged rank (one GPU) of {prev} (from line "
            f"{ev_line}); a launch has tagged ranks or one untagged rank, not both ({joined})."
        )
    if s.kind == "clock" and s.values is not None and s.gap is not None:
        way = "after" if s.gap > timedelta(0) else "before"
        return (
            f"{at}: {who} prints {step} at {s.values[1]}, {_span(s.gap)} {way} the last "
            f"start-up line of {prev} (line {ev_line}, {s.values[2]}): far more than one "
            f"start-up takes ({joined})."
        )
    if s.kind == "model" and s.values is not None and s.values[1] == s.values[2]:
        return (
            f"{at}: {who} prints 'Load weight end' of {s.values[1]} again after its model "
            f"loaded (line {ev_line}), with no 'Load weight begin' before it, and server_args "
            f"configures no draft (speculative_algorithm=None): another start-up ({joined})."
        )
    if s.kind == "model" and s.values is not None:
        return (
            f"{at}: {who} prints 'Load weight end' of {s.values[1]}, another model than the "
            f"{s.values[2]} of {prev} (line {ev_line}), with no 'Load weight begin' before it "
            f"and no draft configured ({joined})."
        )
    if s.kind == "model":
        return (
            f"{at}: {who} prints 'Load weight begin' again after its model loaded (line "
            f"{ev_line}), and server_args configures no draft (speculative_algorithm=None): "
            f"another start-up ({joined})."
        )
    return f"{at}."


def _lines(a: int, b: int) -> str:
    return f"line {a}" if a == b else f"lines {a}-{b}"


@finding_text.register
def _(f: RepeatedLines) -> str:
    who = ", ".join(_rank(r) for r in f.ranks)
    if f.shared:
        return (
            f"The start-up lines of {who} at {_lines(f.first, f.last)} are printed again at "
            f"{_lines(f.again, f.again_last)} (same text and time): two processes print as "
            f"{who} (below), so these are likely the other process's lines that carry no "
            "figure; they are left out of the ledgers."
        )
    return (
        f"The start-up lines of {who} at {_lines(f.first, f.last)} are printed again at "
        f"{_lines(f.again, f.again_last)} (same text and time), before the server came up: "
        f"the input repeats part of the log (overlapping pastes); the repeat is ignored and "
        f"the ledger is built once."
    )


@finding_text.register
def _(f: OutOfOrder) -> str:
    more = f.count - 1
    also = f" ({more} more of its lines run back likewise)" if more > 0 else ""
    used = (
        " and its figures are not used below (the other ranks' are)"
        if f.set_aside
        else " and, with no rank in order, the figures below come from it all the same"
    )
    return (
        f"{f.rank or 'The untagged rank'}'s lines are not in time order: line {f.later_line} "
        f"({f.later_time:%H:%M:%S}) comes after line {f.earlier_line} ({f.earlier_time:%H:%M:%S})"
        f"{also}. Its ledger pairs readings in the wrong order (memory 'given back', steps "
        f"that did not happen), so the ledger of {f.rank or 'that rank'} is not reliable"
        f"{used}: pass the rank's own file, or a merge that keeps each file's order."
    )


@finding_text.register
def _(f: SharedLabel) -> str:
    who = f.rank or "the untagged rank"
    if f.step == "load":
        step = (
            f"its 'Load weight begin' at line {f.again_line} comes while the load begun at line "
            f"{f.first_line} has not ended, and one process loads one model at a time (a draft "
            "model's load begins after the target's 'Load weight end')"
        )
    else:
        step = (
            f"its 'Init torch distributed begin' at line {f.again_line} comes while the one at "
            f"line {f.first_line} has not ended, and one process initialises once"
        )
    used = (
        "its figures are not used below (the other ranks' are)"
        if f.set_aside
        else "with no other rank to use, the figures below come from it all the same and are "
        "not reliable"
    )
    return (
        f"Two processes print as {who}: {step}. Two servers (or two containers) write this "
        f"file, so the ledger of {who} mixes their readings, and {used}. Split the log by "
        "process (one log file per server, or `docker compose logs SERVICE`) and analyse each."
    )


@finding_text.register
def _(f: ClockOffset) -> str:
    moved = ", ".join(_rank(r) for r in f.ranks)
    ref = ", ".join(_rank(r) for r in f.reference) or "the other ranks"
    way = "after" if f.offset > timedelta(0) else "before"
    verb = "is" if len(f.ranks) == 1 else "are"
    return (
        f"{moved} {verb} dated {_span(f.offset)} {way} {ref} throughout: their clocks differ "
        f"(another node's time zone or clock); each rank's times are compared with its own "
        f"only, so this is one launch."
    )
