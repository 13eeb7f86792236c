"""The fixes in words: what each fix buys and costs, with the arithmetic the failures stage did."""

from __future__ import annotations

import math
from collections.abc import Sequence

import logmem.analysis.failures.facts as fx
from logmem.analysis.capture_lever import CaptureLever
from logmem.analysis.failures.budget import fmt_mfs
from logmem.parse.lazy import lazy
from logmem.report import code_fix_words as code_fix_words  # registers its effects' words
from logmem.report.capture_rest_words import rest_text
from logmem.report.deepep_fix_words import dispatch_half_text, dispatch_ratio_text
from logmem.report.fix_base import effect_text as effect_text
from logmem.report.lever_words import alternative
from logmem.sglang import rules
from logmem.units import GIB, MIB


def gib_text(n_bytes: float | None) -> str:
    """Bytes as GiB with two decimals ("?" when unknown), as the verdict prints them."""
    return "?" if n_bytes is None else f"{n_bytes / GIB:.2f}"


_g = gib_text


def tokens_text(n: float) -> str:
    return f"{n:,.0f}"


def ranks_who(ranks: Sequence[str]) -> str:
    """The occupied ranks of an imbalance, or what to call them when the log does not tell."""
    return ", ".join(ranks) if ranks else "the rank that did not raise it"


def sentence(text: str) -> str:
    """A phrase as a sentence: capital first letter, a full stop at the end."""
    text = text.strip()
    if not text:
        return text
    text = text[0].upper() + text[1:]
    return text if text.endswith(".") else text + "."


_PURPOSE = {
    fx.Purpose.CAPTURE: "for the capture",
    fx.Purpose.ACTIVATIONS: "for activations and buffers",
}


@effect_text.register
def _(e: fx.LowerMfs) -> str:
    why = _PURPOSE.get(e.purpose, "")
    if e.purpose is fx.Purpose.COMM:
        why = f"for the {e.library} buffer"
    elif e.purpose is fx.Purpose.ONE_STEP:
        why = f"(no figures in the error: this is one {e.step:g} step)"
    on = f", on {e.pre_load_rank}" if e.pre_load_rank else ""
    where = f"P = {_g(e.pre_load_bytes)} GiB, the smallest Load weight begin avail{on}"
    r = e.pool_ratio
    delta = e.need_bytes / (e.pre_load_bytes * e.factor * r)
    p_term = _scaled_p(e.pre_load_bytes, e.factor)
    ratio = ""
    if r > 1.0 and e.sizing_cell and e.bytes_per_token:
        p_term = f"({p_term} x {r:.3f})"
        ratio = (
            f"; {r:.3f} = the {e.bytes_per_token:,.0f} bytes per token the pools allocate over "
            f"the {e.sizing_cell:,.0f} SGLang sized them with, so each GiB of budget the rule "
            f"gives up shrinks the pools by {r:.3f} GiB"
        )
    text = (
        f"lowers mem_fraction_static from {fmt_mfs(e.mfs)} by at least {_g(e.need_bytes)} / "
        f"{p_term} = {delta:.4f} ({where}{_scaled_why(e.factor)}{ratio}), "
        f"so {_g(e.freed_bytes)} GiB more stays outside the KV pool {why}"
    )
    if r > 1.0 and e.sizing_cell and e.lost_tokens is not None:
        pct = (
            f", {e.lost_tokens / e.kv_tokens:.1%} of {tokens_text(e.kv_tokens)}"
            if e.kv_tokens
            else ""
        )
        return text + (
            f"; costs about {tokens_text(math.ceil(e.lost_tokens))} KV tokens{pct} (SGLang "
            f"counts them at its {e.sizing_cell:,.0f}-byte sizing cell){rest_text(e)}"
        )
    if e.bytes_per_token and e.lost_tokens is not None:
        share = f" (KV's {e.kv_share:.0%} share of it)" if e.kv_share < 1 else ""
        pct = (
            f", {e.lost_tokens / e.kv_tokens:.1%} of {tokens_text(e.kv_tokens)}"
            if e.kv_tokens
            else ""
        )
        others = ""
        if e.cell_bytes and e.bytes_per_token > e.cell_bytes + 0.5:
            others = (
                f" of the budget ({e.cell_bytes:,.0f} of KV cell plus its share of the other pools)"
            )
        text += (
            f"; costs about {tokens_text(math.ceil(e.lost_tokens))} KV tokens{share}{pct} at "
            f"{e.bytes_per_token:,.0f} bytes per token{others}"
        )
    return text + rest_text(e)


