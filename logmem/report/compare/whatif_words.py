"""The sentences of ``logmem whatif``'s own facts (logmem.compare.whatif_facts): pools, graphs
that were off, how a new max bs was priced, and why the window's top is unknown."""

from __future__ import annotations

from logmem.compare import whatif_facts as wf
from logmem.compare import whatif_sizes as ws
from logmem.report.compare import whatif_pool_words as whatif_pool_words  # registers its notes
from logmem.report.compare.notes import note_text
from logmem.report.lever_words import why_unknown
from logmem.report.uninitialized import listed
from logmem.sglang.capture_align import Alignment
from logmem.sglang.decode_max_bs import CLAMP_RELEASES
from logmem.sglang.deepep_v2_budget import V2_ENV, V2_RELEASES
from logmem.units import format_gib as _gs


def flag(key: str) -> str:
    """The command-line flag of a server_args key."""
    return "--" + key.replace("_", "-")


def _sizes(sizes: tuple[int, ...]) -> str:
    return ", ".join(str(s) for s in sizes)


def pool_label(p: wf.PoolSize) -> str:
    """The table row of one pool."""
    if not p.in_budget:
        return f"{p.label} pool (outside the budget), GiB"
    return f"{p.label} pool, GiB"


@note_text.register
def _(n: wf.GraphsDisabled) -> str:
    text = (
        f"CUDA graphs are off: the launch ran with {flag(n.flag)} ({n.flag}=True in "
        "server_args), so it captured none and the graph rows show '-'; headroom is free "
        "memory at its last reading."
    )
    if n.requested_max_bs is not None:
        text += (
            f" --cuda-graph-max-bs {n.requested_max_bs} does not apply: no graph is captured at "
            f"any max bs while {flag(n.flag)} is set."
        )
    return text


@note_text.register
def _(n: wf.PostCaptureSized) -> str:
    # sglang 0.5.17-0.5.23 kv_pool_runtime.py compute_post_capture_kv_resize: budget = free after
    # the graphs - headroom + the pages backed; the headroom is P x (1 - mfs), or the pre-capture
    # activation reserve when the decode graph's max bs is below max_running_requests.
    text = (
        f"Post-capture KV sizing (line {n.line}): SGLang sized the KV pool after the CUDA graphs "
        "from the free memory they left, keeping P x (1 - mem_fraction_static) free. A change of "
        "mem_fraction_static moves the pool by P x the change, as the rule does; a change of "
        "graph memory moves the KV pool by the same GiB and leaves the headroom as it is"
    )
    if not n.graphs_asked:
        return text + "."
    if not n.modelled:
        return text + (
            "; at this max bs SGLang keeps its pre-capture activation reserve, whose floor depends "
            "on the GPU's capacity, which the log does not print: the prediction holds the "
            "headroom SGLang kept and is not that sizing (not modelled)."
        )
    text += ", and the predictions do so (the pool gives up what the graphs take)"
    if n.gap is not None:
        bs, reqs, reserve, below = n.gap
        kept = f" (P x (1 - mfs) is {_gs(n.headroom_bytes)} GiB)" if n.headroom_bytes else ""
        text += (
            f". At max bs {bs}, below max_running_requests {reqs}, SGLang warns and keeps its "
            f"pre-capture activation reserve of {_gs(reserve)} GiB free instead{kept}: the pool "
            "shrinks by the difference and the headroom grows by it"
            if below
            else f". At max bs {bs}, no longer below max_running_requests {reqs}, SGLang keeps "
            f"only P x (1 - mfs){kept} instead of its {_gs(reserve)} GiB activation reserve: the "
            "pool grows by the difference"
        )
    return text + "."


