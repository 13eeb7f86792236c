"""SGLang's rules about CUDA-graph capture: which flag caps or lists a graph family's sizes in
each era, which families are sized in tokens, when graphs are off, and what a bar reading
measures. Re-exported by logmem.sglang.rules (the one place other stages read them from); kept
apart so that rules.py stays within the module size limit.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from logmem.frozen import frozen

_Month = tuple[int, int]


END_LINE_EMPTIES_CACHE = True
"""A capture's end line reads free memory after emptying PyTorch's allocator cache; its bars do not.

The ``Capturing batches (bs=.. avail_mem=..)`` / ``Capturing num tokens`` bars read
``get_available_gpu_memory(..., empty_cache=False)`` (cuda_graph_runner.py and
piecewise_cuda_graph_runner.py, sglang 0.4.6 - 0.5.9; runner/decode_cuda_graph_runner.py and
prefill_cuda_graph_runner.py, 0.5.23); the begin and end lines call it with its default
``empty_cache=True`` (model_runner.py; cuda_graph_setup.py in 0.5.23), which first returns the
blocks the allocator cached during capture (all eras, E0-E7). So the last bar minus the end
line is the last bucket's cost less what the end reading released: not a per-bucket cost."""


def graph_sized_in_tokens(name: str) -> bool:
    """Whether a graph family's sizes are token counts rather than batch sizes.

    Piecewise (``piecewise_cuda_graph_runner.py``, ``Capture cuda graph num tokens``, E4-E6)
    and prefill graphs (``Capture <role> prefill CUDA graph``, ``cuda_graph_setup.py``, E7) are
    captured per ``num_tokens``; decode, verify, draft and draft-extend graphs per ``bs``."""
    return "prefill" in name or "piecewise" in name


def graph_cap_flag(name: str, args: Mapping[str, Any]) -> str:
    """The server flag that caps a graph family's largest bucket.

    ``server_args.py``: decode graphs ``--cuda-graph-max-bs`` (all eras; ``--cuda-graph-max-bs-
    decode`` where the dump has ``cuda_graph_max_bs_decode``, 2026); piecewise graphs
    ``--piecewise-cuda-graph-max-tokens`` (E4-E6); E7 prefill graphs ``--cuda-graph-max-bs-
    prefill`` where the dump has ``cuda_graph_max_bs_prefill``."""
    if graph_sized_in_tokens(name):
        if "piecewise" not in name and "cuda_graph_max_bs_prefill" in args:
            return "--cuda-graph-max-bs-prefill"
        return "--piecewise-cuda-graph-max-tokens"
    if "cuda_graph_max_bs_decode" in args:
        return "--cuda-graph-max-bs-decode"
    return "--cuda-graph-max-bs"


def graphs_off(args: Mapping[str, Any]) -> bool:
    """Whether server_args turn every CUDA graph off: ``disable_cuda_graph=True`` returns from
    ``ModelRunner.init_device_graphs`` before any capture (model_runner.py, sglang 0.4.6 - 0.5.9);
    0.5.23's cuda_graph_hook.py sets both phases' backend to disabled for it (all eras, E0-E7)."""
    return args.get("disable_cuda_graph") is True


def graph_disable_flag(name: str) -> str:
    """The server flag that skips a graph family's capture: ``--disable-piecewise-cuda-graph``
    for the piecewise graph (``server_args.py``, about Apr 2026 on; before, it was opt-in),
    ``--disable-cuda-graph`` for the others (all eras)."""
    return "--disable-piecewise-cuda-graph" if "piecewise" in name else "--disable-cuda-graph"


@frozen
class CaptureListFlags:
    """The two flags that set a batch-size graph family's capture list, and how they combine
    (``capture_list_flags``: server_args.py / cuda_graph_runner.py, by era E0-E7)."""

    cap: str  # the flag that caps the largest size (graph_cap_flag)
    listed: str  # the flag that gives the list itself
    # A given list sets the largest size, the cap flag is then ignored (True), or the cap flag
    # still cuts a given list (False); None: the log's era cannot tell.
    overrides: bool | None


# 0.5.2 (file date 2025-09-11) cuts a given list at max bs; 0.5.3 (2025-10-06) lets it override.
# Sep - Oct 2025 holds dev builds of both.
_LAST_CUT, _FIRST_OVERRIDE = (2025, 8), (2025, 11)


