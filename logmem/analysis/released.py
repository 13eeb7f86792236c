"""Memory released after the KV pool was sized: free memory that rose, on every rank, after the
pool step (a capture's negative ``mem usage``, a rise the ledger books as given back). A rise
inside the pool step itself is not counted: there it is the printed pool sizes against the
step's drop (021 on unified memory: -0.41), not a release a reading shows.

SGLang sizes the pool from the free memory it reads at that moment (``profile_max_num_token``,
model_executor/model_runner_kv_cache_mixin.py, sglang 0.5.9: ``get_available_gpu_memory`` with
``empty_cache=True``, the minimum over ranks), so memory held then and released later counted
against the KV budget: a verdict from those readings holds for that launch, not for the GPU.
The readings are taken after ``torch.cuda.empty_cache()`` (same file's caller,
utils/common.py ``get_available_gpu_memory``), so such a rise is live memory freed (by this
process or another one), not allocator cache.
"""

from __future__ import annotations

from collections.abc import Sequence

from logmem.analysis.findings_captures import NOTABLE, TINY
from logmem.analysis.ledger import RankLedger, What
from logmem.frozen import frozen

# What counts as memory released (not a consumer): a capture's negative net usage and a rise
# the causes do not explain. A draft's embed/lm_head given back is SGLang freeing a copy it
# loaded after the target's sizing, so it was never free before sizing: not counted.
_RELEASES = (What.RELEASED, What.GIVEN_BACK)


@frozen
class RankRelease:
    """One rank's release after sizing: at least ``bytes`` (a capture's net figure hides the
    graphs' own cost), from the causes on ``lines``."""

    rank: str
    bytes: int
    lines: tuple[int, ...]


@frozen
class LaterRelease:
    """Memory released after sizing on every rank with a pool step (one entry per rank)."""

    ranks: tuple[RankRelease, ...]

    @property
    def least_bytes(self) -> int:
        """What every rank released at least: the KV rule takes its readings as minimums over
        ranks, so this is what the budget's after-weights reading would have gained at least."""
        return min(r.bytes for r in self.ranks)

    @property
    def same_size(self) -> bool:
        """Every rank released the same within print rounding (two readings each, +-0.01)."""
        sizes = [r.bytes for r in self.ranks]
        return max(sizes) - min(sizes) <= 2 * TINY

    @property
    def likely_load_temporary(self) -> bool:
        """Two or more ranks released the same: what a per-rank temporary of the (evenly
        sharded) weight load would do; one rank alone cannot tell it from another process."""
        return len(self.ranks) >= 2 and self.same_size


def _rank_release(rl: RankLedger) -> RankRelease | None:
    causes = [
        c
        for p in rl.phases_after_pools()
        for c in p.causes
        if c.what in _RELEASES and -c.bytes >= NOTABLE
    ]
    if not causes:
        return None
    lines = sorted({ln for c in causes for ln in c.lines[-1:]})
    return RankRelease(rl.rank, -sum(c.bytes for c in causes), tuple(lines))


def later_release(ranks: Sequence[RankLedger]) -> LaterRelease | None:
    """The release on every rank that has a pool step, or None when one of them released
    nothing notable (the minimum over ranks would not rise) or none has a pool step."""
    sized = [rl for rl in ranks if rl.free_after_pools() is not None]
    got = [_rank_release(rl) for rl in sized]
    if not got or any(r is None for r in got):
        return None
    return LaterRelease(tuple(r for r in got if r is not None))
