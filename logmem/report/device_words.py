"""Words for the device total above a rank's ledger (logmem.analysis.device_total): the total,
what was in use before SGLang's first reading, and what that memory can be on this platform."""

from __future__ import annotations

from typing import TYPE_CHECKING

from logmem.analysis.device_total import DeviceTotals, Join, PreStart
from logmem.analysis.platform import unified_possible
from logmem.frozen import frozen
from logmem.units import MIB, format_gib

if TYPE_CHECKING:
    from logmem.analysis.attribution import LaunchLedger

# The driver context by platform kind, or by the OOM message's device ("CUDA", "HIP", ...).
_CONTEXT = {"cuda": "the CUDA context", "rocm": "the HIP context", "hip": "the HIP context"}
_CONTEXT |= {"npu": "the NPU runtime", "musa": "the MUSA context", "xpu": "the XPU context"}


def _g(n: int | None) -> str:
    return format_gib(n, unknown="-")


def _mib(n: int) -> str:
    return f"{n / MIB:,.0f} MiB" if n % MIB == 0 else f"{n / MIB:,.2f} MiB"


def _where(p: PreStart) -> str:
    """Which line the total is read from and how it is this rank's device."""
    if p.join is Join.OOM:
        gpu = f"GPU {p.device}" if p.device is not None else "its GPU"
        return f"line {p.total_line}, PyTorch's OOM message for {gpu} on this rank"
    how = {
        Join.ONE_DEVICE: "the one device listed",
        Join.SAME_TOTAL: "every listed device has it",
        Join.LOCAL_RANK: f"device {p.device} by SGLang's rank-to-device rule",
    }[p.join]
    return f"{_mib(p.total_bytes)}, line {p.total_line}, SGLang's device list: {how}"


def in_use_note(p: PreStart, device: str) -> str:
    """The footnote of the row 'in use before SGLang's first reading'."""
    a, b = p.first_lines
    first = f"line {a}" if a == b else f"lines {a}-{b}"
    context = _CONTEXT.get((p.oom_device or "").lower()) or _CONTEXT.get(device)
    what = ["other processes", context or "the device context"]
    if not p.before_init:
        what.append("distributed init (the log prints no figure before it)")
    text = (
        f"device total {_g(p.total_bytes)} GiB ({_where(p)}) minus the first free figure "
        f"{_g(p.first_bytes)} GiB ({first}): {', '.join(what[:-1])} and {what[-1]}"
    )
    if p.nvidia_smi_failed and unified_possible(device):
        # SGLang falls back to torch when nvidia-smi prints no memory total: a GB10 (unified
        # memory, get_available_gpu_memory reads psutil there, 12.1) or a MIG slice.
        text += (
            f"; nvidia-smi gave no memory total (line {p.total_line}), as on a unified-memory "
            "device such as GB10 (or a MIG slice): there free memory is the system's available "
            "RAM, so this also holds the OS and page cache"
        )
    return text


def pre_start_rows(p: PreStart) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The phase row and its cause row (without the footnote mark) above the first phase."""
    in_use = format_gib(p.in_use_bytes)
    phase = ("device total, before start-up", _g(p.total_bytes), _g(p.first_bytes), in_use)
    cause = ("in use before SGLang's first reading", "", "", in_use)
    lines = ",".join(str(x) for x in p.lines)
    return (*phase, "", str(p.total_line)), (*cause, "derived", lines)


def list_note(t: DeviceTotals) -> str:
    """A device list no rank of the ledger could be joined to: say it is the list."""
    if not t.per_device_bytes:
        return f"SGLang printed its device totals (line {t.line}), but the list is unreadable."
    each = ", ".join(_g(b) for b in t.per_device_bytes)
    return (
        f"SGLang's device totals (line {t.line}): {each} GiB per visible device; the log does "
        "not say which device this rank used, so no pre-start figure is given."
    )


@frozen
class DeviceTop:
    """What a rank's ledger shows above its first phase."""

    pre: PreStart | None
    device: str  # the platform kind (logmem.analysis.platform)
    note: str = ""  # a device list this rank could not be joined to


def device_top(led: LaunchLedger, rank: str) -> DeviceTop | None:
    """The device total above `rank`'s ledger; None: the log printed none for it."""
    pre = led.pre_start_of(rank)
    if pre is not None:
        return DeviceTop(pre, led.platform.device)
    if led.device_totals is not None:
        return DeviceTop(None, led.platform.device, list_note(led.device_totals))
    return None