@note_text.register
def _(n: wf.DraftFollows) -> str:
    if n.follows:
        return (
            f"The draft model's KV pool ({_gs(n.bytes)} GiB, {n.tokens:,} tokens) is sized after "
            "the target's, outside the KV budget, for as many tokens as the target's pool: it "
            "moves with the predicted tokens by its own cell size (not by the target's budget "
            "rule) and comes out of the headroom. The draft's graphs are held as measured."
        )
    return (
        f"The draft model's KV pool ({_gs(n.bytes)} GiB, {n.tokens:,} tokens, not the target's "
        "count) is sized outside the KV budget and held as measured, as are its graphs."
    )


@note_text.register
def _(n: wf.BucketSum) -> str:
    gone = f"bs {n.first_size}'s own graph (taken to cost what the next bucket did)"
    if len(n.dropped) > 1:
        gone += f" and the buckets bs {_sizes(n.dropped[1:])}"
    kept = f"the buckets bs {_sizes(n.kept)} keep" if n.kept else "no other bucket keeps"
    stand = (
        f" bs {n.new_bs} was not captured: it is taken to cost what bs {n.stand_in} did."
        if n.stand_in is not None
        else ""
    )
    extra = (
        f"bs {n.first_size}'s {_gs(n.first_bytes)} GiB less the next bucket's "
        f"{_gs(n.next_bytes)} GiB: what the first capture allocates lazily, and the graph memory "
        "pool, which the largest batch sizes, land on whichever bucket is captured first"
    )
    if n.shrunk:
        first = f"the first-captured bucket's extra allocation ({extra}) moves by the slope (below)"
        change = "Change from the buckets"
        bound = ""
    else:
        first = f"the first-captured bucket's extra allocation stays whole ({extra})"
        change = "Change"
        bound = (
            " Its pool part shrinks with the largest batch, so this is at most what max bs "
            f"{n.new_bs} takes (graphs an upper bound, headroom a lower one); --slope-from A B "
            "(two launches that differ only in max bs) or --mib-per-row prices the shrink."
        )
    return (
        f"Graph memory at max bs {n.new_bs} is from the {n.graph} graph's measured per-bucket "
        f"readings (progress bar avail_mem, {line_range(n.lines)}): {gone} go; {first}, and "
        f"{kept} their measured cost.{stand} {change}: {_gs(n.change_bytes, signed=True)} GiB "
        f"(each bucket is a difference of two readings printed to 0.01 GB).{bound}"
    )


def line_range(lines: tuple[int, int]) -> str:
    """'line 12' or 'lines 12-40'."""
    return f"line {lines[0]}" if lines[0] == lines[1] else f"lines {lines[0]}-{lines[1]}"


def _few(sizes: tuple[int, ...]) -> str:
    return _sizes(sizes) if len(sizes) <= 6 else f"{_sizes(sizes[:3])}, ..., {sizes[-1]}"


@note_text.register
def _(n: ws.FirstBucketShrinks) -> str:
    rows = f"{n.mib_per_row:.3f} MiB x {n.rows:,} rows"
    pool = (
        f"by slope x the change in rows ({rows}), more than the whole extra: all of it, "
        f"{_gs(n.pool_bytes)} GiB, is taken off (the slope does not hold that far down)"
        if n.capped
        else f"by slope x the change in rows, {rows} = {_gs(n.pool_bytes)} GiB"
    )
    static = (
        f"; static buffers by their slope, {n.static_mib_per_row:.3f} MiB x {n.rows:,} rows = "
        f"{_gs(n.static_bytes)} GiB"
        if n.static_mib_per_row is not None
        else "; static buffers stay as measured (no static slope)"
    )
    return (
        f"At max bs {n.new_bs} the first-captured bucket's extra allocation ({_gs(n.extra_bytes)} "
        f"GiB at bs {n.first_size}) shrinks with the graph memory pool the largest batch sizes, "
        f"{pool}{static}; the rest of it (lazy allocations) stays: "
        f"{_gs(n.bytes, signed=True)} GiB beyond the buckets' change."
    )


