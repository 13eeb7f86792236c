"""Sentences of the communication table: each cell's note and each finding, the same words
in every format (text, Markdown, HTML, JSON). Facts from logmem.analysis.communication and
comm_join; sizes in MiB below 1 GiB, GiB with two decimals above.
"""

from __future__ import annotations

from functools import singledispatch
from typing import Any

from logmem.analysis import comm_join as cj
from logmem.analysis.communication import Cell
from logmem.analysis.ledger import Lazy
from logmem.sglang import comm, rules
from logmem.sglang import custom_ar as car
from logmem.sglang.comm import Mechanism, When, env_value_text
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


def after_pools_text(h: cj.Headroom) -> str:
    """Where the reading after the pools is from, and the rule's figure it is below."""
    where = f"{h.rank or 'GPU'}, line {h.line}"
    if h.budget_bytes is None:
        return where
    text = f"{where}; P x (1 - mfs) would give {format_gib(h.budget_bytes)}"
    if h.pool_excess_bytes:
        text += f", but the pools took {format_gib(h.pool_excess_bytes)} GiB more than their budget"
    return text


def room_text(h: cj.Headroom) -> str:
    """What the cells allocated after KV sizing must fit in, naming which figure binds: "the
    25.71 GiB that P x (1 - mfs) leaves", or "the 3.91 GiB free after the pools (TP0, line 491;
    P x (1 - mfs) would give 25.71, ...)"."""
    if h.measured_binds:
        return f"the {format_gib(h.after_pools_bytes or 0)} GiB free after the pools ({after_pools_text(h)})"
    return f"the {format_gib(h.budget_bytes or 0)} GiB that P x (1 - mfs) leaves"


def _env(key: str, fact: Any, default: str, unit: str = "") -> str:
    """An environment value and where it came from: ``KEY=V (log line N)`` / ``KEY default``."""
    if not fact:
        return f"{key} {default}"
    value, origin, line = fact
    where = f"log line {line}" if origin == "log" and line else origin
    return f"{key}={env_value_text(key, value)}{unit} ({where})"


def bucket_name(graph: str, size: int | None) -> str:
    """ "bs 64" for a decode-type graph, "num_tokens 2048" for a prefill/piecewise one."""
    if size is None:
        return "size not printed"
    return f"{'num_tokens' if rules.graph_sized_in_tokens(graph) else 'bs'} {size}"


def _s(n: int) -> str:
    return "" if n == 1 else "s"


def _mib(n: int) -> str:
    return f"{n / MIB:g} MiB"


