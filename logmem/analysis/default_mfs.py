"""Which SGLang rule gave a launch's mem_fraction_static (logmem.sglang.default_mfs), from the
log: its date (sglang.eras), the echoed command line (comm_inputs.mfs_passed) and the device
capacity (SGLang's device-total line, else a PyTorch OOM's total capacity)."""

from __future__ import annotations

from logmem.analysis.comm_inputs import mfs_passed
from logmem.analysis.device_total import device_totals, oom_totals
from logmem.model.records import Launch
from logmem.sglang.adjustments import MULTIMODAL_ARCHITECTURES
from logmem.sglang.default_mfs import DefaultMfs, default_mfs
from logmem.sglang.eras import printed_on
from logmem.units import MIB


def capacity_mib(launch: Launch) -> float | None:
    """gpu_mem as SGLang took it: the device-total line's "using min", else the smallest listed
    total, else the smallest total capacity a rank's OOM message printed; None: none printed."""
    t = device_totals(launch)
    if t is not None and t.used_bytes is not None:
        return t.used_bytes / MIB
    if t is not None and t.per_device_bytes:
        return min(t.per_device_bytes) / MIB
    ooms = [v[0] for v in oom_totals(launch).values()]
    return min(ooms) / MIB if ooms else None


def launch_default_mfs(launch: Launch) -> DefaultMfs | None:
    """The default-mfs rule of a launch with a server_args dump (None without one)."""
    if launch.server_args is None:
        return None
    ends = [r.target.weights_end for r in launch.ranks if r.target and r.target.weights_end]
    arch = ends[0].model_type if ends else None
    return default_mfs(
        launch.args,
        printed_on(launch),
        mfs_passed(launch),
        capacity_mib(launch),
        multimodal=arch in MULTIMODAL_ARCHITECTURES,
    )
