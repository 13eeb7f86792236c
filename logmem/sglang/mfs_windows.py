"""The gpu_mem windows on which a reserve rule gives a dumped mem_fraction_static, and the
rounding SGLang applies (``round((gpu_mem - reserved) / gpu_mem, 3)``): split off
logmem.sglang.default_mfs, which every rule's search uses."""

from __future__ import annotations

import math


def mfs_of(capacity_mib: float, reserved: float) -> float:
    """SGLang's default: ``round((gpu_mem - reserved) / gpu_mem, 3)``."""
    return round((capacity_mib - reserved) / capacity_mib, 3)


def same(a: float | None, b: float | None) -> bool:
    """Two mem_fraction_static values equal to the dump's three printed decimals."""
    return a is not None and b is not None and abs(a - b) < 5e-4


NO_CAP = float(1 << 24)  # MiB: above any GPU (16 TiB)


def capacity_windows(
    bands: tuple[tuple[float, float, float], ...], dumped: float, at_least: float
) -> tuple[tuple[int, int], ...]:
    """The gpu_mem values (integer MiB, inclusive windows) at or above ``at_least`` on which
    ``round((gpu_mem - reserved) / gpu_mem, 3)`` is ``dumped``, for ``bands`` of
    ``(from, below, reserved)``: a rule whose reserve is constant within each band."""
    out: list[tuple[int, int]] = []
    for lo_band, hi_band, res in bands:
        if res <= 0 or not 0 < dumped < 1:
            continue
        lo = res / (1 - dumped + 5e-4)
        hi = res / (1 - dumped - 5e-4) if dumped + 5e-4 < 1 else NO_CAP
        a = max(math.ceil(lo) - 1, math.ceil(lo_band), math.ceil(at_least), 1)
        b = min(math.floor(hi) + 1, math.ceil(hi_band) - 1)
        # Exact ends by the rule's own rounding: the float bounds are off by at most one.
        while a <= b and not same(mfs_of(a, res), dumped):
            a += 1
        while b >= a and not same(mfs_of(b, res), dumped):
            b -= 1
        if a <= b:
            out.append((a, b))
    return tuple(out)


def merged(wins: list[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    """Windows sorted, touching or overlapping ones joined."""
    out: list[tuple[int, int]] = []
    for a, b in sorted(wins):
        if out and a <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return tuple(out)