def _cap_cost(cap: int, lever: CaptureLever | None = None) -> str:
    cost = f"costs: batches above {cap} run without a graph (slower), KV is unchanged"
    if lever is None or lever.cap_works:
        return cost
    if lever.use_list:
        # The Fix's flag is the list: say why not the cap flag, the one users reach for.
        return f"{cost}; {lever.cap_flag} {cap} would not do it: a passed {lever.list_flag} list sets the largest size"
    return f"{cost}; {alternative(lever)}"


def _sizes_text(sizes: Sequence[int]) -> str:
    if len(sizes) <= 4:
        return ", ".join(str(s) for s in sizes)
    return f"{sizes[0]}, {sizes[1]} ... {sizes[-1]}"


@effect_text.register
def _(e: fx.CapDropBuckets) -> str:
    how = (
        "the later buckets cost as much as the first (no shared pool), so dropping the ones "
        "above M returns their measured cost"
    )
    return (
        f"{how}: dropping {e.unit} {_sizes_text(e.dropped)} returns {_g(e.first_bytes)} - "
        f"{_g(e.at_cap_bytes)} = {_g(e.first_bytes - e.at_cap_bytes)} GiB (bar readings before "
        f"{e.unit} {e.largest} and {e.cap}) against the {_g(e.shortfall_bytes)} GiB shortfall; "
        f"{_cap_cost(e.cap, e.lever)}"
    )


_POOLS = {
    fx.Pools.SHARED: "the later buckets cost little (one shared pool)",
    fx.Pools.ASSUMED_SHARED: "assuming one shared pool",
    fx.Pools.UNDECIDED: "one measured bucket cannot tell a shared pool from separate ones: the "
    "smaller M of the two",
}


@effect_text.register
def _(e: fx.CapPerRow) -> str:
    if e.second_bytes is not None:
        cost = e.first_bytes - e.second_bytes
        basis = (
            f"{e.unit} {e.largest} cost {_g(e.first_bytes)} - {_g(e.second_bytes)} = {_g(cost)} GiB"
        )
    else:
        need = e.first_bytes - (e.oom_free_bytes or 0) + (e.tried_bytes or 0)
        basis = (
            f"{e.unit} {e.largest} needed at least {_g(e.first_bytes)} - {_g(e.oom_free_bytes)} + "
            f"{_g(e.tried_bytes)} = {_g(need)} GiB"
        )
    measured = (
        f", measured drops allow {e.additive_limit:.0f}" if e.additive_limit is not None else ""
    )
    per = e.per_row_bytes / MIB
    return (
        f"{basis}, {per:.2f} MiB per row; capping at {e.cap} saves about {per:.2f} MiB x "
        f"({e.largest} - {e.cap}) = {_g(e.saved_bytes)} GiB against the {_g(e.shortfall_bytes)} GiB "
        f"shortfall ({_POOLS[e.pools]}; M <= {e.largest} - {_g(e.shortfall_bytes)} GiB / per row = "
        f"{e.shared_limit:.0f}{measured}); {_cap_cost(e.cap, e.lever)}"
    )


@effect_text.register
def _(e: fx.ExpandableSegments) -> str:
    return (
        f"{_g(e.reserved_unallocated_bytes)} GiB is reserved by PyTorch but unallocated "
        f"(fragmentation), more than the {_g(e.shortfall_bytes)} GiB shortfall; expandable "
        "segments may let PyTorch use it; costs nothing in KV"
    )


