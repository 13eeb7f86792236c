"""Words of the DeepEP dispatch-token Fix (logmem.analysis.failures.deepep_fix): how far T must
drop, and the decode graph and batch that must shrink with it (registered as effect texts in
logmem.report.fixes)."""

from __future__ import annotations

import logmem.analysis.failures.facts as fx
from logmem.report.lever_words import alternative
from logmem.units import format_gib


def _dispatch_tokens(tokens: int, line: int | None) -> str:
    """Which T the change is relative to: the one the launch set, or SGLang's default."""
    if line is not None:
        return f"the {tokens} this launch set on line {line}"
    return f"the default {tokens}"


def _within_t(w: fx.DecodeWithinT | None) -> str:
    """What must shrink with T: DeepEP's low-latency dispatch takes at most T tokens per rank, and
    SGLang does not lower the decode graph or batch to it."""
    if w is None:
        return ""
    t = w.new_tokens
    per = f" / {w.per_request} tokens per request = {w.bs_limit}" if w.per_request > 1 else ""
    parts: list[str] = []
    if w.graph_too_big:
        cap = (
            f"{w.graph_bs} (the capture list's largest at or below {w.bs_limit})"
            if w.graph_bs is not None
            else f"at most {w.bs_limit}"
        )
        lv = w.lever
        if lv is not None and lv.use_list:
            parts.append(
                f"drop the sizes above {w.graph_bs or w.bs_limit} from {lv.list_flag} (its largest "
                f"is {w.graph_max_bs}; a passed list sets it, {lv.cap_flag} would not) with it"
            )
        else:
            alt = f" ({alternative(lv)})" if lv is not None and not lv.cap_works else ""
            parts.append(f"lower {w.flag} from {w.graph_max_bs} to {cap} with it{alt}")
    elif w.graph_max_bs is None:
        parts.append(f"keep {w.flag} at or below {w.bs_limit}")
    if w.running_too_big:
        share = f"{w.dp} x {w.bs_limit} = " if w.dp > 1 else ""
        parts.append(
            f"set --max-running-requests to at most {share}{w.running_limit} (now "
            f"{w.max_running}) so that each {'DP rank' if w.dp > 1 else 'rank'}'s decode batch fits"
        )
    need = (
        f"; DeepEP's low-latency dispatch takes at most T = {t} tokens per rank{per} and SGLang "
        f"does not lower the decode batch to it, so " + " and ".join(parts)
        if parts
        else f"; DeepEP's low-latency dispatch takes at most T = {t} tokens per rank{per}, which the "
        "decode graph and batch already fit"
    )
    if w.auto:
        need += (
            "; with deepep_mode 'auto' SGLang sizes two buffers (sglang 0.5.9 token_dispatcher/"
            "deepep.py get_deepep_buffer): the NVLink one from the normal-mode config alone, the "
            "RDMA (NVSHMEM) one as the larger of the normal-mode RDMA size and the low-latency "
            "size, so T shrinks the RDMA buffer when the low-latency size is the larger"
        )
    return need


def dispatch_ratio_text(e: fx.DispatchTokensRatio) -> str:
    part = (
        "it is the low-latency buffer (deepep_mode='low_latency'), proportional to"
        if e.low_latency_only
        else "its low-latency size is proportional to"
    )
    w = e.within
    rest = (
        ""
        if e.low_latency_only or (w is not None and w.auto)
        else " (deepep_mode 'normal' sizes its buffers from the dispatch/combine configs, not T)"
    )
    costs = (
        f"decode batches of at most {w.bs_limit} per {'DP rank' if w.dp > 1 else 'rank'}"
        if w is not None
        else "smaller decode batches"
    )
    return (
        f"the buffer asked for {format_gib(e.tried_bytes)} GiB with {format_gib(e.free_bytes)} GiB free; {part} "
        f"the dispatch tokens per rank T, so T must drop to at most {format_gib(e.free_bytes)} / "
        f"{format_gib(e.tried_bytes)} = {e.ratio:.2f} of its value, {e.at_current} of "
        f"{_dispatch_tokens(e.tokens, e.set_on_line)}{rest}{_within_t(w)}; costs: {costs}"
    )


def dispatch_half_text(e: fx.DispatchTokensHalf) -> str:
    w = e.within
    costs = (
        f"decode batches of at most {w.bs_limit} per {'DP rank' if w.dp > 1 else 'rank'}"
        if w is not None
        else "smaller decode batches"
    )
    return (
        "the DeepEP low-latency buffer is proportional to the dispatch tokens per rank T "
        f"(reference 12.5), so {e.half}, half of {_dispatch_tokens(e.tokens, e.set_on_line)}, "
        f"halves it{_within_t(w)}; costs: {costs}"
    )
