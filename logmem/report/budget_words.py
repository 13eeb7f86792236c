"""The sentence of the KV-budget check (PoolsVsBudget): the pools against the budget SGLang's
rule gives, and why they differ (a cap, a bigger allocated cell, more tokens than the budget holds,
an mfs adjustment this SGLang applied or not)."""

from __future__ import annotations

import logmem.analysis.findings as fd
from logmem.analysis.mfs_inferred import BackSolvedMfs
from logmem.report.finding_base import about, finding_text
from logmem.report.finding_base import g as _g
from logmem.sglang import rules


def adjustment_text(a: rules.MfsAdjustment) -> str:
    what = "multimodal models" if a.scope == "multimodal" else "the aiter backend at long contexts"
    return f"by {a.factor:g} for {what} (SGLang {a.versions})"


_GAP_WHY = {
    fd.GapReason.CELLS_BIGGER: "the allocated cells are bigger than the cell size the sizing "
    "assumed (e.g. FP8 scales, an indexer, draft layers)",
    fd.GapReason.CAPPED: "a cap held the pool below the budget (max_total_tokens, page rounding, "
    "a hybrid/SWA split, or a draft share)",
}


def cells_bigger(f: fd.PoolsVsBudget) -> str:
    """SGLang sized the pool as budget // its cell: a larger pool means a larger allocated cell."""
    assert f.tokens
    slots = f.tokens + f.page_size  # what the buffers hold (reference 4.1)
    return (
        f"SGLang sized the pool as budget / its cell size, {_g(f.rule_bytes)} GiB / "
        f"{f.tokens:,} tokens = {f.rule_bytes / f.tokens:,.0f} bytes per token, but the pools "
        f"allocate {f.cell_bytes or f.pool_bytes / slots:,.0f} per slot: the cell its sizing used leaves "
        "something out that the allocation holds (e.g. FP8 scales, an indexer, draft layers, or "
        "a backend's own cell formula)"
    )


def more_tokens(f: fd.PoolsVsBudget) -> str:
    """The allocated cell is the round one: SGLang allocated more tokens than its budget holds."""
    assert f.cell_bytes and f.budget_tokens is not None and f.budget_bytes is not None
    extra = f.extra_tokens or 0
    budget = (
        f"its own logged KV budget ({_g(f.budget_bytes)} GiB, line {f.budget_line})"
        if f.budget_line is not None
        else f"the budget ({_g(f.budget_bytes)} GiB)"
    )
    head = (
        f"the pools allocate {f.cell_bytes:,} bytes per slot, the round cell print rounding allows"
    )
    if extra <= 0:
        return f"{head}, and {budget} holds their {f.tokens or 0:,} tokens at that cell"
    return (
        f"{head}, so the gap is in the token count, not the cell: SGLang allocated about "
        f"{about(extra)} more tokens ({_g(extra * f.cell_bytes)} GiB) than {budget} holds at "
        f"that cell ({f.budget_tokens:,} tokens against the {f.tokens or 0:,} it allocated)"
    )


def _fit_text(fit: fd.RuleFit) -> str:
    if fit.added is not None:
        return (
            f"scaling mem_fraction_static {adjustment_text(fit.added)}, the rule gives "
            f"{_g(fit.rest_bytes)} GiB, which the pools match: this launch's SGLang applied it"
        )
    names = " and ".join(adjustment_text(a) for a in fit.left_out)
    return (
        f"without scaling mem_fraction_static {names}, the rule gives {_g(fit.rest_bytes)} GiB, "
        "which the pools match: this launch's SGLang did not apply it"
    )


@finding_text.register
def _(f: fd.PoolsVsBudget) -> str:
    why = (
        f"--max-total-tokens {f.max_total_tokens:,}"
        + (f" (echoed command line, line {f.cap_line})" if f.cap_line is not None else "")
        + " capped the pool"
        if f.reason is fd.GapReason.MAX_TOTAL_TOKENS and f.max_total_tokens is not None
        else _fit_text(f.fits)
        if f.fits is not None
        else more_tokens(f)
        if f.reason is fd.GapReason.MORE_TOKENS
        else cells_bigger(f)
        if f.reason is fd.GapReason.CELLS_BIGGER and f.tokens
        else _GAP_WHY.get(f.reason, "")
    )
    more = "more" if f.gap_bytes > 0 else "less"
    what = (
        "The KV cache of the pool step (its drop minus the request-to-token table; no KV line) took"
        if f.derived
        else "The pools logged"
    )
    against = f"{_g(f.pool_bytes)} against {_g(f.rule_bytes)} GiB"
    if f.draft is not None:
        b, line = f.draft
        what = (
            f"{what}, with the draft model's KV pool ({_g(b)} GiB, line {line}) that this SGLang "
            "counts inside the target's budget (it scales the target's bytes per token by the "
            "draft's layers, so the rule's rest holds both pools),"
        )
        against = f"{_g(f.pool_bytes - b)} GiB of the target's and {_g(b)} of the draft's against {_g(f.rule_bytes)} GiB"
    return (
        f"{what} {_g(abs(f.gap_bytes))} GiB {more} than that budget ({against}, beyond print "
        f"rounding): {why}."
    )


