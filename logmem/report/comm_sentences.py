"""Sentences of the communication table: each cell's note and each finding, the same words
in every format (text, Markdown, HTML, JSON). Facts from logmem.analysis.communication and
comm_join; sizes in MiB below 1 GiB, GiB with two decimals above.
"""

from __future__ import annotations

from functools import singledispatch
from typing import Any

from logmem.analysis import comm_join as cj
from logmem.analysis.communication import Cell
from logmem.sglang import comm, rules
from logmem.sglang.comm import Mechanism, When
from logmem.units import GIB, MIB, format_gib


def size_text(n: int | None) -> str:
    """A cell's size: MiB below 1 GiB (custom all-reduce is tens of MiB), else GiB."""
    if n is None:
        return "measure"
    if n == 0:
        return "0"
    if abs(n) < GIB:
        return f"{n / MIB:.2f} MiB"
    return f"{n / GIB:.2f} GiB"


def _env(fact: Any, default: str) -> str:
    """An environment fact (value, origin, line) as a clause."""
    if not fact:
        return default
    value, origin, line = fact
    where = f"log line {line}" if origin == "log" and line else origin
    return f"{value} ({where})"


def _s(n: int) -> str:
    return "" if n == 1 else "s"


def cell_note(c: Cell) -> str:
    """What a cell holds and where its size (or its lack of one) comes from."""
    f = dict(c.facts)
    m = c.mechanism
    if m is Mechanism.COMMUNICATORS:
        n, lib = f.get("count", 1), f.get("library", "NCCL")
        which = "torch ProcessGroup + pynccl" if n == 2 else "torch ProcessGroup"
        return (
            f"{n} {lib} communicator{_s(n)} ({which}) over {f.get('size')} ranks; "
            "channels and proxies from the driver, outside the torch allocator: no formula"
        )
    if m is Mechanism.PEER_BUFFERS:
        lib = f.get("library", "NCCL")
        if lib == "HCCL":
            size = f"HCCL_BUFFSIZE {_env(f.get('HCCL_BUFFSIZE'), 'default')} MB"
        else:
            size = f"NCCL_BUFFSIZE {_env(f.get('NCCL_BUFFSIZE'), 'default 4 MiB')}"
        when = (
            "pre-warmed in init (--pre-warm-nccl)"
            if c.when is When.INIT
            else "connected at the first collective"
        )
        return f"{lib} per-channel, per-peer buffers ({size}); {when}"
    if m is Mechanism.CUSTOM_AR_LEGACY:
        each = "16 MiB (ROCm)" if f.get("hip") else "8 MiB"
        why = {
            "switch": f"{comm.ENV_V2_SWITCH} {_env(f.get(comm.ENV_V2_SWITCH), 'off')}",
            "hip": "ROCm runs the legacy implementation",
            "no_v2_line": "legacy assumed: TP rank 0 printed no 'All Reduce config' line, which v2 prints",
        }.get(f.get("why", ""), "")
        return f"3 own buffers of {each} (signal+meta, IPC input, rank data); peers' buffers are mapped, not copied; {why}"
    if m is Mechanism.CUSTOM_AR_V2_WORKSPACE:
        w, push, pull = f.get("W"), f.get("push", 0), f.get("pull", 0)
        formula = f"2 x W x push + pull = 2 x {w} x {push / MIB:g} MiB + {pull / MIB:g} MiB (+128 B per pull block)"
        if c.source == "logged":
            return f"symmetric_memory as logged; {formula} = {size_text(f.get('formula_bytes'))}"
        return formula
    if m is Mechanism.CUSTOM_AR_V2_POINTERS:
        text = (
            f"131072 x W x 8 B device pointer table, W = {f.get('W')} (the torch allocator sees it)"
        )
        if c.source == "logged":
            return f"local_buffer as logged (pointer table {size_text(f.get('formula_bytes'))} + a small push counter)"
        return text
    if m is Mechanism.CUSTOM_AR_AITER:
        return "ROCm aiter custom all-reduce ([AR] Using AiterCustomAllreduce); its buffers' size is not read here"
    if m is Mechanism.SYMM_POOL:
        if c.source == "logged":
            return "symmetric memory pool pre-allocated at graph set-up (logged)"
        if c.bytes is not None:
            return f"{comm.ENV_SYMM_PREALLOC} {_env(f.get(comm.ENV_SYMM_PREALLOC), '')} GiB, pre-allocated at graph set-up"
        return f"one torch MemPool (ncclMemAlloc) for every group, grown on use; {comm.ENV_SYMM_PREALLOC} pre-allocates it"
    if m is Mechanism.MSCCLPP:
        return "mscclpp buffers (--enable-mscclpp): no formula here"
    if m is Mechanism.DEEPEP:
        return _deepep_note(c, f)
    if m is Mechanism.PD_KV_REGISTRATION:
        return (
            f"{f.get('role')} node: the KV pool is registered in place with {f.get('backend')} "
            "(pinned pages, RDMA keys): no copy, no extra HBM"
        )
    if m is Mechanism.PD_AUX:
        where = (
            "on the GPU (INTRA_NODE_NVLINK pool)" if f.get("cuda_pool") else "pinned host memory"
        )
        if f.get("device") == "npu" and not f.get("cuda_pool"):
            where = "NPU memory on Ascend"
        return (
            f"aux metadata (output ids, cached tokens, logprobs), 64 B-padded records, {where}: host RAM and ulimit -l, not HBM"
            if where == "pinned host memory"
            else f"aux metadata in {where}"
        )
    if m is Mechanism.PD_STAGING:
        if f.get("role") == "decode":
            return f"staging ring {comm.ENV_STAGING_POOL} {_env(f.get(comm.ENV_STAGING_POOL), 'default 4096')} MiB (SGLANG_DISAGG_STAGING_BUFFER=1)"
        if c.each_bytes is not None:
            return (
                f"{size_text(c.each_bytes)} per transfer queue = max(1, {f.get('chunk')} // {f.get('page')}) x "
                f"{f.get('page')} x {f.get('kv_bytes_per_token'):,} B per token; the queue count is not in server_args"
            )
        return "max(1, chunk // page) x page x KV bytes per token per transfer queue (inputs not all known)"
    return ""


