"""`logmem estimate`: expected sizes from a model's config.json (optionally for the launch a log describes)."""

from __future__ import annotations

import click

from logmem.cli.options import (
    INPUT,
    MAX_ROWS,
    MAX_TOKENS,
    env_options,
    environment,
    format_options,
)
from logmem.cli.output import guess_format, write_output

# estimate()'s settings by the flag that sets them (the flags are SGLang's own names).
_FLAG = {"tp": "--tp", "dp": "--dp", "ep": "--ep", "pp": "--pp"}


@click.command()
@click.argument("log", required=False, type=INPUT)
@click.option(
    "--model-config",
    "config_path",
    type=INPUT,
    required=True,
    metavar="PATH",
    help="A Hugging Face config.json, or the model folder holding it.",
)
@click.option("--tp", type=click.IntRange(min=1), default=None, help="Tensor-parallel size.")
@click.option("--dp", type=click.IntRange(min=1), default=None, help="Data-parallel size.")
@click.option("--ep", type=click.IntRange(min=1), default=None, help="Expert-parallel size.")
@click.option("--pp", type=click.IntRange(min=1), default=None, help="Pipeline-parallel size.")
@click.option(
    "--dp-attention/--no-dp-attention",
    "--enable-dp-attention",
    "dp_attention",
    default=None,
    help="DP attention (attention TP = tp / dp).",
)
@click.option(
    "--moe-a2a-backend",
    default=None,
    metavar="NAME",
    help="MoE all-to-all backend (none, deepep, ...): deepep adds the DeepEP buffer.",
)
@click.option(
    "--deepep-mode",
    type=click.Choice(["auto", "normal", "low_latency"]),
    default=None,
    help="DeepEP mode (default auto); low_latency has a size formula.",
)
@click.option(
    "--disaggregation-mode",
    type=click.Choice(["null", "prefill", "decode"]),
    default=None,
    help="PD disaggregation role: adds KV registration and staging cells.",
)
@click.option(
    "--disable-custom-all-reduce/--no-disable-custom-all-reduce",
    default=None,
    help="No custom all-reduce buffers on the TP group.",
)
@click.option("--dtype", default=None, help="Weight dtype (bfloat16, float16, ...).")
@click.option("--kv-cache-dtype", default=None, help="KV cache dtype (auto, fp8_e4m3, ...).")
@click.option(
    "--quantization", default=None, help="Quantisation method (fp8, awq, modelopt_fp4, ...)."
)
@click.option(
    "--cuda-graph-max-bs",
    type=click.IntRange(1, MAX_ROWS),
    default=None,
    help="Largest graph batch (sizes the logits buffer).",
)
@click.option(
    "--tokens-per-req",
    type=click.IntRange(1, MAX_ROWS),
    default=None,
    help="Tokens per request in the graph (speculative draft tokens).",
)
@click.option(
    "--max-dispatch-tokens",
    type=click.IntRange(1, MAX_TOKENS),
    default=None,
    help="DeepEP tokens per rank (SGLANG_DEEPEP_NUM_MAX_DISPATCH_TOKENS_PER_RANK, default 128).",
)
@click.option(
    "--max-running-requests",
    type=click.IntRange(1, MAX_ROWS),
    default=None,
    help="Request slots (sizes the request-to-token table).",
)
@click.option(
    "--context-length",
    type=click.IntRange(1, MAX_TOKENS),
    default=None,
    help="Context length (default: the config's max_position_embeddings).",
)
@click.option(
    "--launch",
    type=click.IntRange(min=0),
    default=None,
    help="With LOG: which start-up (0-based) when the log holds several.",
)
@env_options
@format_options(["text", "markdown", "json"])
@click.pass_context
def estimate(
    ctx: click.Context,
    log: str | None,
    config_path: str,
    tp: int | None,
    dp: int | None,
    ep: int | None,
    pp: int | None,
    dp_attention: bool | None,
    moe_a2a_backend: str | None,
    deepep_mode: str | None,
    disaggregation_mode: str | None,
    disable_custom_all_reduce: bool | None,
    dtype: str | None,
    kv_cache_dtype: str | None,
    quantization: str | None,
    cuda_graph_max_bs: int | None,
    tokens_per_req: int | None,
    max_dispatch_tokens: int | None,
    max_running_requests: int | None,
    context_length: int | None,
    launch: int | None,
    env: tuple[str, ...],
    env_file: str | None,
    fmt: str | None,
    output: str | None,
    force: bool,
) -> None:
    """Expected weights per rank, KV bytes per token and graph buffers from a model's config.json.

    With LOG, the parallel sizes and dtypes come from its server_args; options override them.
    A figure the inputs do not decide is "unknown", with the option that would fill it. The
    Communication table (groups x mechanisms per rank) is the one `logmem analyze` derives
    for the same deployment.
    """
    from logmem.api import (
        communication_table,
        expected_sizes,
        read_spec,
    )
    from logmem.errors import LogmemError
    from logmem.report.estimate import render as estimate_render

    flags = {"tp": tp, "dp": dp, "ep": ep, "pp": pp, "dp_attention": dp_attention}
    user_env = environment(ctx, env, env_file)
    if max_dispatch_tokens is not None:
        # The flag is that environment variable; an --env of the same name wins.
        user_env = (
            (
                "SGLANG_DEEPEP_NUM_MAX_DISPATCH_TOKENS_PER_RANK",
                str(max_dispatch_tokens),
                "--max-dispatch-tokens",
            ),
            *user_env,
        )
    source = read_spec(log) if log is not None else None
    try:
        plan = communication_table(
            source,
            launch=launch,
            model_config=config_path,
            env=user_env,
            tp_size=tp,
            dp_size=dp,
            ep_size=ep,
            pp_size=pp,
            enable_dp_attention=dp_attention,
            moe_a2a_backend=moe_a2a_backend,
            deepep_mode=deepep_mode,
            disaggregation_mode=disaggregation_mode,
            disable_custom_all_reduce=disable_custom_all_reduce,
        )
        result = expected_sizes(
            config_path,
            source,
            launch=launch,
            **flags,
            dtype=dtype,
            kv_cache_dtype=kv_cache_dtype,
            quantization=quantization,
            cuda_graph_max_bs=cuda_graph_max_bs,
            tokens_per_req=tokens_per_req,
            max_dispatch_tokens=plan.dispatch_tokens,
            max_running_requests=max_running_requests,
            context_len=context_length,
        )
    except LogmemError as e:
        # A size the user passed that SGLang would refuse is a usage error (exit 2).
        setting = getattr(e, "setting", None)
        if setting in _FLAG and flags.get(setting) is not None:
            raise click.BadParameter(str(e), ctx, param_hint=f"'{_FLAG[setting]}'") from None
        raise
    fmt = guess_format(output, fmt, allowed=("text", "markdown", "json"))
    if fmt == "json":
        text = estimate_render.render_json(result, plan)
    elif fmt == "markdown":
        text = estimate_render.render_markdown(result, plan)
    else:
        text = estimate_render.render_text(result, plan)
    write_output(text, output, force)
