"""The device's total memory and what was in use before SGLang's first reading.

user-needs rec.2 wants the ledger to start at the device total: "device total -> pre-init
(other processes, driver/context) -> SGLang's phases". Two lines give a device total:

* SGLang's own list (``Reported total GPU memory per device (MiB): [...]``, the launcher's,
  one figure per visible device; the gpu_mem of its default-mfs heuristic, 12.3);
* PyTorch's OOM message of a rank (``GPU 3 has a total capacity of 287.98 GiB``), which
  names the device that rank ran on.

A rank is joined to a device total when the log says which device it used: its own OOM
message, a list of one device or of equal totals, or SGLang's local-rank rule
(logmem.sglang.devices). Otherwise (and always with several nodes: the list is one node's)
only the list is known (no per-rank row). Nothing is
invented: without such a line there is no device total and no pre-start figure.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import Enum

from logmem.analysis.ledger import PhaseWhat, RankLedger
from logmem.frozen import frozen
from logmem.model.records import Launch
from logmem.parse import events as ev
from logmem.sglang.devices import local_gpu_id


class Join(Enum):
    """How a rank's device total was found."""

    ONE_DEVICE = "one_device"  # the list has one device
    SAME_TOTAL = "same_total"  # every listed device has the same total
    LOCAL_RANK = "local_rank"  # SGLang's rank -> device rule, from server_args
    OOM = "oom"  # the rank's own OOM message names its device and its total


@frozen
class DeviceTotals:
    """SGLang's list of device totals (the launcher's line)."""

    per_device_bytes: tuple[int, ...]  # MiB per visible device, as bytes; () unreadable list
    used_bytes: int | None  # "using min": the gpu_mem SGLang's heuristics took
    line: int
    path: str
    nvidia_smi_failed: bool  # nvidia-smi gave no memory total (a unified-memory GB10, MIG)


@frozen
class PreStart:
    """One rank's device total and what was in use before its ledger's first figure."""

    rank: str
    total_bytes: int
    first_bytes: int  # the ledger's first free-memory figure (its first phase's "before")
    total_line: int
    first_lines: tuple[int, int]  # the ledger's first phase's lines
    join: Join
    device: int | None  # the device index, when the join names one
    nvidia_smi_failed: bool = False
    # The OOM message's device ("CUDA", "HIP"), when it gave the total.
    oom_device: str | None = None
    # The first figure is before distributed init (else its memory is in in_use_bytes too).
    before_init: bool = True

    @property
    def in_use_bytes(self) -> int:
        return self.total_bytes - self.first_bytes

    @property
    def lines(self) -> tuple[int, ...]:
        return tuple(sorted({self.total_line, *self.first_lines}))


_START = (PhaseWhat.INIT, PhaseWhat.WEIGHTS, PhaseWhat.WEIGHTS_AND_POOLS)


def device_totals(launch: Launch) -> DeviceTotals | None:
    """The launch's first device-total line, or None when it printed none."""
    e = next((e for e in launch.events if isinstance(e, ev.DeviceTotal)), None)
    if e is None:
        return None
    return DeviceTotals(
        tuple(m.bytes for m in e.per_device),
        e.used.bytes if e.used is not None else None,
        e.source.line_no,
        e.source.path,
        e.nvidia_smi_failed,
    )


def oom_totals(launch: Launch) -> dict[str, tuple[int, int, int | None, str]]:
    """Per rank label: (total bytes, line, GPU index, device) from the rank's first OOM message."""
    out: dict[str, tuple[int, int, int | None, str]] = {}
    for t in launch.tracebacks:
        if t.rank is None or t.rank in out:
            continue
        for err in t.errors:
            oom = err.oom if isinstance(err, ev.CaptureFailed) else err
            if isinstance(oom, ev.TorchOOM) and oom.capacity is not None:
                out[t.rank] = (oom.capacity.bytes, err.source.line_no, oom.gpu, oom.device)
                break
    return out


def _from_list(
    totals: DeviceTotals, launch: Launch, led: RankLedger
) -> tuple[int, Join, int | None] | None:
    per = totals.per_device_bytes
    nodes = launch.args.get("nnodes")
    if isinstance(nodes, int) and nodes > 1:
        return None  # the list is one node's: which node printed it, the line does not say
    if len(per) == 1:
        return per[0], Join.ONE_DEVICE, 0
    if per and len(set(per)) == 1:
        return per[0], Join.SAME_TOTAL, None
    rank = launch.rank(led.rank)
    if rank is None or not per:
        return None
    gpu = local_gpu_id(launch.args, rank.tag("TP"), rank.tag("PP"))
    if gpu is None or not 0 <= gpu < len(per):
        return None
    return per[gpu], Join.LOCAL_RANK, gpu


def pre_starts(
    launch: Launch, ledgers: Iterable[RankLedger], totals: DeviceTotals | None
) -> dict[str, PreStart]:
    """Per rank label with a ledger and a known device total: its pre-start figure."""
    ooms = oom_totals(launch)
    out: dict[str, PreStart] = {}
    for led in ledgers:
        # Only a ledger that starts before the weights load starts at start-up: a fragment's
        # first figure (pools, a capture) is not "before SGLang's first reading".
        if not led.phases or led.phases[0].what not in _START:
            continue
        first = led.phases[0]
        found: tuple[int, Join, int | None] | None = None
        line, oom_device = 0, None
        if led.rank in ooms:
            total, line, gpu, oom_device = ooms[led.rank]
            found = (total, Join.OOM, gpu)
        elif totals is not None:
            found = _from_list(totals, launch, led)
            line = totals.line
        if found is None:
            continue
        total, join, gpu = found
        smi = totals.nvidia_smi_failed if totals is not None and join is not Join.OOM else False
        out[led.rank] = PreStart(
            led.rank,
            total,
            first.before_bytes,
            line,
            first.lines,
            join,
            gpu,
            nvidia_smi_failed=smi,
            oom_device=oom_device,
            before_init=first.what is PhaseWhat.INIT,
        )
    return out
