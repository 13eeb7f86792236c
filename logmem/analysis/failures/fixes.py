"""Fixes with their price: for each kind of failure, what to change and what it costs.

For memory failures the fixes are computed from printed readings with SGLang's own rules
(logmem.sglang.rules): lowering mem_fraction_static by d gives ``P x d`` back to everything
that is not KV; the smallest mfs with a pool is ``1 - A / P``; a KV token costs the pool's
bytes per token; a capture bucket costs the drop between two bar readings. Every figure is
a printed reading or one subtraction or division away from one, so a person can check it.
"""

from __future__ import annotations

import math
from dataclasses import replace

import regex

import logmem.analysis.failures.facts as fx
from logmem.analysis.capture_lever import cap_fix_flag, capture_lever
from logmem.analysis.failures.budget import (
    MFS_STEP,
    Budget,
    budget,
    ceil3,
    floor3,
    fmt_mfs,
    min_mfs_for_pool,
)
from logmem.analysis.failures.capture_rest import capture_rest
from logmem.analysis.failures.deepep_fix import dispatch_tokens_fix
from logmem.analysis.failures.fallback import native_fix, transformers_fallback
from logmem.analysis.failures.place import POST_CAPTURE, Place
from logmem.analysis.failures.records import (
    OutOfMemory,
)
from logmem.model.records import Graph, Launch, Rank
from logmem.sglang import rules
from logmem.units import GIB

Fixes = tuple[list[fx.Fix], list[fx.Note]]


def draft_sized(place: Place) -> bool:
    """Was the failing pool step the draft model's own? Only when the target's pools were done:
    newest SGLang loads both models first and sizes every pool from the target's readings."""
    phase = place.phase or ""
    if "draft" not in phase or phase.startswith("capture"):
        return False
    t = place.rank.target if place.rank is not None else None
    return t is not None and (t.pool_end is not None or bool(t.kv_pools))


def lower_mfs(
    b: Budget,
    need_bytes: int,
    purpose: fx.Purpose,
    library: str | None = None,
    rest: fx.CaptureRest | None = None,
) -> tuple[fx.Fix | None, fx.Blocker | None]:
    """Lower the flag to X so that P x (rule(mfs) - rule(X)) >= need_bytes, where rule() is
    SGLang's own scaling of the flag (Budget.scaling); price it in KV tokens. A capture's
    ``rest`` adds what its remaining buckets cost, when the readings price them."""
    if b.mfs is None or b.pre_load_bytes is None:
        return None, None
    if rest is not None and rest.rest_bytes:
        need_bytes += rest.rest_bytes
    p, s, r = b.pre_load_bytes, b.scaling, b.pool_ratio
    now = s.rule_mfs_for(b.mfs)
    # The rule gives up P x d of budget; the pools shrink by r times that when SGLang sized
    # them with a smaller cell than they allocate (r = 1 otherwise).
    x = floor3(s.flag_mfs_for(now - need_bytes / (p * r)))
    budget_freed = rules.mfs_step_bytes(p, now - s.rule_mfs_for(x))
    freed = round(budget_freed * r)
    bpt = b.bytes_per_token
    lowest = min_mfs_for_pool(b)
    blocker: fx.Blocker | None = None
    lost = None
    if bpt and r > 1.0 and b.sizing_cell:
        lost = budget_freed / b.sizing_cell  # SGLang counts tokens with its sizing cell
    elif bpt:
        lost = freed * b.kv_share / bpt
        if b.kv_tokens and lost >= b.kv_tokens:
            blocker = fx.NoKVTokensLeft(x)
    if x <= 0 or (lowest is not None and x < lowest):
        blocker = fx.BelowPoolFloor(x, lowest)
    effect = fx.LowerMfs(
        b.mfs,
        x,
        need_bytes,
        p,
        b.pre_load_rank,
        freed,
        purpose,
        library,
        MFS_STEP if purpose is fx.Purpose.ONE_STEP else None,
        bpt,
        lost,
        b.kv_share,
        b.kv_tokens,
        b.factor,
        b.cell_bytes,
        b.sizing_cell if r > 1.0 else None,
        rest,
    )
    return fx.Fix("--mem-fraction-static", fmt_mfs(x), effect), blocker