@effect_text.register
def _(e: fx.HalveChunk) -> str:
    per, floor = rules.ACTIVATION_MIB_PER_TOKEN, rules.ACTIVATION_MIN_TOKENS
    enough = "covers" if e.saved_bytes >= e.need_bytes else "does not cover"
    return (
        f"prefill activations grow with the chunk; SGLang's default sizing assumes {per:g} MiB per "
        f"chunk token, so {e.chunk} -> {e.half} needs about ({e.chunk} - {max(e.half, floor)}) x "
        f"{per:g} MiB = {_g(e.saved_bytes)} GiB less, which {enough} the {_g(e.need_bytes)} GiB "
        "shortfall (an estimate); costs: long prompts take more prefill steps"
    )


@effect_text.register
def _(e: fx.DispatchTokensRatio) -> str:
    return dispatch_ratio_text(e)


@effect_text.register
def _(e: fx.DispatchTokensHalf) -> str:
    return dispatch_half_text(e)


@effect_text.register
def _(e: fx.DoubleTP) -> str:
    gain = ""
    if e.rest_bytes is not None and e.weights_bytes is not None:
        w2 = e.weights_bytes / 2
        gain = (
            f"; the KV budget at mfs {fmt_mfs(e.mfs or 0)} becomes about {_g(e.rest_bytes)} + "
            f"{_g(w2)} = {_g(e.rest_bytes + w2)} GiB"
        )
    return f"halves the weights per rank if they shard evenly{gain}; needs {e.tp * 2} GPUs"


@effect_text.register
def _(e: fx.QuantizeFP8) -> str:
    return (
        "8-bit weights take half the memory of 16-bit ones (if the checkpoint is 16-bit); may "
        "change accuracy"
    )


@effect_text.register
def _(e: fx.CpuOffload) -> str:
    why = (
        f"the minimum that makes a KV pool at all: {_g(e.budget_lack_bytes)} GiB is what the KV "
        f"budget lacks, rounded up, so at {e.gib} GiB the pool gets only the "
        f"{_g(e.gib * GIB - e.budget_lack_bytes)} GiB the rounding leaves; each further GiB "
        "offloaded adds a GiB of KV, so a usable pool needs its size in GiB on top: one full "
        "context is context length x the KV bytes per token, which this log does not print"
        if e.budget_lack_bytes is not None
        else f"the {_g(e.need_bytes)} GiB shortfall, rounded up; the rest of the model was not "
        "loaded, so it may need more"
    )
    return f"keeps at least {e.gib} GiB of weights in CPU memory ({why}); costs speed"


@effect_text.register
def _(e: fx.RaiseMfsNoFigures) -> str:
    if e.suggested is not None:
        return (
            f"SGLang's own value (its message: 'Raise --mem-fraction-static above "
            f"{e.suggested:.3f}'); the log has no Load weight lines to check it by"
        )
    return "raise it: the KV pool came out empty (no Load weight lines to compute by how much)"


@effect_text.register
def _(e: fx.SmallestMfs) -> str:
    scaled = (
        f" (SGLang runs the rule with mfs x {e.factor:g}: mfs > {e.exact / e.factor:.4f})"
        if e.factor != 1
        else ""
    )
    fixed = _FIXED_PART.get(e.form)
    lower = (
        f"; a positive budget is only the start: {fixed} must fit in it too, so go higher"
        if fixed
        else ""
    )
    return (
        f"only the threshold, the smallest value with a "
        f"{'positive KV budget' if fixed else 'KV pool at all'}: "
        f"mfs > 1 - {_g(e.after_weights_bytes)} / "
        f"{_g(e.pre_load_bytes)} = {e.exact:.4f}{scaled}{_sglang_says(e.suggested)}; it gives "
        f"a pool of next to nothing, not a working value: each further {e.step:g} adds "
        f"{_g(e.step_bytes)} GiB of KV, so go higher by {e.step:g} per {_g(e.step_bytes)} GiB of "
        "pool a run needs (one full context is context length x the KV bytes per token, which "
        f"this log does not print); costs headroom: {_g(e.headroom_bytes)} GiB is left outside "
        "the budget at the threshold for activations and CUDA graphs, less with each step, so "
        "too high a value fails later in capture" + lower
    )


