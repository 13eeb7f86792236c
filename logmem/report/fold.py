"""Which ranks a report shows in full: the rank it leads with, the rank whose graph buckets
it shows, and, for many-rank launches, the ranks table folded.

Markdown and HTML print a ledger per rank; for a launch of thousands of ranks that is
thousands of near-identical tables. report.model folds them (text prints only a count):
the binding rank, the rank that prints the bars, and the ranks whose readings differ stay
in full; the others share a row of the ranks table. The JSON report keeps every rank.
"""

from __future__ import annotations

from dataclasses import replace

from logmem.analysis.attribution import LaunchLedger, RankLedger
from logmem.analysis.findings_order import trusted
from logmem.frozen import frozen
from logmem.model.records import Launch, Rank
from logmem.report.table import Table, rank_name

# Above this many ranks a report folds the ranks that print the same readings: the binding
# rank, the bar rank and up to MAX_OUTLIERS ranks whose readings differ are shown in full,
# the others as one row of the ranks table. A section per rank of a 4096-rank launch is
# neither readable (a ticket of 4,096 tables) nor quick to draw.
MANY_RANKS = 16
MAX_OUTLIERS = 12


def main_rank(launch: Launch) -> Rank | None:
    """The rank a report leads with: the one with bucket readings, else the first, among the
    ranks whose lines are in time order (the ranks the findings use: findings_order.trusted)."""
    return trusted(launch).main_rank


def leading_ranks(led: LaunchLedger, full: bool) -> tuple[str, ...]:
    """The ranks whose ledgers head the report (text, Markdown and HTML, and HTML's
    waterfall): every rank `full` (few ranks, --all-ranks, or the ranks picked with --rank),
    else the main rank. `led` holds the ranks the report shows (report.model.shown_ledger)."""
    main = main_rank(led.launch)
    return tuple(r.rank for r in led.ranks if full or (main is not None and r.rank == main.label))


def bucket_rank(led: LaunchLedger) -> RankLedger | None:
    """The rank whose graph buckets a report shows: the main rank when it is shown, else (the
    ranks picked with --rank leave it out) the first shown rank with bucket readings."""
    main = main_rank(led.launch)
    rl = led.rank(main.label) if main is not None else None
    if rl is not None:
        return rl
    return next((r for r in led.ranks if any(p.buckets for p in r.phases)), None)


@frozen
class Fold:
    """Which ranks of a many-rank launch a report shows in full."""

    shown: tuple[str, ...]  # labels, in rank order: binding, bar rank, typical, outliers
    typical: str  # the first rank of the largest group of identical readings
    same: int  # ranks not shown whose readings are the typical rank's
    other: int  # ranks not shown whose readings differ (outliers beyond MAX_OUTLIERS)


def _readings(rl: RankLedger) -> tuple[object, ...]:
    return (rl.first_bytes, tuple((p.key, p.after_bytes) for p in rl.phases))


def fold_of(led: LaunchLedger) -> Fold | None:
    """The fold of a launch of more than MANY_RANKS ranks (None: every rank in full)."""
    if len(led.ranks) <= MANY_RANKS:
        return None
    groups: dict[tuple[object, ...], list[str]] = {}
    for rl in led.ranks:
        groups.setdefault(_readings(rl), []).append(rl.rank)
    typical_group = max(groups.values(), key=len)  # ties: the group seen first
    main = main_rank(led.launch)
    keep = {x for x in (led.binding_rank, main.label if main is not None else None) if x}
    keep.add(typical_group[0])
    outliers = [rl.rank for rl in led.ranks if rl.rank not in typical_group and rl.rank not in keep]
    keep.update(outliers[:MAX_OUTLIERS])
    shown = tuple(rl.rank for rl in led.ranks if rl.rank in keep)
    same = sum(1 for r in typical_group if r not in keep)
    return Fold(shown, typical_group[0], same, len(led.ranks) - len(shown) - same)


def folded_ranks_table(t: Table, led: LaunchLedger, fold: Fold) -> Table:
    """The per-rank table with the ranks not shown in full merged by identical rows."""
    labels = [r.label for r in led.launch.ranks]
    if len(labels) != len(t.rows):  # not one row per rank: leave it as it is
        return t
    rows: list[tuple[str, ...]] = []
    merged: dict[tuple[str, ...], list[str]] = {}
    for label, row in zip(labels, t.rows):
        if label in fold.shown:
            rows.append(row)
        else:
            merged.setdefault(row[1:], []).append(rank_name(label))
    for values, names in merged.items():
        shown = ", ".join(names[:3]) + (f", ... {names[-1]}" if len(names) > 3 else "")
        count = f"{len(names)} rank{'s' if len(names) > 1 else ''}"
        rows.append((f"{shown} ({count})", *values))
    return replace(t, rows=tuple(rows))


def fold_note(fold: Fold, n: int) -> str:
    names = ", ".join(rank_name(r) for r in fold.shown[:6]) + (
        ", ..." if len(fold.shown) > 6 else ""
    )
    full = f"{len(fold.shown)} {'rank' if len(fold.shown) == 1 else 'ranks'}"
    out = (
        f"Of the {n} ranks, this report shows {full} in full ({names}): the binding rank, the rank"
        f" that prints the bars and the ranks whose readings differ from the others. {fold.same}"
        f" print exactly the readings of {rank_name(fold.typical)} and share a row of the table"
        " above."
    )
    if fold.other:
        out += (
            f" {fold.other} more print readings of their own; the table above has them, one row"
            " per set of readings."
        )
    return out + " Every rank's ledger is in the JSON report (-f json); --rank picks one."
