"""The batch sizes SGLang's decode runner drops from its capture list: two-batch overlap and the
attention-TP / context-parallel alignment (``get_batch_sizes_to_capture``), one home for both.

Read in the released wheels (docs/sglang-sources.md), srt/model_executor/cuda_graph_runner.py
up to 0.5.13, srt/model_executor/runner/base_cuda_graph_runner.py from 0.5.14 (the base in
srt/utils/common.py ``get_cuda_graph_batch_size_alignment`` from 0.5.20):

* ``--enable-two-batch-overlap``: none in 0.4.6.post5; ``bs >= 2`` in 0.4.7 - 0.4.8; from 0.4.9
  ``bs % 2 == 0`` (``mul_base *= 2`` from 0.4.10).
* ``require_gathered_buffer(server_args)`` (srt/utils.py, 0.4.10 on): ``mul_base *=
  attn_tp_size`` (``tp // dp`` with DP attention, else tp; ``// attn_cp_size`` from 0.5.9,
  srt/layers/dp_attention.py ``compute_dp_attention_world_info``). It holds when the MLP input
  is all-gathered (DP attention, unless ``moe_dense_tp_size`` is set with ``enable_dp_lm_head``
  and an a2a backend and not above ``tp // dp``) or the attention input is scattered (an a2a
  backend such as DeepEP, or ``moe_dense_tp_size`` set; with DP attention only while
  ``dp < tp``; ``--disable-attn-tp-gather`` opts out from 0.5.13).
* Context parallel, 0.5.9 on: ``if mul_base % attn_cp_size: mul_base *= attn_cp_size`` (0.5.23:
  not on ROCm, not modelled: the ROCm gate needs the platform, which ``ListContext`` lacks).
* 0.5.8 on: the filter is ``bs * num_tokens_per_bs % mul_base == 0`` (``num_tokens_per_bs`` the
  verify graph's draft tokens; 1 with two-batch overlap); before, ``bs % mul_base == 0``.
* 0.5.10 on: the request pool is padded up to a multiple of ``mul_base`` before the clamp
  (``num_max_requests = ceil(size / mul_base) * mul_base``), so the top may exceed it.

Up to 0.5.2 the filter runs on the runner's own list before the cut at ``--cuda-graph-max-bs``
and its extension in steps of 16 (which it does not filter); from 0.5.3 on the list server_args
generated (or the one passed), which is already cut at max bs.

Not a filter: no release read (0.4.6 - 0.5.23) caps the capture list by DeepEP's
``SGLANG_DEEPEP_NUM_MAX_DISPATCH_TOKENS_PER_RANK`` (the reference's 12.4 says the newest runner
does, from an unreleased commit). A decode batch above it fails inside DeepEP's low-latency
dispatch; 0.5.20 on, ``--moe-a2a-backend deepep_v2`` refuses to start when the largest decode
graph's tokens per rank exceed ``SGLANG_DEEPEP_V2_NUM_MAX_DISPATCH_TOKENS_PER_RANK``
(srt/arg_groups/moe_hook.py ``validate_deepep_v2_dispatch_token_budget``). Neither drops sizes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from logmem.frozen import frozen

Month = tuple[int, int]

# (last release read without the change, first release read with it), as months: between them
# both forms apply (the change may be in a dev build), as in capture_lists.RULES.
_GATHER: tuple[Month, Month] = ((2025, 7), (2025, 7))  # 0.4.9 (07-06) / 0.4.10 (07-31)
_PER_TOKEN: tuple[Month, Month] = ((2026, 1), (2026, 1))  # 0.5.7 (01-01) / 0.5.8 (01-23)
_CP: tuple[Month, Month] = ((2026, 1), (2026, 2))  # 0.5.8 / 0.5.9
_PADS_POOL: tuple[Month, Month] = ((2026, 2), (2026, 4))  # 0.5.9 / 0.5.10


@frozen
class Alignment:
    """One form of the runner's filter for a launch: which sizes survive."""

    base: int = 1  # SGLang's mul_base
    min_two: bool = False  # 0.4.7 - 0.4.8 two-batch overlap: bs >= 2 (base stays 1)
    per_token: int = 1  # num_tokens_per_bs the filter multiplies bs by (0.5.8 on)
    pads_pool: bool = False  # the pool is padded up to a multiple of base (0.5.10 on)
    # What makes up base, for words: ("two-batch overlap", 2), ("attention TP", n), ("CP", n).
    parts: tuple[tuple[str, int], ...] = ()

    @property
    def step(self) -> int:
        """The sizes kept are the multiples of this (``bs * per_token % base == 0``)."""
        return self.base // math.gcd(self.base, self.per_token)

    @property
    def filters(self) -> bool:
        """Whether the form drops any size."""
        return self.min_two or self.step > 1

    def keeps(self, bs: int) -> bool:
        if self.min_two and bs < 2:
            return False
        return bs % self.step == 0

    def pool(self, size: int) -> int:
        """The request pool the runner clamps to."""
        if not self.pads_pool or self.base <= 1:
            return size
        return -(-size // self.base) * self.base


NO_FILTER = Alignment()


def _forms(month: Month | None, window: tuple[Month, Month]) -> tuple[bool, ...]:
    """Whether a change is in the build: (False,), (True,) or both, by the log's month."""
    without, first = window
    if month is None:
        return (False, True)
    if month < first and month <= without:
        return (False,)
    if month > without and month >= first:
        return (True,)
    return (False, True)


def _int(args: Mapping[str, Any], key: str, default: int | None) -> int | None:
    v = args.get(key, default)
    if v is None:
        return None
    return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else None


def _a2a(args: Mapping[str, Any]) -> str:
    v = args.get("moe_a2a_backend")
    if isinstance(v, str) and v not in ("", "None"):
        return v
    return "deepep" if args.get("enable_deepep_moe") is True else "none"  # up to 0.5.1


def gathered_buffer(args: Mapping[str, Any]) -> bool | None:
    """SGLang's ``require_gathered_buffer`` from the dump (srt/utils.py ``require_mlp_tp_gather``
    or ``require_attn_tp_gather``, 0.4.10 - 0.5.23); None when the dump lacks tp_size."""
    tp = _int(args, "tp_size", None)
    dp = _int(args, "dp_size", 1)
    if tp is None or dp is None:
        return None
    dp_attn = args.get("enable_dp_attention") is True
    a2a = _a2a(args)
    dense = args.get("moe_dense_tp_size")
    dense = dense if isinstance(dense, int) and not isinstance(dense, bool) else None
    mlp = dp_attn and (
        dense is None
        or args.get("enable_dp_lm_head") is not True
        or a2a == "none"
        or dense > tp // dp
    )
    attn = (
        args.get("disable_attn_tp_gather") is not True
        and (a2a != "none" or dense is not None)
        and (not dp_attn or dp < tp)
    )
    return mlp or attn


def _attn_tp(args: Mapping[str, Any], cp: int) -> int:
    tp = _int(args, "tp_size", None) or 1
    dp = _int(args, "dp_size", 1) or 1
    dp_attn = dp if args.get("enable_dp_attention") is True else 1
    return max(tp // dp_attn // cp, 1)


@frozen
class AlignInputs:
    """What the dump says that the filter reads (every release's form is derived from it)."""

    tbo: bool = False  # --enable-two-batch-overlap
    gather: bool = False  # require_gathered_buffer
    attn_tp: int = 1  # tp // dp (DP attention) before 0.5.9
    attn_tp_cp: int = 1  # tp // dp // attn_cp_size, 0.5.9 on
    cp: int = 1  # attn_cp_size
    draft_tokens: int = 1  # speculative_num_draft_tokens (a verify graph's tokens per request)

    @staticmethod
    def from_args(args: Mapping[str, Any] | None) -> AlignInputs | None:
        """None: the dump cannot tell the filter (no server_args; DP attention, an a2a backend
        or moe_dense_tp_size without tp_size). A setting the dump does not print is taken as
        off: the release predates it, or a trimmed dump (the list's variant is read so too)."""
        if not args:
            return None
        gather = gathered_buffer(args)
        if gather is None:
            dense = args.get("moe_dense_tp_size")
            if args.get("enable_dp_attention") is True or _a2a(args) != "none" or dense:
                return None
            gather = False
        cp = _int(args, "attn_cp_size", 1) or 1
        spec = args.get("speculative_algorithm") not in (None, "None", "")
        draft = _int(args, "speculative_num_draft_tokens", 1) if spec else 1
        return AlignInputs(
            args.get("enable_two_batch_overlap") is True,
            gather,
            _attn_tp(args, 1),
            _attn_tp(args, cp),
            cp,
            draft or 1,
        )


def _tbo_forms(month: Month | None) -> tuple[str, ...]:
    """Two-batch overlap's filter by the log's month: "none" (0.4.6.post5, May 2025), "min two"
    (0.4.7 - 0.4.8, Jun 2025), "even" (0.4.9, Jul 2025, on)."""
    if month is None:
        return ("none", "min two", "even")
    out = []
    if month <= (2025, 5):
        out.append("none")
    if (2025, 5) <= month <= (2025, 6):
        out.append("min two")
    if month >= (2025, 6):
        out.append("even")
    return tuple(out)


def alignments(
    inputs: AlignInputs | None, month: Month | None, verify: bool = False
) -> tuple[Alignment, ...] | None:
    """Every form of the filter the dump and the log's month allow (one when they agree); None
    when the dump cannot tell it. ``verify``: the graph is the target's (verify) graph of a
    speculative launch, whose bs counts ``draft_tokens`` rows each from 0.5.8."""
    if inputs is None:
        return None
    tbo, cp = inputs.tbo, inputs.cp
    out: set[Alignment] = set()
    for t in _tbo_forms(month) if tbo else ("none",):
        for g in _forms(month, _GATHER) if inputs.gather else (False,):
            for c in _forms(month, _CP) if cp > 1 else (False,):
                parts: list[tuple[str, int]] = [("two-batch overlap", 2)] if t == "even" else []
                if g:
                    parts.append(("attention TP", inputs.attn_tp_cp if c else inputs.attn_tp))
                base = math.prod(n for _, n in parts)
                if c and base % cp:
                    parts.append(("attention CP", cp))
                    base *= cp
                tokens = inputs.draft_tokens if verify and not tbo else 1
                for pt in _forms(month, _PER_TOKEN) if tokens > 1 and base > 1 else (False,):
                    per = tokens if pt else 1
                    for pad in _forms(month, _PADS_POOL) if base > 1 else (False,):
                        kept = tuple(p for p in parts if p[1] > 1)
                        out.add(Alignment(base, t == "min two", per, pad, kept))
    return tuple(sorted(out, key=_key))


def _key(a: Alignment) -> tuple[int, bool, int, bool]:
    return (a.base, a.min_two, a.per_token, a.pads_pool)
