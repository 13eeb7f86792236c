"""SGLang's custom all-reduce rules: which implementation a TP group runs (legacy, v2, none) by
release, and the sizes that have a formula. Paths are relative to SGLang's ``python/sglang/srt/``
and were read in the released wheels (``pip download sglang==V``); the dates are the wheels' file
dates of ``srt/server_args.py``. Like logmem.sglang.comm it imports only rules of the package.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date
from enum import Enum
from typing import Any

from logmem.frozen import frozen
from logmem.sglang.comm_env import env_flag, env_int
from logmem.sglang.devices import nodes_per_tp_group
from logmem.sglang.releases import RELEASES
from logmem.units import MIB


def _size(args: Mapping[str, Any], key: str) -> int | None:
    v = args.get(key)
    if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= 1 << 20:
        return None
    return v


LEGACY_CUSTOM_AR_MAX_BYTES = 8192 * 1024
"""``_MAX_CAR_SIZE`` of the legacy custom all-reduce: 8 MiB on CUDA (sglang 0.4.0-0.5.23,
srt/distributed/device_communicators/custom_all_reduce.py, CustomAllreduce)."""

LEGACY_CUSTOM_AR_MAX_BYTES_HIP = 2 * LEGACY_CUSTOM_AR_MAX_BYTES
"""The same on HIP (ROCm): 16 MiB (same file). MUSA builds use ``16 * 8196 * 1024`` bytes
(sglang 0.5.10-0.5.23; ``custom_ar_possible`` leaves MUSA out, so it is not used here)."""

LEGACY_CUSTOM_AR_BUFFERS = 3
"""Per rank the legacy implementation allocates ``meta_ptrs`` (``meta_size() + max_size``),
``buffer_ptrs`` (``max_size``) and ``rank_data`` (``max_size``): three buffers of max_size
plus a few KiB of signal flags (``meta_size()``, not counted). Mapping the peers' buffers
(``cudaIpcOpenMemHandle``) costs no local memory (same file)."""


def legacy_custom_ar_bytes(hip: bool) -> int:
    """The legacy custom all-reduce's own buffers on one rank: 3 x 8 MiB (3 x 16 MiB on HIP),
    allocated in ``GroupCoordinator.__init__``, inside ``init_torch_distributed`` (before P)."""
    return LEGACY_CUSTOM_AR_BUFFERS * (
        LEGACY_CUSTOM_AR_MAX_BYTES_HIP if hip else LEGACY_CUSTOM_AR_MAX_BYTES
    )


V2_DEFAULT_MAX_SIZE_KB = 16 * 1024
"""``SGLANG_CUSTOM_ALL_REDUCE_V2_MAX_SIZE_KB`` default ``EnvInt(16 * 1024)``: 16 MiB, a *cap* on
the push slot and the pull buffer (sglang 0.5.16-0.5.23, srt/environ.py; read in
custom_all_reduce_v2.py as ``_DEFAULT_MAX_SIZE``, ``CustomAllReduceV2.__init__``:
``min(base_config.max_push_bytes(W), max_size)``)."""

V2_POINTER_TABLE_ROWS = 131072
"""``_MAX_GRAPH_INPUTS = 131072`` (``graph_input_count=131072`` in 0.5.10-0.5.15):
``graph_params = torch.zeros((131072, world_size), uint64)``, the v2 device pointer table
(sglang 0.5.16-0.5.23, custom_all_reduce_v2.py ``CustomAllReduceV2.__init__``); the torch
allocator sees it."""

V2_SEMAPHORE_BYTES_PER_PULL_BLOCK = 128
"""``_SEMAPHORE_BYTES``: pull semaphore bytes per pull block at the end of the v2 workspace
(sglang 0.5.23, custom_all_reduce_v2.py ``_init_workspace``); the number of pull blocks is a
per-GPU tuned constant (64 on Hopper) not read here."""

ENV_V2_SWITCH = "SGLANG_OPT_USE_CUSTOM_ALL_REDUCE_V2"
ENV_V2_OLD_SWITCH = "SGLANG_USE_JIT_ALL_REDUCE"
"""The opt-in of sglang 0.5.10-0.5.11 (custom_all_reduce.py ``dispatch_custom_allreduce``:
"Set SGLANG_USE_JIT_ALL_REDUCE=1"); from 0.5.12 an alias of ``ENV_V2_SWITCH`` (environ.py)."""
ENV_V2_MAX = "SGLANG_CUSTOM_ALL_REDUCE_V2_MAX_SIZE_KB"
ENV_V2_PULL = "SGLANG_FORCE_CUSTOM_ALL_REDUCE_V2_PULL_SIZE_KB"
ENV_V2_PUSH = "SGLANG_FORCE_CUSTOM_ALL_REDUCE_V2_PUSH_SIZE_KB"

# The releases that changed which custom all-reduce runs (their dates: sglang/releases.py; a
# log's date bounds its SGLang from above, an old image can run later).
LAST_WITHOUT_V2 = RELEASES["0.5.9"]
"""sglang 0.5.9: no custom_all_reduce_v2.py (0.5.10, 2026-04-05, has it)."""
LAST_V2_OPT_IN = RELEASES["0.5.11"]
"""sglang 0.5.11: v2 only with ``SGLANG_USE_JIT_ALL_REDUCE=1``; from 0.5.12 (2026-05-16) v2 is
the default on CUDA (environ.py ``SGLANG_OPT_USE_CUSTOM_ALL_REDUCE_V2 = EnvBool(True)``)."""
LAST_WITHOUT_AR_LINE = RELEASES["0.5.15"]
"""sglang 0.5.15: v2 logs nothing; 0.5.16 (2026-07-25) first prints ``All Reduce config`` on the
group's rank 0 (custom_all_reduce_v2.py ``_init_workspace``)."""
LAST_V2_INTRA_NODE = RELEASES["0.5.16"]
"""sglang 0.5.16: ``nnodes > 1`` forces ``SGLANG_OPT_USE_CUSTOM_ALL_REDUCE_V2=0`` (server_args.py,
0.5.12-0.5.16); 0.5.17 (2026-08-08) keeps v2 across nodes on MNNVL fabric devices (GB200 /
GB300, ``_handle_custom_all_reduce_v2_multinode``), 0.5.19 on for one NVLink clique
(custom_all_reduce_v2.py ``can_use_custom_all_reduce_v2``)."""

