"""The words for the context-vs-pool finding (logmem.analysis.context.ContextVsPool).

Only figures the fact holds (what the log printed, SGLang's rule on them, the projection
``logmem whatif`` uses); a lever is named with SGLang's flag and the direction that helps.
"""

from __future__ import annotations

from logmem.analysis.context import ContextVsPool
from logmem.report.released_words import released_verdict
from logmem.report.request_table_words import context_table_clause
from logmem.units import format_gib


def _times(x: float) -> str:
    """2.8 times; 1.04 times (one decimal would read 1.0)."""
    one = f"{x:.1f}"
    return f"{x:.2f}" if one == "1.0" else one


def _context(f: ContextVsPool) -> str:
    """The context length as the log gives it, or labelled as config.json's (never as if the
    log printed it)."""
    ctx = f.context_len or 0
    if f.context_source != "config":
        return f"context_len {ctx:,}"
    key = f.context_key or "a context key"
    how = f"{key} x its rope_scaling factor" if f.context_scaled else key
    return (
        f"the context length {ctx:,} from config.json (--model-config: {how}, which SGLang "
        "serves as server_args has context_length=None; the log does not print it)"
    )


def _too_long(f: ContextVsPool) -> str:
    ctx, kv = f.context_len or 0, f.kv_tokens
    n, rejected = f.max_req_len, f.prompt_rejected_from
    cap = (
        f"max_total_num_tokens - 1) = {n:,} tokens of prompt and output: a prompt of "
        f"{rejected:,} tokens or more"
        if n is not None and rejected is not None
        else f"pool tokens - 1) tokens of prompt and output, the full pool's ({kv:,}) up to sglang "
        f"0.5.3, the smaller SWA pool's ({f.swa_tokens or 0:,}) from 0.5.9: a prompt of 5 "
        "tokens less or more"
    )
    text = (
        f"{_context(f)} is {_times(ctx / kv)} times the KV pool ({kv:,} tokens). That does "
        f"not fail the launch, but SGLang caps each request at max_req_len = min(context_len - 1, "
        f"{cap} is rejected (cut to fit with --allow-auto-truncate) and max_new_tokens is cut to "
        "what the prompt leaves"
    )
    if f.max_running_requests == 1:
        text += "; the one request slot (max_running_requests=1) never reaches its context"
    # Lowering the context length does not lengthen a request: it makes /v1/models report the
    # length the server serves (max_model_len is context_len) and shrinks the request table,
    # which SGLang allocates outside the KV budget (analysis.request_table).
    lower = (
        f"pass --context-length {kv:,} or less: the server then reports the length it serves, "
        f"{context_table_clause(f.table)}."
    )
    mtt = f.max_total_tokens
    if mtt is not None and kv >= mtt:
        return (
            f"{text}. --max-total-tokens {mtt:,} caps the pool, so raising --mem-fraction-static "
            f"does not grow it while the cap binds: raise --max-total-tokens to serve the full "
            f"context, else {lower}"
        )
    if not f.projected and f.ceiling_too_small and f.ceiling is not None:
        c = f.ceiling
        return (
            f"{text}. No --mem-fraction-static serves the full context: even 1.0 gives at most "
            f"{c.tokens:,} tokens (all {format_gib(c.after_weights_bytes)} GiB free after the "
            f"weights, line {c.line}, at {c.cell_bytes:,} B per token); {lower}"
        )
    if not f.projected:
        return (
            f"{text}. To serve the full context, enlarge the pool (raise --mem-fraction-static; "
            "from which value is unknown: the log lacks the readings logmem whatif needs); "
            f"else {lower}"
        )
    lo, now = f.fits_from_mfs, f.mem_fraction_static
    if lo is None:
        full = (
            f" gives {f.tokens_at_full_mfs:,} tokens" if f.tokens_at_full_mfs else " is not enough"
        )
        if f.released is not None:
            return (
                f"{text}. At the free memory SGLang read when it sized the pool, no "
                f"--mem-fraction-static serves the full context: even 1.0{full} (logmem whatif)."
                f"{released_verdict(f, lower)}"
            )
        return (
            f"{text}. No --mem-fraction-static serves the full context: even 1.0{full} "
            f"(logmem whatif); {lower}"
        )
    if now is not None and lo <= now:
        return f"{text}. {lower[0].upper()}{lower[1:]}"  # print rounding: the projection holds it
    if f.fit_leaves_too_little:
        short = (
            f"one full context needs --mem-fraction-static {lo:.3f}, which leaves "
            f"{format_gib(max(f.outside_at_fit_bytes or 0, 0))} GiB outside the pool, less than "
            f"this launch used there after sizing (at least {format_gib(f.used_outside_bytes or 0)}"
            " GiB: request table, workspaces, graphs; activations need more at run time)"
        )
        if f.released is not None:
            # The readings held memory given back later: they price this launch, not the GPU.
            return (
                f"{text}. At the free memory SGLang read when it sized the pool, {short}."
                f"{released_verdict(f, lower)}"
            )
        return f"{text}. The pool cannot be enlarged enough on this GPU: {short}; {lower}"
    return (
        f"{text}. To serve the full context, enlarge the pool: from --mem-fraction-static {lo:.3f} "
        f"it holds one full context{_outside(f)} (whether the graphs then fit: logmem whatif); "
        f"else {lower}"
    )