def unit(graph: str | None) -> str:
    return "num_tokens" if graph is not None and rules.graph_sized_in_tokens(graph) else "bs"


def cap_fix(
    launch: Launch, g: Graph, shortfall: int, oom_free: int | None, tried: int | None
) -> fx.Fix | None:
    """Cap the family's largest bucket at M so that what the capture no longer needs covers the shortfall.

    Buckets are captured largest first; each bar reading is the free memory before a bucket,
    so bucket i cost (reading i - reading i+1). Two models, chosen by the samples:
    * shared pool (the later buckets cost ~0): the peak is set by the largest bucket, cost ~
      rows, so capping at M saves per_row x (largest - M);
    * separate pools (later buckets cost as much): dropping the buckets above M returns
      their measured cost, first reading - reading before M.
    With one measured bucket we cannot tell and take the smaller M. When the first bucket
    itself failed, its need (reading - free at the OOM + tried) gives per_row."""
    samples = [x for x in g.samples if x.size is not None]
    if not samples or not samples[0].size:
        return None
    flag, u = rules.graph_cap_flag(g.name, launch.args), unit(g.name)
    b0, a0 = samples[0].size, samples[0].avail.bytes
    costs = [x.avail.bytes - y.avail.bytes for x, y in zip(samples, samples[1:])]
    second = None
    if costs and costs[0] > 0:
        per_row = costs[0] / b0
        second = samples[1].avail.bytes
    elif tried is not None and oom_free is not None:
        need = a0 - oom_free + tried  # taken before the failed allocation, plus it
        if need <= 0:
            return None
        per_row = need / b0
    else:
        return None
    shared_limit = b0 - shortfall / per_row
    shared: bool | None = None
    if len(costs) >= 2:
        shared = all(c <= 0.25 * costs[0] for c in costs[1:])
    additive = [x.size for x in samples[1:] if x.size and a0 - x.avail.bytes >= shortfall]
    additive_limit = float(additive[0]) if additive else None
    if shared is False:
        limit = additive_limit
    elif shared or additive_limit is None:
        limit = shared_limit
    else:
        limit = min(shared_limit, additive_limit)
    if limit is None or limit < 1:
        return None
    listed = sorted(set(g.sizes or ()) | {x.size for x in samples if x.size})
    fits = [x for x in listed if x <= limit and x < b0]
    cap = fits[-1] if fits else (int(limit) // 8 * 8 if limit >= 8 else int(limit))
    if cap < 1:
        return None
    # Which flag shrinks the list in this era: a passed --cuda-graph-bs may override the cap.
    lever = None if u == "num_tokens" else capture_lever(launch, g.name)
    flag, value = cap_fix_flag(lever, flag, cap, listed)
    if shared is False:
        at = next(x for x in samples if x.size == cap)
        dropped = tuple(x.size for x in samples if x.size and x.size > cap)
        drop = fx.CapDropBuckets(u, cap, dropped, a0, at.avail.bytes, b0, shortfall, lever)
        return fx.Fix(flag, value, drop)
    pools = (
        fx.Pools.SHARED
        if shared
        else fx.Pools.ASSUMED_SHARED
        if additive_limit is None
        else fx.Pools.UNDECIDED
    )
    effect = fx.CapPerRow(
        u,
        cap,
        b0,
        per_row,
        per_row * (b0 - cap),
        shortfall,
        pools,
        shared_limit,
        additive_limit if not shared else None,
        a0,
        second,
        None if second is not None else oom_free,
        None if second is not None else tried,
        lever,
    )
    return fx.Fix(flag, value, effect)


# --- out of memory ----------------------------------------------------------------------------


def oom_fixes(launch: Launch, r: OutOfMemory, place: Place) -> Fixes:
    phase = place.phase or ""
    shortfall = r.shortfall_bytes
    fixes: list[fx.Fix] = []
    notes: list[fx.Note] = []
    if shortfall is not None:
        notes.append(fx.Shortfall(r.tried_bytes, r.free_bytes, shortfall))
    outside = _outside_pytorch(r, shortfall)
    if outside is not None:
        notes.append(outside)
        fixes.append(
            fx.Fix(
                "nvidia-smi",
                "--query-compute-apps=pid,used_memory --format=csv",
                fx.FindOutside(
                    outside.outside_bytes,
                    r.gpu,
                    outside.used_bytes - outside.this_process_bytes
                    if outside.this_process_bytes is not None
                    else None,
                ),
            )
        )
    elif r.capacity_bytes is not None and r.allocated_bytes is not None:
        notes.append(fx.PyTorchHeld(r.allocated_bytes, r.capacity_bytes))
    if phase in ("before distributed init", "distributed init", "after distributed init"):
        notes.append(fx.GpuBusyEarly())
    elif phase.endswith("weights"):
        notes.append(fx.WeightsBeforePool())
        # With memory outside PyTorch covering the shortfall, the free readings say nothing
        # about what the weights took: no floor from them.
        elsewhere = outside is not None and outside.fits
        floor = None if elsewhere else _weights_floor(launch, place.rank, r)
        fallback = transformers_fallback(launch)
        if floor is not None:
            notes.append(replace(floor, fallback=fallback))
        whole = floor is not None and floor.case is fx.FloorCase.WHOLE_GPU
        if fallback:
            beyond = floor.beyond_capacity if floor is not None else None
            notes.append(fx.TransformersFallback(whole, beyond))
            fixes.append(native_fix(launch))
        more, note = _fewer_weights_fixes(launch, shortfall)
        if note is not None:
            notes.append(note)
        # The model fits when what is outside PyTorch is freed, or when the fallback that
        # does not shard is replaced: more GPUs, 8-bit weights or offload are not the fix,
        # unless the ranks that did load show no KV pool would fit either.
        no_pool = isinstance(note, fx.LoadedBudget) and note.rest_bytes <= 0
        if no_pool or not (elsewhere or (whole and fallback)):
            fixes.extend(more)
    elif r.tried_bytes is not None and r.capacity_bytes and r.tried_bytes > r.capacity_bytes:
        # One allocation larger than the whole GPU: no memory setting makes room for it.
        notes.append(fx.LargerThanGpu(r.tried_bytes, r.capacity_bytes))
    else:
        if phase == POST_CAPTURE:
            notes.append(post_capture_resize(launch, place))
        more, why = _budget_fixes(launch, r, place, shortfall)
        fixes.extend(more)
        notes.extend(why)
    # PyTorch's own hint, last: it only helps when the free blocks are the caching allocator's.
    frag = r.reserved_unallocated_bytes
    if frag is not None and shortfall is not None and frag >= shortfall > 0:
        fixes.append(
            fx.Fix(
                "PYTORCH_CUDA_ALLOC_CONF",
                "expandable_segments:True",
                fx.ExpandableSegments(frag, shortfall),
            )
        )
    return fixes, notes


def post_capture_resize(launch: Launch, place: Place) -> fx.PostCaptureResize:
    """The post-capture sizing's figures on the failing rank: its free memory after the graphs
    (its last capture's end) and the headroom SGLang kept (rules.outside_budget_bytes)."""
    rank = place.rank
    end = (
        next(
            (g.end for g in reversed(rank.graphs) if g.end is not None and g.end.avail is not None),
            None,
        )
        if rank is not None
        else None
    )
    b = budget(launch)
    headroom = (
        rules.outside_budget_bytes(b.pre_load_bytes, b.scaling.rule_mfs_for(b.mfs))
        if b.pre_load_bytes is not None and b.mfs is not None
        else None
    )
    return fx.PostCaptureResize(
        rank.label if rank is not None else "",
        end.avail.bytes if end is not None and end.avail is not None else None,
        end.source.line_no if end is not None else None,
        headroom,
        b.pre_load_bytes,
        b.mfs,
    )


def _budget_fixes(launch: Launch, r: OutOfMemory, place: Place, need: int | None) -> Fixes:
    """OOM after the weights: give memory back from the KV budget, or shrink what asked for it."""
    phase = place.phase or ""
    fixes: list[fx.Fix] = []
    notes: list[fx.Note] = []
    b = budget(launch, draft=draft_sized(place))
    if need is None:
        # "CUDA error: out of memory" prints no figures: price one step instead.
        if b.pre_load_bytes is not None and b.mfs is not None:
            step = rules.mfs_step_bytes(b.pre_load_bytes, b.scaling.rule_mfs_for(MFS_STEP))
            one, _ = lower_mfs(b, step, fx.Purpose.ONE_STEP)
            if one is not None:
                fixes.append(one)
        return fixes, notes
    purpose = fx.Purpose.CAPTURE if phase.startswith("capture") else fx.Purpose.ACTIVATIONS
    if r.comm_library is not None:
        purpose = fx.Purpose.COMM
    # A capture still had its smaller buckets to take after the failed one.
    rest = (
        capture_rest(place.bar_graph)
        if purpose is fx.Purpose.CAPTURE and place.bar_graph is not None
        else None
    )
    mfs_fix, blocker = lower_mfs(b, need, purpose, r.comm_library, rest)
    if mfs_fix is not None and blocker is None:
        fixes.append(mfs_fix)
    # A communication buffer does not shrink with the graph's batch sizes: no cap for it.
    if phase.startswith("capture") and place.bar_graph is not None and r.comm_library is None:
        cap = cap_fix(launch, place.bar_graph, need, r.free_bytes, r.tried_bytes)
        if cap is not None:
            fixes.append(cap)
    chunk = launch.args.get("chunked_prefill_size")
    if phase == "serving" and isinstance(chunk, int) and chunk > 2048:
        half = chunk // 2
        saved = rules.activation_reserve_bytes(chunk) - rules.activation_reserve_bytes(half)
        fixes.append(
            fx.Fix("--chunked-prefill-size", str(half), fx.HalveChunk(chunk, half, saved, need))
        )
    deepep_on = str(launch.args.get("moe_a2a_backend", "")).lower() == "deepep"
    if r.comm_library is not None or (deepep_on and phase.startswith("capture")):
        # DeepEP allocates its low-latency buffer at the first dispatch, which is usually
        # inside the first capture bucket: the OOM may be that buffer, not the graph.
        if r.comm_library is None:
            notes.append(fx.DeepEPLazy())
        fixes.append(dispatch_tokens_fix(launch, r))
        heap = _library_heap(r, place)
        if heap is not None:
            notes.append(heap)
            if mfs_fix is not None and mfs_fix in fixes:
                # The device had room: the library's own heap is what ran out, so the request's
                # own size (the dispatch tokens) comes first and mfs may not help.
                fixes.remove(mfs_fix)
                fixes.append(mfs_fix)
    if mfs_fix is not None and blocker is not None:
        notes.append(fx.MfsCannotFix(blocker))
    if b.mfs is None:
        notes.append(fx.NoServerArgs())
        if b.pre_load_bytes:
            # The value in use is unknown, the change is not: P x rule(d) must cover the need.
            delta = ceil3(b.scaling.flag_mfs_for(need / b.pre_load_bytes))
            effect = fx.LowerMfsRelative(need, b.pre_load_bytes, b.pre_load_rank, delta, b.factor)
            change = fx.LowerByAtLeast(delta)
            fixes.insert(0, fx.Fix("--mem-fraction-static", None, effect, change))
    return fixes, notes


def _library_heap(r: OutOfMemory, place: Place) -> fx.LibraryHeapLimit | None:
    """The note when a library's failed request is smaller than SGLang's last reading before it
    (the bar of the bucket it failed in): the device had the room, the library's heap did not."""
    g = place.bar_graph
    if r.comm_library is None or r.tried_bytes is None or g is None or not g.samples:
        return None
    last = g.samples[-1]
    if last.avail.bytes <= r.tried_bytes:
        return None
    return fx.LibraryHeapLimit(
        r.comm_library, last.avail.bytes, last.source.line_no, r.tried_bytes, r.free_bytes
    )


# An OOM with this much of the GPU's used memory outside PyTorch points at it, not at SGLang's
# sizes: at least 2 GiB and a tenth of the GPU (a CUDA context and NCCL take ~0.5-3 GiB).
_OUTSIDE_NOTABLE_BYTES = 2 * GIB
_OUTSIDE_NOTABLE_SHARE = 0.10


def _outside_pytorch(r: OutOfMemory, shortfall: int | None) -> fx.OutsidePyTorch | None:
    """PyTorch's own figures: used (capacity - free) minus what PyTorch holds (allocated +
    reserved but unallocated) is outside PyTorch; a note when that is notable."""
    cap, free, held = r.capacity_bytes, r.free_bytes, r.allocated_bytes
    if cap is None or free is None or held is None or r.reserved_unallocated_bytes is None:
        return None
    held += r.reserved_unallocated_bytes
    used = cap - free
    outside = used - held
    if outside < max(_OUTSIDE_NOTABLE_BYTES, _OUTSIDE_NOTABLE_SHARE * cap):
        return None
    split = r.memory_split
    this = split.this_process.bytes if split is not None and split.this_process else None
    fits = shortfall is not None and outside >= shortfall
    return fx.OutsidePyTorch(cap, used, held, outside, this, fits, r.device)


def _weights_floor(launch: Launch, rank: Rank | None, r: OutOfMemory) -> fx.WeightsFloor | None:
    """What the failing rank's weights took so far plus the failed request: a floor for its share."""
    wb = rules.pre_load_reading(rank) if rank is not None else None
    if rank is None or wb is None or r.free_bytes is None or r.tried_bytes is None:
        return None
    begin = wb.avail.bytes
    at_least = begin - r.free_bytes + r.tried_bytes
    args = (rank.label, begin, r.free_bytes, r.tried_bytes, at_least)
    if at_least <= begin:
        return fx.WeightsFloor(*args, fx.FloorCase.FITS, capacity_bytes=r.capacity_bytes)
    done = [
        m.weights_end.usage.bytes
        for x in launch.ranks
        if (m := x.target) and m.weights_end and m.weights_end.usage
    ]
    if done:
        # Others finished below that: the load peaks above the final size (conversion temporaries).
        return fx.WeightsFloor(
            *args, fx.FloorCase.PEAKS, max(done), capacity_bytes=r.capacity_bytes
        )
    return fx.WeightsFloor(*args, fx.FloorCase.WHOLE_GPU, capacity_bytes=r.capacity_bytes)


_QUANT_TAGS = (
    "fp8",
    "fp4",
    "nvfp4",
    "mxfp4",
    "awq",
    "gptq",
    "int4",
    "int8",
    "w4a8",
    "w8a8",
    "gguf",
)


def quantized(launch: Launch) -> str | None:
    """The weight quantisation already in use (server_args or Load weight end), if any."""
    q = launch.args.get("quantization")
    if isinstance(q, str) and q:
        return q
    for r in launch.ranks:
        we = r.target.weights_end if r.target else None
        if we is not None:
            for k, v in we.details:
                if k == "quant" and v and v != "None":
                    return v
    # A checkpoint quantised by its publisher says so in its name (GLM-5-FP8, ...-AWQ, ...-INT4),
    # and a crash during load leaves no Load weight end to tell.
    path = launch.args.get("model_path")
    if isinstance(path, str):
        for tag in _QUANT_TAGS:
            if regex.search(rf"(?i)(?<![a-z0-9]){tag}(?![a-z0-9])", path.rsplit("/", 1)[-1]):
                return tag
    return None


def _fewer_weights_fixes(launch: Launch, need: int | None) -> tuple[list[fx.Fix], fx.Note | None]:
    """OOM while loading: fewer weights per rank. Ranks that did finish show whether the KV
    pool would have fitted at all (rules.kv_budget_bytes)."""
    fixes: list[fx.Fix] = []
    b = budget(launch)
    w = b.weights_bytes
    rest = None
    note: fx.Note | None = None
    if b.rest_bytes is not None and b.mfs is not None and w is not None:
        rest = b.rest_bytes
        assert b.post_load_bytes is not None and b.pre_load_bytes is not None
        note = fx.LoadedBudget(w, b.post_load_bytes, b.pre_load_bytes, b.mfs, rest, b.factor)
    if b.tp_size is not None:
        fixes.append(
            fx.Fix("--tp-size", str(b.tp_size * 2), fx.DoubleTP(b.tp_size, b.mfs, rest, w))
        )
    if quantized(launch) is None:
        fixes.append(fx.Fix("--quantization", "fp8", fx.QuantizeFP8()))
    if need is not None:
        short = max(need, -rest if rest is not None and rest < 0 else 0)
        n = max(1, math.ceil(short / GIB))
        lack = -rest if rest is not None and rest < 0 and -rest > need else None
        fixes.append(fx.Fix("--cpu-offload-gb", str(n), fx.CpuOffload(n, need, lack)))
    return fixes, note
