"""SGLang's default-mem_fraction_static reserve: its activation and graph terms
(``server_args.py`` ``_handle_gpu_memory_settings`` and ``reserve_for_graph_mb()``, reference
12.3 b and c), split from logmem.sglang.rules (which re-exports every name here).

Like rules.py this imports nothing of the package at run time but ``logmem.units`` and
``logmem.frozen``.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum
from typing import Any

from logmem.frozen import frozen
from logmem.sglang.mfs_versions import ERA_B_FORMULA, NEWEST_FORMULA, FormulaForm
from logmem.units import MIB

ACTIVATION_MIB_PER_TOKEN = 1.5
"""MiB the default mem_fraction_static reserves per prefill-chunk token (``server_args.py``,
``_handle_gpu_memory_settings``, about Oct 2025 on): ``max(chunked_prefill_size, 2048) x 1.5``."""

ACTIVATION_MIN_TOKENS = 2048
"""The floor of that chunk term (same source and versions)."""


def activation_reserve_bytes(chunked_prefill_size: int) -> int:
    """The activation term of the default reserve: ``max(chunk, 2048) x 1.5 MiB``
    (``server_args.py`` ``_handle_gpu_memory_settings``, about Oct 2025 on)."""
    return round(max(chunked_prefill_size, ACTIVATION_MIN_TOKENS) * ACTIVATION_MIB_PER_TOKEN * MIB)


DECODE_GRAPH_MIB_PER_BS = 2.0
"""``reserve_for_graph_mb()``: 2 MiB per decode-graph batch size (``server_args.py``, about
Oct 2025 on)."""

DP_ATTENTION_MIB_PER_BS_DP = 3.0
"""``reserve_for_graph_mb()`` with DP attention: ``+ max_bs x dp_size x 3`` MiB (same)."""

DP_ATTENTION_LARGE_BS = 300
"""Above this max_bs DP attention adds ``max_bs x dp_size x 1.5`` MiB more (same)."""

DP_ATTENTION_LARGE_BS_MIB = 1.5
"""The MiB per bs x dp of that extra term (same)."""

PIECEWISE_MIB_PER_SIZE = 8
"""``reserve_for_graph_mb()``: 8 MiB per piecewise/prefill graph size (non-MLA; same)."""

DEEPEP_A2A_RESERVE_MIB = 2048
"""``reserve_for_deepep_a2a_mb()``: 2048 MiB when the decode graph is on and
``moe_a2a_backend == "deepep"`` (``server_args.py``, 2026)."""

MLA_PREFILL_GRAPH_MIB = 1536
"""``server_args.py`` ``reserve_for_graph_mb()`` (2026, reference 12.3 c): an MLA model's prefill graph reserves a
flat 1536 MiB instead of ``len(sizes) x 8``."""

BREAKABLE_DEEPEP_MIB = 1024
"""``server_args.py`` ``reserve_for_graph_mb()`` (2026, reference 12.3 c): ``+1024`` MiB when the prefill graph's
backend is ``breakable`` and ``moe_a2a_backend == "deepep"``."""

PREFILL_OFF_BACKENDS = frozenset({"", "disabled", "none", "None"})
"""Prefill-graph backends that mean no prefill graph (E7 ``cuda_graph_config.prefill.backend``,
``server_args.py`` 2026; only ``full`` and ``breakable`` are seen in logs: the others are
assumed, unverified)."""


class ReserveTerm(Enum):
    """The terms of SGLang's graph reserve (``reserve_for_graph_mb`` and friends)."""

    DECODE = "decode"  # max_bs x 2 MiB
    DP_ATTENTION = "dp_attention"  # max_bs x dp x 3 MiB
    DP_ATTENTION_LARGE_BS = "dp_attention_large_bs"  # max_bs x dp x 1.5 MiB, max_bs > 300
    PIECEWISE = "piecewise"  # len(piecewise sizes) x 8 MiB (E4-E6)
    # piecewise_cuda_graph_max_tokens // 4 (0.5.6) or // 8 (0.5.7) MiB, added after the floor
    PIECEWISE_MAX_TOKENS = "piecewise_max_tokens"
    PREFILL = "prefill"  # E7's prefill graph, not MLA: len(sizes) x 8 MiB (2026)
    MLA_PREFILL = "mla_prefill"  # an MLA model's prefill graph: 1536 MiB (2026)
    BREAKABLE_DEEPEP = "breakable_deepep"  # breakable prefill graph with DeepEP: 1024 MiB (2026)
    DEEPEP = "deepep"  # 2048 MiB


