"""The KV pools a log states, where the report's ledger has no pool step to show them in.

An excerpt (a few lines pasted into an issue) may keep the 'KV Cache is allocated' lines of
some ranks and none of the free-memory readings around them: the main rank's ledger then has
no pool step, yet the log states each pool's size. ``kv_pools_logged`` gathers those lines,
one group per distinct figure (the ranks of a TP group print the same), so the report can
say them as printed.
"""

from __future__ import annotations

from typing import ClassVar

from logmem.analysis.findings_kinds import FindingKind
from logmem.frozen import frozen
from logmem.model.records import Launch
from logmem.parse import events as ev


@frozen
class LoggedKVPool:
    """One KV figure as the lines print it, and every rank that printed it."""

    role: str  # "target" | "draft"
    label: str | None  # 'Full' / 'SWA' where the line names its pool
    tokens: int | None
    k_gib: float | None  # as printed (SGLang's GB are GiB)
    v_gib: float | None
    kv_gib: float | None  # one 'KV size' (MLA, or a single-size line)
    dtype: str | None
    ranks: tuple[str, ...]
    lines: tuple[int, ...]


@frozen
class KVPoolsLogged:
    """The log states these KV pools, and the main rank's ledger has no pool step that shows
    them (no free-memory reading before or after it, or the lines are on other ranks)."""

    kind: ClassVar[FindingKind] = FindingKind.KV_POOLS_LOGGED
    rank: str  # the report's main rank
    pools: tuple[LoggedKVPool, ...]


def kv_pools_logged(launch: Launch, main: str) -> KVPoolsLogged | None:
    """Every KV line of the launch, grouped by its printed figures (None: no KV line)."""
    groups: dict[tuple[object, ...], tuple[str, ev.KVPool, list[str], list[int]]] = {}
    for r in launch.ranks:
        for m in r.models:
            for p in m.kv_pools:
                key = (m.role, p.label, p.tokens, p.k, p.v, p.kv, p.dtype)
                _, _, ranks, lines = groups.setdefault(key, (m.role, p, [], []))
                if r.label not in ranks:
                    ranks.append(r.label)
                lines.append(p.source.line_no)
    if not groups:
        return None
    pools = tuple(
        LoggedKVPool(
            role,
            p.label,
            p.tokens,
            p.k.gib if p.k else None,
            p.v.gib if p.v else None,
            p.kv.gib if p.kv else None,
            p.dtype,
            tuple(ranks),
            tuple(sorted(lines)),
        )
        for role, p, ranks, lines in groups.values()
    )
    return KVPoolsLogged(main, pools)
