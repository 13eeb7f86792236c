"""The Fix for a DeepEP buffer that does not fit: fewer dispatch tokens per rank T, with the
decode graph and batch lowered to fit in the new T (facts only; logmem.report.fixes words it)."""

from __future__ import annotations

import math

import logmem.analysis.failures.facts as fx
from logmem.analysis.capture_lever import capture_lever
from logmem.analysis.comm_inputs import echoed_env
from logmem.analysis.failures.records import OutOfMemory
from logmem.model.records import Launch
from logmem.sglang import comm, rules
from logmem.sglang.reserve import decode_max_bs


def _decode_within(launch: Launch, new_tokens: int) -> fx.DecodeWithinT:
    """The decode graph and batch limits a dispatch-token count ``new_tokens`` implies."""
    args = launch.args
    spec = args.get("speculative_algorithm") not in (None, "None", "")
    k = args.get("speculative_num_draft_tokens")
    per = k if spec and isinstance(k, int) and not isinstance(k, bool) and k >= 1 else 1
    graphs = [g for r in launch.ranks for g in r.graphs if not rules.graph_sized_in_tokens(g.name)]
    sizes = next((g.sizes for g in graphs if g.sizes), None) or args.get("cuda_graph_bs")
    limit = max(1, new_tokens // per)
    fits = [b for b in sizes or () if isinstance(b, int) and 1 <= b <= limit]
    dp = args.get("dp_size")
    dp_n = dp if args.get("enable_dp_attention") and isinstance(dp, int) and dp >= 1 else 1
    running = args.get("max_running_requests")
    return fx.DecodeWithinT(
        new_tokens,
        per,
        rules.graph_cap_flag(graphs[0].name if graphs else "decode", args),
        decode_max_bs(args),
        max(fits) if fits else None,
        dp_n,
        running if isinstance(running, int) and not isinstance(running, bool) else None,
        comm.deepep_mode(args) == "auto",
        capture_lever(launch, graphs[0].name if graphs else "decode"),
    )


def dispatch_tokens_fix(launch: Launch, r: OutOfMemory) -> fx.Fix:
    """Fewer DeepEP dispatch tokens: its low-latency buffer is proportional to them (reference
    12.5). The change is relative to the T this launch ran with: the one its environment set
    (the launch command's ``K=V`` words, a harness's env lines), else SGLang's default. The
    decode graph and batch must then fit in the new T (``_decode_within``)."""
    env = comm.ENV_DEEPEP_TOKENS
    echoed = echoed_env(launch)
    tokens = comm.deepep_dispatch_tokens(echoed.mapping)
    set_by = echoed.get(env)
    # A value SGLang would reject leaves T at its default: then no line set it.
    valid = comm.env_int(echoed.mapping, env, 1, comm.DEEPEP_MAX_DISPATCH_TOKENS) is not None
    line = set_by.line if set_by is not None and valid else None
    if (
        r.comm_library is not None
        and r.tried_bytes
        and r.free_bytes is not None
        and r.free_bytes < r.tried_bytes
    ):
        ratio = r.free_bytes / r.tried_bytes
        at = math.floor(tokens * ratio)
        effect = fx.DispatchTokensRatio(
            r.tried_bytes,
            r.free_bytes,
            ratio,
            at,
            tokens,
            line,
            str(launch.args.get("deepep_mode", "")).lower() == "low_latency",
            _decode_within(launch, max(1, at)),
        )
        return fx.Fix(env, None, effect, fx.AtMostTimes(ratio))
    half = tokens // 2
    return fx.Fix(
        env, str(half), fx.DispatchTokensHalf(half, tokens, line, _decode_within(launch, half))
    )