@frozen
class Reserve:
    """One term of the graph reserve: what it counts and its size."""

    term: ReserveTerm
    bytes: int
    max_bs: int | None = None
    dp_size: int | None = None
    sizes: int | None = None  # piecewise / prefill graph: how many sizes
    max_tokens: int | None = None  # PIECEWISE_MAX_TOKENS: piecewise_cuda_graph_max_tokens
    divisor: int | None = None  # PIECEWISE_MAX_TOKENS: 4 (0.5.6) or 8 (0.5.7)


def graph_reserve_mib_per_bs(dp_attention: bool, dp_size: int | None, max_bs: int | None) -> float:
    """The graph reserve per unit of max bs: 2, + 3 x dp with DP attention, + 1.5 x dp when
    max_bs > 300 (``reserve_for_graph_mb()``, ``server_args.py``, about Oct 2025 on)."""
    h = DECODE_GRAPH_MIB_PER_BS
    if dp_attention and dp_size is not None:
        h += DP_ATTENTION_MIB_PER_BS_DP * dp_size
        if max_bs is not None and max_bs > DP_ATTENTION_LARGE_BS:
            h += DP_ATTENTION_LARGE_BS_MIB * dp_size
    return h


def _int_arg(args: Mapping[str, Any], key: str, hi: int) -> int | None:
    v = args.get(key)
    if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= hi:
        return None
    return v


def _phase(args: Mapping[str, Any], phase: str) -> Mapping[str, Any] | None:
    cfg = args.get("cuda_graph_config")
    p = cfg.get(phase) if isinstance(cfg, Mapping) else None
    return p if isinstance(p, Mapping) else None


def decode_max_bs(args: Mapping[str, Any]) -> int | None:
    """The decode graph's largest batch size as the dump resolved it: E7's
    ``cuda_graph_config=CudaGraphConfig(decode=PhaseConfig(max_bs=...))`` (``server_args.py``,
    about Aug 2026 on), else ``cuda_graph_max_bs_decode`` (2026), else ``cuda_graph_max_bs``
    (all earlier eras). None when the dump has none of them (or a value out of range)."""
    dec = _phase(args, "decode")
    for v in (dec.get("max_bs") if dec else None, args.get("cuda_graph_max_bs_decode")):
        if isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= 1 << 20:
            return v
    return _int_arg(args, "cuda_graph_max_bs", 1 << 20)


def decode_graph_on(args: Mapping[str, Any]) -> bool:
    """Whether the decode graph is captured: neither ``disable_cuda_graph`` nor (2026)
    ``disable_decode_cuda_graph`` is set (``server_args.py``)."""
    return not args.get("disable_cuda_graph") and not args.get("disable_decode_cuda_graph")


@frozen
class PrefillGraph:
    """The prefill-side graph the reserve counts: E7's prefill graph or the piecewise graph."""

    sizes: int  # how many sizes it captures
    backend: str | None  # E7 cuda_graph_config.prefill.backend (None: the piecewise graph)


def prefill_graph(args: Mapping[str, Any]) -> PrefillGraph | None:
    """The prefill graph the reserve counts, None when it is off.

    E7 (``server_args.py``, about Aug 2026 on): ``cuda_graph_config.prefill`` with a backend
    other than ``PREFILL_OFF_BACKENDS`` and a ``bs`` list, unless ``disable_cuda_graph`` or
    ``disable_prefill_cuda_graph``. Before (E4-E6): the piecewise graph, on with
    ``enable_piecewise_cuda_graph`` or ``disable_piecewise_cuda_graph=False``, sized by
    ``piecewise_cuda_graph_tokens``."""
    if args.get("disable_cuda_graph"):
        return None
    pre = _phase(args, "prefill")
    if pre is not None:
        backend, sizes = pre.get("backend"), pre.get("bs")
        if args.get("disable_prefill_cuda_graph") or not isinstance(backend, str):
            return None
        if backend in PREFILL_OFF_BACKENDS or not isinstance(sizes, list):
            return None
        return PrefillGraph(len(sizes), backend)
    pw = args.get("piecewise_cuda_graph_tokens")
    on = (
        args.get("enable_piecewise_cuda_graph") or args.get("disable_piecewise_cuda_graph") is False
    )
    return PrefillGraph(len(pw), None) if on and isinstance(pw, list) else None