def capture_list_flags(
    name: str, args: Mapping[str, Any], month: _Month | None
) -> CaptureListFlags | None:
    """Which flag controls a batch-size graph family's capture list in the launch's era.

    Up to sglang 0.5.2 (srt/model_executor/cuda_graph_runner.py ``get_batch_sizes_to_capture``,
    read in 0.4.6 and 0.5.2) the runner cuts a ``--cuda-graph-bs`` list at ``cuda_graph_max_bs``:
    lowering ``--cuda-graph-max-bs`` shrinks a given list too. From 0.5.3 (srt/server_args.py
    ``__post_init__``, read in 0.5.3 and 0.5.9) a given list sets ``cuda_graph_max_bs =
    max(cuda_graph_bs)``: ``--cuda-graph-max-bs`` is ignored, only dropping sizes from the list
    shrinks it. E7 (srt/arg_groups/memory_hook.py, 0.5.23) does the same with
    ``--cuda-graph-bs-decode`` over ``--cuda-graph-max-bs-decode``. The era: E7 keys in the dump,
    a dumped ``cuda_graph_bs=None`` (only 0.5.2 and before print it), else the log's month.
    None for the families sized in tokens (piecewise, prefill)."""
    if graph_sized_in_tokens(name):
        return None
    cap = graph_cap_flag(name, args)
    if "cuda_graph_bs_decode" in args or "cuda_graph_max_bs_decode" in args:
        return CaptureListFlags(cap, "--cuda-graph-bs-decode", True)
    if "cuda_graph_bs" in args and args["cuda_graph_bs"] is None:
        return CaptureListFlags(cap, "--cuda-graph-bs", False)
    overrides = None
    if month is not None:
        overrides = True if month >= _FIRST_OVERRIDE else False if month <= _LAST_CUT else None
    return CaptureListFlags(cap, "--cuda-graph-bs", overrides)


def list_given_by_dump(args: Mapping[str, Any], month: _Month | None) -> bool | None:
    """Whether the server_args dump alone shows the launch gave the decode list: E7's
    ``cuda_graph_bs_decode`` is the user's flag as passed (None: not given; memory_hook.py
    0.5.23 writes the generated list into ``cuda_graph_config`` instead); up to 0.5.2
    ``cuda_graph_bs`` is None unless given (server_args.py 0.4.6, 0.5.2), so a list there before
    Sep 2025 is the user's. From 0.5.3 the dump prints the generated list too: None (unknown)."""
    if "cuda_graph_bs_decode" in args:
        return args["cuda_graph_bs_decode"] is not None
    if "cuda_graph_bs" not in args:
        return None
    if args["cuda_graph_bs"] is None:
        return False
    return True if month is not None and month <= _LAST_CUT else None


def verify_tokens_per_req(name: str, args: Mapping[str, Any], printed: int | None) -> int | None:
    """Tokens per request of a target-verify graph: SGLang captures the target model's graph of
    a speculative launch (EAGLE, EAGLE3, NEXTN/MTP, STANDALONE, NGRAM) in TARGET_VERIFY mode at
    ``num_tokens = bs x speculative_num_draft_tokens`` (cuda_graph_runner.py ``num_tokens_per_bs``,
    0.4.6 - 0.5.9, npu_graph_runner.py subclasses it; E7 prints ``num_tokens_per_req`` on the
    begin line, decode_cuda_graph_runner.py 0.5.23). ``printed``: the begin line's value. None
    for a graph that is not the target's verify graph, or when neither the line nor the dump
    says how many tokens."""
    if "draft" in name or graph_sized_in_tokens(name):
        return None
    spec = args.get("speculative_algorithm")
    if "verify" not in name and spec in (None, "None", ""):
        return None
    if printed is not None:
        return printed
    ndt = args.get("speculative_num_draft_tokens")
    return ndt if isinstance(ndt, int) and not isinstance(ndt, bool) and ndt >= 1 else None


def kept_logits_bytes(rows: int, vocab: int) -> int:
    """What captured buckets keep of their own logits when the version has no static logits
    buffer (before 0.5.1, eras.static_logits_buffer False): rows x vocab x 4 B, per bucket.

    cuda_graph_runner.py (0.4.3.post2 and 0.4.3.post4, March 2025): ``capture`` stores each bucket's
    ``(next_token_logits, hidden_states)`` in ``self.output_buffers[bs]``, so they stay live;
    every graph is captured into one pool (``global_graph_memory_pool``, set from the first
    ``graph.pool()``), where a bucket's freed activations are reused by the next but its kept
    outputs are not. logits_processor.py ``_get_logits``: ``tensor_model_parallel_all_gather``
    then ``logits[:, : vocab_size].float()``, i.e. float32 over the whole vocabulary on every TP
    rank. So each bucket, smaller or larger than the largest, costs at least its rows x vocab x
    4 B; a larger largest bucket adds its activations on top."""
    return rows * vocab * 4
