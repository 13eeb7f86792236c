"""The sentences about a speculative-decoding draft model's memory: its KV pool, sized from the
target's token count (rules.draft_pool_rule), never from a mem_fraction_static budget of its own."""

from __future__ import annotations

import logmem.analysis.findings as fd
from logmem.report.causes import on_gpu
from logmem.report.finding_base import finding_text
from logmem.report.finding_base import g as _g
from logmem.sglang import rules

_SOURCE = {
    rules.DraftPoolSource.CACHE_SIZE: "server_args.draft_runner_cache_size",
    rules.DraftPoolSource.POOL_CONFIG: "the target's memory_pool_config",
}


def _budget(f: fd.DraftPool) -> str:
    """Whether the target's KV rule counts the draft pool, and so where its memory came from."""
    if f.rule.in_budget is None:
        return (
            "whether the target's KV budget counts it is not known for SGLang of this date, so it "
            "is not checked against that rule"
        )
    if f.rule.in_budget:
        return (
            "the target's KV rule counts it: SGLang scales the target's bytes per token by the "
            "draft's layers, so the budget above holds both pools"
        )
    why = ""
    if f.algorithm in ("DFLASH", "DSPARK") and f.swa:
        why = " (SGLang counts a DFLASH draft's layers only for targets without sliding windows)"
    return (
        f"the target's KV rule does not count it{why}, so it is not judged by that rule: it is "
        "taken from the headroom the rule leaves outside the budget"
    )


@finding_text.register
def _(f: fd.DraftPool) -> str:
    tok = f" for {f.tokens:,} tokens" if f.tokens is not None else ""
    head = f"The draft model's KV pool took {_g(f.bytes)} GiB{tok} (line {f.line})"
    via = f" ({_SOURCE[f.rule.source]})" if f.rule.source is not None else ""
    if f.target_tokens is not None and f.tokens == f.target_tokens:
        size = (
            f"its size is the target's {f.target_tokens:,} tokens, which SGLang hands the draft "
            f"worker{via}, not a mem_fraction_static budget of its own"
        )
    elif f.target_tokens is not None and f.tokens is not None:
        size = (
            f"SGLang hands the draft worker the target's token count{via}, but this pool holds "
            f"{f.tokens:,} tokens against the target's {f.target_tokens:,}"
        )
    else:
        size = f"SGLang sizes it from the target's token count{via}, not a budget of its own"
    unused = ""
    if f.logged_avail is not None:
        b, line = f.logged_avail
        sign = ", negative, which is harmless" if b < 0 else ""
        unused = (
            f"; the draft's own 'available memory for KV cache' ({_g(b)} GiB, line {line}"
            f"{sign}) is computed and not used"
        )
    return f"{head}: {size}{unused}; {_budget(f)}."


@finding_text.register
def _(f: fd.DraftReleased) -> str:
    what = "embed_tokens and lm_head" if f.head else "embed_tokens"
    call = "set_embed_and_head" if f.head else "set_embed"
    return (
        f"After the draft's pool step free memory rose {_g(f.bytes)} GiB on {on_gpu(f.rank)} "
        f"(lines {f.lines[0]}-{f.lines[1]}): the draft gave back its own {what}, loaded with "
        f"its weights, when SGLang made it use the target's ({call}, which also empties the "
        "allocator's cache); the ledger books it as that, not as a cost."
    )
