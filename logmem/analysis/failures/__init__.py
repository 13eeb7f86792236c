"""Failures stage: a launch -> outcome (ready / crashed / incomplete), where it died, why, and
what to change, as typed facts (logmem.report.verdict words them).

records.py reads the typed error events; place.py finds where start-up stood; budget.py
and fixes.py price the fixes with SGLang's rules; outcome.py builds the failure; verdict.py
the verdict every report prints first.
"""

from logmem.analysis.failures.facts import Failure, Fix, Outcome, Verdict
from logmem.analysis.failures.outcome import outcome
from logmem.analysis.failures.place import PHASES, rank_phase
from logmem.analysis.failures.records import (
    CaptureError,
    ChildDied,
    CommBufferError,
    ErrorRecord,
    KVSizing,
    OtherRanksUnfinished,
    OutOfMemory,
    PythonError,
    RankError,
    Unbalanced,
    is_memory,
    read_errors,
)
from logmem.analysis.failures.verdict import verdict

__all__ = [
    "PHASES",
    "CaptureError",
    "ChildDied",
    "CommBufferError",
    "ErrorRecord",
    "Failure",
    "Fix",
    "KVSizing",
    "OtherRanksUnfinished",
    "OutOfMemory",
    "Outcome",
    "PythonError",
    "RankError",
    "Unbalanced",
    "Verdict",
    "is_memory",
    "outcome",
    "rank_phase",
    "read_errors",
    "verdict",
]