@note_text.register
def _(n: ws.AddedBuckets) -> str:
    count = f"{len(n.sizes)} bucket{'s' if len(n.sizes) != 1 else ''}"
    moved = (
        f"; the launch's own top, bs {n.moved}, is captured after the new one too, {n.count} in all"
        if n.moved is not None
        else ""
    )
    text = (
        f"The capture list at the new max bs adds {count} below its top"
        f"{f' (bs {_few(n.sizes)})' if n.sizes else ''}{moved}, each captured after the largest "
        "and costing its own graph"
    )
    if n.per_bucket_bytes is None or n.lines is None:
        return text + (
            ": the log has no per-bucket readings to price them, so graph memory leaves them "
            "out and is too low by their cost."
        )
    return text + (
        f": priced at the average of this launch's {n.measured} later buckets of the {n.graph} "
        f"graph ({line_range(n.lines)}), {n.per_bucket_bytes / 2**30:.3f} GiB each, "
        f"{_gs(n.bytes)} GiB in all, +- {n.error_bytes / 2**30:.3f} GiB (their sum is one "
        "difference of two readings); larger batches' graphs may cost somewhat more."
    )


@note_text.register
def _(n: wf.SlopeAbove) -> str:
    return (
        f"Max bs {n.new_bs} is above the largest measured bucket (bs {n.largest_bs}): graph "
        "memory is extrapolated with a slope, not read from the buckets."
    )


@note_text.register
def _(n: wf.NoBucketReadings) -> str:
    return (
        f"The log has no usable per-bucket readings for the {n.graph} graph (progress bar avail_mem at "
        f"every bucket), so graph memory at max bs {n.new_bs} uses a slope, not the measured "
        "buckets."
    )


def top_unknown_text(t: wf.TopUnknown) -> str:
    """Why the window's top is '?': what the log lacks to compute it."""
    released = (
        f" ({_gs(-t.released_bytes)} GiB, line {t.line}: memory was released during it)"
        if t.released_bytes is not None and t.line is not None
        else ""
    )
    missing = "the per-bucket readings (progress bar avail_mem) that would show it"
    if not t.has_begin:
        missing = "the capture-begin reading and " + missing
    elif t.has_bars:
        missing = "a reading at the point where the release happened"
    text = (
        f"the top is at least {t.at_least:.3f} (the launch ran there) but cannot be computed "
        f"above it: the {t.graph} graph capture's mem usage is negative{released}, so its own cost "
        f"and the lowest free memory during it are unknown, and the log lacks {missing}."
    )
    if t.at_most is not None:
        # From the readings around the capture; inside it free memory is not known (the release
        # masks it), so the headroom there is at most this and may run out lower too.
        text += (
            f" Above {t.at_most:.3f} the headroom would not stay even at the log's readings; free "
            "memory inside the capture may have gone lower, so below it the headroom is an upper "
            "bound."
        )
    return text


# --- whatif's own notes of logmem.compare.notes -------------------------------------------


@note_text.register
def _(n: wf.MaxBsWasClamped) -> str:
    may = "" if n.certain else ", if the build has it (releases of this month may not)"
    return (
        f"The launch's decode max bs {n.max_bs:,} is its --max-running-requests: SGLang "
        f"{CLAMP_RELEASES} lowers a max bs left at its GPU default to it{may}. A max bs passed "
        "explicitly is not lowered; the decode runner still clamps the list to the request pool."
    )


@note_text.register
def _(n: wf.ListOverridesCap) -> str:
    lv, m = n.lever, n.requested
    if lv.use_list:
        return (
            f"This launch passed {lv.list_flag}, which sets the largest size: {lv.cap_flag} {m} "
            f"with the same list would change nothing (SGLang ignores {lv.cap_flag} then). The "
            f"prediction is for a {lv.list_flag} list whose largest size is {m}."
        )
    return (
        f"The prediction is for {lv.cap_flag} {m} on SGLang's own list; had the launch passed "
        f"its own {lv.list_flag}, that list would have to change instead: {why_unknown(lv)}."
    )


