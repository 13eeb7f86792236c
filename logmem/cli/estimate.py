"""`logmem estimate`: expected sizes from a model's config.json (optionally for the launch a log describes)."""

from __future__ import annotations

import click

from logmem.cli.options import INPUT, MAX_ROWS, MAX_TOKENS, format_options
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
    "--dp-attention/--no-dp-attention", default=None, help="DP attention (attention TP = tp / dp)."
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
    dtype: str | None,
    kv_cache_dtype: str | None,
    quantization: str | None,
    cuda_graph_max_bs: int | None,
    tokens_per_req: int | None,
    max_dispatch_tokens: int | None,
    max_running_requests: int | None,
    context_length: int | None,
    launch: int | None,
    fmt: str | None,
    output: str | None,
    force: bool,
) -> None:
    """Expected weights per rank, KV bytes per token and graph buffers from a model's config.json.

    With LOG, the parallel sizes and dtypes come from its server_args; options override them.
    A figure the inputs do not decide is "unknown", with the option that would fill it.
    """
    from logmem.api import expected_sizes
    from logmem.errors import LogmemError
    from logmem.report import estimate_render

    flags = {"tp": tp, "dp": dp, "ep": ep, "pp": pp, "dp_attention": dp_attention}
    try:
        result = expected_sizes(
            config_path,
            log,
            launch=launch,
            **flags,
            dtype=dtype,
            kv_cache_dtype=kv_cache_dtype,
            quantization=quantization,
            cuda_graph_max_bs=cuda_graph_max_bs,
            tokens_per_req=tokens_per_req,
            max_dispatch_tokens=max_dispatch_tokens,
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
        import json

        text = json.dumps(estimate_render.to_json(result), indent=2) + "\n"
    elif fmt == "markdown":
        text = estimate_render.render_markdown(result)
    else:
        text = estimate_render.render_text(result)
    write_output(text, output, force)
