"""Model stage, building one rank: its models (target, draft), pools and captures while the
builder (logmem.model.build) reads; frozen into logmem.model.records.Rank at the end."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import field

from logmem.frozen import mutable
from logmem.model.captures import GraphB, open_graph
from logmem.model.records import Model, Rank
from logmem.parse import events as ev
from logmem.sglang.capture_lists import ListContext


@mutable
class ModelB:
    role: str
    weights_begin: ev.WeightsBegin | None = None
    weights_end: ev.WeightsEnd | None = None
    pools: list[ev.Event] = field(default_factory=list)
    pool_end: ev.PoolEnd | None = None
    kv_dtype: ev.KVDtype | None = None
    uninitialized: ev.WeightsUninitialized | None = None
    committed: ev.WeightsCommitted | None = None

    def freeze(self, announced: ev.KVDtype | None) -> Model:
        return Model(
            self.role,
            self.weights_begin,
            self.weights_end,
            tuple(self.pools),
            self.pool_end,
            self.kv_dtype or announced,
            self.uninitialized,
            self.committed,
        )

    @property
    def loading(self) -> bool:
        return self.weights_end is None


@mutable
class RankB:
    label: str
    tags: tuple[tuple[str, int], ...]
    init_begin: ev.InitBegin | None = None
    init_end: ev.InitEnd | None = None
    models: list[ModelB] = field(default_factory=list)
    graphs: list[GraphB] = field(default_factory=list)
    events: list[ev.Event] = field(default_factory=list)
    summary: ev.Summary | None = None
    printed_sizes: bool = False
    bars: int = 0

    def open_graph(self) -> GraphB | None:
        return open_graph(self.graphs)

    def close_graphs(self, by: ev.Event) -> None:
        for g in self.graphs:
            if g.is_open:
                g.closed_by = by

    def new_model(self) -> ModelB:
        # A later model is the draft while building; freeze() names it neutrally when the
        # launch shows no draft (draft_evidence).
        m = ModelB("target" if not self.models else "draft")
        self.models.append(m)
        return m

    def model_loading(self) -> ModelB:
        """The model whose weights are loading: the first without its Load weight end."""
        return next((m for m in self.models if m.loading), None) or self.new_model()

    def model_post_capture(self, draft: bool) -> ModelB:
        """The model a post-capture KV line (or a weight commit) belongs to: printed after the
        graphs, when every model's pools are closed. The target's line is the first model's;
        a draft's line (sglang 0.5.22 on) the second model's, else the first's (a draft pool
        that aliases the target's is finalized as the target: kv_pool_runtime.py)."""
        if not self.models:
            return self.new_model()
        if draft and len(self.models) > 1:
            return self.models[1]
        return self.models[0]

    def model_for_pools(self) -> ModelB:
        for m in self.models:
            if m.pool_end is None:
                return m
        return self.new_model()

    def freeze(
        self, ctx: ListContext, kv_dtypes: dict[str, ev.KVDtype], draft: bool = True
    ) -> Rank:
        """``kv_dtypes``: the launch's "Using KV cache dtype" line per model role
        (launch_kv_dtypes); ``draft``: the launch shows a draft model (draft_evidence), else
        a later model is named "second", never "draft"."""
        ctx = dataclasses.replace(ctx, draft_loaded=len(self.models) > 1)
        models = [m.freeze(kv_dtypes.get(m.role)) for m in self.models]
        if not draft:
            models = [
                m if m.role == "target" else dataclasses.replace(m, role="second") for m in models
            ]
        return Rank(
            self.label,
            self.tags,
            self.init_begin,
            self.init_end,
            tuple(models),
            tuple(g.freeze(ctx) for g in self.graphs),
            tuple(self.events),
            self.summary,
            self.bars > 0,
        )


def bar_preference(r: RankB) -> tuple[int, int]:
    """Which rank prints bars: the one that printed the sizes list, else TP rank 0 (DP0 first)."""
    tp = next((n for t, n in r.tags if t == "TP"), 0)
    dp = next((n for t, n in r.tags if t == "DP"), 0)
    return (0 if r.printed_sizes else 1, 0 if tp == 0 and dp == 0 else (1 if tp == 0 else 2))


def draft_evidence(ranks: Iterable[RankB], args: dict[str, object] | None) -> bool:
    """The launch has a draft model: server_args sets a speculative algorithm, a rank
    captured a draft graph, or a rank's later model is another model type than its first.
    A second load of the same model with none of these (lines out of order, two start-ups
    read as one) is not called a draft."""
    if args and args.get("speculative_algorithm"):
        return True
    for r in ranks:
        if any("draft" in g.name for g in r.graphs):
            return True
        types = {m.weights_end.model_type for m in r.models if m.weights_end is not None}
        if len(types) > 1:
            return True
    return False


def launch_kv_dtypes(ranks: Iterable[RankB]) -> dict[str, ev.KVDtype]:
    """Per model role, the first "Using KV cache dtype" line any rank of the launch printed:
    SGLang prints it on TP0 only, and every rank allocates the same kv_cache_dtype."""
    out: dict[str, ev.KVDtype] = {}
    for r in ranks:
        for m in r.models:
            if m.kv_dtype is not None:
                out.setdefault(m.role, m.kv_dtype)
    return out