def cell_note(c: Cell) -> str:
    """What a cell holds and where its size (or its lack of one) comes from."""
    f = dict(c.facts)
    m = c.mechanism
    if m is Mechanism.COMMUNICATORS:
        n, lib = f.get("count", 1), f.get("library", "NCCL")
        which = "torch + pynccl" if n == 2 else "torch"
        return f"{n} {lib} communicator{_s(n)} ({which}) over {f.get('size')} ranks; driver memory"
    if m is Mechanism.PEER_BUFFERS:
        lib = f.get("library", "NCCL")
        if lib == "HCCL":
            size = _env("HCCL_BUFFSIZE", f.get("HCCL_BUFFSIZE"), "default")
        else:
            size = _env("NCCL_BUFFSIZE", f.get("NCCL_BUFFSIZE"), "default 4 MiB")
        when = "pre-warmed (--pre-warm-nccl)" if c.when is When.INIT else "at the first collective"
        return f"per channel and peer, {size}; {when}"
    if m is Mechanism.CUSTOM_AR_LEGACY:
        each = "16 MiB (ROCm)" if f.get("hip") else "8 MiB"
        return f"3 own buffers x {each}; peers' are mapped, not copied; legacy: {_ar_why(f)}"
    if m is Mechanism.CUSTOM_AR_EITHER:
        return (
            f"legacy, 3 x 8 MiB = {size_text(f.get('legacy_bytes'))}, or v2, {_v2_formula(f)}; "
            f"{_ar_why(f)}"
        )
    if m is Mechanism.CUSTOM_AR_V2_WORKSPACE:
        if c.source == "logged":
            exact = f.get("formula_bytes")
            if exact is not None:
                return f"symmetric_memory as logged; forced sizes give {size_text(exact)}"
            return (
                "symmetric_memory as logged: 2W push slots + a pull buffer, sized by SGLang's "
                "per-GPU tuned table"
            )
        if c.bytes is not None:
            return f"2 x {f.get('W')} x {_mib(f.get('push') or 0)} push + {_mib(f.get('pull') or 0)} pull (forced)"
        return _v2_formula(f)
    if m is Mechanism.CUSTOM_AR_V2_POINTERS:
        if c.source == "logged":
            return (
                f"local_buffer as logged; pointer table {size_text(f.get('formula_bytes'))}"
                " + a small push counter"
            )
        return f"131072 x {f.get('W')} x 8 B pointer table (torch allocator)"
    if m is Mechanism.CUSTOM_AR_AITER:
        if f.get("import"):
            return (
                "ROCm aiter custom all-reduce (aiter loaded module_custom_all_reduce; SGLang's ROCm "
                "default from 0.5.6): size not logged"
            )
        return "ROCm aiter custom all-reduce ([AR] Using AiterCustomAllreduce): size not logged"
    if m is Mechanism.SYMM_POOL:
        if c.source == "logged":
            return "pre-allocated at graph set-up, as logged"
        if c.bytes is not None:
            return (
                _env(
                    comm.ENV_SYMM_PREALLOC,
                    f.get(comm.ENV_SYMM_PREALLOC),
                    f"unset: {comm.SYMM_PREALLOC_DEFAULT_GIB} GiB, as --enable-symm-mem sets it",
                    " GiB",
                )
                + ", at graph set-up"
            )
        return f"one MemPool for every group, grown on use ({comm.ENV_SYMM_PREALLOC} unset)"
    if m is Mechanism.MSCCLPP:
        return "--enable-mscclpp: size not logged"
    if m is Mechanism.DEEPEP:
        return _deepep_note(f)
    if m is Mechanism.PD_KV_REGISTRATION:
        return f"{f.get('role')} node, {f.get('backend')}: the KV pool registered in place, no copy"
    if m is Mechanism.PD_AUX:
        if f.get("cuda_pool"):
            return "aux metadata on the GPU (INTRA_NODE_NVLINK pool)"
        if c.memory == "device":
            return "aux metadata (output ids, cached tokens, logprobs) in NPU memory"
        return "aux metadata (output ids, cached tokens, logprobs): host RAM and ulimit -l, not HBM"
    if m is Mechanism.PD_STAGING:
        if f.get("role") == "decode":
            return "decode ring, " + _env(
                comm.ENV_STAGING_POOL, f.get(comm.ENV_STAGING_POOL), "default 4096 MiB"
            )
        if c.each_bytes is not None:
            return (
                f"{size_text(c.each_bytes)} per transfer queue = max(1, {f.get('chunk')} // "
                f"{f.get('page')}) x {f.get('page')} x {f.get('kv_bytes_per_token'):,} B per token"
            )
        return (
            "per transfer queue: max(1, chunk // page) x page x KV bytes per token (not all known)"
        )
    return ""


def _v2_formula(f: dict[str, Any]) -> str:
    """The v2 workspace without a logged line: its sizes come from a per-GPU tuned table."""
    return (
        f"2 x {f.get('W')} push slots + a pull buffer from a per-GPU tuned table, at most "
        f"{size_text(f.get('at_most'))} (each capped at {_mib(f.get('cap') or 0)}, "
        f"{car.ENV_V2_MAX})"
    )


def _ar_release(d: Any) -> str:
    return f"SGLang up to this log's date ({d.isoformat()})" if d is not None else "this SGLang"