LEGACY_WORLD_SIZES = (2, 4, 6, 8)
"""``CustomAllreduce._SUPPORTED_WORLD_SIZES`` (sglang 0.5.9 and 0.5.23, custom_all_reduce.py)."""


def v2_pointer_table_bytes(world: int) -> int:
    """``131072 x W x 8`` bytes: 8 MiB at W = 8 (``custom_all_reduce_v2.py``)."""
    return V2_POINTER_TABLE_ROWS * world * 8


def v2_workspace_bytes(world: int, push_bytes: int, pull_bytes: int) -> int:
    """The v2 symmetric allocation ``[2W push slots | pull buffer | pull semaphores]`` without
    the semaphores: ``2W x max_push + max_pull`` (sglang 0.5.23, custom_all_reduce_v2.py
    ``_init_workspace``). The ``All Reduce config: symmetric_memory`` line states the allocation
    itself."""
    return 2 * world * push_bytes + pull_bytes


@frozen
class V2Sizes:
    """The v2 push slot and pull buffer: forced by the environment (exact), else SGLang's
    per-GPU-architecture tuned table (configs/custom_all_reduce_v2.py ``get_all_reduce_config``,
    tuned on H200 / B200; the architecture is rarely in a log) capped at ``cap``."""

    push: int | None  # bytes; None: the tuned table's
    pull: int | None
    cap: int  # SGLANG_CUSTOM_ALL_REDUCE_V2_MAX_SIZE_KB in bytes

    @property
    def exact(self) -> bool:
        return self.push is not None and self.pull is not None

    def workspace_at_most(self, world: int) -> int:
        """The workspace when every tuned size reaches the cap (forced sizes as given)."""
        push = self.push if self.push is not None else self.cap
        pull = self.pull if self.pull is not None else self.cap
        return v2_workspace_bytes(world, push, pull)


def v2_sizes(env: Mapping[str, str]) -> V2Sizes:
    """``SGLANG_FORCE_CUSTOM_ALL_REDUCE_V2_PUSH_SIZE_KB`` / ``..._PULL_SIZE_KB`` when set (they
    override the table and the cap, sglang 0.5.17-0.5.23), and the cap
    ``SGLANG_CUSTOM_ALL_REDUCE_V2_MAX_SIZE_KB`` (default 16 MiB)."""
    cap = env_int(env, ENV_V2_MAX, 1, 1 << 30) or V2_DEFAULT_MAX_SIZE_KB
    push = env_int(env, ENV_V2_PUSH, 1, 1 << 30)
    pull = env_int(env, ENV_V2_PULL, 1, 1 << 30)
    return V2Sizes(
        push * 1024 if push is not None else None,
        pull * 1024 if pull is not None else None,
        cap * 1024,
    )


