"""Static buffers beside the weights and the KV pool: logits, DeepEP low latency, request table.

Each is a figure the config and the deployment's settings decide, not the log: the decode
graph's logits buffer (max bs x tokens per request x vocab x 4 B), DeepEP's low-latency RDMA
buffer (``comm.deepep_low_latency_bytes``, docs/reference.md 12.5) and its masked-GEMM
intermediates, and the request-to-token table (``rules.req_to_token_bytes``). A buffer whose inputs are missing stays unknown (None); build.py says what would fill it.
"""

from __future__ import annotations

import logmem.estimate.notes as n
from logmem.estimate.config import Dims, Parallel
from logmem.estimate.pieces import ceil_div
from logmem.sglang import rules, sharding
from logmem.sglang.comm import deepep_formula_applies, deepep_low_latency_bytes
from logmem.sglang.eras import STATIC_LOGITS_FIRST


def deepep_masked_gemm_bytes(
    max_dispatch_tokens: int, num_experts: int, moe_intermediate: int, num_ranks: int = 1
) -> int:
    """Masked grouped-GEMM intermediates for one DeepEP low-latency step, per rank.

    Rows are local experts x (max_dispatch x ranks), about num_experts x max_dispatch. Each row
    holds the gate/up output (2 x intermediate, BF16) and its activated FP8 copy with one FP32
    scale per 128 values. The down-projection output is not counted.
    """
    ranks = max(1, num_ranks)
    rows = ceil_div(num_experts, ranks) * max_dispatch_tokens * ranks
    per_row = 2 * moe_intermediate * 2 + moe_intermediate + ceil_div(moe_intermediate, 128) * 4
    return rows * per_row


# --------------------------------------------------------------------------- estimate


def logits_buffer(
    d: Dims,
    cuda_graph_max_bs: int | None,
    tokens_per_req: int,
    notes: list[n.Note],
    static: bool | None = None,
) -> int | None:
    """The decode graph's logits buffer; None without a max bs or a vocabulary, and None
    (with a note) for a version that allocates none (``static`` False: before 0.5.1, the
    logits are graph outputs in the graph pool; ``eras.static_logits_buffer``)."""
    if static is False:
        notes.append(n.LogitsNotStatic(STATIC_LOGITS_FIRST))
        return None
    if cuda_graph_max_bs is None or d.vocab is None:
        return None
    rows = cuda_graph_max_bs * tokens_per_req
    notes.append(n.LogitsRows(rows, cuda_graph_max_bs, tokens_per_req, d.vocab))
    if static is None:
        notes.append(n.LogitsFromVersion(STATIC_LOGITS_FIRST))
    return sharding.logits_buffer_bytes(cuda_graph_max_bs, tokens_per_req, d.vocab)


def deepep_buffers(
    d: Dims,
    par: Parallel,
    max_dispatch_tokens: int | None,
    notes: list[n.Note],
    device: str | None = None,
) -> tuple[int | None, int | None]:
    """DeepEP's low-latency buffer and the masked-GEMM intermediates, per rank (MoE only);
    None on a device whose DeepEP is not the CUDA library (``comm.deepep_formula_applies``)."""
    if d.experts is None or d.routed_hidden is None or not deepep_formula_applies(device):
        return None, None
    t = max_dispatch_tokens or rules.DEEPEP_DEFAULT_DISPATCH_TOKENS
    deepep = deepep_low_latency_bytes(t, d.routed_hidden, d.experts, par.ep)
    newer = deepep_low_latency_bytes(t, d.routed_hidden, d.experts, par.ep, scaled_combine=True)
    notes.append(n.DeepEPBuffer(t, d.experts, d.routed_hidden, newer))
    if max_dispatch_tokens is None:
        notes.append(n.DispatchDefault(rules.DEEPEP_DEFAULT_DISPATCH_TOKENS))
    masked = None
    if d.moe_inter is not None:
        masked = deepep_masked_gemm_bytes(t, d.experts, d.moe_inter, par.ep)
        notes.append(n.MaskedGemm(d.experts, t, d.moe_inter))
    return deepep, masked


def request_table(
    max_running_requests: int | None,
    context_len: int | None,
    max_position_embeddings: int | None,
    notes: list[n.Note],
    padding_row: bool = True,
) -> int | None:
    """The request-to-token table; the context length falls back to max_position_embeddings,
    as SGLang's does when --context-length is not given. ``padding_row``: whether the table has
    a row beyond ``max_running_requests`` (``rules.req_to_token_padding_row``)."""
    if max_running_requests is None:
        return None
    ctx = context_len
    if ctx is None:
        ctx = max_position_embeddings
        if ctx is not None:
            notes.append(n.ContextFromMaxPositions(ctx))
    if ctx is None:
        return None
    return rules.req_to_token_bytes(max_running_requests, ctx, padding_row)
