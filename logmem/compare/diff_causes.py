"""What else changed beside the settings a diff table shows, where it bears on a change.

* ``env_changes``: the communication environment each log echoed (the variables that size a
  communication cell, sglang.comm.COMM_ENV_KEYS), where the two differ;
* ``first_bucket_causes``: the first bucket of a launch's first capture also holds the
  communication buffers allocated on first use (peer buffers, the DeepEP buffer), so where
  its graph memory changes while those settings differ too, the change is not max bs's alone;
* ``weights_cause``: with DP attention the attention TP is tp_size / dp_size, so the same
  checkpoint at the same tp_size loads a larger share of the attention weights per rank when
  dp_size grows (a full replica at attention TP 1).

Only facts both logs print are used; the size of a share is never computed here.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from logmem.analysis.comm_inputs import echoed_env
from logmem.analysis.weights_loaded import weights_not_loaded
from logmem.compare import notes as cn
from logmem.compare.args import ArgsComparison
from logmem.compare.slope import Slope
from logmem.frozen import frozen
from logmem.model.records import Launch
from logmem.sglang.comm import COMM_ENV_KEYS, layout_from_args
from logmem.sglang.default_mfs import DefaultMfs
from logmem.sglang.rules import DIFFERENCE_RESOLUTION_BYTES

if TYPE_CHECKING:
    from logmem.compare.diff_graphs import GraphChange

# server_args that decide which communication buffers a launch allocates, and their sizes.
COMM_ARG_KEYS = (
    "deepep_mode",
    "moe_a2a_backend",
    "ep_size",
    "tp_size",
    "dp_size",
    "enable_dp_attention",
)

# Other server_args that change what a rank's weights hold: named when they differ too.
WEIGHT_SHARE_KEYS = (
    "quantization",
    "dtype",
    "load_format",
    "ep_size",
    "moe_dense_tp_size",
    "enable_dp_lm_head",
    "pp_size",
)


@frozen
class EnvChange:
    key: str
    a: str | None  # None: the log echoed no value
    b: str | None
    line_a: int | None = None
    line_b: int | None = None


def env_changes(a: Launch, b: Launch) -> tuple[EnvChange, ...]:
    """The communication variables whose echoed values differ (one side unechoed included)."""
    ea, eb = echoed_env(a), echoed_env(b)
    out = []
    for key in COMM_ENV_KEYS:
        va, vb = ea.get(key), eb.get(key)
        if va is None and vb is None:
            continue
        if va is not None and vb is not None and va.value == vb.value:
            continue
        out.append(
            EnvChange(
                key,
                va.value if va else None,
                vb.value if vb else None,
                va.line if va else None,
                vb.line if vb else None,
            )
        )
    return tuple(out)


def first_bucket_causes(
    graphs: Sequence[GraphChange], env: Sequence[EnvChange], args: ArgsComparison
) -> tuple[cn.FirstBucketShared, ...]:
    """For the first rank's first-captured graph whose largest bucket or total changed beyond
    print rounding: the communication settings that differ too (none differ: nothing)."""
    settings = tuple(
        (c.key, c.values[0], c.values[1]) for c in args.changed if c.key in COMM_ARG_KEYS
    )
    if not env and not settings or not graphs:
        return ()
    max_bs = next((c.values for c in args.changed if c.key == "cuda_graph_max_bs"), None)
    main = graphs[0].rank
    for g in graphs:
        if g.rank != main or 0 not in g.place or g.a is None or g.b is None:
            continue
        largest = (g.a.largest_bytes, g.b.largest_bytes)
        total = (g.a.total_bytes, g.b.total_bytes)
        moved = [
            (x, y)
            for x, y in (largest, total)
            if x is not None and y is not None and abs(y - x) > DIFFERENCE_RESOLUTION_BYTES
        ]
        if not moved:
            return ()
        bs = (max_bs[0], max_bs[1]) if max_bs is not None else None
        envs = tuple((e.key, e.a, e.b, e.line_a, e.line_b) for e in env)
        return (cn.FirstBucketShared(g.rank, g.graph, largest, total, envs, settings, bs),)
    return ()


def weights_cause(
    a: Launch, b: Launch, rank: str | None, change: tuple[int | None, int | None]
) -> cn.AttentionTPChanged | None:
    """The attention TP change behind a weights change: the same model path and tp_size, both
    logs printing dp_size and enable_dp_attention, and the weights moving the way the share
    does (a smaller attention TP: more weights per rank). None otherwise."""
    pa, pb = a.args.get("model_path"), b.args.get("model_path")
    if not (isinstance(pa, str) and isinstance(pb, str) and pa.rstrip("/") == pb.rstrip("/")):
        return None
    if any(k not in L.args for L in (a, b) for k in ("tp_size", "dp_size", "enable_dp_attention")):
        return None
    if a.args["tp_size"] != b.args["tp_size"]:
        return None
    wa, wb = change
    if rank is None or wa is None or wb is None or abs(wb - wa) <= DIFFERENCE_RESOLUTION_BYTES:
        return None
    ta, tb = layout_from_args(a.args).attn_tp, layout_from_args(b.args).attn_tp
    if ta == tb or (tb < ta) != (wb > wa):
        return None
    also = tuple(k for k in WEIGHT_SHARE_KEYS if a.args.get(k) != b.args.get(k))
    lm_head = a.args.get("enable_dp_lm_head") is True and b.args.get("enable_dp_lm_head") is True
    dp = (a.args.get("dp_size"), b.args.get("dp_size"))
    return cn.AttentionTPChanged(
        rank, (wa, wb), (ta, tb), int(a.args["tp_size"]), dp, lm_head, also
    )


def reserve_not_compared(
    found: Sequence[Slope], rules: Sequence[DefaultMfs | None]
) -> cn.NoReserveComparison | None:
    """Why a per-bs slope has no SGLang reserve beside it (None: it has one, or no such slope)."""
    per_bs = [s for s in found if s.rows_per_bs is not None]
    if not per_bs or any(s.heuristic is not None for s in per_bs):
        return None
    ra, rb = (d.rule if d else None for d in rules)
    pa, pb = (d.passed if d else None for d in rules)
    ma, mb = (d.matches if d else None for d in rules)
    return cn.NoReserveComparison((ra, rb), (pa, pb), (ma, mb))


_TAG = re.compile(r"([A-Z]+)(\d+)")


def pairing(
    pairs: Sequence[tuple[str, str]],
) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """Tags (TP, EP, ...) equal in every pair of labels, tags both labels carry that differ in
    some pair, and tags only one label of some pair carries."""
    same: list[str] = []
    differ: list[str] = []
    one: list[str] = []
    for x, y in pairs:
        tx, ty = dict(_TAG.findall(x)), dict(_TAG.findall(y))
        for t in dict.fromkeys([*tx, *ty]):
            bucket = one if (t in tx) != (t in ty) else same if tx.get(t) == ty.get(t) else differ
            if t not in bucket:
                bucket.append(t)
    odd = set(differ) | set(one)
    return (
        tuple(t for t in same if t not in odd),
        tuple(t for t in differ if t not in one),
        tuple(one),
    )


def uninitialized_weights(a: Launch, b: Launch, models_differ: bool) -> tuple[cn.Note, ...]:
    """A launch whose checkpoint left weights unfilled (the fact is on the model,
    ``uninitialized``): its weights figure is not a working model's, so a weights change is
    not the models' (or the settings') difference. One note per side and model role."""
    return tuple(
        cn.WeightsUninitializedIn(
            side,
            f.rank,
            f.line,
            f.role,
            f.listed.names,
            f.listed.complete,
            f.all_experts,
            models_differ,
            f.other_ranks,
        )
        for side, launch in (("A", a), ("B", b))
        for f in weights_not_loaded(launch)
    )
