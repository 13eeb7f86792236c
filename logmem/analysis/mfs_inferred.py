"""mem_fraction_static solved from a log's own readings, for a log that does not print it.

SGLang's KV rule (rules.kv_budget_bytes; model_runner_kv_cache_mixin.py profile_max_num_token,
0.5.9) sizes rest = A - P x (1 - mfs) and fills it with the pools: the KV pool, and for a
hybrid model the Mamba state pools too (handle_max_mamba_cache returns rest minus the Mamba
pools' actual size, so the two add up to rest). With the pools' printed sizes, A and P the
rule solves for mfs = 1 - (A - pools) / P: an estimate to print rounding (every reading
+-0.005 GiB; the KV pool floored to whole cells), never the printed value.
"""

from __future__ import annotations

from dataclasses import replace

from logmem.analysis.sizing import sizing
from logmem.errors import FitError
from logmem.frozen import frozen
from logmem.model.records import Launch
from logmem.parse import events as ev
from logmem.sglang import rules


@frozen
class BackSolvedMfs:
    """The mem_fraction_static SGLang's KV rule gives back from a log's own readings:
    rest = after-weights free - P x (1 - mfs), with rest taken as the pools it allocated."""

    mfs: float  # the flag's value (SGLang's own scaling undone), to 3 decimals
    after_weights_bytes: int
    pre_load_bytes: int
    pools_bytes: int  # the pools inside the budget, as their lines print them
    # The flag's values at the ends of print rounding (every reading +-0.005 GiB, the KV pool
    # up to one cell below rest), to 3 decimals.
    low: float | None = None
    high: float | None = None
    # The lines it is solved from: P's reading, A's reading, then the pool lines.
    lines: tuple[int, ...] = ()


def with_logged_mfs(launch: Launch, logged_mfs: float) -> Launch:
    """The launch with the mem_fraction_static it ran with, given by the user for a log that
    prints no server_args (``--logged-mem-fraction-static``); an error if the log says otherwise."""
    known = launch.args.get("mem_fraction_static")
    if isinstance(known, (int, float)) and float(known) != logged_mfs:
        raise FitError(
            f"--logged-mem-fraction-static {logged_mfs:g}: the log's server_args say {known:g}"
        )
    args = dict(launch.args) | {"mem_fraction_static": logged_mfs}
    src = launch.server_args.source if launch.server_args else launch.all_events()[0].source
    return replace(
        launch, server_args=ev.ServerArgs(rank=None, source=src, args=args, form="given")
    )


def _lines(launch: Launch, pre_rank: str, after_rank: str | None) -> tuple[int, ...]:
    by_label = {r.label: r for r in launch.ranks}
    out: list[int] = []
    if (pre := rules.pre_load_reading(by_label[pre_rank])) is not None:
        out.append(pre.source.line_no)
    rank = by_label.get(after_rank) if after_rank is not None else None
    if rank is not None and (post := rules.after_weights_reading(rank)) is not None:
        out.append(post.source.line_no)
    first = next((r for r in launch.ranks if r.target and r.target.kv_pools), None)
    if first is not None and first.target is not None:
        pools = (*first.target.mamba_pools, *first.target.kv_pools)
        out.extend(sorted(p.source.line_no for p in pools))
    return tuple(out)


def backsolved_mfs(launch: Launch) -> BackSolvedMfs | None:
    """mfs = 1 - (after-weights free - pools) / P, from a log without mem_fraction_static; an
    estimate (printed to 0.01 GB; the rule floors rest to whole cells and pages). None when
    the readings are missing or give no value in (0, 1]."""
    try:
        # Any stand-in value gives the readings; the result does not depend on it.
        sz = sizing(with_logged_mfs(launch, 0.5))
    except FitError:
        return None
    if sz is None or not sz.logged_pool_bytes or not sz.pre_load_bytes:
        return None
    a, p, pools = sz.after_weights_bytes, sz.pre_load_bytes, sz.logged_pool_bytes
    m = round(sz.flag_mfs_for(1 - (a - pools) / p), 3)
    if not 0 < m <= 1:
        return None
    e = rules.PRINT_RESOLUTION_BYTES
    cell = sz.full_cell_bytes or 0
    k = sz.printed_parts
    ends = [
        sz.flag_mfs_for(1 - (a + da - pools - dp) / (p + dpp))
        for da in (-e, e)
        for dp in (-k * e, k * e + cell)
        for dpp in (-e, e)
    ]
    readings = rules.budget_readings(launch)
    lines = _lines(launch, sz.pre_load_rank, readings.after_weights_rank)
    return BackSolvedMfs(m, a, p, pools, round(min(ends), 3), round(max(ends), 3), lines)