AFTER_FLOOR = frozenset({ReserveTerm.DEEPEP, ReserveTerm.PIECEWISE_MAX_TOKENS})
"""Terms added after the 10 GiB floor: ``reserve_for_deepep_a2a_mb()`` (sglang 0.5.16 on) and
the piecewise term of sglang 0.5.6 / 0.5.7 (srt/server_args.py, ``_handle_gpu_memory_settings``;
Dec 2025 on)."""


def graph_reserve(
    args: Mapping[str, Any],
    newest: bool = True,
    mla: bool | None = False,
    form: FormulaForm | None = None,
) -> tuple[Reserve, ...] | None:
    """The graph terms of SGLang's default-mem_fraction_static reserve, from resolved server_args,
    in the reserve formula's ``form`` (logmem.sglang.mfs_versions; None: the newest form read
    when ``newest``, else 0.5.8-0.5.9's, reference 12.3 b).

    sglang 0.5.3-0.5.23, Oct 2025 - Oct 2026 (srt/server_args.py ``_handle_gpu_memory_settings``; from 0.5.16
    ``reserve_for_graph_mb`` and ``reserve_for_deepep_a2a_mb``; from 0.5.20 in
    srt/arg_groups/memory_hook.py): the decode term ``max_bs x 2`` (counted even with the
    decode graph disabled before 0.5.14), DP attention ``max_bs x dp x 3`` (+ ``x 1.5`` above
    max bs 300; never gated on the decode graph), the piecewise / prefill graph by form, and
    DeepEP's terms. ``mla``: whether the model uses MLA (None: not known). None when an input
    is missing: the decode graph's max bs, piecewise_cuda_graph_max_tokens (0.5.6, 0.5.7), or
    (a form with the flat MLA term and a prefill graph) whether the model is MLA."""
    f = form if form is not None else (NEWEST_FORMULA if newest else ERA_B_FORMULA)
    terms: list[Reserve] = []
    max_bs = decode_max_bs(args)
    decode = decode_graph_on(args)
    dp = _int_arg(args, "dp_size", 1 << 16)
    dp_on = bool(args.get("enable_dp_attention")) and dp is not None
    counts_decode = decode or not f.decode_gated
    if (counts_decode or dp_on) and max_bs is None:
        return None
    if counts_decode and max_bs is not None:
        terms.append(
            Reserve(ReserveTerm.DECODE, round(max_bs * DECODE_GRAPH_MIB_PER_BS * MIB), max_bs)
        )
    if dp_on and max_bs is not None and dp is not None:
        per = DP_ATTENTION_MIB_PER_BS_DP
        terms.append(Reserve(ReserveTerm.DP_ATTENTION, round(max_bs * dp * per * MIB), max_bs, dp))
        if max_bs > DP_ATTENTION_LARGE_BS:
            per = DP_ATTENTION_LARGE_BS_MIB
            terms.append(
                Reserve(
                    ReserveTerm.DP_ATTENTION_LARGE_BS, round(max_bs * dp * per * MIB), max_bs, dp
                )
            )
    pre = prefill_graph(args) if f.piecewise != "none" else None
    deepep = args.get("moe_a2a_backend") == "deepep"
    if pre is not None:
        if f.piecewise in ("max_tokens_div4", "max_tokens_div8"):
            top = _int_arg(args, "piecewise_cuda_graph_max_tokens", 1 << 24)
            if top is None:
                return None
            div = 4 if f.piecewise == "max_tokens_div4" else 8
            terms.append(
                Reserve(
                    ReserveTerm.PIECEWISE_MAX_TOKENS,
                    top // div * MIB,
                    sizes=pre.sizes,
                    max_tokens=top,
                    divisor=div,
                )
            )
        elif f.mla_flat and mla is None:
            return None
        elif f.mla_flat and mla:
            terms.append(Reserve(ReserveTerm.MLA_PREFILL, MLA_PREFILL_GRAPH_MIB * MIB))
        else:
            mib = pre.sizes * PIECEWISE_MIB_PER_SIZE
            kind = ReserveTerm.PIECEWISE if pre.backend is None else ReserveTerm.PREFILL
            terms.append(Reserve(kind, mib * MIB, sizes=pre.sizes))
        if f.breakable_deepep and deepep and pre.backend == "breakable":
            terms.append(Reserve(ReserveTerm.BREAKABLE_DEEPEP, BREAKABLE_DEEPEP_MIB * MIB))
    if f.deepep and decode and deepep:
        terms.append(Reserve(ReserveTerm.DEEPEP, DEEPEP_A2A_RESERVE_MIB * MIB))
    return tuple(terms)


