"""logmem: SGLang start-up logs -> per-rank GPU-memory ledger.

Pipeline, one module per stage:

    read (bytes) -> lines (records) -> events (typed facts) -> ledger (launches,
    ranks, phases) -> attribution (causes) -> fit (diff, slopes, what-if) -> report
"""

__version__ = "0.1.0"
