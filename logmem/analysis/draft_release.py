"""The memory a speculative draft gives back once it shares the target's embedding / lm_head.

SGLang loads the draft's own embed_tokens and lm_head with its weights, allocates its KV pool,
then points them at the target's and frees its copies (rules.draft_share): free memory rises
in the step right after the draft's pool step. remainder() can only call such a rise "given
back"; here it is named, when the launch's draft is one that shares.
"""

from __future__ import annotations

from dataclasses import replace

from logmem.analysis.ledger import Cause, Facts, Phase, What
from logmem.model.records import Launch
from logmem.sglang import rules

_RELEASE = {
    rules.DraftShare.EMBED_AND_HEAD: What.DRAFT_EMBED_HEAD,
    rules.DraftShare.EMBED: What.DRAFT_EMBED,
}


def name_draft_release(launch: Launch, phases: list[Phase]) -> list[Phase]:
    """``phases`` with the "given back" rise of the step after the draft's pool step named as
    the draft's embed/lm_head freed; unchanged when the draft shares nothing (or its algorithm
    is unknown), has no pool step, or free memory did not rise there."""
    share = rules.draft_share(launch.args)
    what = _RELEASE.get(share) if share is not None else None
    if what is None:
        return phases
    at = next((i for i, p in enumerate(phases) if p.key == "draft_pools"), None)
    if at is None or at + 1 >= len(phases):
        return phases
    nxt = phases[at + 1]
    if nxt.graph is not None or not any(c.what is What.GIVEN_BACK for c in nxt.causes):
        return phases
    causes = tuple(
        Cause(what, c.bytes, "derived", c.lines, Facts(draft=True), bound=c.bound)
        if c.what is What.GIVEN_BACK
        else c
        for c in nxt.causes
    )
    return [*phases[: at + 1], replace(nxt, causes=causes), *phases[at + 2 :]]