def _deepep_note(c: Cell, f: dict[str, Any]) -> str:
    t = f"T = {f.get('T')} dispatch tokens per rank ({_env(f.get(comm.ENV_DEEPEP_TOKENS), 'default')})"
    base = f"process-wide, created at the first dispatch; mode {f.get('mode')}"
    ll = f.get("low_latency_bytes")
    why = f.get("unknown")
    if why == "device":
        return f"{base}; {t}; DeepEP on {f.get('device')} is not the CUDA library: no formula here"
    if why == "no_config":
        return f"{base}; {t}; pass --model-config for the low-latency size (hidden size, experts)"
    if why == "no_experts":
        return f"{base}; the config has no routed experts"
    if why == "config_error":
        return f"{base}; the config does not fit this layout: {f.get('error')}"
    if f.get("mode") == "low_latency":
        return f"{base}; {t}; DeepEP get_low_latency_rdma_size_hint (versions with combine scales need a little more)"
    if f.get("mode") == "auto":
        return f"{base}; the larger of the normal and low-latency buffers, at least {size_text(ll)} ({t})"
    return f"{base}; normal-mode NVL/RDMA sizes come from the dispatch/combine configs: no formula here"


# --- findings -------------------------------------------------------------------------------


@singledispatch
def comm_finding_text(f: object) -> str:
    raise TypeError(f"no sentence for {type(f).__name__}")


@comm_finding_text.register
def _(f: cj.CustomAROff) -> str:
    return (
        f"Custom all-reduce did not set up (line {f.line}: {f.state}, {f.text[:160]}): the TP group "
        "all-reduces through NCCL, so its custom all-reduce buffers are not in the table."
    )


@comm_finding_text.register
def _(f: cj.InitBelowCells) -> str:
    return (
        f"Distributed init took {format_gib(f.usage_bytes)} GiB on {f.rank or 'the GPU'} (line {f.line}), "
        f"less than the {size_text(f.cells_bytes)} of custom all-reduce buffers the flags imply: custom "
        "all-reduce probably did not set up (no P2P / NVLink), or its buffers came later."
    )