def reserve_heuristic_applies(args: Mapping[str, Any]) -> bool:
    """Whether the launch's SGLang has the graph-reserve heuristic: it dates from late 2025, when
    the piecewise-graph flags appeared in server_args (``server_args.py``, E4 on)."""
    return any("piecewise_cuda_graph" in k for k in args)


POST_CAPTURE_LARGE_GPU_MIB = 60 * 1024
"""Above this device capacity the pre-capture activation reserve is at least 10 GiB (E7,
sglang 0.5.17-0.5.18 server_args.py, 0.5.22-0.5.23 runtime_context.py
``pre_capture_activation_reserve_mb``)."""

POST_CAPTURE_LARGE_GPU_FLOOR_MIB = 10 * 1024
"""That floor (same)."""


def pre_capture_activation_reserve_mib(
    args: Mapping[str, Any], gpu_mib: float | None
) -> float | None:
    """The headroom post-capture KV sizing keeps instead of ``P x (1 - mfs)`` when the decode
    graph's max bs is below max_running_requests (E7: sglang 0.5.17-0.5.18 server_args.py
    ``pre_capture_activation_reserve_mb``, 0.5.22-0.5.23 runtime_context.py): ``512 + tokens x
    1.5 + tp x pp / 8 x 1024`` MiB, tokens ``max(chunked_prefill_size, 2048)`` (PD decode:
    ``max(max_running_requests x draft tokens, 2048)``), at least 10 GiB on a GPU above 60 GiB.
    None when an input is missing, or the capacity is unknown and the floor could apply."""

    def num(key: str) -> int | None:
        v = args.get(key)
        return v if isinstance(v, int) and not isinstance(v, bool) else None

    tp, pp = num("tp_size") or 1, num("pp_size") or 1
    if args.get("disaggregation_mode") == "decode":
        reqs = num("max_running_requests") or num("cuda_graph_max_bs")
        if reqs is None:
            return None
        tokens = max(reqs * (num("speculative_num_draft_tokens") or 1), ACTIVATION_MIN_TOKENS)
    else:
        chunk = num("chunked_prefill_size")
        if chunk is None:
            return None
        prefill = chunk if chunk > 0 else num("max_prefill_tokens")
        if prefill is None:
            return None
        tokens = max(prefill, ACTIVATION_MIN_TOKENS)
    mib = 512 + tokens * ACTIVATION_MIB_PER_TOKEN + tp * pp / 8 * 1024
    if mib >= POST_CAPTURE_LARGE_GPU_FLOOR_MIB:
        return mib
    if gpu_mib is None:
        return None
    return (
        max(mib, POST_CAPTURE_LARGE_GPU_FLOOR_MIB) if gpu_mib > POST_CAPTURE_LARGE_GPU_MIB else mib
    )


def post_capture_eager_gap(args: Mapping[str, Any], decode_max_bs: int, requests: int) -> bool:
    """The decode graph's max bs is below max_running_requests, so post-capture KV sizing keeps
    the activation reserve (E7, sglang 0.5.17-0.5.23 kv_pool_runtime.py ``eager_decode_gap``:
    not a PD prefill server, decode graph on)."""
    if args.get("disaggregation_mode") == "prefill" or args.get("disable_cuda_graph") is True:
        return False
    return decode_max_bs < requests