def _ar_why(f: dict[str, Any]) -> str:
    """Why the table takes this custom all-reduce (logmem.sglang.custom_ar.custom_ar_choice)."""
    why, d = f.get("why", ""), f.get("printed")
    if why == "switch":
        return _env(car.ENV_V2_SWITCH, f.get(car.ENV_V2_SWITCH), "off")
    if why == "hip":
        return "ROCm (aiter's all-reduce not loaded)"
    if why == "nnodes":
        return f"{_ar_release(d)} turns v2 off with more than one node (nnodes > 1)"
    if why == "no_v2":
        return f"{_ar_release(d)} has no v2 (sglang 0.5.10, 2026-04-05, added it)"
    if why == "v2_opt_in":
        return (
            f"{_ar_release(d)} has v2 at most as an opt-in ({car.ENV_V2_OLD_SWITCH}=1); "
            "it is the default from sglang 0.5.12 (2026-05-16)"
        )
    if why == "unknown":
        return (
            "the log does not say which (v2 is CUDA's default from sglang 0.5.12, falls back to "
            "legacy without full NVLink, and prints 'All Reduce config' only from 0.5.16)"
        )
    return ""


def custom_ar_none_text(
    why: str, nodes: int | None, world: int, library: str, printed: Any = None
) -> str:
    """Why the TP group has no custom all-reduce although the flags allow it."""
    if why == "spans":
        mnnvl = (
            " (from sglang 0.5.17 an MNNVL system such as GB200 NVL72 may run v2 across nodes, and "
            "would print 'All Reduce config')"
            if printed is None or printed > car.LAST_V2_INTRA_NODE
            else ""
        )
        return (
            f"No custom all-reduce: the TP group spans {nodes} nodes, and SGLang sets it up only "
            f"within one node{mnnvl}; all-reduce goes through {library}."
        )
    return (
        f"No custom all-reduce: TP {world} is above the 8 ranks custom all-reduce supports; "
        f"all-reduce goes through {library}."
    )


def _deepep_note(f: dict[str, Any]) -> str:
    env = f.get(comm.ENV_DEEPEP_TOKENS)
    if env:
        _, origin, line = env
        where = f"log line {line}" if origin == "log" and line else origin
        t = f"T={f.get('T')} dispatch tokens ({'echoed at ' if origin == 'log' else ''}{where})"
    else:
        t = f"T={f.get('T')} dispatch tokens (default)"
    mode = f"{f.get('mode')}, one per process"
    why = f.get("unknown")
    if why == "device":
        return f"{mode}; {t}; DeepEP on {f.get('device')} is not the CUDA library: no formula"
    if why == "no_config":
        return f"{mode}; {t}; --model-config gives the low-latency size"
    if why == "no_experts":
        return f"{mode}; the config has no routed experts"
    if why == "config_error":
        return f"{mode}; the config does not fit this layout: {f.get('error')}"
    if f.get("mode") == "low_latency":
        return f"{mode}; {t} x experts x hidden (DeepEP's size hint)"
    if f.get("mode") == "auto":
        return f"{mode}; the larger of normal and low latency, at least {size_text(f.get('low_latency_bytes'))} ({t})"
    return f"{mode}; normal-mode sizes come from the dispatch/combine configs: no formula"


# --- findings -------------------------------------------------------------------------------


@singledispatch
def comm_finding_text(f: object) -> str:
    raise TypeError(f"no sentence for {type(f).__name__}")


def custom_ar_off_words(state: str, text: str) -> str:
    """'Custom all-reduce setup failed with ...' from the log's own line, its hint cut off."""
    why = text.split(". To silence", 1)[0].strip().rstrip(".")[:200]
    what = "is disabled because" if state == "disabled" else "setup failed"
    return f"Custom all-reduce {what} {why}"


