"""Which SGLang rule gave a launch's mem_fraction_static (logmem.sglang.default_mfs), from the
log: its date (sglang.eras), the echoed command line (comm_inputs.mfs_passed) and the device
capacity (SGLang's device-total line, else a PyTorch OOM's total capacity)."""

from __future__ import annotations

from dataclasses import replace

from logmem.analysis.comm_inputs import mfs_passed
from logmem.analysis.device_total import device_totals, oom_totals
from logmem.model.records import Launch
from logmem.parse import events as ev
from logmem.sglang.adjustments import MULTIMODAL_ARCHITECTURES
from logmem.sglang.default_mfs import DefaultMfs, default_mfs
from logmem.sglang.devices import named_capacity_mib
from logmem.sglang.eras import printed_on
from logmem.units import MIB


def capacity_mib(launch: Launch) -> float | None:
    """gpu_mem as SGLang took it: the device-total line's "using min", else the smallest listed
    total, else the smallest total capacity a rank's OOM message printed, else the figure of
    the GPU the log names (named_capacity); None: none of them."""
    t = device_totals(launch)
    if t is not None and t.used_bytes is not None:
        return t.used_bytes / MIB
    if t is not None and t.per_device_bytes:
        return min(t.per_device_bytes) / MIB
    ooms = [v[0] for v in oom_totals(launch).values()]
    if ooms:
        return min(ooms) / MIB
    named = named_capacity(launch)
    return float(named[0]) if named is not None else None


def named_capacity(launch: Launch) -> tuple[int, str, int] | None:
    """(MiB, device name, line) when the log names its GPU (a kernel-config file's
    ``device_name=``) and every name it gives is one board of known memory.total
    (sglang.devices.named_capacity_mib); None otherwise. Used only when no line prints a total."""
    names = [e for e in launch.all_events() if isinstance(e, ev.DeviceName)]
    if not names or len({e.name for e in names}) != 1:
        return None
    mib = named_capacity_mib(names[0].name)
    return (mib, names[0].name, names[0].source.line_no) if mib is not None else None


def mla_pools(launch: Launch) -> bool | None:
    """Whether the target model's KV pool is MLA's: its line prints one ``KV size`` (MLA and
    NSA/DSA pools, reference 4.2) rather than ``K size`` and ``V size`` (MHA/GQA and SWA,
    4.1 and 4.3); None when no rank printed a target KV pool line."""
    # Post-capture KV sizing is never MLA's (post_capture_kv_sizing_planned, sglang 0.5.17 on)
    # and its line prints one KV size for K and V: its reservation lines are the pool's shape.
    pools = [
        p
        for r in launch.ranks
        if r.target
        for p in (r.target.reserved_kv_pools or r.target.kv_pools)
        if not isinstance(p, ev.PostCaptureKV)
    ]
    if any(r.target and r.target.kv_deferred for r in launch.ranks) and not pools:
        return False
    if any(p.kv is not None for p in pools):
        return True
    return False if any(p.k is not None or p.v is not None for p in pools) else None


def launch_default_mfs(launch: Launch) -> DefaultMfs | None:
    """The default-mfs rule of a launch with a server_args dump (None without one)."""
    if launch.server_args is None:
        return None
    ends = [r.target.weights_end for r in launch.ranks if r.target and r.target.weights_end]
    begins = [r.target.weights_begin for r in launch.ranks if r.target and r.target.weights_begin]
    # P, the least free reading before loading: no GPU holds less than its own free memory.
    free = min(b.avail.bytes for b in begins) / MIB if begins else None
    arch = ends[0].model_type if ends else None
    cap = capacity_mib(launch)
    named = named_capacity(launch)
    d = default_mfs(
        launch.args,
        printed_on(launch),
        mfs_passed(launch),
        cap,
        multimodal=arch in MULTIMODAL_ARCHITECTURES,
        mla=mla_pools(launch),
        free_mib=free,
        post_capture=any(r.target is not None and r.target.kv_deferred for r in launch.ranks),
    )
    if named is not None and cap == named[0] and d.capacity_mib is not None:
        return replace(d, capacity_named=(named[1], named[2]))
    return d