def custom_ar_possible(args: Mapping[str, Any], tp: int) -> bool:
    """Custom all-reduce is set up on the TP group when it has peers, ``--disable-custom-all-reduce``
    is off and the device is CUDA or ROCm (``parallel_state.py`` ``GroupCoordinator``; NPU, MUSA
    and XPU use the collective library). At run time it may still turn itself off (no P2P, more
    than two PCIe-only GPUs): those lines are read from the log; a group across nodes is
    settled by server_args (``tp_spans_nodes``)."""
    device = args.get("device")
    return tp > 1 and args.get("disable_custom_all_reduce") is not True and device in (None, "cuda")


def tp_spans_nodes(args: Mapping[str, Any]) -> int | None:
    """The nodes the TP group spans when it spans more than one (``devices.nodes_per_tp_group``),
    else None. Custom all-reduce needs one node: ``can_use_custom_all_reduce_with_nvlink``
    returns early "because this process group spans across nodes" (sglang 0.5.9-0.5.23,
    custom_all_reduce_utils.py; the legacy CustomAllreduce has the same test)."""
    nnodes, pp = _size(args, "nnodes") or 1, _size(args, "pp_size") or 1
    n = nodes_per_tp_group(nnodes, pp)
    return n if n > 1 else None


def v2_switch(env: Mapping[str, str]) -> bool | None:
    """``SGLANG_OPT_USE_CUSTOM_ALL_REDUCE_V2`` (or its 0.5.10-0.5.11 name
    ``SGLANG_USE_JIT_ALL_REDUCE``) as the environment sets it; None: unset."""
    new = env_flag(env, ENV_V2_SWITCH)
    return new if new is not None else env_flag(env, ENV_V2_OLD_SWITCH)


class ArImpl(Enum):
    """Which custom all-reduce a CUDA TP group runs."""

    LEGACY = "legacy"
    V2 = "v2"
    EITHER = "either"  # legacy or v2: the log cannot tell
    OFF = "off"  # none: all-reduce goes through the collective library


@frozen
class ArChoice:
    impl: ArImpl
    why: str  # a key the report words (custom_ar_choice's docstring)


def custom_ar_choice(
    args: Mapping[str, Any],
    env: Mapping[str, str],
    printed: date | None,
    *,
    v2_logged: bool,
    from_log: bool,
    v2_line: bool = False,
) -> ArChoice:
    """Which custom all-reduce a CUDA TP group with peers runs, by SGLang's release rules (the
    ``LAST_*`` dates). ``printed``: the log's date (None: undated or no log); ``v2_logged``: an
    ``All Reduce config`` line; ``v2_line``: "Custom allreduce v2 initialized successfully"
    (TP0, sglang 0.5.10-0.5.13, custom_all_reduce_v2.py); ``from_log``: False for an estimate
    from flags alone, which follows the newest default (v2). ``why``: spans (the TP group spans nodes), world (a TP size
    neither implementation supports), logged, switch, nnodes (0.5.12-0.5.16 force v2 off on
    more than one node), v2_line (v2's success line), no_v2 (no v2 in SGLang of that date), v2_opt_in (v2 was opt-in),
    unknown (either), newest (an estimate)."""
    tp = _size(args, "tp_size") or 1
    nodes = tp_spans_nodes(args)
    if v2_logged:
        return ArChoice(ArImpl.V2, "logged")
    if v2_line:
        return ArChoice(ArImpl.V2, "v2_line")
    if nodes is not None:
        return ArChoice(ArImpl.OFF, "spans")
    switch = v2_switch(env)
    if tp > max(LEGACY_WORLD_SIZES):
        return ArChoice(ArImpl.OFF, "world")
    if switch is False:
        return ArChoice(ArImpl.LEGACY, "switch")
    multi = (_size(args, "nnodes") or 1) > 1
    if multi and printed is not None and printed <= LAST_V2_INTRA_NODE:
        return ArChoice(ArImpl.LEGACY, "nnodes")
    if switch is True:
        return ArChoice(ArImpl.V2, "switch")
    if printed is not None and printed <= LAST_V2_OPT_IN:
        return ArChoice(ArImpl.LEGACY, "no_v2" if printed <= LAST_WITHOUT_V2 else "v2_opt_in")
    if not from_log:
        return ArChoice(ArImpl.V2, "newest")
    return ArChoice(ArImpl.EITHER, "unknown")


ALL_REDUCE_PRINT_RESOLUTION_BYTES = round(MIB / 200)
"""``All Reduce config: symmetric_memory = %.2f MB, local_buffer = %.2f MB`` (``custom_all_reduce_v2.py``,
2026; MB is MiB): each figure is known to +-0.005 MiB."""

V2_SMALL_EXTRA_BYTES = MIB
"""What the v2 figures may hold beyond ``v2_workspace_bytes`` / ``v2_pointer_table_bytes``: the
local buffer's push counter and the workspace's pull semaphores (128 B per pull block) are
small and their sizes not read here; up to 1 MiB above the formula counts as agreeing."""
