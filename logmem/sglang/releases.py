"""SGLang's releases and their dates: the one table every dated rule in logmem.sglang reads.

A date is the file date of ``sglang/srt/server_args.py`` inside the release's wheel on PyPI
(``pip download sglang==V --no-deps``; PyPI's upload times were not reachable). docs/sglang-
sources.md and docs/log-lines-by-version.md say what each release was read for. A log's date
only bounds its SGLang version from above: an old image can run later, and a change first
read in release R may already be in a dev build after the release before it.

This module imports nothing of the package, so every rule module can import it.
"""

from __future__ import annotations

from datetime import date

RELEASES = {
    "0.2.9": date(2024, 8, 2),
    "0.3.5": date(2024, 11, 3),
    "0.3.6": date(2024, 11, 22),
    "0.4.0": date(2024, 12, 3),
    "0.4.2": date(2025, 1, 27),
    "0.4.3": date(2025, 2, 14),
    "0.4.3.post4": date(2025, 3, 6),
    "0.4.4": date(2025, 3, 13),
    "0.4.5": date(2025, 4, 7),
    "0.4.6": date(2025, 4, 27),
    "0.4.6.post5": date(2025, 5, 24),
    "0.4.7": date(2025, 6, 10),
    "0.4.8": date(2025, 6, 24),
    "0.4.9": date(2025, 7, 6),
    "0.4.10": date(2025, 7, 31),
    "0.5.1": date(2025, 8, 23),
    "0.5.2": date(2025, 9, 11),
    "0.5.3": date(2025, 10, 6),
    "0.5.4": date(2025, 10, 24),
    "0.5.5": date(2025, 11, 6),
    "0.5.6": date(2025, 12, 3),
    "0.5.7": date(2026, 1, 1),
    "0.5.8": date(2026, 1, 23),
    "0.5.9": date(2026, 2, 23),
    "0.5.10": date(2026, 4, 5),
    "0.5.11": date(2026, 5, 7),
    "0.5.12": date(2026, 5, 16),
    "0.5.13": date(2026, 6, 11),
    "0.5.14": date(2026, 6, 26),
    "0.5.15": date(2026, 7, 10),
    "0.5.16": date(2026, 7, 25),
    "0.5.17": date(2026, 8, 8),
    "0.5.18": date(2026, 8, 21),
    "0.5.19": date(2026, 9, 4),
    "0.5.20": date(2026, 9, 18),
    "0.5.21": date(2026, 10, 1),
    "0.5.22": date(2026, 10, 15),
    "0.5.23": date(2026, 10, 30),
}
"""The releases read, by version: the wheel's file date of ``sglang/srt/server_args.py``."""
