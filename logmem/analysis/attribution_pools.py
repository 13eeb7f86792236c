"""The pool step of a rank's ledger: the KV (and Mamba) lines, the request-to-token table, the
KV cache of a step that printed no KV line, and a remainder named by what it can be.

Part of the attribution stage (logmem.analysis.attribution builds the phases).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from logmem.analysis.ledger import Cause, Facts, KVLabel, What, remainder
from logmem.analysis.sizing import Sizing, req_to_token, rule_fits_step
from logmem.model.records import Launch, Model
from logmem.parse import events as ev
from logmem.sglang import rules
from logmem.units import GIB


def is_draft(m: Model | None) -> bool:
    return m is not None and m.role == "draft"


@dataclass(frozen=True)
class KVHint:
    """What the launch says about a pool step that printed no KV line: the token count
    (the summary's max_total_num_tokens, or another rank's KV line) and the full pool's bytes
    per token from a KV line elsewhere (another rank, or a caller's --model-config)."""

    tokens: int | None = None
    cell_bytes: float | None = None
    cell_rank: str | None = None  # the KV line the cell comes from: its rank and line
    cell_line: int | None = None


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
    return KVHint(
        tokens or kv.tokens,
        cell or kv.total_bytes / kv.tokens if kv.tokens else None,
        kv.rank,
        kv.source.line_no,
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
    if n and hint.cell_bytes and n * hint.cell_bytes <= delta - table:
        return [
            Cause(
                What.KV_FROM_CELL,
                round(n * hint.cell_bytes),
                "estimated",
                (),
                Facts(
                    tokens=n,
                    cell_bytes=hint.cell_bytes,
                    cell_rank=hint.cell_rank,
                    cell_line=hint.cell_line,
                ),
            )
        ]
    if sz is not None and rule_fits_step(sz.rest_bytes, delta, table if known_table else None):
        rng = sz.bytes_per_token_range
        return [
            Cause(
                What.KV_FROM_RULE,
                sz.rest_bytes,
                "estimated",
                (),
                Facts(
                    tokens=n,
                    after_weights_bytes=sz.after_weights_bytes,
                    pre_load_bytes=sz.pre_load_bytes,
                    mfs=sz.rule_mfs,
                    per_token=(rng[0], rng[1]) if n and rng else None,
                ),
            )
        ]
    if n and delta - table > 0:
        return [
            Cause(
                What.KV_FROM_DROP,
                delta - table,
                "derived",
                lines,
                Facts(tokens=n, table_known=known_table),
            )
        ]
    return []


def _pool_rest(rest: What, amount: int, table_known: bool, target: bool) -> tuple[What, Facts]:
    """What the pool step's remainder is: never small pools above 1 GiB."""
    small = (What.SMALL_POOLS, What.SMALL_POOLS_AND_WORKSPACES)
    if amount <= _SMALL_POOLS_MAX or rest not in small:
        return rest, Facts()
    ws = Facts(workspaces=rest is What.SMALL_POOLS_AND_WORKSPACES)
    if not target:  # a draft shares the target's request-to-token table
        return What.DRAFT_POOLS, ws
    return (What.BEYOND_TABLE if table_known else What.LIKELY_TABLE), ws


def pool_causes(
    pools: Sequence[ev.Event],
    model: Model | None,
    launch: Launch,
    delta: int,
    lines: tuple[int, int],
    sz: Sizing | None = None,
    rest: What = What.SMALL_POOLS,
    hint: KVHint | None = None,
) -> list[Cause]:
    causes: list[Cause] = []
    summary_tokens = launch.summary.max_total_num_tokens if launch.summary else None
    kvs = [p for p in pools if isinstance(p, ev.KVPool)]
    swa = next((p for p in pools if isinstance(p, ev.SWASummary)), None)
    printed = 2  # the two readings around the step, then every printed pool size
    for i, kvp in enumerate(kvs):
        label = KVLabel.KV
        if (
            swa is not None
            and len(kvs) >= 2
            and model is not None
            and model.role == "target"
            and i < 2
        ):
            label = KVLabel.SWA if i == 0 else KVLabel.FULL
        printed += 1 if kvp.kv is not None else 2
        per_summary = kvp.tokens is None and summary_tokens is not None and len(kvs) == 1
        causes.append(
            Cause(
                What.KV_POOL,
                kvp.total_bytes,
                "logged",
                (kvp.source.line_no,),
                Facts(
                    draft=is_draft(model),
                    kv_label=label,
                    one_buffer=kvp.kv is not None,
                    tokens=summary_tokens if per_summary else kvp.tokens,
                    summary_tokens=per_summary,
                ),
            )
        )
    for p in pools:
        if isinstance(p, ev.MambaPool):
            printed += 2
            causes.append(
                Cause(
                    What.MAMBA,
                    p.total_bytes,
                    "logged",
                    (p.source.line_no,),
                    Facts(draft=is_draft(model), slots=p.max_size),
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
        causes.append(Cause(What.REQ_TABLE, amount, "estimated", (), Facts(n_req=n_req, ctx=ctx)))
    left = delta - sum(c.bytes for c in causes)
    what, facts = _pool_rest(rest, left, req is not None, target)
    return remainder(
        delta,
        causes,
        what,
        lines,
        facts,
        # One print unit more for the estimated causes (their inputs are printed figures too).
        tolerance=rules.printed_sum_error_bytes(printed + 1),
    )
