"""The sentences of SGLang's post-capture KV sizing and of a weight commit after capture
(sglang 0.5.17-0.5.23; the arithmetic and its sources are in logmem.analysis.post_capture)."""

from __future__ import annotations

import logmem.analysis.findings as fd
from logmem.analysis.post_capture import PostCapture
from logmem.report.causes import on_gpu
from logmem.report.finding_base import finding_text
from logmem.report.finding_base import g as _g
from logmem.report.formula import kv_rule_text
from logmem.sglang import rules
from logmem.units import GIB

# More than this above the headroom left free is worth naming why (print rounding and page
# rounding stay well below it).
_ABOVE_HEADROOM = GIB // 2
_ROUNDING = rules.DIFFERENCE_RESOLUTION_BYTES


@finding_text.register
def _(f: fd.PostCaptureKVBudget) -> str:
    from logmem.report.sentences import _per_token  # the KV budget sentence's words

    pc, sz = f.post, f.sizing
    tok = f"{pc.tokens:,} tokens in " if pc.tokens is not None else ""
    if pc.tokens is not None and pc.swa_tokens:
        # kv_pool_runtime.py: #tokens is the full layers'; KV size holds both pools.
        tok = f"{pc.tokens:,} full-layer and {pc.swa_tokens:,} sliding-window tokens in "
    head = (
        "Post-capture KV sizing (SGLANG_ENABLE_POST_CAPTURE_KV_SIZING): SGLang backed the KV "
        f"pool after the CUDA graphs, {tok}{_g(pc.kv_bytes)} GiB on {on_gpu(pc.rank)} "
        f"(line {pc.line})"
    )
    mfs = f"{f.mfs:g}" + "".join(f" x {x:g}" for x in f.factors) if f.mfs is not None else None
    body = ""
    if pc.before_bytes is not None and pc.headroom_bytes is not None and mfs is not None:
        body = (
            f", sized from the free memory after the capture ({_g(pc.before_bytes)} GiB at "
            f"line {pc.before_line}) less a headroom of P x (1 - mfs) = {_g(f.pre_load_bytes)} x "
            f"(1 - {mfs}) = {_g(pc.headroom_bytes)} GiB"
        )
    left = ""
    if pc.avail_bytes is not None:
        left = f"; {_g(pc.avail_bytes)} GiB stayed free"
        gap = pc.eager_gap
        if pc.headroom_bytes is not None and pc.avail_bytes - pc.headroom_bytes > _ABOVE_HEADROOM:
            left += (
                f" (more than that headroom: SGLang warned at line {gap[2]} that the decode "
                f"graph's max bs {gap[0]} is below max_running_requests {gap[1]}, and then keeps "
                "its pre-capture activation reserve instead)"
                if gap is not None
                else " (more than that headroom: SGLang raises it to its pre-capture activation "
                "reserve when the decode graph's max bs is below max_running_requests, and for "
                "Mamba-like models; 0.5.22 on also keeps sampling and multimodal reserves)"
            )
        elif pc.headroom_bytes is not None and pc.avail_bytes < pc.headroom_bytes - _ROUNDING:
            # kv_vmm_backing.py backs each buffer in whole allocation-granularity pages.
            left += (
                " (less than that headroom: each K and V buffer is backed in whole pages of the "
                "allocation granularity, beyond the budget's cells)"
            )
    drafts = "".join(
        f"; a draft pool of {_g(b)} GiB" + (f" for {t:,} tokens" if t else "") + " with it"
        for b, t in pc.draft
    )
    cap = f"; the reservation's {pc.reserved_tokens:,} tokens capped it" if pc.capped else ""
    if pc.requests_capped is not None:
        a, b, line = pc.requests_capped
        cap += f"; it lowered max_running_requests {a:,} -> {b:,} for that pool (line {line})"
    before = ""
    if pc.reserved_tokens is not None and pc.reserved_bytes is not None:
        per = _per_token(sz) if sz is not None else ""
        if per and pc.reserved_swa is not None:
            per = f"the full layers' {per}"
        if pc.unified and pc.full_entry is not None:
            e, line = pc.full_entry
            per = f"the full sub-pool's entry_bytes: {e:,} bytes per token, line {line}"
        before = (
            f". Before the graphs it only reserved address space for {_reserved_text(pc)}"
            + (", printed as 'KV Cache is allocated'" if pc.reserved_as_allocated else "")
            + "; not memory"
            + (f"; {per}" if per else "")
            + ")"
        )
        if sz is not None and mfs is not None and (pc.reserved_pools == 1 or pc.reserved_swa):
            rule = kv_rule_text(sz.after_weights_bytes, sz.pre_load_bytes, mfs, sz.rest_bytes)
            before += f", sized by the KV rule: {rule}"
    return f"{head}{body}{left}{drafts}{cap}{before}."


def _reserved_text(pc: PostCapture) -> str:
    """What the reservation before the graphs was for, up to its closing parenthesis."""
    swa = pc.reserved_swa
    if swa is None:
        return (
            f"{pc.reserved_tokens:,} tokens ({_g(pc.reserved_bytes)} GiB, line {pc.reserved_line}"
        )
    s_tok = f"{swa[1]:,}" if swa[1] is not None else "its"
    if pc.unified:
        # unified_memory_pool.py: one byte buffer for both sub-pools (--enable-unified-memory).
        return (
            f"one unified buffer of {pc.reserved_tokens:,} full-layer and {s_tok} sliding-window "
            f"tokens (split at line {swa[2]}; {_g(pc.reserved_bytes)} GiB, line {pc.reserved_line}"
        )
    return (
        f"{pc.reserved_tokens:,} full-layer tokens ({_g(pc.reserved_bytes)} GiB, line "
        f"{pc.reserved_line}) and {s_tok} sliding-window tokens ({_g(swa[0])} GiB, line {swa[2]}"
    )


@finding_text.register
def _(f: fd.WeightsCommittedLate) -> str:
    # sglang 0.5.18-0.5.23, startup_weight_load.py: the storage is built before the pools
    # (loader.py initialize_model_for_startup), the checkpoint copied in after the graphs.
    step = (
        f"; the {_g(f.step_bytes)} GiB drop of lines {f.step_lines[0]}-{f.step_lines[1]} holds "
        "it with the pools"
        if f.step_bytes is not None and f.step_lines is not None
        else ""
    )
    return (
        f"Weights on {on_gpu(f.rank)} were loaded with --startup-weight-load-mode overlap: "
        "their GPU storage was allocated before the pools and graphs (no 'Load weight end' "
        f"reading gives its size{step}), and the checkpoint was copied into that storage "
        f"after the capture (line {f.line}, {f.commit_s:.2f} s; the line prints no memory "
        "figure)."
    )