# What SGLang's pool needs from a positive budget before it has room, by records.KVSizing.form.
_FIXED_PART = {
    "state_cache": "the Mamba state cache (its size per request is in SGLang's message)",
    "unified_pool": "one worst-case request (the floor in SGLang's message)",
    "swa_cap": "the SWA pool at its cap",
}


def _sglang_says(suggested: float | None) -> str:
    """SGLang's own value from its message, quoted next to logmem's."""
    if suggested is None:
        return ""
    return f" (SGLang's message: 'Raise --mem-fraction-static above {suggested:.3f}')"


@effect_text.register
def _(e: fx.FewerWeights) -> str:
    w2 = e.weights_bytes / 2
    gain = ""
    if e.mfs is not None and e.rest_bytes is not None:
        # Halving W raises the after-weights reading by W/2 and leaves P alone: rest grows by W/2.
        gain = f", so at mfs {fmt_mfs(e.mfs)} the KV pool gets about {_g(e.rest_bytes + w2)} GiB"
    # The GPU count belongs to the --tp-size change, not to the fp8 alternative named after it.
    gpus = f" (needs {e.gpus} GPUs)" if e.gpus else ""
    also = "" if e.quantized else ", as would 8-bit instead of 16-bit weights (--quantization fp8)"
    return (
        f"halves the weights per rank ({_g(e.weights_bytes)} GiB now) if they shard evenly{gpus}"
        f"{also}: about {_g(w2)} GiB more per rank{gain}"
    )


@effect_text.register
def _(e: fx.FindProcess) -> str:
    return (
        f"find the process holding about {e.gap_gib:.2f} GiB on {ranks_who(e.ranks)}'s GPU and stop it "
        "(or use free GPUs); costs nothing"
    )


@effect_text.register
def _(e: fx.SkipImbalanceCheck) -> str:
    loss = (
        f"{e.mfs:.3g}{'' if e.factor == 1 else f' x {e.factor:g}'} x {e.gap_gib:.2f} = "
        f"{_g(e.loss_bytes)} GiB"
        if e.mfs is not None and e.loss_bytes is not None
        else "mem_fraction_static x the gap"
    )
    return (
        "starts anyway; every rank then sizes its KV pool from the tightest GPU "
        f"({e.pre_model_load_gib:.2f} GiB) and the other ranks leave the difference unused. "
        "SGLang's rule rest = after-weights - P x (1 - mfs) takes both readings as minimums over "
        f"ranks, so a gap g lowers it by mfs x g: each rank's KV budget shrinks by {loss}"
    )


@effect_text.register
def _(e: fx.DisableGraph) -> str:
    why = (
        "the frames show the capture machinery itself raised"
        if e.machinery
        else "the traceback does not show where it was raised"
    )
    return (
        f"a diagnostic ({why}): skips the {e.graph} graph capture; if start-up then succeeds, "
        "the failure is the capture's own, and a matching SGLang/kernel version is the real fix; "
        "costs speed (no graphs for that phase)"
    )


def _scaled_p(p: int, factor: float) -> str:
    """P in a division by the flag's change: times SGLang's own factor when it scales the flag."""
    return f"{_g(p)}" if factor == 1 else f"({_g(p)} x {factor:g})"


def _scaled_why(factor: float) -> str:
    return "" if factor == 1 else f"; SGLang scales the flag by {factor:g} before its KV rule"


