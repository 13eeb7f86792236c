"""whatif's sentence on how a new max bs is priced (compare.notes.LargestBecomes), registered on
report.compare.notes' ``note_text`` (kept apart: that module is near its length limit)."""

from __future__ import annotations

from logmem.compare import notes as cn


def largest_becomes_text(n: cn.LargestBecomes) -> str:
    head = f"The largest captured batch becomes {n.bs}"
    if n.per_bs:
        return (
            f"{head}; graph memory changes by the heuristic x the change in bs, which stands for "
            "all of it (buckets added or dropped included)."
        )
    static = (
        ", static buffers by their slope"
        if n.static_slope
        else ("; static buffers stay as measured (no static slope given)")
    )
    rest = (
        "measured buckets below it stay (the added ones: below)"
        if n.adds
        else "other buckets stay as measured"
    )
    return (
        f"{head}; rows = bs x {n.rows_per_bs}; the largest bucket changes by slope x the change "
        f"in rows{static}; the {rest}."
    )