@note_text.register
def _(n: wf.DeepEPv2Refuses) -> str:
    r = n.refusal
    cap = (
        f"{r.capacity:,}, as the log's environment sets it"
        if r.capacity_given
        else f"{r.capacity:,}: its default; the log does not show the variable set"
    )
    tokens = (
        f"{r.requests:,} requests x {r.tokens_per_request} draft tokens = {r.tokens:,} tokens"
        if r.tokens_per_request > 1
        else f"{r.tokens:,} tokens (one per request)"
    )
    return (
        f"--cuda-graph-max-bs {n.requested:,} with --moe-a2a-backend deepep_v2: SGLang "
        f"{V2_RELEASES} refuses to start (validate_deepep_v2_dispatch_token_budget): the largest "
        f"decode graph dispatches {tokens} per rank, "
        f"above {V2_ENV} ({cap}). Raise it to {r.tokens:,} or more, or keep max bs at "
        f"{r.max_bs_that_fits:,} or less; the figures here assume the start-up went on."
    )


def _list_top(t: wf.ListTopAt) -> str:
    """Where the list of this era tops out without max bs: 'bs 160', or the GPU's two tops."""
    tops = t.top.list_tops
    if len(tops) == 1:
        return f"bs {tops[0]}"
    return f"bs {tops[0]}, or {tops[-1]} on GPUs over 90-96 GiB"


@note_text.register
def _(n: wf.ListTopAt) -> str:
    t = n.top
    at = f"--cuda-graph-max-bs {n.requested}: "
    pool = (
        f"the request pool (max_running_requests {t.pool:,}"
        + (f", line {n.pool_line})" if n.pool_line is not None else " at the predicted setting)")
        if t.pool is not None
        else None
    )
    if len(t.sizes) > 1:
        why = (
            "the list's top depends on the GPU's capacity (SGLang of this date adds bs 168-256 "
            "only on GPUs over 90-96 GiB) and the log prints no device total"
            if t.why == "gpu"
            else "the log's date does not tell which of SGLang's list rules applies (the list was "
            "first extended up to max bs in May-June 2025 and generated from server_args from "
            "Oct 2025)"
        )
        if len(t.filters) > 1 and t.why != "gpu":
            why += f", nor {_filter_difference(t.filters)}"
        sizes = ", ".join(f"{x:,}" for x in t.sizes[:-1]) + f" or {t.sizes[-1]:,}"
        return (
            f"{at}the largest captured batch is {sizes}: {why}. The figures are for "
            f"{t.sizes[-1]:,}, the larger (graph memory an upper bound, headroom a lower bound); "
            "a verdict the sizes would not all share is given as unknown."
        )
    size = t.sizes[0]
    binds = pool is not None and t.pool is not None and size == t.pool
    padded = t.filters[0].pool(t.pool) if len(t.filters) == 1 and t.pool is not None else None
    if pool is not None and padded is not None and padded != t.pool and size == padded:
        binds = True  # 0.5.10 on: the pool is padded up to the alignment
        pool += f", which the runner pads up to a multiple of {t.filters[0].base} ({padded:,}),"
    largest = "" if binds else f": the largest up to {n.requested:,} is {size:,}"
    if t.generated:
        how = (
            f"{t.rule} is generated up to max bs, and {_filter_words(t.filters)} of it{largest}"
            if t.filters
            else f"{t.rule} is generated up to max bs and its largest entry up to "
            f"{n.requested:,} is {size:,}"
        )
    elif t.extended:
        how = (
            f"{t.rule} (top {_list_top(n)}) is cut at max bs, {_filter_words(t.filters)} of it, "
            f"and SGLang of this date extends it in steps of 16 up to max bs{largest}"
            if t.filters
            else f"{t.rule} (top {_list_top(n)}) is extended in steps of 16 up to max bs by SGLang "
            f"of this date, so its largest entry up to {n.requested:,} is {size:,}"
        )
    else:
        gpu = (
            " (bs 168-256 come only on ROCm builds or, from late April 2025, on larger GPUs)"
            if t.gpu_part and t.list_tops == (160,)
            else ""
        )
        how = (
            f"{t.rule} tops at {_list_top(n)}{gpu}, and SGLang of this date cuts the list at max "
            "bs and at the request pool without extending it up to max bs"
        )
        if t.filters:
            how += f"; {_filter_words(t.filters)}"
    tail = f"; {pool} caps it there." if binds else f"; {pool} does not bind." if pool else "."
    return f"{at}the largest captured batch becomes {size:,}: {how}{tail}"


