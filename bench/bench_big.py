#!/usr/bin/env python3
"""The sparse big-log benchmark: a real start-up, a restart near the end, and runtime lines
in between of which none holds a keyword (82 keyword lines in 7.65 million per GiB).

It is now one section of bench/bench.py: ``python bench/bench_big.py [bench.py options]``
is ``python bench/bench.py --only sparse [options]``. ``generate`` stays for the tests.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gen  # noqa: E402  (bench/ is not a package)


def generate(path: Path, size: int, seed: int = 8) -> dict[str, int]:
    """Write a log of about `size` bytes: start-up, runtime noise, a restart near the end."""
    return gen.write_mix(path, size, kw_per_gib=0, seed=seed)


if __name__ == "__main__":
    import bench

    sys.argv[1:1] = ["--only", "sparse"]
    sys.exit(bench.main())
