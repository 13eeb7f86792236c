"""Attention weights of one layer: MHA/GQA, MLA (with the DSA indexer) and gated DeltaNet.

Per rank under attention TP (tp, or tp / dp with DP attention); KV heads replicated past
their count as SGLang's QKVParallelLinear does (logmem/sglang/sharding.py).
"""

from __future__ import annotations

from logmem.estimate.config import Dims, Parallel
from logmem.estimate.pieces import Piece, attn_shard, attn_spread, ceil_div, repl
from logmem.estimate.reasons import (
    DeltaNet,
    Heads,
    Indexer,
    KVDown,
    KVHeads,
    Part,
    QDown,
    QueryHeads,
    RowParallel,
    SizesMissing,
)
from logmem.sglang.sharding import kv_heads_per_rank


def attention(d: Dims, par: Parallel) -> list[Piece]:
    """The q, k/v and o projections of one MHA/GQA layer (MLA: its own pieces)."""
    if d.mla:
        return _mla(d, par)
    h, nq, nkv, hd = d.hidden, d.heads, d.kv_heads, d.head_dim
    if h is None or nq is None or nkv is None or hd is None:
        return [Piece("attn", None, None, "whole", SizesMissing(Part.ATTENTION), True)]
    t = par.attn_tp
    q_rank_heads = ceil_div(nq, t)
    kv_rank_heads = kv_heads_per_rank(nkv, t)
    q_mult = 2 if d.q_gate else 1
    bias_q = nq * hd * q_mult if d.qkv_bias else 0
    bias_kv = 2 * nkv * hd if d.qkv_bias else 0
    pieces = [
        Piece(
            "attn.q",
            h * nq * hd * q_mult + bias_q,
            (h * hd * q_mult + (hd * q_mult if d.qkv_bias else 0)) * q_rank_heads,
            attn_shard(par),
            QueryHeads(nq, q_rank_heads, t, d.q_gate),
            True,
        ),
    ]
    kv_rank = (2 * h * hd + (2 * hd if d.qkv_bias else 0)) * kv_rank_heads
    if t == 1:
        kv_sharding, kv_why = attn_shard(par), KVHeads(nkv, kv_rank_heads, t, None)
    elif nkv >= t:
        kv_sharding, kv_why = "split", KVHeads(nkv, kv_rank_heads, t, None)
    else:
        kv_sharding, kv_why = "replicated", KVHeads(nkv, kv_rank_heads, t, t // nkv)
    pieces.append(Piece("attn.kv", 2 * h * nkv * hd + bias_kv, kv_rank, kv_sharding, kv_why, True))
    pieces.append(
        Piece(
            "attn.o",
            nq * hd * h,
            q_rank_heads * hd * h,
            attn_shard(par),
            RowParallel(attn_spread(par)),
            True,
        )
    )
    return pieces


def _mla(d: Dims, par: Parallel) -> list[Piece]:
    h, nq, kv_lora, rope = d.hidden, d.heads, d.kv_lora, d.rope
    nope, v = d.nope, d.v_head
    if None in (h, nq, kv_lora, rope, nope, v):
        return [Piece("attn", None, None, "whole", SizesMissing(Part.MLA), True)]
    assert h and nq and kv_lora and rope and nope and v
    t = par.attn_tp
    rank_heads = ceil_div(nq, t)
    qk = nope + rope
    pieces: list[Piece] = []
    if d.q_lora:
        pieces.append(
            Piece(
                "attn.q_a",
                h * d.q_lora,
                h * d.q_lora,
                repl(par.tp),
                QDown(d.q_lora),
                True,
            )
        )
        pieces.append(
            Piece(
                "attn.q_b",
                d.q_lora * nq * qk,
                d.q_lora * rank_heads * qk,
                attn_shard(par),
                Heads(nq, attn_spread(par)),
                True,
            )
        )
    else:
        pieces.append(
            Piece(
                "attn.q",
                h * nq * qk,
                h * rank_heads * qk,
                attn_shard(par),
                Heads(nq, attn_spread(par)),
                True,
            )
        )
    pieces.append(
        Piece(
            "attn.kv_a",
            h * (kv_lora + rope),
            h * (kv_lora + rope),
            repl(par.tp),
            KVDown(kv_lora, rope),
            True,
        )
    )
    pieces.append(
        Piece(
            "attn.kv_b",
            kv_lora * nq * (nope + v),
            kv_lora * rank_heads * (nope + v),
            attn_shard(par),
            Heads(nq, attn_spread(par)),
            True,
        )
    )
    pieces.append(
        Piece(
            "attn.o",
            nq * v * h,
            rank_heads * v * h,
            attn_shard(par),
            RowParallel(attn_spread(par)),
            True,
        )
    )
    if d.index_head_dim:
        idim = d.index_head_dim
        nh = d.index_heads or 64
        q_in = d.q_lora or h
        params = q_in * nh * idim + h * idim + 2 * idim + h * nh
        pieces.append(
            Piece(
                "attn.indexer",
                params,
                params,
                repl(par.tp),
                Indexer(nh, idim),
                True,
            )
        )
    return pieces


def linear_attention(d: Dims, par: Parallel) -> Piece:
    """Gated DeltaNet (Qwen3-Next style) projections; unknown sizes when the keys are absent."""
    h = d.hidden
    nk = d.linear_key_heads
    dk = d.linear_key_dim
    nv = d.linear_value_heads
    dv = d.linear_value_dim
    kernel = d.linear_conv_kernel or 4
    t = par.attn_tp
    if h is None or nk is None or dk is None or nv is None or dv is None:
        return Piece(
            "attn.linear",
            None,
            None,
            attn_shard(par),
            SizesMissing(Part.LINEAR_ATTENTION),
            True,
        )
    params = (
        h * (2 * nk * dk + 2 * nv * dv)
        + h * 2 * nv
        + (2 * nk * dk + nv * dv) * kernel
        + 2 * nv
        + dv
        + nv * dv * h
    )
    return Piece(
        "attn.linear",
        params,
        ceil_div(params, t),
        attn_shard(par),
        DeltaNet(nk, nv, attn_spread(par)),
        True,
    )