def _form_words(f: Alignment) -> str:
    if not f.filters:
        return "every size (a release without the filter)"
    if f.min_two and f.step == 1:
        return "bs 2 and up (two-batch overlap, SGLang 0.4.7 - 0.4.8)"
    why = " x ".join(name if k == 2 and "overlap" in name else f"{name} {k}" for name, k in f.parts)
    per = f"; bs x {f.per_token} draft tokens a multiple of {f.base}" if f.per_token > 1 else ""
    return f"the multiples of {f.step} ({why}{per})"


def _filter_difference(forms: tuple[Alignment, ...]) -> str:
    """What the releases' forms of the runner's filter differ in, for a top the date leaves open."""
    if len({(f.step, f.min_two) for f in forms}) == 1 and len({f.pads_pool for f in forms}) > 1:
        return (
            f"whether the decode runner pads the request pool up to a multiple of {forms[0].base} "
            "before clamping to it (sglang 0.5.10 on)"
        )
    return "what the decode runner keeps: " + _filter_words(forms).removeprefix(
        "SGLang's decode runner "
    )


def _filter_words(forms: tuple[Alignment, ...]) -> str:
    """What SGLang's decode runner keeps of the list (logmem.sglang.capture_align)."""
    words = list(dict.fromkeys(_form_words(f) for f in forms))
    if len(words) == 1:
        return f"SGLang's decode runner keeps only {words[0]}"
    return "SGLang's decode runner keeps " + " or ".join(words) + " (the release decides)"


@note_text.register
def _(n: wf.WeightsOfABrokenLoad) -> str:
    f = n.found
    of = "the draft model's weights" if f.role == "draft" else "weights"
    size = (
        f" ({_gs(f.usage_bytes)} GiB per rank on {f.rank or 'the GPU'}, line {f.weights_line})"
        if f.usage_bytes is not None and f.weights_line is not None
        else ""
    )
    return (
        f"{listed(f)}. The server ran with them uninitialised, so the {of} held as measured here"
        f"{size} are those of a broken load, not a working model's: a load that fills them may "
        "take other memory, and the KV budget, the headroom and the window, which rest on the "
        "weights, would move with it."
    )


@note_text.register
def _(n: wf.LoggedMfsDisagrees) -> str:
    return (
        f"--logged-mem-fraction-static {n.given:g} does not give back the logged KV pool: "
        f"SGLang's rule on this log's readings gives back about {n.backsolved:.3f}. The value "
        "passed is the first suspect (the note below, on SGLang's rule, assumes it is right); "
        "if the launch ran with the back-solved value, pass that instead."
    )


@note_text.register
def _(n: wf.NoKVAt) -> str:
    fix = (
        f": raise mem_fraction_static to {n.lo:.3f} or more for any KV pool"
        if n.lo is not None
        else ": no mem_fraction_static gives a KV pool on this machine"
    )
    return (
        f"At mem_fraction_static {n.mfs:.3f} SGLang's KV budget is {_gs(n.rest_bytes)} GiB, no "
        "KV pool: start-up would stop sizing the KV cache (SGLang's 'Not enough memory', from "
        "0.5.14 'Loaded weights leave no GPU memory for the KV cache'), "
        f"so the graph and headroom figures of that column never happen{fix}."
    )
