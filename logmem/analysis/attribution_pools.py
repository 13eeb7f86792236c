"""The pool step of a rank's ledger: the KV (and Mamba) lines, the request-to-token table, the
KV cache of a step that printed no KV line, and a remainder named by what it can be.

Part of the attribution stage (logmem.analysis.attribution builds the phases).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from logmem.analysis.ledger import Cause, remainder
from logmem.analysis.sizing import Sizing, req_to_token, rule_fits_step
from logmem.model.records import Launch, Model
from logmem.parse import events as ev
from logmem.sglang import rules
from logmem.units import GIB, format_gib


def _g(n: int | None) -> str:
    return format_gib(n)


def role_prefix(m: Model | None) -> str:
    return "draft " if m is not None and m.role == "draft" else ""


@dataclass(frozen=True)
class KVHint:
    """What the launch says about a pool step that printed no KV line: the token count
    (the summary's max_total_num_tokens, or another rank's KV line) and the full pool's bytes
    per token from a KV line elsewhere (another rank, or a caller's --model-config)."""

    tokens: int | None = None
    cell_bytes: float | None = None
    cell_source: str = ""


def kv_hint(launch: Launch, sz: Sizing | None) -> KVHint:
    tokens = launch.summary.max_total_num_tokens if launch.summary else None
    # A rank whose target printed one KV pool (a sliding-window model's first line is its SWA
    # pool, whose cell is not the full pool's).
    kv = next(
        (
            r.target.kv_pools[0]
            for r in launch.ranks
            if r.target and len(r.target.kv_pools) == 1 and r.target.kv_pools[0].tokens
        ),
        None,
    )
    if kv is None:
        return KVHint(tokens)
    cell = sz.full_cell_bytes if sz is not None and sz.kv_tokens == kv.tokens else None
    rank = kv.rank or "the GPU"
    return KVHint(
        tokens or kv.tokens,
        cell or kv.total_bytes / kv.tokens if kv.tokens else None,
        f"{rank}'s KV line, line {kv.source.line_no}",
    )


# More than this left in a pool step is never "small pools": the request-to-token table
# alone is 1.00 GiB at 2048 requests of a 128k context (rules.req_to_token_bytes).
_SMALL_POOLS_MAX = GIB


def _no_kv_line(
    delta: int,
    table: int,
    known_table: bool,
    sz: Sizing | None,
    hint: KVHint,
    lines: tuple[int, int],
) -> list[Cause]:
    """The KV cause of a target pool step that printed no KV line (E0/E1, or a filtered log)."""
    n = hint.tokens
    what = f"KV cache for {n:,} tokens" if n else "KV pool"
    if n and hint.cell_bytes and n * hint.cell_bytes <= delta - table:
        return [
            Cause(
                f"{what} (no KV line)",
                round(n * hint.cell_bytes),
                "estimated",
                (),
                f"{n:,} tokens x {hint.cell_bytes:,.0f} B per token ({hint.cell_source})",
            )
        ]
    if sz is not None and rule_fits_step(sz.rest_bytes, delta, table if known_table else None):
        rng = sz.bytes_per_token_range
        per = f"; {rng[0]:,} to {rng[1]:,} bytes per token (derived)" if n and rng else ""
        return [
            Cause(
                f"{what} (rule, no KV line)",
                sz.rest_bytes,
                "estimated",
                (),
                f"{_g(sz.after_weights_bytes)} - {_g(sz.pre_load_bytes)} x "
                f"(1 - {sz.rule_mfs:.4g}){per}",
            )
        ]
    if n and delta - table > 0:
        x = delta - table
        unknown = "" if known_table else "; includes the request-to-token table, not printed"
        return [
            Cause(
                f"{what} (no KV line)" + ("" if known_table else " + unlogged pools"),
                x,
                "derived",
                lines,
                f"about {_g(x)} GiB / {n:,} = {x / n:,.0f} bytes per token (derived{unknown})",
            )
        ]
    return []


def _pool_rest_name(rest: str, amount: int, table_known: bool, target: bool) -> str:
    """What the pool step's remainder is called: never 'small pools' above 1 GiB."""
    if amount <= _SMALL_POOLS_MAX or not rest.startswith("unlogged"):
        return rest
    ws = " + workspaces" if "workspaces" in rest else ""
    if not target:  # a draft shares the target's request-to-token table
        return f"unlogged: draft pools not printed{ws}"
    if table_known:
        return f"unlogged: pools{ws} beyond the request-to-token table"
    return f"unlogged: likely the request-to-token table (size not printed){ws}"


def pool_causes(
    pools: Sequence[ev.Event],
    model: Model | None,
    launch: Launch,
    delta: int,
    lines: tuple[int, int],
    sz: Sizing | None = None,
    rest: str = "unlogged (small pools, allocator)",
    hint: KVHint | None = None,
) -> list[Cause]:
    causes: list[Cause] = []
    summary_tokens = launch.summary.max_total_num_tokens if launch.summary else None
    kvs = [p for p in pools if isinstance(p, ev.KVPool)]
    swa = next((p for p in pools if isinstance(p, ev.SWASummary)), None)
    printed = 2  # the two readings around the step, then every printed pool size
    for i, kvp in enumerate(kvs):
        label = "KV pool"
        if (
            swa is not None
            and len(kvs) >= 2
            and model is not None
            and model.role == "target"
            and i < 2
        ):
            label = "SWA KV pool" if i == 0 else "full-attention KV pool"
        what = "KV" if kvp.kv is not None else "K+V"
        printed += 1 if kvp.kv is not None else 2
        tok = f", {kvp.tokens:,} tokens" if kvp.tokens is not None else ""
        if kvp.tokens is None and summary_tokens is not None and len(kvs) == 1:
            tok = f"; {summary_tokens:,} tokens per summary"
        causes.append(
            Cause(
                f"{role_prefix(model)}{label} ({what}{tok})",
                kvp.total_bytes,
                "logged",
                (kvp.source.line_no,),
            )
        )
    for p in pools:
        if isinstance(p, ev.MambaPool):
            printed += 2
            causes.append(
                Cause(
                    f"{role_prefix(model)}Mamba state ({p.max_size} slots)",
                    p.total_bytes,
                    "logged",
                    (p.source.line_no,),
                )
            )
    target = model is None or model.role == "target"
    req = req_to_token(launch) if target else None
    table = req[2] if req is not None else 0
    if target and not kvs and not any(isinstance(p, ev.MambaPool) for p in pools):
        # SGLang before Feb 2025 logs no KV line (and filtered logs drop it).
        causes.extend(_no_kv_line(delta, table, req is not None, sz, hint or KVHint(), lines))
    if req is not None:
        n_req, ctx, amount = req
        causes.append(
            Cause("request-to-token table", amount, "estimated", (), f"({n_req} + 1) x {ctx} x 4 B")
        )
    left = delta - sum(c.bytes for c in causes)
    return remainder(
        delta,
        causes,
        _pool_rest_name(rest, left, req is not None, target),
        lines,
        # One print unit more for the estimated causes (their inputs are printed figures too).
        tolerance=rules.printed_sum_error_bytes(printed + 1),
    )