@comm_finding_text.register
def _(f: cj.CustomAROff) -> str:
    return (
        f"{custom_ar_off_words(f.state, f.text)} (line {f.line}): the TP group all-reduces "
        f"through {f.library}, "
        "so there are no custom all-reduce buffers in the table."
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
    what = "local_buffer" if f.part == "local" else "symmetric_memory"
    if f.part == "symmetric_cap":
        return (
            f"All Reduce config (line {f.line}) logged symmetric_memory = {f.logged_bytes / MIB:.2f} "
            f"MiB, above the {f.expected_bytes / MIB:.2f} MiB that 2 x {f.world} push slots and a "
            f"pull buffer reach at the {car.ENV_V2_MAX} cap: the cap was raised or the sizes "
            "forced (SGLANG_CUSTOM_ALL_REDUCE_V2_* variables: pass them with --env), or a "
            "consumer grew the push plane (sglang 0.5.23 reserve_push_capacity)."
        )
    cause = (
        "the forced SGLANG_FORCE_CUSTOM_ALL_REDUCE_V2_* sizes are not the ones this launch ran with "
        "(pass them with --env) or this SGLang lays the workspace out differently"
        if f.part == "symmetric"
        else "the pointer table has another row count in this SGLang, or the group is not the TP group"
    )
    expected = (
        f"the forced sizes give {f.expected_bytes / MIB:.2f} MiB at W = {f.world}"
        if f.part == "symmetric"
        else f"the v2 pointer table at W = {f.world} is {f.expected_bytes / MIB:.2f} MiB"
    )
    return (
        f"All Reduce config (line {f.line}) logged {what} = {f.logged_bytes / MIB:.2f} MiB; "
        f"{expected}: {cause}."
    )


def _groups(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def shared_names(j: cj.DeepEPJoin) -> list[str]:
    """The lazy cells (and other lazy buffers) that share DeepEP's bucket, in table order:
    "the HCCL peer buffers of the TP and attention TP groups (HCCL_BUFFSIZE=1600 MB, log line
    233)", "the symmetric memory pool"."""
    out: list[str] = []
    peers = [c for c in j.shared if c.mechanism is Mechanism.PEER_BUFFERS]
    if peers:
        f = dict(peers[0].facts)
        lib = f.get("library", "NCCL")
        key = "HCCL_BUFFSIZE" if lib == "HCCL" else "NCCL_BUFFSIZE"
        fact = f.get(key)
        env = ""
        if fact:
            value, origin, line = fact
            where = f"log line {line}" if origin == "log" and line else origin
            env = f" ({key}={env_value_text(key, value)}, {where})"
        groups = _groups([c.group for c in peers])
        out.append(f"the {lib} peer buffers of the {groups} group{_s(len(peers))}{env}")
    if any(c.mechanism is Mechanism.SYMM_POOL for c in j.shared):
        out.append("the symmetric memory pool (grown on use)")
    # The expert-parallel all-to-all of a DeepEP launch is the DeepEP buffer itself.
    out.extend("DP-attention gather buffers" for x in j.also if x is Lazy.DP_ATTENTION)
    return out


def lands_label(j: cj.DeepEPJoin) -> str:
    """The measured table's reading: what the bucket holds, then where it is."""
    what = (
        f"{j.graph} capture ({'did not finish' if not j.finished else 'no bucket readings'})"
        if j.whole_capture or not j.finished
        else f"{j.graph}, largest bucket ({bucket_name(j.graph, j.bucket)})"
    )
    return f"{'lazy' if shared_names(j) else 'DeepEP'} + graph: {what}"


@comm_finding_text.register
def _(f: cj.DeepEPAttributed) -> str:
    j = f.join
    on = j.rank or "the GPU"
    others = shared_names(j)
    peers = [c for c in j.shared if c.mechanism is Mechanism.PEER_BUFFERS]
    lib = dict(peers[0].facts).get("library", "NCCL") if peers else None
    created = "DeepEP's buffer is created once per process, at the first dispatch"
    if lib is not None:
        created += f", and the {lib} peer buffers at the first collective"
    if not j.finished:
        held = f"the DeepEP buffer, {', '.join(others)}" if others else "the buffer"
        return (
            f"{created}: in the {j.graph} capture on {on}, the launch's first, which did not "
            f"finish (the verdict says why); what it took holds {held} and the capture's graphs "
            "together."
        )
    where = (
        f"the {j.graph} capture ({format_gib(j.bucket_bytes)} GiB in all; no per-bucket readings)"
        if j.whole_capture
        else f"the largest bucket ({bucket_name(j.graph, j.bucket)}) of the {j.graph} capture"
    )
    held = "" if j.whole_capture else f" ({format_gib(j.bucket_bytes)} GiB)"
    if others:
        # Several lazy cells in one drop: name them all; none of them gets the whole drop.
        head = (
            f"{created}: both land in {where} on {on}, the launch's first capture, and later "
            f"captures reuse them. Its drop{held} holds the DeepEP buffer, "
            f"{', '.join(others)} and the bucket's own graph together; the log cannot split them"
        )
    else:
        head = (
            f"{created}: it lands in {where} on {on}, the launch's first capture, and later "
            f"captures reuse it. Its drop{held} holds the buffer and the bucket's own graph "
            "together"
        )
    if j.deepep_bytes is None:
        return head + "."
    if j.exceeds:
        return (
            f"{head}; the formula's {format_gib(j.deepep_bytes)} GiB for the buffer is more than "
            "the drop, so the buffer was allocated earlier (warm-up or model init) or this DeepEP "
            "sizes it differently."
        )
    rest = "the graph's own memory" + (" and the other lazy cells" if others else "")
    return f"{head}; {format_gib(j.deepep_bytes)} GiB of it is the buffer by the formula, the rest {rest}."


@comm_finding_text.register
def _(f: cj.DeepEPNoReserve) -> str:
    if f.reserve_exists is False:
        return _no_reserve_yet(f)
    if f.explicit:
        where = f" (command line, line {f.line})" if f.line else ""
        head = f"--mem-fraction-static {f.mfs:g} was passed{where}, so"
    else:
        head = (
            f"The log shows no command line; if mem_fraction_static {f.mfs:g} was passed "
            "explicitly, then"
        )
    since = (
        ", in sglang 0.5.16 and later; an undated log may run an older one without it"
        if f.reserve_exists is None
        else ""
    )
    return (
        f"{head} SGLang's {rules.DEEPEP_A2A_RESERVE_MIB} MiB DeepEP reserve "
        f"(reserve_for_deepep_a2a_mb, applied only when SGLang derives mem_fraction_static{since}) "
        f"was not set aside: {_deepep_must_fit(f)}."
    )


def _deepep_must_fit(f: cj.DeepEPNoReserve) -> str:
    size = (
        f" ({format_gib(f.deepep_bytes)} GiB by the formula)" if f.deepep_bytes is not None else ""
    )
    room = (
        room_text(f.headroom)
        if f.headroom is not None and f.headroom.bytes is not None
        else "the 1 - mem_fraction_static headroom"
    )
    bucket = (
        f", beside the graphs (the first capture's largest bucket, which holds it, took "
        f"{format_gib(f.bucket_bytes)} GiB)"
        if f.bucket_bytes is not None
        else ""
    )
    return (
        f"the DeepEP buffer{size}, allocated lazily after KV sizing, has to fit in {room}{bucket}"
    )


def _no_reserve_yet(f: cj.DeepEPNoReserve) -> str:
    """An SGLang of the log's date has no DeepEP reserve: passing mfs or not changes nothing."""
    when = f.printed.isoformat() if f.printed is not None else "this date"
    return (
        f"SGLang up to this log's date ({when}) reserves nothing for DeepEP's lazily created buffer, whether "
        "mem_fraction_static is passed or derived (reserve_for_deepep_a2a_mb came with sglang "
        f"0.5.16, 2026-07-25): {_deepep_must_fit(f)}."
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
        f"{room_text(f.headroom)}: lower mem_fraction_static."
    )