def _outside(f: ContextVsPool) -> str:
    """What that setting leaves outside the pool, beside what this launch had: 0.00 GiB at 1.000
    says plainly that the pool cannot grow that far."""
    at, now = f.outside_at_fit_bytes, f.outside_now_bytes
    if at is None:
        return " (the KV pool alone)"
    text = f", leaving {format_gib(max(at, 0))} GiB outside the pool"
    if now is not None:
        text += f" (this launch left {format_gib(now)})"
    return text + " for the request table, workspaces, graphs and activations"


def _users(f: ContextVsPool, them: str) -> str:
    """What can use KV tokens no running request reaches: the prefix cache, or nothing."""
    if f.radix_cache is True:
        return f"only the prefix cache (radix cache) can use {them}"
    if f.radix_cache is False:
        return f"with disable_radix_cache=True nothing uses {them}"
    return ""


def _slots_short(f: ContextVsPool) -> str:
    n, kv = f.max_running_requests or 0, f.kv_tokens
    slots, unused = f.slots_tokens or 0, f.unused_by_slots_tokens or 0
    who = _users(f, "them")
    who = f"; {who}" if who else ""
    mtt = f.max_total_tokens
    free = (
        # The cap sizes the pool: a lower mem_fraction_static frees nothing while it binds.
        f"lower --max-total-tokens to {slots:,} (its {mtt:,} sizes the pool while it binds, not "
        "--mem-fraction-static)"
        if mtt is not None and kv >= mtt
        else f"lower --mem-fraction-static or pass --max-total-tokens {slots:,}"
    )
    return (
        f"max_running_requests={n} x {_context(f)} = {slots:,} tokens, "
        f"{slots / kv:.0%} of the KV pool ({kv:,} tokens): running requests can never hold the "
        f"other {unused:,} tokens{who}. To use them, raise --max-running-requests (the pool "
        f"holds {f.full_contexts or 0:.1f} full contexts); to free the memory, {free}"
        f"{_offload(f, f'{slots:,}')}."
    )


def _offload(f: ContextVsPool, cap: str) -> str:
    """Weights offloaded to the CPU: the memory no request reaches could hold some of them."""
    off = f.cpu_offload_gb
    if off is None:
        return ""
    return (
        f"; with {off:g} GB of weights offloaded to the CPU (cpu_offload_gb={off:g}), that "
        "memory could keep some of them on the GPU instead (a lower --cpu-offload-gb, with "
        f"--max-total-tokens at {cap})"
    )


def _slots_unknown(f: ContextVsPool) -> str:
    kv = f.kv_tokens
    why = (
        "the scheduler summary line prints no context_len"
        if f.kv_tokens_source == "summary"
        else "the log has no scheduler summary line"
    )
    own = (
        "; context_length=None in server_args, so SGLang serves the length the model's "
        "config.json gives (max_position_embeddings or a like key, times a rope scaling "
        "factor), which the log does not print"
        if f.context_unset
        else ""
    )
    who = _users(f, "it")
    who = f" ({who})" if who else ""
    weights = _offload(f, "the context length")
    return (
        f"max_running_requests=1 (server_args): one request runs at a time, and SGLang caps it "
        f"at the smaller of the context length and the KV pool ({kv:,} tokens), less one. The "
        f"context length is not logged ({why}){own}. If it is below {kv:,} tokens, the one "
        f"request slot never reaches the rest of the pool{who}{weights}; from the log alone "
        "how much of the pool it can reach is unknown."
    )


def context_text(f: ContextVsPool) -> str:
    """The finding as one paragraph (only called when ``f.applies``)."""
    if f.too_long:
        return _too_long(f)
    if f.slots_short:
        return _slots_short(f)
    return _slots_unknown(f)
