"""DataFrames: an Analysis -> tidy pandas tables of the ledger and of the graph-bucket samples.

pandas is imported here only, so the CLI and the text/JSON reporters never pay for it.
Rows come from the same ledger (attribution.build_ledger) every report draws.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from logmem.report.causes import cause_name, cause_note, phase_name
from logmem.units import gib

if TYPE_CHECKING:
    import pandas as pd

    from logmem.model.analysis import Analysis

LEDGER_COLUMNS = (
    "launch",
    "rank",
    "phase",
    "cause",
    "gib",
    "bytes",
    "kind",
    "first_line",
    "phase_name",
    "note",
)
SAMPLES_COLUMNS = ("launch", "graph", "rank", "size", "avail_gib", "cost_gib", "line")


def ledger_records(a: Analysis) -> list[dict[str, Any]]:
    """One row per (launch, rank, phase, cause), in log order."""
    rows: list[dict[str, Any]] = []
    for L in a.launches:
        for rl in (x for x in a.ledger(L).ranks if a.shows(x.rank)):
            for p in rl.phases:
                for c in p.causes:
                    rows.append(
                        {
                            "launch": L.index,
                            "rank": rl.rank,
                            "phase": p.key,
                            "cause": cause_name(c),
                            # A figure the log does not support (floored, masked) is unknown.
                            "gib": gib(c.bytes) if c.bound.known else None,
                            "bytes": c.bytes if c.bound.known else None,
                            "kind": c.kind,
                            "first_line": c.lines[0] if c.lines else None,
                            "phase_name": phase_name(p),
                            "note": cause_note(c),
                        }
                    )
    return rows


def samples_records(a: Analysis) -> list[dict[str, Any]]:
    """One row per captured bucket that printed a free-memory reading, in capture order."""
    rows: list[dict[str, Any]] = []
    for L in a.launches:
        for rl in (x for x in a.ledger(L).ranks if a.shows(x.rank)):
            for p in rl.phases:
                name = p.graph.name if p.graph is not None else p.key.removeprefix("capture:")
                for b in p.buckets:
                    rows.append(
                        {
                            "launch": L.index,
                            "graph": name,
                            "rank": rl.rank,
                            "size": b.size,
                            "avail_gib": gib(b.avail_bytes),
                            "cost_gib": gib(b.bucket_cost_bytes),
                            "line": b.line,
                        }
                    )
    return rows


def ledger_frame(a: Analysis) -> pd.DataFrame:
    """Tidy ledger: launch, rank, phase, cause, gib, bytes, kind, first_line (+ phase_name, note)."""
    import pandas as pd

    # Annotated: under mypy's 3.10 target the pandas-3 stubs type the constructor as Any.
    df: pd.DataFrame = pd.DataFrame(ledger_records(a), columns=list(LEDGER_COLUMNS))
    # Nullable integers: a cause without a line (an estimate) is <NA>, not a float NaN.
    df["first_line"] = df["first_line"].astype("Int64")
    df["bytes"] = df["bytes"].astype("int64")
    return df


def samples_frame(a: Analysis) -> pd.DataFrame:
    """Bucket samples: graph, rank, size, avail_gib, cost_gib (+ launch, line)."""
    import pandas as pd

    df: pd.DataFrame = pd.DataFrame(samples_records(a), columns=list(SAMPLES_COLUMNS))
    df["size"] = df["size"].astype("Int64")  # sizes the bar did not print are <NA>
    df["line"] = df["line"].astype("int64")
    return df
