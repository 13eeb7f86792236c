"""Builders of the figures outside the start-up chain (HiCache host, symmetric pool, post-capture
KV sizing ...) and of SGLang's own memory failure lines (imbalance, not enough memory), split
from logmem.parse.builders by concern."""

from __future__ import annotations

from collections.abc import Callable

import regex

from logmem.parse.events import (
    Event,
    Imbalance,
    MiscMemory,
    PostCaptureNote,
    TorchOOM,
    UnifiedAllocated,
    UnifiedReserved,
    UnifiedSubPool,
)
from logmem.parse.lines import Record
from logmem.units import Mem

Builder = Callable[[regex.Match[str], Record], "Event | None"]


def b_imbalance(m: regex.Match[str], r: Record) -> Event:
    rest = m.group("rest")
    # sglang 0.4.4-0.5.8 name the global minimum min_per_gpu_memory, 0.5.9-0.5.23
    # pre_model_load_memory (srt/model_executor/model_runner.py, later distributed/bootstrap.py).
    pre = regex.search(
        r"(?:pre_model_load_memory|min_per_gpu_memory)=(-?[\d.]{1,30}(?:e-?\d{1,3})?)", rest
    )
    loc = regex.search(r"local_gpu_memory=(-?[\d.]{1,30}(?:e-?\d{1,3})?)", rest)
    head = r.message[: m.start()]
    exc = regex.search(r"([A-Za-z_.]{0,60}Error): ?$", head)
    return Imbalance(
        rank=r.rank,
        source=r.source,
        pre_model_load_gib=_safe_float(pre.group(1)) if pre else None,
        local_gib=_safe_float(loc.group(1)) if loc else None,
        exc_type=exc.group(1) if exc else None,
    )


def _safe_float(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def b_misc(what: str, group: str, unit: str = "GB") -> Builder:
    def build(m: regex.Match[str], r: Record) -> Event:
        # HiCache host sizes are decimal GB (1e9), unlike every other SGLang "GB".
        amount = (
            Mem.from_bytes(round(float(m.group(group)) * 1e9))
            if unit == "decimal"
            else Mem.parse(m.group(group), unit)
        )
        return MiscMemory(rank=r.rank, source=r.source, what=what, amount=amount, text=m.group(0))

    return build


def b_kv_not_allocated(m: regex.Match[str], r: Record) -> Event:
    """Post-capture KV sizing (sglang 0.5.18-0.5.23 'SWAKVPool VA upper bound'): the SWA
    pools' reserved address space before the graphs; a figure, not an allocation of the chain
    (each pool's own 'VA upper bound' line is ev.KVReserved, the pool backed after the graphs
    ev.PostCaptureKV)."""
    gib = float(m.group("swa"))
    return MiscMemory(
        rank=r.rank,
        source=r.source,
        what="kv_not_allocated",
        amount=Mem.from_bytes(round(gib * (1 << 30))),
        text=m.group(0),
    )


def b_post_capture_note(m: regex.Match[str], r: Record) -> Event:
    """The post-capture sizing's warnings and its canary workspace (ev.PostCaptureNote)."""
    if m.group("bs") is not None:
        what, a, b = "eager_gap", int(m.group("bs")), int(m.group("reqs"))
    elif m.group("old") is not None:
        what, a, b = "requests_capped", int(m.group("old")), int(m.group("new"))
    else:
        return PostCaptureNote(
            rank=r.rank, source=r.source, what="canary", amount=Mem.parse(m.group("canary"))
        )
    return PostCaptureNote(rank=r.rank, source=r.source, what=what, a=a, b=b)


def _unified_pool(cls: type[UnifiedReserved] | type[UnifiedAllocated]) -> Builder:
    """The unified pool's own line: its reservation (ev.UnifiedReserved) or the buffer
    allocated before the graphs (ev.UnifiedAllocated), with its exact bytes."""

    def build(m: regex.Match[str], r: Record) -> Event:
        kv = Mem.from_bytes(int(m.group("bytes")))
        n = int(m.group("n"))
        return cls(
            rank=r.rank,
            source=r.source,
            tokens=None,
            k=None,
            v=None,
            kv=kv,
            dtype=None,
            sub_pools=n,
        )

    return build


b_unified_reserved = _unified_pool(UnifiedReserved)
b_unified_allocated = _unified_pool(UnifiedAllocated)


def b_unified_sub_pool(m: regex.Match[str], r: Record) -> Event:
    """One sub-pool line of the unified pool (ev.UnifiedSubPool)."""
    return UnifiedSubPool(
        rank=r.rank,
        source=r.source,
        name=m.group("name"),
        kind=m.group("kind"),
        layers=int(m.group("layers")),
        entry_bytes=int(m.group("entry")),
        max_slots=int(m.group("slots")),
    )


def b_vmm_oom(m: regex.Match[str], r: Record) -> Event:
    """The driver's OOM backing KV pages (cuMemCreate): a TorchOOM without figures."""
    return TorchOOM(
        rank=r.rank, source=r.source, exc_type=m.group("type"), device="CUDA", message=m.group(0)
    )


# Lines of post-capture KV sizing (logmem.parse.builders.BUILDERS).
POST_CAPTURE_BUILDERS = {
    "unified_reserved": b_unified_reserved,
    "unified_allocated": b_unified_allocated,
    "unified_sub_pool": b_unified_sub_pool,
    "vmm_oom": b_vmm_oom,
}
