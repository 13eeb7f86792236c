"""The sentence of an excerpt's KV lines (logmem.analysis.kv_logged): each pool as printed,
with the ranks and lines that print it."""

from __future__ import annotations

from logmem.analysis.kv_logged import KVPoolsLogged, LoggedKVPool
from logmem.report.causes import on_gpu
from logmem.report.finding_base import finding_text


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def _lines(lines: tuple[int, ...]) -> str:
    shown = [str(n) for n in lines[:6]] + ([f"{len(lines) - 6} more"] if len(lines) > 6 else [])
    return f"line{'s' if len(lines) > 1 else ''} {_and(shown)}"


def _pool(p: LoggedKVPool) -> str:
    whose = "the draft model's " if p.role == "draft" else ""
    name = f"{whose}{p.label + ' ' if p.label else ''}KV pool"
    size = []
    if p.tokens is not None:
        size.append(f"{p.tokens:,} tokens")
    if p.kv_gib is not None:
        size.append(f"KV {p.kv_gib:.2f} GiB")
    elif p.k_gib is not None and p.v_gib is not None:
        size.append(f"K {p.k_gib:.2f} + V {p.v_gib:.2f} GiB")
    elif p.k_gib is not None:
        size.append(f"K {p.k_gib:.2f} GiB")
    if p.dtype:
        size.append(p.dtype)
    ranks = _and([on_gpu(r) for r in p.ranks])
    each = "each of " if len(p.ranks) > 1 else ""
    return f"{name} {', '.join(size) or '(no size printed)'} on {each}{ranks} ({_lines(p.lines)})"


@finding_text.register
def _(f: KVPoolsLogged) -> str:
    return (
        f"KV cache as the log states it, with no pool step in the ledger of {on_gpu(f.rank)} to "
        "show it (the log has no free-memory readings on both sides of that rank's pools): "
        f"{'; '.join(_pool(p) for p in f.pools)}."
    )
