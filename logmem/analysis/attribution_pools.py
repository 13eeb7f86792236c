"""The pool step of a rank's ledger: the KV (and Mamba) lines, the request-to-token table, the
KV cache of a step that printed no KV line, and a remainder named by what it can be.

Part of the attribution stage (logmem.analysis.attribution builds the phases).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import replace

from logmem.analysis.config_kv import ConfigKV
from logmem.analysis.ledger import (
    Cause,
    CellOrigin,
    CellSource,
    Facts,
    KVLabel,
    What,
    remainder,
)
from logmem.analysis.sizing import (
    Sizing,
    line_cell,
    req_to_token,
    req_to_token_padded,
    rule_fits_step,
)
from logmem.frozen import frozen
from logmem.model.records import Launch, Model, swa_plan, unified_sub_pools
from logmem.parse import events as ev
from logmem.sglang import rules, sharding
from logmem.units import GIB


def is_draft(m: Model | None) -> bool:
    return m is not None and m.role == "draft"


def is_second(m: Model | None) -> bool:
    """A later model the launch shows no draft for (logmem.model.rank_build.draft_evidence)."""
    return m is not None and m.role == "second"


@frozen
class KVHint:
    """What the launch says about a pool step that printed no KV line: the token count
    (the summary's max_total_num_tokens, or another rank's KV line) and the full pool's bytes
    per token from a KV line elsewhere (another rank or launch) or a caller's --model-config."""

    tokens: int | None = None
    cell_bytes: float | None = None
    source: CellSource = CellSource(CellOrigin.NONE)
    # The whole bytes per token print rounding allows the cell (None: exact, the config's).
    cell_range: tuple[int, int] | None = None

    @property
    def origin(self) -> CellOrigin:
        return self.source.origin

    @property
    def kv_bytes(self) -> int | None:
        """The KV cache of ``tokens`` cells, when both are known."""
        if not self.tokens or not self.cell_bytes:
            return None
        return round(self.tokens * self.cell_bytes)

    def fits(self, room: int) -> bool:
        """Whether the KV cache fits a step's ``room`` (its drop minus the known request-to-token
        table): the smallest cell print rounding allows, against the room plus what the step's
        two printed readings can be off by."""
        kv = self.kv_bytes
        if kv is None or self.tokens is None:
            return False
        low = self.tokens * self.cell_range[0] if self.cell_range else kv
        return low <= room + rules.printed_sum_error_bytes(2)

    def misfit(self, room: int) -> bool:
        """A known KV cache that the step cannot hold: the sources disagree."""
        return self.kv_bytes is not None and not self.fits(room)


def _one_kv_line(launch: Launch, tokens: int | None) -> ev.KVPool | None:
    """The first KV line of a rank whose target printed one KV pool (a sliding-window model's
    first line is its SWA pool, whose cell is not the full pool's) and a token count, or
    ``tokens`` stands for it (Jan 2025 KV lines print none: the summary's is that pool's)."""
    return next(
        (
            kv
            for r in launch.ranks
            if r.target and len(r.target.kv_pools) == 1
            for kv in r.target.kv_pools
            if kv.total_bytes and (kv.tokens or tokens)
        ),
        None,
    )


def kv_hint(
    launch: Launch,
    sz: Sizing | None,
    peers: Sequence[Launch] = (),
    config: ConfigKV | None = None,
) -> KVHint:
    """The hint for ``launch``'s ranks: another rank's KV line, else that of another launch in
    ``peers`` (every launch of the input) with the same KV settings, else ``config``'s cell
    (a caller's --model-config, logmem.analysis.config_kv)."""
    tokens = launch.summary.max_total_num_tokens if launch.summary else None
    kv = _one_kv_line(launch, tokens)
    if kv is None:
        if not tokens:
            return KVHint(tokens)
        return _launch_hint(launch, peers, tokens) or _config_hint(config, tokens)
    n = kv.tokens or tokens
    cell = sz.full_cell_bytes if sz is not None and sz.kv_tokens == n else None
    got = line_cell(kv, n, rules.page_size(launch.args))
    return KVHint(
        tokens or n,
        cell or (got[0] if got else None),
        CellSource(CellOrigin.RANK, kv.rank, kv.source.line_no),
        got[1] if got else None,
    )


