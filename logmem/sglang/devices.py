"""Which local device a scheduler rank runs on (SGLang's engine, ``_launch_scheduler_processes``).

``gpu_id = base_gpu_id + (pp_rank % pp_per_node) * tp_per_node + (tp_rank % tp_per_node) *
gpu_id_step`` with ``tp_per_node = tp_size // nnodes_per_tp_group``. Data parallelism without
DP attention moves every replica's base (the DP controller), so no id is given then: a caller
that cannot place a rank says so rather than guess.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def _int(args: Mapping[str, Any], key: str, default: int) -> int | None:
    v = args.get(key, default)
    if v is None:
        return default
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def nodes_per_tp_group(nnodes: int, pp: int) -> int:
    """The nodes one TP group spans: ``nnodes_per_tp_group = max(nnodes // pp_size, 1)`` (sglang
    0.5.9 and 0.5.23, srt/entrypoints/engine.py, ``_launch_scheduler_processes``)."""
    return max(nnodes // max(pp, 1), 1)


def local_gpu_id(args: Mapping[str, Any], tp_rank: int | None, pp_rank: int | None) -> int | None:
    """The local device index of a rank by SGLang's rule, or None when it cannot be known
    (no server_args, no TP tag, replicated data parallelism, odd settings)."""
    if not args or tp_rank is None:
        return None
    tp, pp, nnodes = _int(args, "tp_size", 1), _int(args, "pp_size", 1), _int(args, "nnodes", 1)
    base, step, dp = (
        _int(args, "base_gpu_id", 0),
        _int(args, "gpu_id_step", 1),
        _int(args, "dp_size", 1),
    )
    if None in (tp, pp, nnodes, base, step, dp):
        return None
    assert tp is not None and pp is not None and nnodes is not None
    assert base is not None and step is not None and dp is not None
    if tp < 1 or pp < 1 or nnodes < 1 or step < 1 or base < 0:
        return None
    if dp > 1 and not args.get("enable_dp_attention"):
        return None  # each DP replica starts at its own base id
    if pp > 1 and pp_rank is None:
        return None
    pp_per_node = max(pp // nnodes, 1)
    tp_per_node = tp // nodes_per_tp_group(nnodes, pp)
    if tp_per_node < 1:
        return None
    return base + ((pp_rank or 0) % pp_per_node) * tp_per_node + (tp_rank % tp_per_node) * step


def ranks_in_log(args: Mapping[str, Any]) -> int | None:
    """How many scheduler ranks one node's log holds by server_args: ``tp_size x pp_size``
    (x ``dp_size`` for data parallelism without DP attention, whose replicas each have tp x pp
    ranks), over ``nnodes`` (each node's log has its own ranks; SGLang's engine,
    ``_launch_scheduler_processes``). None without tp_size or with settings that do not divide."""
    if not args:
        return None
    tp, pp, nnodes = _int(args, "tp_size", 1), _int(args, "pp_size", 1), _int(args, "nnodes", 1)
    dp = _int(args, "dp_size", 1)
    if "tp_size" not in args or None in (tp, pp, nnodes, dp):
        return None
    assert tp is not None and pp is not None and nnodes is not None and dp is not None
    if min(tp, pp, nnodes, dp) < 1:
        return None
    world = tp * pp * (dp if not args.get("enable_dp_attention") else 1)
    return world // nnodes if world % nnodes == 0 else None


# memory.total as nvidia-smi prints it (MiB) for boards whose torch device name (spaces as
# underscores, the ``device_name=`` of SGLang's kernel-config files) fixes the memory size;
# SGLang's gpu_mem is this figure (get_nvgpu_memory_capacity, common.py). Only boards whose
# figure has been seen in nvidia-smi output: 011's H100 dump (0.831) agrees with 81,559.
NVIDIA_SMI_TOTAL_MIB: dict[str, int] = {
    "NVIDIA_H100_80GB_HBM3": 81_559,
    "NVIDIA_H200": 143_771,
    "NVIDIA_A100-SXM4-80GB": 81_920,
    "NVIDIA_GeForce_RTX_4090": 24_564,
    "NVIDIA_L4": 23_034,
}


def named_capacity_mib(device_name: str) -> int | None:
    """gpu_mem of a GPU known by its torch name (NVIDIA_SMI_TOTAL_MIB), None for any other."""
    return NVIDIA_SMI_TOTAL_MIB.get(device_name)
