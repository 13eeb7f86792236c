"""KV sizing and the graph reserve: SGLang's rules (logmem.sglang.rules) applied to a launch."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from logmem.model.records import Launch
from logmem.parse import events as ev
from logmem.sglang import rules


@dataclass(frozen=True)
class Sizing:
    """SGLang's KV budget rule (rules.kv_budget_bytes) recomputed from the printed readings."""

    mem_fraction_static: float
    pre_load_bytes: int  # P: min over ranks of the free memory before weights load
    pre_load_rank: str
    after_weights_bytes: int  # A: min over ranks of rules.after_weights_reading
    rest_bytes: int  # rules.kv_budget_bytes(A, P, mfs)
    logged_pool_bytes: int | None  # KV (+ Mamba) pools of the target, as logged
    kv_bytes: int | None
    kv_tokens: int | None
    bytes_per_token: float | None  # pool bytes / #tokens from the printed (rounded) sizes

    @property
    def bytes_per_token_range(self) -> tuple[int, int] | None:
        """Bytes per token consistent with the printed pool sizes (each +-0.005 GiB)."""
        return rules.bytes_per_token_range(self.kv_bytes, self.kv_tokens, self.kv_parts)

    @property
    def likely_bytes_per_token(self) -> int | None:
        """The cell size in that range divisible by the largest power of two (cells are
        head_dim x heads x layers x dtype bytes, so a round number), when it is unique."""
        rng = self.bytes_per_token_range
        return _roundest(rng) if rng else None

    kv_parts: int = 1  # how many printed sizes make up kv_bytes (2 for K+V)
    pools: tuple[
        tuple[str, int, int | None], ...
    ] = ()  # (label, bytes, tokens) when several KV pools


@dataclass(frozen=True)
class GraphReserve:
    """The graph reserve SGLang's default mem_fraction_static set aside (reference 12.3)."""

    reserve_bytes: int
    terms: tuple[rules.Reserve, ...]
    measured_bytes: int | None  # what the captures used on the rank that prints bars


def arg_number(args: dict[str, Any], key: str, lo: float, hi: float) -> float | None:
    """A numeric server_args value in a sane range (logs are untrusted: no bools, inf or 1e999)."""
    v = args.get(key)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    try:
        f = float(v)
    except OverflowError:
        return None
    return f if math.isfinite(f) and lo <= f <= hi else None


def sizing(launch: Launch) -> Sizing | None:
    mfs = arg_number(launch.args, "mem_fraction_static", 1e-6, 1.0)
    readings = rules.budget_readings(launch)
    pre_bytes, pre_rank = readings.pre_load_bytes, readings.pre_load_rank
    post_bytes = readings.after_weights_bytes
    if mfs is None or pre_bytes is None or pre_rank is None or post_bytes is None:
        return None
    rest = rules.kv_budget_bytes(post_bytes, pre_bytes, mfs)
    first_rank = next((r for r in launch.ranks if r.target and r.target.kv_pools), None)
    kv = first_rank.target.kv_pools if first_rank and first_rank.target else ()
    mamba = first_rank.target.mamba_pools if first_rank and first_rank.target else ()
    logged = sum(p.total_bytes for p in kv) + sum(p.total_bytes for p in mamba) if kv else None
    # With a sliding-window model the first KV line is the SWA pool and the second the full
    # pool (reference 4.3): max_total_num_tokens and the per-token cost are the full pool's.
    swa = (
        first_rank is not None
        and first_rank.target is not None
        and any(isinstance(p, ev.SWASummary) for p in first_rank.target.pools)
    )
    main = kv[1] if swa and len(kv) >= 2 else (kv[0] if kv else None)
    tokens = main.tokens if main else None
    if tokens is None and launch.summary is not None and len(kv) == 1:
        tokens = launch.summary.max_total_num_tokens  # Jan 2025 KV lines print no #tokens
    bpt = main.total_bytes / tokens if main and tokens else None
    parts = 1 if main is not None and main.kv is not None else 2
    labels = ("SWA", "full") if swa and len(kv) >= 2 else ()
    per_pool = (
        tuple(
            (labels[i] if i < len(labels) else f"pool {i + 1}", p.total_bytes, p.tokens)
            for i, p in enumerate(kv)
        )
        if len(kv) > 1
        else ()
    )
    return Sizing(
        float(mfs),
        pre_bytes,
        pre_rank,
        post_bytes,
        rest,
        logged,
        main.total_bytes if main else None,
        tokens,
        bpt,
        parts,
        per_pool,
    )


def _roundest(rng: tuple[int, int]) -> int | None:
    lo, hi = rng
    if hi < lo or hi <= 0:
        return None
    step = 1 << max(hi.bit_length(), 1)
    while step >= 64:
        first = -(-lo // step) * step
        if first <= hi:
            return first if first + step > hi else None
        step //= 2
    return None


def graph_reserve(launch: Launch, measured: int | None) -> GraphReserve | None:
    """SGLang's reserve_for_graph_mb() and friends, from the resolved server_args."""
    terms = rules.graph_reserve(launch.args)
    if terms is None:
        return None
    return GraphReserve(sum(t.bytes for t in terms), terms, measured)


def req_to_token(launch: Launch) -> tuple[int, int, int] | None:
    """(requests, context, bytes) of the request-to-token table, from the summary or server_args."""
    s = launch.summary
    n_req = s.get_int("max_running_requests") if s else None
    ctx = s.get_int("context_len") if s else None
    args = launch.args
    if n_req is None and isinstance(args.get("max_running_requests"), int):
        n_req = args["max_running_requests"]
    if ctx is None and isinstance(args.get("context_length"), int):
        ctx = args["context_length"]
    if n_req is None or ctx is None:
        return None
    return n_req, ctx, rules.req_to_token_bytes(n_req, ctx)