def _launch_hint(launch: Launch, peers: Sequence[Launch], tokens: int) -> KVHint | None:
    """The cell of the nearest other launch (a restart first) whose server_args print the same
    settings of the KV cell (sharding.KV_CELL_SETTINGS say which and why) and a KV line."""
    if not launch.server_args:
        return None  # without both dumps nothing shows they are one model on one layout
    others = sorted(
        (p for p in peers if p is not launch), key=lambda p: abs(p.index - launch.index)
    )
    for other in others:
        if not other.server_args:
            continue
        if sharding.kv_cell_settings_differ(launch.args, other.args):
            continue
        summary = other.summary.max_total_num_tokens if other.summary else None
        kv = _one_kv_line(other, summary)
        if kv is None:
            continue
        n = kv.tokens or summary
        got = line_cell(kv, n, rules.page_size(other.args))
        if got is None or n is None:
            continue
        other_file = None if kv.source.path in launch.paths else os.path.basename(kv.source.path)
        source = CellSource(
            CellOrigin.LAUNCH,
            kv.rank,
            kv.source.line_no,
            launch=other.index,
            file=other_file,
            total_bytes=kv.total_bytes,
            tokens=n,
        )
        return KVHint(tokens, got[0], source, got[1])
    return None


def _config_hint(config: ConfigKV | None, tokens: int) -> KVHint:
    """The --model-config estimate of the full pool's cell for this launch's layout."""
    if config is None or not config.cell_bytes:
        return KVHint(tokens)
    source = CellSource(
        CellOrigin.CONFIG,
        model=config.model,
        kv_dtype=config.kv_dtype,
        attn_tp=config.attn_tp,
    )
    return KVHint(tokens, float(config.cell_bytes), source)


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
    kv = hint.kv_bytes
    if n and hint.cell_bytes and kv is not None and hint.fits(delta - table):
        return [
            Cause(
                What.KV_FROM_CELL,
                kv,
                "estimated",
                (),
                Facts(tokens=n, cell_bytes=hint.cell_bytes, cell_source=hint.source),
            )
        ]
    # A cell that does not fit is not forced, nor hidden behind the rule: the step's own
    # figure stands, and a finding gives both (findings_sizing.kv_sources_disagree).
    if (
        sz is not None
        and not hint.misfit(delta - table)
        and rule_fits_step(sz.rest_bytes, delta, table if known_table else None)
    ):
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


