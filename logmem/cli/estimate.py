"""`logmem estimate`: expected sizes from a model's config.json (optionally for the launch a log describes)."""

from __future__ import annotations

import json

import click

from logmem.cli.options import INPUT, MAX_ROWS, MAX_TOKENS, format_options
from logmem.cli.output import guess_format, write_output
from logmem.estimate.limits import MAX_PARALLEL


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
@click.option(
    "--tp", type=click.IntRange(1, MAX_PARALLEL), default=None, help="Tensor-parallel size."
)
@click.option(
    "--dp", type=click.IntRange(1, MAX_PARALLEL), default=None, help="Data-parallel size."
)
@click.option(
    "--ep", type=click.IntRange(1, MAX_PARALLEL), default=None, help="Expert-parallel size."
)
@click.option(
    "--pp", type=click.IntRange(1, MAX_PARALLEL), default=None, help="Pipeline-parallel size."
)
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
    help="Largest graph batch.",
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
@format_options(["text", "markdown", "json"])
def estimate(
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
    fmt: str | None,
    output: str | None,
    force: bool,
) -> None:
    """Expected weights per rank, KV bytes per token and graph buffers from a model's config.json.

    With LOG, the parallel sizes and dtypes come from its server_args; options override them.
    """
    from dataclasses import replace

    from logmem.errors import LogmemError
    from logmem.estimate import model as est_mod
    from logmem.report import estimate_render

    try:
        config = est_mod.load_model_config(config_path)
        kwargs: dict[str, object] = {}
        if log is not None:
            from logmem.api import read_log

            a = read_log(log)
            kwargs = est_mod.settings_from_server_args(a.launches[0].args) if a.launches else {}
        par = kwargs.get("parallel", est_mod.Parallel())
        assert isinstance(par, est_mod.Parallel)
        changes: dict[str, int | bool] = {
            k: v
            for k, v in (
                ("tp", tp),
                ("dp", dp),
                ("ep", ep),
                ("pp", pp),
                ("dp_attention", dp_attention),
            )
            if v is not None
        }
        kwargs["parallel"] = replace(par, **changes) if changes else par  # type: ignore[arg-type]
        for key, value in (
            ("dtype", dtype),
            ("kv_cache_dtype", kv_cache_dtype),
            ("quantization", quantization),
            ("cuda_graph_max_bs", cuda_graph_max_bs),
            ("tokens_per_req", tokens_per_req),
            ("max_dispatch_tokens", max_dispatch_tokens),
        ):
            if value is not None:
                kwargs[key] = value
        result = est_mod.estimate(config, **kwargs)  # type: ignore[arg-type]
    except est_mod.EstimateError as e:
        raise LogmemError(str(e)) from None
    fmt = guess_format(output, fmt, allowed=("text", "markdown", "json"))
    if fmt == "json":
        text = json.dumps(estimate_render.to_json(result), indent=2) + "\n"
    elif fmt == "markdown":
        text = estimate_render.render_markdown(result)
    else:
        text = estimate_render.render_text(result)
    write_output(text, output, force)
