"""SGLang's own adjustments of mem_fraction_static before the KV rule, by era (part of the
rules of logmem.sglang.rules, which re-exports every name; split off for its length).

Like rules.py, it imports nothing of the package but the release table: every stage may call it.
"""

from __future__ import annotations

from datetime import date

from logmem.frozen import frozen
from logmem.sglang.releases import RELEASES

MULTIMODAL_ARCHITECTURES = frozenset(
    {
        "CLIPModel",
        "DeepseekVL2ForCausalLM",
        "Gemma3ForConditionalGeneration",
        "Grok1AForCausalLM",
        "Grok1VForCausalLM",
        "InternVLChatModel",
        "KimiVLForConditionalGeneration",
        "Llama4ForConditionalGeneration",
        "LlavaForConditionalGeneration",
        "LlavaLlamaForCausalLM",
        "LlavaMistralForCausalLM",
        "LlavaQwenForCausalLM",
        "LlavaVidForCausalLM",
        "MiniCPMO",
        "MiniCPMV",
        "Mistral3ForConditionalGeneration",
        "MllamaForConditionalGeneration",
        "MultiModalityCausalLM",
        "Qwen2VLForConditionalGeneration",
        "Qwen2_5_VLForConditionalGeneration",
    }
)
"""Architectures SGLang treats as multimodal (``is_multimodal_model``, ``configs/model_config.py``;
the list of 0.4.6.post5, 2025-05, a superset of the 0.3.6 and 0.4.3 lists). ``Load weight end.
type=`` prints the model class, which is the architecture name."""


@frozen
class MfsAdjustment:
    """A factor SGLang's ModelRunner applied to mem_fraction_static after the server_args dump
    was printed, so the KV rule ran with ``dump value x factor`` (read in the released wheels,
    ``model_executor/model_runner.py``, 2024-11 - 2025-10; dates are the build dates of the
    versions read)."""

    scope: str  # "multimodal" | "aiter" (what the launch must be for it to apply)
    factor: float
    first_seen: date  # the first version read that has it
    gone_by: date | None  # the first version read where the ModelRunner no longer applies it
    log_text: str  # what the log prints when it applies ("" when SGLang prints nothing)
    versions: str  # the versions read that apply it, and their dates


MFS_ADJUSTMENTS = (
    MfsAdjustment(
        "multimodal",
        0.95,
        RELEASES["0.3.5"],
        RELEASES["0.4.5"],
        "adjust --mem-fraction-static for multimodal models",
        "0.3.5 - 0.4.4, 2024-11 - 2025-03",
    ),
    MfsAdjustment(
        "multimodal",
        0.90,
        RELEASES["0.4.5"],
        RELEASES["0.4.9"],
        "because this is a multimodal model",
        "0.4.5 - 0.4.8, 2025-04 - 2025-06",
    ),
    MfsAdjustment(
        "aiter",
        0.85,
        RELEASES["0.4.7"],
        RELEASES["0.5.5"],
        "",
        # sglang 0.4.7 - 0.5.4, srt/model_executor/model_runner.py ModelRunner.__init__; from
        # 0.5.5 (2025-11-06) srt/server_args.py scales it before the dump.
        "0.4.7 - 0.5.4, 2025-06 - 2025-10",
    ),
)
"""SGLang's own adjustments of mem_fraction_static before the KV rule, by era (E1-E5).

Read in the wheels of 0.2.15, 0.3.2, 0.3.4, 0.3.5, 0.3.6, 0.4.0, 0.4.1.post7, 0.4.3.post4,
0.4.4, 0.4.5, 0.4.6.post5, 0.4.8, 0.4.9, 0.5.3, 0.5.9 and 0.5.23 (``model_executor/model_runner.py``,
``server_args.py``, ``arg_groups/memory_hook.py``). Up to 0.3.4 (2024-10) the multimodal x 0.95
scaled ``server_args`` after the ModelRunner had copied the value, so it did not reach the KV
rule. 0.3.5 - 0.4.0 print "Automatically turn off --chunked-prefill-size and adjust
--mem-fraction-static for multimodal models.", 0.4.1 - 0.4.8 "Automatically reduce
--mem-fraction-static to X because this is a multimodal model."; aiter (attention_backend 'aiter',
context_len > 8192) prints nothing. From 0.4.9 (multimodal: x 0.90, later a ViT-size factor) and
0.5.5 (aiter; 0.4.7 - 0.5.4 scale it in ``ModelRunner.__init__``, re-read in round 25)
``server_args.py`` scales the value before the dump, so the dump already holds it. A log's date only bounds its version from above (an old
image can run later), which is why the sizing checks each adjustment against the logged pool."""

AITER_LONG_CONTEXT = 8192
"""The aiter adjustment applies when ``context_len`` exceeds this (``model_runner.py`` 0.4.7 -
0.5.4, 2025; same as ``MFS_ADJUSTMENTS``)."""


def _qualifies(
    a: MfsAdjustment, architecture: str | None, backend: str | None, context_len: int | None
) -> bool:
    if a.scope == "multimodal":
        return architecture in MULTIMODAL_ARCHITECTURES
    # aiter: only above AITER_LONG_CONTEXT (an unknown context may be either).
    return backend == "aiter" and (context_len is None or context_len > AITER_LONG_CONTEXT)


def mfs_adjustments(
    printed: date | None,
    architecture: str | None,
    attention_backend: str | None,
    context_len: int | None,
) -> tuple[MfsAdjustment, ...]:
    """The adjustments the KV rule applied on top of the dump's mem_fraction_static, for a log
    printed on ``printed`` (``MFS_ADJUSTMENTS``: ``model_runner.py``, 2024-11 - 2026-02). Undated
    logs, and an aiter
    launch whose context length is not printed, get none: the sizing then says when the pool
    fits one of them (``adjustment_candidates``)."""
    if printed is None:
        return ()
    return tuple(
        a
        for a in MFS_ADJUSTMENTS
        if a.first_seen <= printed
        and (a.gone_by is None or printed < a.gone_by)
        and _qualifies(a, architecture, attention_backend, context_len)
        and (a.scope != "aiter" or context_len is not None)
    )


def adjustment_candidates(
    architecture: str | None, attention_backend: str | None, context_len: int | None
) -> tuple[MfsAdjustment, ...]:
    """Every adjustment of ``MFS_ADJUSTMENTS`` (``model_runner.py``, 2024-11 - 2026-02) whose
    condition the launch meets, whatever its date: what a pool that disagrees with the rule may
    still be explained by."""
    return tuple(
        a for a in MFS_ADJUSTMENTS if _qualifies(a, architecture, attention_backend, context_len)
    )
