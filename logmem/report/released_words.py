"""The words for memory released after sizing (logmem.analysis.released.LaterRelease), shared by
analyze's weights and context findings and whatif's one-full-context check."""

from __future__ import annotations

from logmem.analysis.context import ContextVsPool
from logmem.analysis.released import LaterRelease
from logmem.report.finding_base import g as _g


def where(r: LaterRelease) -> str:
    """'line 15 on TP0, line 16 on TP1'; with more ranks, the count and the line range."""
    parts = [r_.rank for r_ in r.ranks]
    if len(parts) <= 2:
        return ", ".join(
            f"line{'s' if len(x.lines) > 1 else ''} {', '.join(map(str, x.lines))}"
            + (f" on {x.rank}" if x.rank else "")
            for x in r.ranks
        )
    lines = [ln for x in r.ranks for ln in x.lines]
    return f"on all {len(parts)} ranks, lines {min(lines)}-{max(lines)}"


def weights_release_text(r: LaterRelease) -> str:
    """The later release beside the weight step (analyze's weights finding): paired with the step as a
    likely load-time temporary when every rank gave back the same; no model size is stated."""
    n = len(r.ranks)
    if r.likely_load_temporary:
        who = "both ranks" if n == 2 else f"all {n} ranks"
        return (
            f" At least {_g(r.least_bytes)} GiB came back after sizing on {who}, the same on "
            f"each ({where(r)}): likely a temporary the weight load held until then, so the weights "
            "themselves may take less than the step; the log does not say how much. Held when SGLang sized the KV pool, it counted against the KV "
            "budget."
        )
    return (
        f" At least {_g(r.least_bytes)} GiB was released after sizing ({where(r)}) by something "
        "the log does not name (a temporary of the weight load, or another process): if the "
        "load held it, the weights themselves take less than the step. Held when SGLang sized "
        "the KV pool, it counted against the KV budget."
    )


def released_clause(r: LaterRelease) -> str:
    """'at least 5.29 GiB was released after sizing on both ranks (line 15 on TP0, ...)'."""
    n = len(r.ranks)
    who = "on both ranks" if n == 2 else f"on all {n} ranks" if n > 2 else "on the GPU"
    return (
        f"at least {_g(r.least_bytes)} GiB was released after SGLang sized the KV pool, {who} "
        f"({where(r)})"
    )


def if_free_before(r: LaterRelease, tokens: tuple[int, int], mfs: float, ctx: int) -> str:
    """The conditional pool: had that memory been free before sizing, what SGLang's rule gives
    at the launch's own setting, against one full context. ``tokens``: (another process held
    it, this launch's load held it)."""
    other, load = (round(t, -3) if t >= 10_000 else t for t in tokens)
    span = f"about {other:,}" if other == load else f"about {other:,} to {load:,}"
    if all(t >= ctx for t in tokens):
        verdict = "more than one full context"
    elif tokens[1] >= ctx:
        verdict = "one full context only if this launch's own load held it"
    else:
        verdict = "still less than one full context"
    return (
        f"had it been free before sizing, --mem-fraction-static {mfs:g} would give {span} tokens "
        f"by SGLang's rule (the lower figure if another process held it, so the reading before "
        f"the weights was lower too; the higher if this launch's weight load did): {verdict}"
    )


def released_verdict(fact: ContextVsPool, then: str) -> str:
    """' But at least R GiB was released after sizing ...: had it been free before sizing ...
    Find what held it (...); until then <then>' (fact.released is set): the readings priced
    this launch, not the GPU."""
    r = fact.released
    assert r is not None
    text = f" But {released_clause(r)}"
    t, m, ctx = fact.tokens_if_released, fact.mem_fraction_static, fact.context_len
    if t is not None and m is not None and ctx is not None:
        text += f": {if_free_before(r, t, m, ctx)}"
    return (
        f"{text}. Find what held it (a temporary of the weight load, or another process on the "
        f"GPU); until then {then}"
    )