def _pool_rest(
    rest: What, amount: int, table_known: bool, model: Model | None
) -> tuple[What, Facts]:
    """What the pool step's remainder is: never small pools above 1 GiB."""
    small = (What.SMALL_POOLS, What.SMALL_POOLS_AND_WORKSPACES)
    if amount <= _SMALL_POOLS_MAX or rest not in small:
        return rest, Facts()
    ws = Facts(workspaces=rest is What.SMALL_POOLS_AND_WORKSPACES, second=is_second(model))
    if not (model is None or model.role == "target"):
        # A later model (a draft, or a second one not known to be a draft) shares the
        # target's request-to-token table.
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
    deferred: bool = False,
) -> list[Cause]:
    """The pool step's causes. ``deferred``: post-capture KV sizing reserved the KV pool here
    as address space (its KV line, if any, was left out by the caller): no KV cache is derived
    for this step, and its remainder also holds the pool's first pages."""
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
        # The sub-pool and split lines are the model's, not the step's (attribution._readings).
        unified, swa_tokens = _unified(kvp, model.pools if model is not None else pools)
        causes.append(
            Cause(
                What.KV_POOL,
                kvp.total_bytes,
                "logged",
                (kvp.source.line_no,),
                Facts(
                    draft=is_draft(model),
                    second=is_second(model),
                    kv_label=label,
                    one_buffer=kvp.kv is not None,
                    tokens=summary_tokens if per_summary else kvp.tokens,
                    summary_tokens=per_summary,
                    swa_tokens=swa_tokens,
                    unified=unified,
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
                    Facts(draft=is_draft(model), second=is_second(model), slots=p.max_size),
                )
            )
    target = model is None or model.role == "target"
    req = req_to_token(launch) if target else None
    table = req[2] if req is not None else 0
    if target and not deferred and not kvs and not any(isinstance(p, ev.MambaPool) for p in pools):
        # SGLang before Feb 2025 logs no KV line (and filtered logs drop it).
        causes.extend(_no_kv_line(delta, table, req is not None, sz, hint or KVHint(), lines))
    if req is not None:
        n_req, ctx, amount = req
        pad = req_to_token_padded(launch)
        facts = Facts(n_req=n_req, ctx=ctx, pad_row=pad)
        causes.append(Cause(What.REQ_TABLE, amount, "estimated", (), facts))
    left = delta - sum(c.bytes for c in causes)
    what, facts = _pool_rest(rest, left, req is not None, model)
    if deferred:
        facts = replace(facts, kv_deferred=True)
    return remainder(
        delta,
        causes,
        what,
        lines,
        facts,
        # One print unit more for the estimated causes (their inputs are printed figures too).
        tolerance=rules.printed_sum_error_bytes(printed + 1),
    )


def post_capture_causes(
    pools: Sequence[ev.Event], model: Model | None, delta: int, lines: tuple[int, int]
) -> list[Cause]:
    """The step from the last capture's reading to the post-capture KV line (sglang 0.5.17-
    0.5.23, kv_pool_runtime.py ``compute_post_capture_kv_resize``): the KV pool (and, 0.5.22 on,
    a draft's pool) backed after the graphs, as logged. Its KV size counts every backed page,
    the first ones too, which the reservation backed before the graphs (kv_vmm_backing.py
    ``ensure_prefix``): so the remainder may be negative by those, and positive by what ran
    between the capture and the sizing (0.5.22 on: the sampling warm-up, scheduler.py
    ``init_model_worker``)."""
    causes: list[Cause] = []
    printed = 2
    for p in pools:
        if not isinstance(p, ev.PostCaptureKV):
            continue
        printed += 1
        owner_draft = p.draft or is_draft(model)
        split = next(
            (
                e
                for e in reversed(model.pools if model is not None else pools)
                if isinstance(e, ev.PostCaptureSplit) and e.source.line_no < p.source.line_no
            ),
            None,
        )
        causes.append(
            Cause(
                What.KV_POOL,
                p.total_bytes,
                "logged",
                (p.source.line_no,),
                Facts(
                    draft=owner_draft,
                    second=is_second(model) and not p.draft,
                    one_buffer=True,
                    tokens=p.tokens,
                    after_capture=True,
                    swa_tokens=split.swa_tokens
                    if split is not None and split.swa_tokens and not p.draft
                    else None,
                ),
            )
        )
    cl = remainder(
        delta,
        causes,
        What.AFTER_CAPTURE_REST,
        lines,
        tolerance=rules.printed_sum_error_bytes(printed),
    )
    # Free memory that rose beyond the causes is most likely the reservation's first pages,
    # counted in KV size but taken before the graphs: neither a release nor a consumer.
    return [
        replace(c, what=What.UNATTRIBUTED, facts=Facts(after_capture=True))
        if c.what is What.GIVEN_BACK
        else c
        for c in cl
    ]


def _unified(kvp: ev.KVPool, pools: Sequence[ev.Event]) -> tuple[tuple[str, ...], int | None]:
    """A unified pool's sub-pool names (full first) and its sliding-window tokens (the
    'Use sliding window memory pool' split), else ((), None)."""
    if not isinstance(kvp, ev.UnifiedAllocated):
        return (), None
    names = tuple(p.name for p in unified_sub_pools(pools))
    plan = swa_plan(pools)
    return names, plan.swa_tokens if plan is not None and "swa" in names else None
