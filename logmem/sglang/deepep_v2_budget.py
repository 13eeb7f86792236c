"""DeepEP v2's decode-graph token budget: SGLang refuses to start when the largest decode graph
dispatches more tokens per rank than ``SGLANG_DEEPEP_V2_NUM_MAX_DISPATCH_TOKENS_PER_RANK``.

sglang 0.5.20 - 0.5.23, srt/arg_groups/moe_hook.py ``validate_deepep_v2_dispatch_token_budget``
(run by arg_groups/pipeline.py; 0.5.18 has no deepep_v2 backend, 0.5.19 was not read): with
``--moe-a2a-backend deepep_v2`` and the decode graph on (not a PD prefill node), the graph's
requests are ``min(decode max bs, max(1, max_running_requests // attn_dp_size))`` (attn_dp_size
= dp_size with DP attention, else 1; no clamp without --max-running-requests), times the draft
tokens per request with speculative decoding (``max_speculative_num_draft_tokens``, else 1); above
the capacity (srt/environ.py ``EnvInt(128)``) it raises ``ValueError``. This is a refusal, not a
filter: no release drops capture sizes for DeepEP (logmem.sglang.capture_align).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from logmem.frozen import frozen

V2_ENV = "SGLANG_DEEPEP_V2_NUM_MAX_DISPATCH_TOKENS_PER_RANK"
V2_DEFAULT_TOKENS = 128  # srt/environ.py, 0.5.20 - 0.5.23
V2_RELEASES = "0.5.20 - 0.5.23"


@frozen
class V2Refusal:
    """Start-up would stop: the decode graph's tokens per rank exceed DeepEP v2's capacity."""

    requests: int
    tokens_per_request: int
    capacity: int
    capacity_given: bool  # the log echoed the variable (else SGLang's default)

    @property
    def tokens(self) -> int:
        return self.requests * self.tokens_per_request

    @property
    def max_bs_that_fits(self) -> int:
        return self.capacity // self.tokens_per_request


def _pos(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else None


def v2_refusal(
    args: Mapping[str, Any], max_bs: int, capacity: int | None = None
) -> V2Refusal | None:
    """SGLang's check at decode max bs ``max_bs`` for this dump; None when it passes or does not
    apply (another a2a backend, a PD prefill node, the decode graph disabled)."""
    if args.get("moe_a2a_backend") != "deepep_v2":
        return None
    if args.get("disaggregation_mode") == "prefill" or args.get("disable_cuda_graph") is True:
        return None
    requests = max_bs
    mrr = _pos(args.get("max_running_requests"))
    if mrr is not None:
        dp = _pos(args.get("dp_size")) or 1
        attn_dp = dp if args.get("enable_dp_attention") is True else 1
        requests = min(requests, max(1, mrr // attn_dp))
    spec = args.get("speculative_algorithm") not in (None, "None", "")
    per = (_pos(args.get("speculative_num_draft_tokens")) or 1) if spec else 1
    cap = capacity if capacity is not None else V2_DEFAULT_TOKENS
    if requests * per <= cap:
        return None
    return V2Refusal(requests, per, cap, capacity is not None)
