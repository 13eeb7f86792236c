"""The words for the Mamba-limited request count (logmem.analysis.mamba_slots.MambaSlotsLimit):
which lever raises it and what each one costs."""

from __future__ import annotations

from logmem.analysis.mamba_slots import MambaSlotsLimit
from logmem.units import MIB, format_gib

_SHARE = {3: "a third", 4: "a quarter", 5: "a fifth"}


def _mib(n: int) -> str:
    return f"{n / MIB:,.0f} MiB" if n >= MIB else f"{n / 1024:,.0f} KiB"


def mamba_slots_text(f: MambaSlotsLimit) -> str:
    share = _SHARE.get(f.ratio, f"1/{f.ratio}")
    how = (
        "the server_args' radix cache and mamba_scheduler_strategy give that ratio"
        if f.ratio_from_args
        else "the printed figures show that ratio"
    )
    head = (
        f"max_running_requests={f.max_running_requests} (line {f.summary_line}) is {share} of "
        f"the Mamba state pool's {f.slots} slots (max_mamba_cache_size, line {f.slots_line}; "
        f"SGLang divides the slots by {f.ratio} while the radix cache is on, which keeps Mamba "
        f"states of cached prefixes in the same pool; {how}): that pool, not the KV pool ({f.kv_tokens:,} tokens), limits "
        "how many requests run at once."
    )
    runs = f"all {f.requests_without_radix} slots" if f.requests_without_radix else "every slot"
    table = (
        f" (the request-to-token table grows by {_mib(f.table_growth_bytes)} for the added rows)"
        if f.table_growth_bytes
        else ""
    )
    radix = (
        f" --disable-radix-cache (without --max-running-requests) lets {runs} run requests with "
        f"no change to either pool{table}, at the cost of prefix caching."
    )
    cost = (
        f" (each slot {format_gib(f.slot_bytes)} GiB of the budget, line {f.slots_line})"
        if f.slot_bytes
        else ""
    )
    more = (
        " More slots (--max-mamba-cache-size N, or a larger --mamba-full-memory-ratio) take the "
        f"Mamba state's memory from the same budget, so the KV pool shrinks by as much{cost}."
    )
    return head + radix + more
