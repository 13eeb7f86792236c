"""Events of out-of-memory lines: PyTorch's OOM message with its figures, and a capture
failure that quotes it ("Capture cuda graph failed: CUDA out of memory. ...")."""

from __future__ import annotations

import regex

from logmem.parse.events import CaptureFailed, Event, TorchOOM
from logmem.parse.lazy import lazy
from logmem.parse.lines import Record
from logmem.units import Mem

_OOM_FIELDS = {
    "tried": lazy(r"Tried to allocate (\d[\d.]{0,20}) (B|KiB|MiB|GiB|TiB)"),
    "gpu": lazy(r"GPU (\d{1,4}) has a total capacity"),
    "capacity": lazy(r"total capacity of (\d[\d.]{0,20}) (B|KiB|MiB|GiB|TiB)"),
    "free": lazy(r"of which (\d[\d.]{0,20}) (B|KiB|MiB|GiB|TiB) is free"),
    "in_use": lazy(r"(?:has|this process has) (\d[\d.]{0,20}) (B|KiB|MiB|GiB|TiB) memory in use"),
    "allocated": lazy(r"(\d[\d.]{0,20}) (B|KiB|MiB|GiB|TiB) is allocated by PyTorch"),
    "reserved": lazy(r"(\d[\d.]{0,20}) (B|KiB|MiB|GiB|TiB) is reserved by PyTorch but unallocated"),
    "private": lazy(r"(\d[\d.]{0,20}) (B|KiB|MiB|GiB|TiB) allocated in private pools"),
}


def _oom_mem(key: str, text: str) -> Mem | None:
    m = _OOM_FIELDS[key].search(text)
    try:
        return Mem.parse(m.group(1), m.group(2)) if m else None
    except ValueError:  # "1.2.3 MiB", "1..1 GiB": a mangled figure is unknown, not a crash
        return None


def b_torch_oom(m: regex.Match[str], r: Record) -> Event:
    return _torch_oom(m.group("type"), m.group("device"), m.group("rest"), m.group(0), r)


def _torch_oom(exc_type: str, device: str, rest: str, message: str, r: Record) -> TorchOOM:
    g = _OOM_FIELDS["gpu"].search(rest)
    return TorchOOM(
        rank=r.rank,
        source=r.source,
        exc_type=exc_type,
        device=device,
        tried=_oom_mem("tried", rest),
        gpu=int(g.group(1)) if g else None,
        capacity=_oom_mem("capacity", rest),
        free=_oom_mem("free", rest),
        in_use=_oom_mem("in_use", rest),
        allocated=_oom_mem("allocated", rest),
        reserved_unallocated=_oom_mem("reserved", rest),
        private_pools=_oom_mem("private", rest),
        message=message[:2000],
    )


# The OOM sentence a capture failure quotes: "Capture cuda graph failed: CUDA out of memory. ..."
_QUOTED_OOM = lazy(r"(?P<device>CUDA|HIP|NPU|XPU|MUSA) out of memory\.(?P<rest>.{0,4000})")


def b_capture_failed(m: regex.Match[str], r: Record) -> Event:
    msg = m.group("msg")
    q = _QUOTED_OOM.search(msg)
    # PyTorch raises this sentence as torch.OutOfMemoryError (str(e) drops the type, so the
    # capture failure's text carries only the sentence).
    oom = (
        _torch_oom(
            "torch.OutOfMemoryError",
            q.group("device"),
            q.group("rest"),
            "torch.OutOfMemoryError: " + msg[q.start() :],
            r,
        )
        if q is not None
        else None
    )
    return CaptureFailed(rank=r.rank, source=r.source, message=msg, oom=oom)
