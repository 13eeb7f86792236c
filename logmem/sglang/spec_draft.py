"""SGLang's rules for a speculative-decoding draft model's memory: where its KV pool's size
comes from, whether the target's KV budget counts that pool, and which drafts free their own
embed_tokens / lm_head for the target's. Split from logmem.sglang.rules (which re-exports every
name here); read in the wheels of sglang 0.5.8, 0.5.9, 0.5.10, 0.5.13, 0.5.16 and 0.5.17.

Like rules.py this imports nothing of the package at run time but ``logmem.frozen`` and the
release table.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date
from enum import Enum
from typing import Any

from logmem.frozen import frozen
from logmem.sglang.releases import RELEASES


def speculative_algorithm(args: Mapping[str, Any]) -> str | None:
    """server_args' ``speculative_algorithm`` upper-cased (``server_args.py``, all eras with
    speculative decoding: 'EAGLE', 'EAGLE3', 'NEXTN' (read as EAGLE), 'STANDALONE', 'NGRAM',
    2026 'DFLASH', 'DSPARK', 'FROZEN_KV_MTP'); None when it is absent or off."""
    algo = args.get("speculative_algorithm")
    if not isinstance(algo, str) or algo.upper() in ("", "NONE"):
        return None
    return algo.upper()


class DraftShare(Enum):
    """What of the target's a draft takes over once its own copies are loaded."""

    EMBED_AND_HEAD = "embed_and_head"
    EMBED = "embed"  # EAGLE3: the embedding (and the head only for drafts that load it)
    NOTHING = "nothing"


_SHARES: dict[str, DraftShare] = {
    "EAGLE": DraftShare.EMBED_AND_HEAD,
    "NEXTN": DraftShare.EMBED_AND_HEAD,
    "MTP": DraftShare.EMBED_AND_HEAD,
    "FROZEN_KV_MTP": DraftShare.EMBED_AND_HEAD,
    "EAGLE3": DraftShare.EMBED,
    "STANDALONE": DraftShare.NOTHING,
    "DFLASH": DraftShare.NOTHING,
    "DSPARK": DraftShare.NOTHING,
    "NGRAM": DraftShare.NOTHING,
}


def draft_share(args: Mapping[str, Any]) -> DraftShare | None:
    """Whether the draft gives back its own embed_tokens / lm_head after its pool is allocated.

    ``speculative/eagle_worker.py`` (sglang 0.5.8, 0.5.9, E5: ``EAGLEWorker.__init__``, after
    the draft's ModelRunner has loaded its weights and allocated its KV pool, before the draft
    graphs) and ``eagle_worker_v2.py`` ``init_lm_head`` (0.5.16, E7: right after the draft's
    ``alloc_memory_pool``), also ``multi_layer_eagle_worker.py`` and 0.5.16's
    ``frozen_kv_mtp_worker_v2.py``: EAGLE and MTP/NextN drafts call
    ``set_embed_and_head(embed, head)``, EAGLE3 calls ``set_embed(embed)`` (the head too only
    when the draft sets ``load_lm_head_from_target``). ``set_embed_and_head``
    (``models/deepseek_v2.py``, ``models/llama.py``) deletes the draft's own weights, points at
    the target's and calls ``torch.cuda.empty_cache()``, so free memory rises there.
    ``standalone_worker.py`` shares nothing, DFLASH (``dflash_worker_v2.py``, 0.5.16) loads no
    head of its own and borrows the target's, NGRAM has no draft model. None: no
    speculative_algorithm, or one these files do not name."""
    algo = speculative_algorithm(args)
    return _SHARES.get(algo) if algo is not None else None


class DraftPoolSource(Enum):
    """How SGLang hands the draft worker the target's token count."""

    CACHE_SIZE = "draft_runner_cache_size"  # server_args.draft_runner_cache_size
    POOL_CONFIG = "memory_pool_config"  # the target's MemoryPoolConfig


@frozen
class DraftPoolRule:
    """How the draft's KV pool is sized: always for the target's max_total_num_tokens (the full
    pool's count on a sliding-window target), and whether the target's budget counts it."""

    source: DraftPoolSource | None  # None: the launch's date does not say which
    # True: the target's cell is scaled by the draft's layers, so the rule's budget holds the
    # draft pool; False: it comes out of the 1 - mem_fraction_static headroom; None: unknown.
    in_budget: bool | None


def draft_pool_rule(algo: str | None, swa: bool, printed: date | None) -> DraftPoolRule:
    """The draft KV pool holds the target's token count, never its own mem_fraction_static
    budget (its own 'available memory for KV cache', where a build prints one, is not used).

    Up to sglang 0.5.9 (E5, ``model_executor/model_runner_kv_cache_mixin.py``
    ``init_memory_pool``): the target sets ``server_args.draft_runner_cache_size =
    max_total_num_tokens`` and the draft runner, having run ``profile_max_num_token`` too,
    overrides its own count with it; the target's cell counts only its own layers, so the
    draft pool is outside the budget. From 0.5.10 (same file, later
    ``mem_cache/kv_cache_configurator.py`` ``configure``, 0.5.16): the draft gets the
    target's resolved ``MemoryPoolConfig``. Whether the target's budget holds the draft pool
    is ``model_executor/pool_configurator.py``'s: 0.5.13 scales the cell by the draft layers
    for DFLASH in ``DefaultPoolConfigurator`` only; 0.5.16 and 0.5.17 scale it for EAGLE and
    STANDALONE in both it and ``HybridSWAPoolConfigurator``, for DFLASH in the default one
    only (a sliding-window target's DFLASH pool stays outside: fixture 021). EAGLE between
    0.5.13 and 0.5.16 was not read: unknown."""
    if printed is None:
        return DraftPoolRule(None, None)
    if printed < RELEASES["0.5.10"]:
        return DraftPoolRule(DraftPoolSource.CACHE_SIZE, False)
    source = DraftPoolSource.POOL_CONFIG
    dflash = algo in ("DFLASH", "DSPARK")
    if printed < RELEASES["0.5.13"]:
        return DraftPoolRule(source, False if not dflash else None)
    if dflash:
        return DraftPoolRule(source, not swa)
    if printed < RELEASES["0.5.16"]:
        return DraftPoolRule(source, None)
    return DraftPoolRule(source, algo in ("EAGLE", "EAGLE3", "NEXTN", "STANDALONE"))
