"""SGLang's communication-memory rules: the groups a deployment builds, which mechanisms each
group holds, the sizes that have a formula, and when each is allocated, each rule once.

Paths are relative to SGLang's ``python/sglang/srt/`` (2025-2026 sources, docs/reference.md
and the shared comm-memory reference); DeepEP's sizes are from ``deepseek-ai/DeepEP``
``csrc/config.hpp``. Inputs are plain numbers and mappings (server_args as dumped, the
environment as strings), so every stage can import this module without a cycle; it imports
only ``logmem.units`` and rules of ``logmem.sglang`` (rules, comm_env, custom_ar: the custom
all-reduce's own rules, by release).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date
from enum import Enum
from typing import Any

from logmem.frozen import frozen
from logmem.sglang import rules
from logmem.sglang.comm_env import env_flag as env_flag
from logmem.sglang.comm_env import env_int as env_int
from logmem.sglang.custom_ar import (
    ENV_V2_MAX,
    ENV_V2_OLD_SWITCH,
    ENV_V2_PULL,
    ENV_V2_PUSH,
    ENV_V2_SWITCH,
)
from logmem.sglang.releases import RELEASES
from logmem.units import GIB, MIB

# --- when a cell is allocated ---------------------------------------------------------------


class When(Enum):
    """When a cell is allocated, which decides who pays for it.

    SGLang measures the pre-load free memory P right after ``init_torch_distributed``
    (``distributed/bootstrap.py``; ``model_executor/model_runner.py`` before 2026): what exists
    by then lowers P and so the KV budget; what comes later must fit in ``P x (1 - mfs)``."""

    INIT = "init"  # in init_torch_distributed, before P: costs KV tokens
    AFTER_KV = "after_kv"  # at a fixed step after KV sizing: out of the 1 - mfs reserve
    FIRST_USE = "first_use"  # lazily, at the first collective / dispatch: out of the reserve

    @property
    def before_kv_sizing(self) -> bool:
        return self is When.INIT


class Mechanism(Enum):
    """The columns of the groups x mechanisms table."""

    COMMUNICATORS = "communicators"  # torch ProcessGroupNCCL / pynccl ncclComm (HCCL on NPU)
    PEER_BUFFERS = "peer buffers"  # NCCL's per-channel, per-peer buffers
    CUSTOM_AR_LEGACY = "custom AR (legacy)"
    CUSTOM_AR_EITHER = "custom AR (legacy or v2)"
    CUSTOM_AR_V2_WORKSPACE = "custom AR v2 workspace"
    CUSTOM_AR_V2_POINTERS = "custom AR v2 pointers"
    CUSTOM_AR_AITER = "custom AR (aiter)"
    SYMM_POOL = "symmetric pool"
    MSCCLPP = "mscclpp"
    DEEPEP = "DeepEP buffer"
    PD_KV_REGISTRATION = "KV registration"
    PD_AUX = "PD metadata"
    PD_STAGING = "PD staging"


# --- groups ---------------------------------------------------------------------------------


@frozen
class Layout:
    """The parallel sizes that decide SGLang's groups (server_args names, resolved)."""

    tp: int = 1
    dp: int = 1
    ep: int = 1
    pp: int = 1
    dp_attention: bool = False
    moe_dp: int = 1
    dcp: int = 1
    attn_cp: int = 1

    @property
    def attn_tp(self) -> int:
        """``attn_tp_size = tp // dp // attn_cp`` with DP attention, else ``tp // attn_cp``
        (``layers/dp_attention.py`` ``compute_dp_attention_world_info``, 2025-2026)."""
        base = self.tp // self.dp if self.dp_attention and self.dp > 0 else self.tp
        return max(1, base // max(1, self.attn_cp))

    @property
    def moe_tp(self) -> int:
        """``moe_tp_size = tp // moe_ep // moe_dp`` (``distributed/parallel_state.py``
        ``initialize_model_parallel``)."""
        return max(1, self.tp // max(1, self.ep) // max(1, self.moe_dp))


def _size(args: Mapping[str, Any], key: str) -> int | None:
    v = args.get(key)
    if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= 1 << 20:
        return None
    return v


def layout_from_args(args: Mapping[str, Any]) -> Layout:
    """The layout a server_args dump describes; absent keys take SGLang's defaults (1, off).
    Early-2025 dumps say ``enable_ep_moe=True`` for EP over the whole TP group."""
    tp = _size(args, "tp_size") or 1
    ep = _size(args, "ep_size") or 1
    if args.get("enable_ep_moe") is True and ep == 1:
        ep = tp
    return Layout(
        tp=tp,
        dp=_size(args, "dp_size") or 1,
        ep=ep,
        pp=_size(args, "pp_size") or 1,
        dp_attention=args.get("enable_dp_attention") is True,
        moe_dp=_size(args, "moe_dp_size") or 1,
        dcp=_size(args, "dcp_size") or 1,
        attn_cp=_size(args, "attn_cp_size") or 1,
    )


@frozen
class Group:
    """One communication group on a rank: its size and whether it is another group reused."""

    name: str  # "TP", "attention TP", "MoE EP", "MoE TP", "PP", "MoE DP", "DCP", "attention CP"
    size: int
    reuses: str | None = None  # "TP" when SGLang hands out the TP group itself

    @property
    def own(self) -> bool:
        """A group of its own with peers: it holds communicators and buffers."""
        return self.reuses is None and self.size > 1


def groups(lay: Layout) -> tuple[Group, ...]:
    """The groups each rank builds (``distributed/parallel_state.py`` ``initialize_model_parallel``
    and ``GroupCoordinator``, 2025-2026): attention TP is ``_TP`` when ``attn_tp == tp``, MoE EP
    when ``moe_ep == tp``, MoE TP when ``moe_tp == tp``; PP, MoE DP, DCP and attention CP exist
    as groups of their own only when their size is above 1."""
    out = [Group("TP", lay.tp)]
    for name, size in (("attention TP", lay.attn_tp), ("MoE EP", lay.ep), ("MoE TP", lay.moe_tp)):
        out.append(Group(name, size, "TP" if size == lay.tp else None))
    for name, size in (
        ("PP", lay.pp),
        ("MoE DP", lay.moe_dp),
        ("DCP", lay.dcp),
        ("attention CP", lay.attn_cp),
    ):
        if size > 1:
            out.append(Group(name, size))
    return tuple(out)


def communicators_per_group(name: str, symm_mem: bool, device: str | None = "cuda") -> int:
    """ncclComm objects a group of its own holds: a torch ``ProcessGroupNCCL`` always, plus a
    ``PyNcclCommunicator`` (``distributed/device_communicators/pynccl.py``) when the group is
    built with ``use_pynccl`` on CUDA/ROCm: TP always; attention TP only with symmetric memory;
    MoE EP and the others never (``parallel_state.py``, 2025-2026). Other devices' communicators
    (``npu_communicator.py`` ...) reuse the torch group."""
    if device not in (None, "cuda"):
        return 1
    if name == "TP" or (name == "attention TP" and symm_mem):
        return 2
    return 1


class Library(Enum):
    """The collective libraries ``collective_library`` names (the values are their names)."""

    NCCL = "NCCL"
    RCCL = "RCCL"
    HCCL = "HCCL"
    MCCL = "MCCL"
    OTHER = "collective library"


def collective_library(device: str | None, hip: bool) -> str:
    """The collective library behind torch.distributed on a device: NCCL (RCCL on ROCm), HCCL
    on Ascend NPU, MCCL on Moore Threads MUSA (``distributed/parallel_state.py`` backends)."""
    if device == "npu":
        return "HCCL"
    if device == "musa":
        return "MCCL"
    if device in (None, "cuda"):
        return "RCCL" if hip else "NCCL"
    return "collective library"


# --- NCCL -----------------------------------------------------------------------------------

NCCL_DEFAULT_BUFFSIZE = 4 * MIB
"""NCCL's default ``NCCL_BUFFSIZE``, per channel and peer (NCCL docs); SGLang leaves it alone
(``entrypoints/engine.py`` ``_set_envs_and_config``). How many channels and peers a
communicator connects is topology: the communicators' size is measured, never computed."""


def peer_buffers_when(args: Mapping[str, Any]) -> When:
    """NCCL connects peers (and allocates their buffers) at the first collective, unless
    ``--pre-warm-nccl`` runs one all-reduce inside ``init_torch_distributed`` (on by default
    only on AMD GPUs; ``distributed/bootstrap.py``, 2026; dumps before it have no key)."""
    return When.INIT if args.get("pre_warm_nccl") is True else When.FIRST_USE


# --- symmetric memory -----------------------------------------------------------------------

ENV_SYMM_PREALLOC = "SGLANG_SYMM_MEM_PREALLOC_GB_SIZE"
"""GiB the symmetric memory pool is pre-allocated with (``EnvInt(-1)``: none; sglang 0.5.9-0.5.23,
srt/environ.py; allocated and logged in srt/distributed/device_communicators/pynccl_allocator.py);
the pool is one ``torch.cuda.MemPool`` shared by every group."""

SYMM_PREALLOC_DEFAULT_GIB = 4
"""What ``--enable-symm-mem`` sets an unset ``SGLANG_SYMM_MEM_PREALLOC_GB_SIZE`` to, with a
warning (sglang 0.5.9-0.5.18 srt/server_args.py, 0.5.20-0.5.23 srt/arg_groups/memory_hook.py).
The reference's "default -1: none" holds only without --enable-symm-mem; the source wins."""


def symm_prealloc_bytes(env: Mapping[str, str], symm_default: bool = False) -> int | None:
    """The pre-allocated symmetric pool, or None when the variable is not positive, or unset
    and ``symm_default`` is off. ``symm_default``: the variable being unset means
    ``SYMM_PREALLOC_DEFAULT_GIB`` (the newest SGLang with --enable-symm-mem)."""
    v = env.get(ENV_SYMM_PREALLOC)
    if v is None and symm_default:
        return SYMM_PREALLOC_DEFAULT_GIB * GIB
    try:
        gib = float(v) if v is not None else -1.0
    except ValueError:
        return None
    return round(gib * GIB) if 0 < gib <= 1 << 20 else None


# --- DeepEP ---------------------------------------------------------------------------------

ENV_DEEPEP_TOKENS = "SGLANG_DEEPEP_NUM_MAX_DISPATCH_TOKENS_PER_RANK"
DEEPEP_MAX_DISPATCH_TOKENS = 1024
"""SGLang asserts ``num_max_dispatch_tokens_per_rank <= 1024`` (sglang 0.5.3-0.5.23,
srt/layers/moe/token_dispatcher/deepep.py, _DeepEPDispatcherImplLowLatency)."""

DEEPEP_ALIGNMENT = 128
"""DeepEP's ``NUM_BUFFER_ALIGNMENT_BYTES`` (``csrc/config.hpp``)."""


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def deepep_formula_applies(device: str | None) -> bool:
    """DeepEP's size formulas (and DeepGEMM's masked intermediates) are the CUDA library's:
    on another device (Ascend's ``npu``: its own DeepEP) they describe nothing. No device
    printed means CUDA, SGLang's default."""
    return device in (None, "cuda")


def deepep_low_latency_bytes(
    max_dispatch_tokens: int,
    hidden: int,
    num_experts: int,
    num_ranks: int = 1,
    *,
    scaled_combine: bool = False,
) -> int:
    """DeepEP's low-latency RDMA buffer per rank: ``get_low_latency_rdma_size_hint``
    (``deepseek-ai/DeepEP`` ``csrc/config.hpp`` @030cdf0a; docs/reference.md 12.5), as
    ``DeepEPBuffer.get_deepep_buffer`` sizes it (``layers/moe/token_dispatcher/deepep.py``).

    scaled_combine=False is the original layout (combine messages of 2*H bytes, E*4 signal
    bytes); True the newer one that adds per-128-channel scales to each combine message and
    local-expert flags to the signal buffer. DeepSeek-V3 (H 7168, E 256, T 128): about 1.8 GiB.
    """
    t, h, e = max_dispatch_tokens, hidden, num_experts
    num_scales = h // 128
    dispatch_msg = 16 + max(2 * h, h + 4 * num_scales)
    combine_msg = 4 * num_scales + 2 * h if scaled_combine else 2 * h
    send = max(t * dispatch_msg, e * t * combine_msg)
    recv = max(e * t * dispatch_msg, e * t * combine_msg)
    local = _ceil_div(e, max(1, num_ranks))
    signal = e * 8 + local * 4 if scaled_combine else e * 4
    signal = _ceil_div(signal, 128) * 128
    total = 2 * (send + recv + signal)
    return _ceil_div(total, DEEPEP_ALIGNMENT) * DEEPEP_ALIGNMENT


def deepep_on(args: Mapping[str, Any]) -> bool:
    """DeepEP is the MoE all-to-all: ``moe_a2a_backend == "deepep"`` (2025-2026), or the early-2025
    ``enable_deepep_moe=True``."""
    return args.get("moe_a2a_backend") == "deepep" or args.get("enable_deepep_moe") is True


def deepep_mode(args: Mapping[str, Any]) -> str:
    """``--deepep-mode``: normal, low_latency or auto (the default)."""
    mode = args.get("deepep_mode")
    return mode if mode in ("normal", "low_latency", "auto") else "auto"


def deepep_dispatch_tokens(env: Mapping[str, str]) -> int:
    """T of the low-latency buffer: ``SGLANG_DEEPEP_NUM_MAX_DISPATCH_TOKENS_PER_RANK``
    (default ``rules.DEEPEP_DEFAULT_DISPATCH_TOKENS``, at most 1024)."""
    return (
        env_int(env, ENV_DEEPEP_TOKENS, 1, DEEPEP_MAX_DISPATCH_TOKENS)
        or rules.DEEPEP_DEFAULT_DISPATCH_TOKENS
    )


LAST_WITHOUT_DEEPEP_RESERVE = RELEASES["0.5.15"]
"""sglang 0.5.15 (the wheel's file date of srt/server_args.py): its default mem_fraction_static
reserves nothing for DeepEP; 0.5.16 (2026-07-25) adds ``reserve_for_deepep_a2a_mb()``
(srt/server_args.py; srt/arg_groups/memory_hook.py from 0.5.20). Not in 0.5.9 (server_args.py
l.1022-1062) nor 0.5.14 (l.3276-3312)."""


def deepep_reserve_exists(printed: date | None) -> bool | None:
    """Whether the SGLang of a log printed on ``printed`` can have ``reserve_for_deepep_a2a_mb``:
    False up to the last release without it (no SGLang of that date has it; a log's date bounds
    its release from above), True after (the rule is current; an older image would lack it),
    None undated."""
    if printed is None:
        return None
    return printed > LAST_WITHOUT_DEEPEP_RESERVE


def deepep_reserve_applies(args: Mapping[str, Any]) -> bool:
    """Whether ``reserve_for_deepep_a2a_mb()`` (sglang 0.5.16-0.5.23, srt/server_args.py, then
    srt/arg_groups/memory_hook.py; ``deepep_reserve_exists`` says whether a log's SGLang has it)
    adds its ``rules.DEEPEP_A2A_RESERVE_MIB`` to SGLang's own mem_fraction_static: not a prefill
    node, the decode graph on, DeepEP the a2a backend. It counts only when SGLang derives the
    fraction itself: an explicit ``--mem-fraction-static`` is used as given."""
    return (
        args.get("disaggregation_mode") != "prefill"
        and rules.decode_graph_on(args)
        and deepep_on(args)
    )


# --- PD disaggregation ----------------------------------------------------------------------

ENV_STAGING = "SGLANG_DISAGG_STAGING_BUFFER"
ENV_STAGING_POOL = "SGLANG_DISAGG_STAGING_POOL_SIZE_MB"
STAGING_POOL_DEFAULT_MB = 4096
"""The decode side's staging ring, ``SGLANG_DISAGG_STAGING_POOL_SIZE_MB`` (``EnvInt(4096)``, MiB;
sglang 0.5.10-0.5.23 srt/environ.py; srt/disaggregation/common/staging_buffer.py)."""

ENV_MOONCAKE_POOL = "SGLANG_MOONCAKE_CUSTOM_MEM_POOL"


def pd_transfer_backend(args: Mapping[str, Any]) -> str:
    """``--disaggregation-transfer-backend``: mooncake unless set (``server_args.py`` default;
    nixl, ascend, fake ...)."""
    b = args.get("disaggregation_transfer_backend")
    return b if isinstance(b, str) and b else "mooncake"


def pd_role(args: Mapping[str, Any]) -> str | None:
    """``disaggregation_mode`` prefill / decode, None for a plain server ('null')."""
    mode = args.get("disaggregation_mode")
    return mode if mode in ("prefill", "decode") else None


def staging_enabled(env: Mapping[str, str]) -> bool:
    """Staging buffers exist only with ``SGLANG_DISAGG_STAGING_BUFFER=1`` (default off; for a
    heterogeneous attention TP between prefill and decode)."""
    return env_flag(env, ENV_STAGING) is True


def staging_prefill_bytes_per_queue(
    chunked_prefill_size: int, page_size: int, kv_bytes_per_token: int
) -> int:
    """The prefill side's staging buffer per transfer queue:
    ``max(1, chunked_prefill_size // page_size) x sum(kv_item_lens)``, where one page of every
    layer's KV is ``page_size x`` that layer's bytes per token, so the sum over layers is
    ``page_size x kv_bytes_per_token`` (``disaggregation/`` staging, ``torch.empty`` after the
    KV pool, 2026)."""
    pages = max(1, chunked_prefill_size // max(1, page_size))
    return pages * max(1, page_size) * kv_bytes_per_token


def staging_decode_bytes(env: Mapping[str, str]) -> int:
    """The decode side's staging ring: ``SGLANG_DISAGG_STAGING_POOL_SIZE_MB`` MiB (default 4096)."""
    return (env_int(env, ENV_STAGING_POOL, 1, 1 << 24) or STAGING_POOL_DEFAULT_MB) * MIB


# --- environment values ---------------------------------------------------------------------

COMM_ENV_KEYS = (
    ENV_DEEPEP_TOKENS,
    ENV_V2_SWITCH,
    ENV_V2_OLD_SWITCH,
    ENV_V2_MAX,
    ENV_V2_PULL,
    ENV_V2_PUSH,
    ENV_SYMM_PREALLOC,
    ENV_STAGING,
    ENV_STAGING_POOL,
    ENV_MOONCAKE_POOL,
    "NCCL_BUFFSIZE",
    "NCCL_CUMEM_ENABLE",
    "NCCL_NVLS_ENABLE",
    "HCCL_BUFFSIZE",
)
"""The environment variables that size or switch a communication cell."""

ENV_UNITS = {"NCCL_BUFFSIZE": "B", "HCCL_BUFFSIZE": "MB"}
"""The unit of a variable whose name does not say it (SGLang's own say it: _KB, _MB, _GB_SIZE).
NCCL_BUFFSIZE is in bytes (NCCL docs, Environment Variables: default 4194304, i.e. 4 MiB);
HCCL_BUFFSIZE in MB (Ascend CANN docs, HCCL environment variables: default 200)."""


def env_value_text(key: str, value: str) -> str:
    """An echoed value with its unit when the name does not say it: ``720 MB``."""
    unit = ENV_UNITS.get(key)
    return f"{value} {unit}" if unit else value
