"""Launches of one GPU whose printed mem_fraction_static cannot all be SGLang's default.

Where the log prints no device capacity, analysis.default_mfs gives each launch the GPU sizes
on which the era's reserve formula yields its dumped value (``formula_windows``, at or above the
free memory before loading, P), and says "derived or passed cannot be told". Seen together,
launches with the same P (to printing: one GPU model, most likely) whose windows do not all
meet cannot all have derived their value: the reserve grows with cuda_graph_max_bs, so the same
value at another max bs lands on another GPU size. The most of them one GPU size serves bounds
from above how many derived it; the others passed it (or the formula does not model them).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from logmem.analysis.default_mfs import launch_default_mfs
from logmem.compare import notes as cn
from logmem.compare.args import graph_max_bs
from logmem.model.records import Launch
from logmem.sglang.default_mfs import LARGE_GPU_MIB, DefaultMfs, MfsEra, Rule, formula_bands
from logmem.sglang.mfs_versions import FORMULA_FORMS, forms_for
from logmem.sglang.reserve import ReserveTerm
from logmem.sglang.rules import DIFFERENCE_RESOLUTION_BYTES
from logmem.units import MIB


def most_on_one_gpu(windows: Sequence[tuple[tuple[int, int], ...]]) -> int:
    """The most launches whose windows hold one GPU size (inclusive integer MiB windows)."""
    edges = sorted(
        (x, kind) for ws in windows for lo, hi in ws for x, kind in ((lo, 0), (hi + 1, -1))
    )
    best = depth = 0
    # At one size a window's end (+1, kind -1) sorts before another's start (kind 0).
    for _, kind in edges:
        depth += 1 if kind == 0 else -1
        best = max(best, depth)
    return best


def _undecided(d: DefaultMfs | None) -> DefaultMfs | None:
    """``d`` when it is the reserve formula's era, with a value the formula gives on some GPU
    and no command line to say whether it was passed (None otherwise)."""
    if d is None or d.rule is not Rule.RESERVE or d.passed is not None:
        return None
    return d if d.dumped is not None and d.free_mib is not None and d.formula_windows else None


def mfs_not_all_derived(
    launches: Sequence[Launch], labels: Sequence[str]
) -> cn.MfsNotAllDerived | None:
    """The note when two or more undecided launches share P and the formula's windows do not all
    meet (None otherwise: nothing the launches tell together that each does not alone)."""
    picked = [
        (lab, L, d)
        for lab, L in zip(labels, launches)
        if (d := _undecided(launch_default_mfs(L))) is not None
    ]
    if len(picked) < 2:
        return None
    free = [(d.free_mib or 0.0) * MIB for _, _, d in picked]
    if max(free) - min(free) > DIFFERENCE_RESOLUTION_BYTES:
        return None
    wins = tuple(d.formula_windows or () for _, _, d in picked)
    derivable = most_on_one_gpu(wins)
    if derivable >= len(picked):
        return None
    return cn.MfsNotAllDerived(
        tuple(lab for lab, _, _ in picked),
        tuple(d.dumped or 0.0 for _, _, d in picked),
        tuple(graph_max_bs(L.args) for _, L, _ in picked),
        round(min(free)),
        wins,
        tuple(_graph_mib(d) for _, _, d in picked),
        derivable,
    )


def _graph_mib(d: DefaultMfs) -> float:
    terms = d.reserve_terms or ()
    return sum(t.bytes for t in terms if t.term is not ReserveTerm.DEEPEP) / MIB


def reserve_floor_binds(d: DefaultMfs | None, args: Mapping[str, Any]) -> bool:
    """On this launch's GPU SGLang's reserve is its floor (default_mfs.formula_bands: above
    LARGE_GPU_MIB the reserve is at least its 10 GiB floor), so max bs does not move it: the
    GPU is known to be above that size (its capacity, else the free memory before loading P)
    and the formula's sum there is below the floor. False when the log cannot show it."""
    if d is None or d.era not in (MfsEra.B, MfsEra.C) or d.reserve_terms is None:
        return False
    gpu = d.capacity_mib if d.capacity_mib is not None else d.free_mib
    if gpu is None or gpu <= LARGE_GPU_MIB:
        return False
    forms = forms_for(FORMULA_FORMS, d.printed_on)
    form = next((f for f in forms if f.form.versions == d.form), forms[0] if forms else None)
    if form is None:
        return False
    bands = formula_bands(args, form, d.reserve_terms)  # (up to 60 GiB, above it: the floor)
    return len(bands) == 2 and bands[1][2] > bands[0][2]