@effect_text.register
def _(e: fx.LowerMfsRelative) -> str:
    on = f", on {e.pre_load_rank}" if e.pre_load_rank else ""
    pd = "P x d" if e.factor == 1 else f"P x {e.factor:g} x d"
    return (
        f"{pd} must cover the {_g(e.need_bytes)} GiB shortfall, so d >= {_g(e.need_bytes)} / "
        f"{_scaled_p(e.pre_load_bytes, e.factor)} = "
        f"{e.need_bytes / (e.pre_load_bytes * e.factor):.4f} (P = "
        f"{_g(e.pre_load_bytes)} GiB, the smallest Load weight begin avail{on}"
        f"{_scaled_why(e.factor)}), rounded up to "
        f"{fmt_mfs(e.delta)}; the value in use is not in the log, so only the change can be given; "
        "costs KV tokens in proportion"
    )


@effect_text.register
def _(e: fx.RaiseMfsUnexplained) -> str:
    return (
        f"raise it above {fmt_mfs(e.mfs)}, as SGLang's message asks"
        + (f" (its value: above {e.suggested:.3f})" if e.suggested is not None else "")
        + (
            f"; each 0.01 adds P x 0.01 = {gib_text(e.step_bytes)} GiB to the budget the pool is "
            "backed from after the graphs"
            if e.step_bytes is not None
            else "; the KV rule cannot say by how much, since it finds a positive budget at this "
            "value"
        )
    )


@effect_text.register
def _(e: fx.FindOutside) -> str:
    gpu = f"GPU {e.gpu}" if e.gpu is not None else "the GPU"
    if e.others_bytes is not None:
        # The OOM message split it: the rest outside PyTorch is this process's own.
        return (
            f"lists the processes on {gpu} and what each holds: find the other processes "
            f"holding {_g(e.others_bytes)} GiB and stop them (or use a free GPU); costs nothing "
            "in KV"
        )
    return (
        f"lists the processes on {gpu} and what each holds: find what holds the "
        f"{_g(e.outside_bytes)} GiB outside PyTorch and stop it (or use a free GPU); costs "
        "nothing in KV"
    )


@effect_text.register
def _(e: fx.NativeImpl) -> str:
    if e.auto:
        # The fix's headline is the version (fallback.native_version_flag): the flag cannot help.
        named = (
            ""
            if e.architecture
            else "the log names no architecture (no rank printed Load weight end's type="
            + (f"; the model is {e.model}" if e.model else "")
            + "); "
        )
        return (
            f"{named}with model_impl 'auto' this build fell back to the Transformers backend, "
            "which it does only for an architecture it does not implement, and that backend "
            "shards only the linear layers of the model's Transformers TP plan over the TP ranks, "
            "not fused MoE experts, which stay whole on each GPU; pass --model-impl sglang there "
            "if 'auto' still falls back; costs nothing in KV"
        )
    arch = f" ({e.architecture})" if e.architecture else ""
    return (
        f"forces SGLang's own implementation of the model{arch} instead of the Transformers "
        "backend that model_impl selected, which shards all of it over the TP ranks (the "
        "Transformers backend shards only its TP plan's linear layers); it exists only in "
        "SGLang versions that implement the architecture; costs nothing in KV"
    )


def fix_value(f: fx.Fix) -> str | None:
    """The value a fix sets, or the change it makes to the value in use."""
    if isinstance(f.change, fx.LowerByAtLeast):
        return f"at least {fmt_mfs(f.change.delta)} lower than this launch used"
    if isinstance(f.change, fx.AtMostTimes):
        return f"<= {f.change.ratio:.2f} x the current value"
    return f.value


# An environment variable as a fix's flag: set as VAR=value, the form a shell accepts.
_ENV_VAR = lazy(r"[A-Z][A-Z0-9_]{2,80}")


def fix_text(f: fx.Fix) -> str:
    """A fix as the verdict prints it: 'Fix: FLAG VALUE: effect.' ('VAR=value' for a variable)."""
    value = fix_value(f)
    if value and value == f.value and _ENV_VAR.fullmatch(f.flag):
        return sentence(f"Fix: {f.flag}={value}: {effect_text(f.effect)}")
    return sentence(f"Fix: {f.flag}{' ' + value if value else ''}: {effect_text(f.effect)}")