@comm_finding_text.register
def _(f: cj.InitNothing) -> str:
    return (
        f"Distributed init took 0.00 GiB on all {f.ranks} ranks: {f.library} allocates its communicator "
        "buffers at the first collective, so they land after KV sizing (in the first capture or "
        "the first request) and must fit in the 1 - mem_fraction_static headroom."
    )


@comm_finding_text.register
def _(f: cj.AllReduceDiffers) -> str:
    what = "symmetric_memory" if f.part == "symmetric" else "local_buffer"
    cause = (
        "the push/pull sizes differ from the 16 MiB default (SGLANG_CUSTOM_ALL_REDUCE_V2_* "
        "variables: pass them with --env) or this SGLang lays the workspace out differently"
        if f.part == "symmetric"
        else "the pointer table has another row count in this SGLang, or the group is not the TP group"
    )
    return (
        f"All Reduce config (line {f.line}) logged {what} = {f.logged_bytes / MIB:.2f} MiB; the v2 formula "
        f"at W = {f.world} gives {f.expected_bytes / MIB:.2f} MiB: {cause}."
    )


@comm_finding_text.register
def _(f: cj.DeepEPAttributed) -> str:
    j = f.join
    where = (
        f"the {j.graph} capture ({format_gib(j.bucket_bytes)} GiB in all; no per-bucket readings)"
        if j.whole_capture
        else f"the largest bucket{f' (bs {j.bucket})' if j.bucket is not None else ''} of the {j.graph} "
        f"capture ({format_gib(j.bucket_bytes)} GiB)"
    )
    head = f"DeepEP's buffer is created once per process, at the first dispatch: it lands in {where} on {j.rank or 'the GPU'}, the launch's first capture, and later captures reuse it"
    if j.deepep_bytes is None:
        return head + "."
    if j.exceeds:
        return (
            f"{head}; the formula's {format_gib(j.deepep_bytes)} GiB is more than that bucket, so the "
            "buffer was allocated earlier (warm-up or model init) or this DeepEP sizes it differently."
        )
    return f"{head}: {format_gib(j.deepep_bytes)} GiB of it by the formula, the rest is the graph's own memory."


@comm_finding_text.register
def _(f: cj.DeepEPNoReserve) -> str:
    head = (
        f"--mem-fraction-static {f.mfs:g} was passed (command line, line {f.line})"
        if f.explicit and f.line
        else (
            f"--mem-fraction-static {f.mfs:g} was passed"
            if f.explicit
            else f"If mem_fraction_static {f.mfs:g} was passed explicitly (the log shows no command line)"
        )
    )
    verb = "so" if f.explicit else "then"
    size = (
        f" ({format_gib(f.deepep_bytes)} GiB by the formula)" if f.deepep_bytes is not None else ""
    )
    room = (
        f" it must fit in the {format_gib(f.headroom_bytes)} GiB that P x (1 - mfs) leaves"
        if f.headroom_bytes is not None
        else " it must fit in the 1 - mfs headroom"
    )
    bucket = (
        f", beside the graphs (the first capture's largest bucket took {format_gib(f.bucket_bytes)} GiB)"
        if f.bucket_bytes is not None
        else ""
    )
    return (
        f"{head}: {verb} SGLang's {rules.DEEPEP_A2A_RESERVE_MIB} MiB DeepEP reserve "
        f"(reserve_for_deepep_a2a_mb, only for a derived mfs) was not set aside; the lazy DeepEP buffer{size} "
        f"is allocated after KV sizing and{room}{bucket}."
    )


@comm_finding_text.register
def _(f: cj.DeepEPReserveShort) -> str:
    return (
        f"SGLang derived mem_fraction_static with its {size_text(f.reserve_bytes)} DeepEP reserve, but the "
        f"low-latency buffer is {format_gib(f.deepep_bytes)} GiB by the formula: the reserve is short; "
        "lower SGLANG_DEEPEP_NUM_MAX_DISPATCH_TOKENS_PER_RANK or pass a smaller --mem-fraction-static."
    )


@comm_finding_text.register
def _(f: cj.LazyOverHeadroom) -> str:
    return (
        f"The communication cells allocated after KV sizing take {format_gib(f.lazy_bytes)} GiB, more than "
        f"the {format_gib(f.headroom_bytes)} GiB that P x (1 - mfs) leaves: lower mem_fraction_static."
    )