_INPUT_WORDS = {
    "mem_fraction_static": "mem_fraction_static in its server_args",
    "free_before_weights": "the free memory before the weights load (Load weight begin)",
    "free_after_weights": "the free memory after them (Load weight end)",
}


def missing_inputs_words(missing: tuple[str, ...], plural: bool = False) -> str:
    """The KV rule's inputs a log lacks (rules.RULE_INPUTS' names), as a clause."""
    words = [_INPUT_WORDS.get(m, m) for m in missing] or ["the readings of its in-order ranks"]
    if plural:
        words = [w.replace("in its server_args", "in their server_args") for w in words]
    said = words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]
    return f"{said}, " + ("an input" if len(words) == 1 else "inputs") + " of the KV rule"


def rule_inputs_missing_text(
    label: str, printed_args: bool, missing: tuple[str, ...] = (), plural: bool = False
) -> str:
    """Why diff's KV block has no rule terms on one side (compare.notes.NoTermSplit.no_args):
    the inputs it lacks by name; ``plural``: ``label`` names both sides ("A and B")."""
    if not printed_args:
        return f"{label} printed no server_args, so no mem_fraction_static"
    whose = f"{label}'s logs lack" if plural else f"{label}'s log lacks"
    if not missing:
        return f"{whose} the rule's inputs (mem_fraction_static or the free-memory readings)"
    return f"{whose} {missing_inputs_words(missing, plural)}"


def elided_words(line: int | None) -> str:
    """The clause of a server_args line its author elided with '...' (ev.ServerArgs.elided)."""
    where = f" (line {line})" if line is not None else ""
    return (
        f"its server_args line{where} is elided by its author ('...'), so a setting it leaves "
        "out is unknown, not SGLang's default"
    )


@finding_text.register
def _(f: fd.NoRuleCheck) -> str:
    if f.args_line is None:
        why = "this launch printed no server_args, so no mem_fraction_static"
    elif f.args_elided and "mem_fraction_static" in f.missing:
        why = f"this launch lacks {missing_inputs_words(f.missing)}; {elided_words(f.args_line)}"
    else:
        why = (
            f"this launch lacks {missing_inputs_words(f.missing)} (server_args: line {f.args_line})"
        )
    return (
        f"No check of the KV pool against SGLang's KV rule: {why}.{inferred_mfs_text(f.inferred)}"
    )


def _and_lines(lines: tuple[int, ...]) -> str:
    shown = [str(n) for n in lines]
    return shown[0] if len(shown) == 1 else f"{', '.join(shown[:-1])} and {shown[-1]}"


def inferred_mfs_text(b: BackSolvedMfs | None) -> str:
    """' Inferred from lines ...: mem_fraction_static ...' for a value the rule solves for (an
    inference from the readings, never said as printed); '' when there is none."""
    if b is None:
        return ""
    if b.low is not None and b.high is not None and b.low != b.high:
        span = f"{b.low:.3f}-{b.high:.3f} by the readings' print rounding"
    else:
        span = "to three decimals; the readings' print rounding does not move it"
    where = f"from lines {_and_lines(b.lines)}" if b.lines else "from the log's readings"
    return (
        f" Inferred {where}, not printed: mem_fraction_static {b.mfs:.3f} ({span}), SGLang's KV "
        f"rule solved for it: 1 - (after-weights free {_g(b.after_weights_bytes)} - pools "
        f"{_g(b.pools_bytes)} GiB) / P {_g(b.pre_load_bytes)} GiB."
    )


def mfs_source_text(lines: tuple[int, int] | None) -> str:
    """Where the KV sizing's mem_fraction_static was read (Sizing.mfs_lines)."""
    return "server_args" if lines is None else f"echoed command line, {lines_text(lines)}"


def lines_text(lines: tuple[int, int]) -> str:
    """ "line 3" or "lines 1-3"."""
    first, last = lines
    return f"line {first}" if first == last else f"lines {first}-{last}"
