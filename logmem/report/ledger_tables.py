"""Report tables of the ledger: one rank's ledger (phases and their causes), free memory per
rank, and a capture's graph buckets."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from logmem.analysis.attribution import LaunchLedger, RankLedger
from logmem.analysis.captures import total_cost
from logmem.analysis.ledger import Bound, Bucket
from logmem.model.records import Rank
from logmem.report.causes import (
    bound_note,
    bounded,
    cause_name,
    cause_note,
    ledger_note,
    phase_name,
)
from logmem.report.device_words import DeviceTop, in_use_note, pre_start_rows
from logmem.report.table import Table, gib_cell, rank_name

_UNORDERED = "out of time order: not reliable"
_SHARED = "two processes: not reliable"


def ledger_table(led: RankLedger, extra: str = "", top: DeviceTop | None = None) -> Table:
    rows: list[tuple[str, ...]] = []
    indent: list[int] = []
    footnotes: list[str] = []
    if top is not None and top.pre is not None and led.phases:  # the device total, rec.2
        phase, cause = pre_start_rows(top.pre)
        footnotes.append(f"[1] {cause[0]}: {in_use_note(top.pre, top.device)}")
        rows += [phase, (f"{cause[0]} [1]", *cause[1:])]
        indent += [0, 1]
    for p in led.phases:
        rows.append(
            (
                phase_name(p),
                gib_cell(p.before_bytes),
                gib_cell(p.after_bytes),
                bounded(p.delta_bytes, p.bound),
                "",
                f"{p.lines[0]}-{p.lines[1]}",
            )
        )
        indent.append(0)
        for c in p.causes:
            name = cause_name(c)
            note = cause_note(c)
            if note:
                footnotes.append(f"[{len(footnotes) + 1}] {name}: {note}")
                name = f"{name} [{len(footnotes)}]"
            amount = bounded(c.bytes, c.bound)
            rows.append((name, "", "", amount, c.kind, ",".join(str(x) for x in c.lines)))
            indent.append(1)
    notes = list(footnotes)
    if led.out_of_order:
        notes.insert(
            0, f"Not reliable: {rank_name(led.rank)}'s lines run back in time (see Findings)."
        )
    elif led.shared_label:
        notes.insert(
            0,
            f"Not reliable: two processes print as {rank_name(led.rank)}, and its readings are "
            "theirs mixed (see Findings).",
        )
    if led.phases:
        total = sum(p.delta_bytes for p in led.phases)
        floored = led.last_bytes is not None and led.phases[-1].bound is not Bound.EXACT
        in_all = f"at least {gib_cell(total)}" if floored else gib_cell(total)
        notes.append(
            f"From {gib_cell(led.first_bytes)} GiB free to {gib_cell(led.last_bytes)} GiB: {in_all} GiB in all; "
            "each drop is split into causes, and what the log does not explain is shown as unattributed."
        )
    if led.empty is not None:
        notes.append(ledger_note(led))
    if top is not None and top.note:
        notes.append(top.note)
    if extra:
        notes.append(extra)
    return Table(
        f"Ledger of {rank_name(led.rank)} (GiB"
        + (
            f"; {_UNORDERED})" if led.out_of_order else f"; {_SHARED})" if led.shared_label else ")"
        ),
        ("phase / cause", "before", "after", "drop", "kind", "lines"),
        tuple(rows),
        ("l", "r", "r", "r", "l", "r"),
        tuple(notes),
        tuple(indent),
    )


_RANK_COLUMNS: tuple[tuple[str, Callable[[Rank], int | None]], ...] = (
    (
        "before weights",
        lambda r: (
            r.target.weights_begin.avail.bytes if r.target and r.target.weights_begin else None
        ),
    ),
    (
        "after weights",
        lambda r: r.target.weights_end.avail.bytes if r.target and r.target.weights_end else None,
    ),
    (
        "after pools",
        lambda r: r.target.pool_end.avail.bytes if r.target and r.target.pool_end else None,
    ),
    (
        "capture begin",
        # The first capture's own begin: a later capture's is not where capturing began.
        lambda r: r.graphs[0].begin_bytes if r.graphs else None,
    ),
    (
        "after capture",
        lambda r: next((g.end_bytes for g in reversed(r.graphs) if g.end_bytes is not None), None),
    ),
)


def _post_capture_free(r: Rank) -> int | None:
    """Free memory after the KV pool SGLang backed after the graphs (post-capture KV sizing)."""
    pc = r.target.post_capture if r.target else None
    return pc.avail.bytes if pc is not None and pc.avail is not None else None


# Only for a launch whose ranks print a post-capture KV line (sglang 0.5.17 on): there the
# "after pools" column is before the KV pool, which is backed after the graphs.
_POST_CAPTURE_COLUMN = ("after KV pool", _post_capture_free)


def ranks_table(led: LaunchLedger) -> Table | None:
    L = led.launch
    shown = {rl.rank for rl in led.ranks}  # the ranks the report shows (select)
    if len(L.ranks) < 2 or len(shown) < 2:
        return None
    columns = _RANK_COLUMNS
    if any(_post_capture_free(r) is not None for r in L.ranks):
        columns = (*_RANK_COLUMNS, _POST_CAPTURE_COLUMN)
    rows = []
    unknown: set[Bound] = set()
    for r in (r for r in L.ranks if r.label in shown):
        total = total_cost(r.graphs)
        bad = not total.bound.known
        if bad:
            unknown.add(total.bound)
        mark = " *" if r.label == led.binding_rank and led.imbalance_bytes is not None else ""
        rows.append(
            (
                rank_name(r.label) + mark,
                *(gib_cell(f(r)) for _, f in columns),
                "unknown"
                if bad
                else bounded(total.bytes, total.bound)
                if total.bytes is not None
                else "-",
            )
        )
    notes = [f"graphs {bound_note(b)}." for b in sorted(unknown, key=lambda b: b.value)]
    if any(r.label == led.binding_rank for r in L.ranks) and led.imbalance_bytes is not None:
        notes.append(
            "* the binding rank: least free memory before loading; SGLang sizes every rank's KV pool from it."
        )
    if columns is not _RANK_COLUMNS:
        notes.append(
            "after KV pool: post-capture KV sizing backs the KV pool after the graphs, so "
            "'after pools' is before it; it sizes every rank's pool from the least free memory "
            "after the graphs."
        )
    if any(not r.prints_bars for r in L.ranks) and any(r.prints_bars for r in L.ranks):
        notes.append(
            "Only the rank that prints progress bars has per-bucket readings; others show totals."
        )
    return Table(
        "Free memory per rank (GiB)",
        ("rank", *(c for c, _ in columns), "graphs"),
        tuple(rows),
        notes=tuple(notes),
    )


def bucket_tables(led: RankLedger) -> list[Table]:
    out = []
    for p in led.phases:
        if not p.buckets:
            continue
        per = p.facts.verify_per_req
        rows = tuple(
            (
                str(b.size) if b.size is not None else "?",
                *(() if per is None else (f"{b.size * per:,}" if b.size is not None else "?",)),
                gib_cell(b.avail_bytes),
                f"({_cost_cell(b)})" if b.to_end else _cost_cell(b),
                str(b.line),
            )
            for b in p.buckets
        )
        notes = (
            _sizes_note(p.buckets),
            "cost = free at this bucket's start minus free at the next bar's",
            *(
                (
                    "rose X: free memory rose by X GiB across the bucket, no cost the readings "
                    "can show (freed temporaries, another process, or unified memory)",
                )
                if any(_rose(b) for b in p.buckets)
                else ()
            ),
            *(
                (
                    "(cost): the last bar to the end line, not a per-bucket cost: the end line "
                    "empties the allocator's cache before reading, the bars do not",
                )
                if any(b.to_end for b in p.buckets)
                else ()
            ),
            *sorted(
                {f"cost {bound_note(b.bound)}." for b in p.buckets if b.bound is not Bound.EXACT}
            ),
            *(
                ()
                if per is None
                else (
                    f"tokens = size x {per}: the target's verify graph runs each request's "
                    f"{per} draft tokens (speculative_num_draft_tokens / num_tokens_per_req)",
                )
            ),
        )
        out.append(
            Table(
                f"Buckets of {phase_name(p)} on {rank_name(led.rank)} (GiB)",
                ("size", *(() if per is None else ("tokens",)), "free at start", "cost", "line"),
                rows,
                notes=notes,
            )
        )
    return out


def _rose(b: Bucket) -> bool:
    """Free memory rose across the bucket by at least a printed 0.01 GiB."""
    return (
        b.bound.known
        and b.cost_bytes is not None
        and gib_cell(-b.cost_bytes)
        not in (
            "0.00",
            "-0.00",
        )
        and b.cost_bytes < 0
    )


def _cost_cell(b: Bucket) -> str:
    """The bucket's cost, or "rose X" where free memory rose across it: a negative cost is not
    a cost (the capture findings say "free memory rose" too)."""
    if _rose(b):
        assert b.cost_bytes is not None
        return f"rose {gib_cell(-b.cost_bytes)}"
    return bounded(b.cost_bytes, b.bound)


def _sizes_note(buckets: Sequence[Bucket]) -> str:
    """Where the size column comes from, bucket by bucket (Bucket.size_from): the bar's own
    size, the sizes list (capture order, largest first), or unknown."""
    sources = {b.size_from for b in buckets}
    known = sorted(x for x in sources if x is not None)
    if not known:
        return "sizes unknown: neither the progress bar nor a sizes list gives them"
    parts = [
        f"the {x}" if x == "progress bar" else f"the {x} (captured largest first)" for x in known
    ]
    text = "sizes from " + " and ".join(parts)
    return text + ("; ? = unknown" if None in sources else "")
