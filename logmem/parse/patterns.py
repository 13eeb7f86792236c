"""The table of SGLang line shapes: each pattern has a name, a regex with named groups and a real example.

Patterns are searched in a record's message (the text after the ``[time TAGS]`` prefix).
The first pattern in table order that matches wins; tests check that every example is
matched by its own pattern and by no other. Repeats are bounded ({0,N}) so that every
pattern runs in linear time on hostile input. Sources: docs/reference.md.
"""

from __future__ import annotations

from functools import cached_property

import regex

from logmem.frozen import frozen
from logmem.parse.lazy import lazy

NUM = r"-?\d{1,9}(?:\.\d{1,9})?"
# An unformatted Python float ("{x} GB" with no format spec): repr's up to 17 significant
# digits and an exponent (sglang 0.5.4-0.5.6 SWAKVPool, srt/mem_cache/memory_pool.py).
FLOAT = r"-?\d{1,9}(?:\.\d{1,20})?(?:e-?\d{1,3})?"


@frozen
class LinePattern:
    name: str
    source: str  # the regex, compiled on first use: a command runs only the patterns it meets
    example: str
    note: str = ""
    # Literals a match cannot do without (at least one of them is in every matched text):
    # a record runs only the patterns whose literal it holds (logmem.parse.match). Empty:
    # the pattern runs on every record.
    needs: tuple[str, ...] = ()

    @cached_property
    def regex(self) -> regex.Pattern[str]:
        # ASCII: \d must not accept Arabic-Indic or full-width digits from a hostile log.
        return regex.compile(self.source, regex.ASCII)


# The program of an echoed launch command, and the line shape that only quotes one (a
# deprecation warning's "Example:"): the reader follows a command onto its continuation lines
# (logmem.parse.continuation) by the same regexes the launch_command pattern uses.
COMMAND_PROGRAM = (
    r"(?<![\w.'])python[0-9.]{0,6} {1,8}-m {1,8}sglang\.(?:launch_server|bench_one_batch"
    r"|bench_offline_throughput)"
)
COMMAND_NOT = r"\s{0,8}Example:"


def _p(
    name: str, pattern: str, example: str, note: str = "", *, needs: tuple[str, ...] = ()
) -> LinePattern:
    return LinePattern(name, pattern, example, note, needs)


PATTERNS: tuple[LinePattern, ...] = (
    _p(
        "server_args",
        r"server_args=(?P<body>(?:ServerArgs\(|\{).*)$",
        "server_args=ServerArgs(model_path='/home/model/Qwen/QwQ-32B', tp_size=4, mem_fraction_static=0.85)",
        "launcher, no rank; repr form sglang 0.2-0.5.18, dict form (resolved_dict) 0.5.19-0.5.23 "
        "(srt/entrypoints/engine.py, 10.1)",
        needs=("server_args=",),
    ),
    _p(
        "init_begin",
        r"^(?:Init torch distributed begin\.|Init nccl begin\.)",
        "Init torch distributed begin.",
        "E0 says 'Init nccl begin.'",
        needs=("Init torch distributed begin.", "Init nccl begin."),
    ),
    _p(
        "init_end",
        rf"^(?:Init torch distributed ends\.(?: elapsed=(?P<elapsed>{NUM}) s,)?|Memory baseline taken\.)"
        rf" mem usage=(?P<usage>{NUM}) GB",
        "Init torch distributed ends. elapsed=12.85 s, mem usage=3.69 GB",
        "sglang 0.4.4-0.5.8 'ends. mem usage=', 0.5.9-0.5.20 with 'elapsed=' (srt/distributed/"
        "bootstrap.py); 0.5.21-0.5.23 'Memory baseline taken. mem usage=X GB' (same file, "
        "init_torch_distributed) and no 'Init torch distributed begin.' line",
        needs=("Init torch distributed ends.", "Memory baseline taken. mem usage="),
    ),
    _p(
        "load_begin",
        rf"^Load weight begin\. avail mem=(?P<avail>{NUM}) GB",
        "Load weight begin. avail mem=21.63 GB",
        needs=("Load weight begin. avail mem=",),
    ),
    _p(
        "load_end",
        rf"^Load weight end\. (?:elapsed=(?P<elapsed>{NUM}) s, )?type=(?P<type>[^,]{{1,200}}), "
        rf"(?P<mid>.{{0,400}}?)avail mem=(?P<avail>{NUM}) GB(?:, mem usage=(?P<usage>{NUM}) GB)?",
        "Load weight end. elapsed=12.02 s, type=Qwen3MoeForCausalLM, quant=fp8, fmt=e4m3, "
        "avail mem=49.33 GB, mem usage=29.15 GB.",
        "LE1 no usage; LE2 dtype+usage; LE3 +elapsed; LE4 no dtype, optional quant",
        needs=("Load weight end. ",),
    ),
    _p(
        "weights_committed",
        rf"^Load weight end\. Committed real weights after CUDA graph capture in (?P<commit>{NUM}) s "
        rf"\(capture overlap window (?P<window>{NUM}) s, startup overlap total (?P<total>{NUM}) s\)",
        "Load weight end. Committed real weights after CUDA graph capture in 6.42 s (capture "
        "overlap window 9.87 s, startup overlap total 31.05 s)",
        "sglang 0.5.18-0.5.23 --startup-weight-load-mode overlap (srt/model_executor/"
        "model_runner_components/startup_weight_load.py StartupWeightLoadManager.finalize): no "
        "memory figure; the storage was allocated before the capture",
        needs=("Committed real weights after CUDA graph capture",),
    ),
    _p(
        "weights_uninitialized",
        r"^Some weights are not initialized from checkpoints:? (?P<list>[\[{].{0,4194304})",
        "Some weights are not initialized from checkpoints: ['language_model.layers.0.moe.experts."
        "w13_weight', 'language_model.layers.0.moe.experts.w2_weight']",
        "model loader, per rank, before Load weight end (seen 2026-05, E6: corpus 006; "
        "docs/reference.md 3.2); the list can be thousands of names: counted, never kept. A "
        "sorted list in sglang 0.5.x gemma4 loaders; the set '{...}' of params_dict.keys() - "
        "loaded_params elsewhere (srt/models/deepseek_v4.py; mllama4.py has no colon)",
        needs=("Some weights are not initialized from checkpoint",),
    ),
    _p(
        "kv_dtype",
        r"^Using KV cache dtype: (?P<dtype>\S{1,60})",
        "Using KV cache dtype: torch.float8_e4m3fn",
        needs=("Using KV cache dtype: ",),
    ),
    _p(
        "kv_pool",
        rf"^(?:(?P<label>[\w .-]{{1,60}}?) )?KV Cache is allocated\. (?:dtype: (?P<dtype>[^,]{{1,60}}), )?"
        rf"(?:#tokens: (?P<tokens>\d{{1,15}}), )?"
        rf"(?:K size: (?P<k>{NUM}) GB, V size: (?P<v>{NUM}) GB|KV size: (?P<kv>{NUM}) GB)",
        "KV Cache is allocated. #tokens: 46611, K size: 1.42 GB, V size: 1.42 GB",
        "sglang 0.4.2-0.4.3 no #tokens (and a final '.'), 0.4.4-0.5.12 '#tokens: N, ', 0.5.13-0.5.23 "
        "'dtype: D, ' first (srt/mem_cache/memory_pool.py); 0.5.17-0.5.23 may put an "
        "allocation_label before 'KV Cache' (_finalize_allocation_log). MLA/NSA print one KV size",
        needs=("KV Cache is allocated. ",),
    ),
    _p(
        "kv_post_capture",
        rf"^Post-capture KV sizing: (?P<draft>draft )?KV cache allocated\. "
        rf"(?:dtype: (?P<dtype>[^,]{{1,60}}), )?#tokens: (?P<tokens>\d{{1,15}}), "
        rf"KV size: (?P<kv>{NUM}) GB(?:, avail mem=(?P<avail>{NUM}) GB)?",
        "Post-capture KV sizing: KV cache allocated. dtype: torch.bfloat16, #tokens: 236544, "
        "KV size: 36.10 GB, avail mem=11.81 GB",
        "sglang 0.5.17-0.5.23, srt/model_executor/model_runner_components/kv_pool_runtime.py "
        "compute_post_capture_kv_resize: the KV pool backed after the CUDA graphs (avail mem is "
        "free memory after it); 0.5.22-0.5.23 add 'draft KV cache allocated' lines after it, "
        "without avail mem",
        needs=("Post-capture KV sizing: ",),
    ),
    _p(
        "post_capture_split",
        r"^Post-capture KV sizing: full_layer_tokens=(?P<full>\d{1,15}), "
        r"swa_layer_tokens=(?P<swa>\d{1,15})",
        "Post-capture KV sizing: full_layer_tokens=1252738, swa_layer_tokens=1002190",
        "sglang 0.5.17-0.5.23 kv_pool_runtime.py compute_post_capture_kv_resize: the split of the "
        "pool backed after the graphs, printed just before its KV line (swa_layer_tokens=0 "
        "without sliding-window layers)",
        needs=("Post-capture KV sizing: full_layer_tokens=",),
    ),
    _p(
        "unified_reserved",
        rf"^\[unified-memory-pool\] UnifiedKVPool reserved VA upper bound: total_bytes="
        rf"(?P<gb>{NUM}) GB \(=(?P<bytes>\d{{1,20}}) B\), (?P<n>\d{{1,3}}) sub-pool\(s\)",
        "[unified-memory-pool] UnifiedKVPool reserved VA upper bound: total_bytes=54.08 GB "
        "(=58065248256 B), 2 sub-pool(s)",
        "sglang 0.5.22-0.5.23 srt/mem_cache/unified_memory_pool.py UnifiedKVPool.__init__ under "
        "post-capture KV sizing: the one byte buffer of --enable-unified-memory (full and SWA "
        "sub-pools) reserved as address space before the graphs, not memory (only its slot-0 "
        "sink is backed); it prints no 'KV Cache' line. 'UnifiedKVPool allocated: ...' (0.5.16-"
        "0.5.23, memory taken) is not this pattern",
        needs=("UnifiedKVPool reserved VA upper bound: ",),
    ),
    _p(
        "unified_allocated",
        rf"^\[unified-memory-pool\] UnifiedKVPool allocated: total_bytes="
        rf"(?P<gb>{NUM}) GB \(=(?P<bytes>\d{{1,20}}) B\), (?P<n>\d{{1,3}}) sub-pool\(s\)",
        "[unified-memory-pool] UnifiedKVPool allocated: total_bytes=54.08 GB (=58065248256 B), "
        "2 sub-pool(s)",
        "sglang 0.5.16-0.5.23 srt/mem_cache/unified_memory_pool.py UnifiedKVPool.__init__ "
        "without post-capture KV sizing (--enable-unified-memory): the one byte buffer of the "
        "full and SWA (or Mamba) sub-pools, allocated whole before the graphs; the KV pool, "
        "printed instead of a 'KV Cache is allocated' line",
        needs=("UnifiedKVPool allocated: ",),
    ),
    _p(
        "unified_sub_pool",
        r"^\[unified-memory-pool\]   sub-pool '(?P<name>[\w.-]{1,40})': kind=(?P<kind>\w{1,40}), "
        r"layer_num=(?P<layers>\d{1,6}), grow=(?P<grow>\w{1,10}), entry_bytes=(?P<entry>\d{1,15}), "
        r"max_slots=(?P<slots>\d{1,15})",
        "[unified-memory-pool]   sub-pool 'full': kind=MHASubPoolSpec, layer_num=12, grow=down, "
        "entry_bytes=24576, max_slots=2362681, min_slot_index=1 (slots [0,1) reserved)",
        "sglang 0.5.16-0.5.23 srt/mem_cache/unified_memory_pool.py UnifiedKVPool.__init__: one "
        "line per sub-pool after the pool's own line; entry_bytes is a token's bytes in it",
        needs=("[unified-memory-pool]   sub-pool '",),
    ),
    _p(
        "post_capture_note",
        rf"^Post-capture KV sizing: (?:decode CUDA graph max_bs=(?P<bs>\d{{1,9}}) < "
        rf"max_running_requests=(?P<reqs>\d{{1,9}}); reserving activation headroom"
        rf"|max_running_requests (?P<old>\d{{1,9}}) -> (?P<new>\d{{1,9}})"
        rf"|KV-canary per-forward workspace (?P<canary>{NUM}) GB)",
        "Post-capture KV sizing: decode CUDA graph max_bs=64 < max_running_requests=256; "
        "reserving activation headroom",
        "sglang 0.5.17-0.5.23 kv_pool_runtime.py compute_post_capture_kv_resize: the headroom "
        "raised to the pre-capture activation reserve (a warning), max_running_requests capped "
        "for the smaller pool, and (0.5.23) the KV-canary workspace taken off the budget",
        needs=("Post-capture KV sizing: ",),
    ),
    _p(
        "kv_reserved",
        rf"^(?:(?P<label>[\w .-]{{1,60}}?) )?KV Cache VA upper bound\. "
        rf"(?:dtype: (?P<dtype>[^,]{{1,60}}), )?#tokens: (?P<tokens>\d{{1,15}}), "
        rf"(?:K size: (?P<k>{NUM}) GB, V size: (?P<v>{NUM}) GB|KV size: (?P<kv>{NUM}) GB)",
        "KV Cache VA upper bound. dtype: torch.bfloat16, #tokens: 925624, K size: 21.19 GB, "
        "V size: 21.19 GB",
        "sglang 0.5.18-0.5.23 under post-capture KV sizing (srt/mem_cache/memory_pool.py "
        "_finalize_allocation_log): address space reserved before the graphs for #tokens, not "
        "memory (kv_vmm_backing.py backs one page per buffer); kept with the model's pools, "
        "never put in the start-up chain. 0.5.17 prints 'KV Cache is allocated' for the same "
        "reservation (kv_pool; logmem.model.records.Model.reserved_kv_pools)",
        needs=("KV Cache VA upper bound. ",),
    ),
    _p(
        "kv_not_allocated",
        rf"^SWAKVPool VA upper bound: (?P<swa>{NUM}) GB",
        "SWAKVPool VA upper bound: 2.64 GB, swa size: 49135, full size: 61419",
        "sglang 0.5.18-0.5.23 under post-capture KV sizing (srt/mem_cache/swa_memory_pool.py): "
        "the sum of the two reserved pools, address space, not memory: a figure, not put in "
        "the start-up chain",
        needs=("SWAKVPool VA upper bound: ",),
    ),
    _p(
        "kv_available",
        rf"^The available memory for KV cache is (?P<avail>{NUM}) GB",
        "The available memory for KV cache is 14.18 GB.",
        "Ascend NPU builds",
        needs=("The available memory for KV cache is ",),
    ),
    _p(
        "mamba_pool",
        rf"^Mamba Cache is allocated\. (?:max_mamba_cache_size: (?P<n>\d{{1,12}}), )?"
        rf"conv_state size: (?P<conv>{NUM}) ?GB, ssm_state size: (?P<ssm>{NUM}) ?GB"
        rf"(?: {{0,2}}intermediate_ssm_state_cache size: (?P<iss>{NUM}) ?GB"
        rf" {{0,2}}intermediate_conv_window_cache size: (?P<icw>{NUM}) ?GB)?",
        "Mamba Cache is allocated. max_mamba_cache_size: 186, conv_state size: 0.10GB, "
        "ssm_state size: 4.38GB ",
        "sglang 0.5.2-0.5.3 have no 'max_mamba_cache_size: N, ' (srt/mem_cache/memory_pool.py "
        "MambaPool); 0.5.4-0.5.23 print it",
        needs=("Mamba Cache is allocated. ",),
    ),
    _p(
        "swa_plan",
        r"^Use [sS]liding window memory pool(?: \(all SWA\))?\. (?:full_layer_tokens=(?P<full>-?\d{1,15}), )?"
        r"swa_layer_tokens=(?P<swa>-?\d{1,15})",
        "Use sliding window memory pool. full_layer_tokens=61419, swa_layer_tokens=49135",
        "negative values precede a crash. sglang 0.4.10-0.5.6 write 'Use Sliding window memory "
        "pool.' (srt/model_executor/model_runner.py), 0.5.7-0.5.23 'sliding' (srt/model_executor/"
        "pool_configurator.py), '(all SWA)' from 0.5.9",
        needs=("Use sliding window memory pool", "Use Sliding window memory pool"),
    ),
    _p(
        "swa_summary",
        rf"^SWAKVPool mem usage: (?P<usage>{FLOAT}) GB, swa size: (?P<swa>\d{{1,15}}), full size: (?P<full>\d{{1,15}})",
        "SWAKVPool mem usage: 2.64 GB, swa size: 49135, full size: 61419",
        "sglang 0.5.4-0.5.6 print the sum unformatted ('{self.mem_usage} GB', srt/mem_cache/"
        "memory_pool.py), 0.5.7-0.5.23 '.2f' (srt/mem_cache/swa_memory_pool.py); 0.5.18-0.5.23 "
        "print 'SWAKVPool VA upper bound: ...' instead under post-capture sizing (kv_not_allocated)",
        needs=("SWAKVPool mem usage: ",),
    ),
    _p(
        "dsv4_kv_plan",
        rf"^DS[vV]4 memory calculation: (?:[a-z_0-9]{{1,40}}=[^,]{{0,40}}, ){{0,8}}"
        rf"bytes_per_full_token=(?P<bpt>{NUM}), available_bytes=(?P<avail>{NUM}) GB, "
        rf"(?:[a-z_0-9]{{1,40}}=[^,]{{0,40}}, ){{0,12}}full_token=(?P<tokens>\d{{1,15}})",
        "DSV4 memory calculation: bytes_per_full_token=176983.05, available_bytes=87.26 GB, "
        "full_token=529408",
        "sglang 0.5.12-0.5.14 as the example (srt/model_executor/pool_configurator.py); 0.5.16-"
        "0.5.19 add 'c128_state_fixed=X GB, ' before full_token, 0.5.20 'unified=, unified_fp8=, ' "
        "first and more *_fixed= fields, 0.5.21-0.5.23 'dspark_draft_bf16=' too. Every version "
        "says 'DSV4'; the 'DSv4' of the reference (4.5, [L]) is accepted",
        needs=("DSV4 memory calculation: ", "DSv4 memory calculation: "),
    ),
    _p(
        "pool_end",
        rf"^Memory pool end\. avail mem=(?P<avail>{NUM}) GB",
        "Memory pool end. avail mem=2.09 GB",
        needs=("Memory pool end. avail mem=",),
    ),
    _p(
        "capture_begin",
        r"^Capture (?:(?P<name>[A-Za-z][A-Za-z -]{0,40}?) )?(?P<backend>(?i:cuda|npu|cpu|xpu|musa|hpu)) "
        r"graph begin(?: \(step (?P<step>\d{1,6})\))?\.(?P<rest>.{0,100000})$"
        r"|^Capture (?P<name>single-CG draft extend) begin\.(?P<rest>.{0,100000})$",
        "Capture cuda graph begin. This can take up to several minutes. avail mem=1.45 GB",
        "G0-G2; 'piecewise CUDA', 'draft', 'draft extend', E7 'target decode CUDA' ...; sglang "
        "0.5.8-0.5.12 'draft extend cuda graph begin (step N).', 0.5.16-0.5.23 'single-CG draft "
        "extend begin.' (no backend; srt/speculative/multi_layer_eagle_draft_extend_cuda_graph_"
        "runner.py), 0.5.20-0.5.23 'UNO tree draft CUDA' (srt/speculative/uno_worker_v2.py), "
        "0.5.12-0.5.23 'Frozen-KV MTP draft cuda' (no figures)",
        needs=(" graph begin", "Capture single-CG draft extend begin."),
    ),
    _p(
        "capture_end",
        r"^Capture (?:(?P<name>[A-Za-z][A-Za-z -]{0,40}?) )?(?P<backend>(?i:cuda|npu|cpu|xpu|musa|hpu)) "
        r"graph end\.(?P<rest>.{0,100000})$"
        r"|^Capture (?P<name>single-CG draft extend) end\.(?P<rest>.{0,2000})$",
        "Capture cuda graph end. Time elapsed: 7.23 s. avail mem=0.53 GB. mem usage=0.93 GB.",
        "field order differs by era: G1 avail first (sglang 0.4.4-0.4.6), G2 usage first "
        "(0.4.6.post5-0.5.13), "
        "E7 'elapsed=' with commas (0.5.14-0.5.23); the decode end line of 0.5.22-0.5.23 starts "
        "with 'bs=[...]', which the begin line no longer has (srt/model_executor/model_runner_"
        "components/cuda_graph_setup.py)",
        needs=(" graph end.", "Capture single-CG draft extend end."),
    ),
    _p(
        "capture_sizes",
        r"^Capture (?i:cuda|cpu) graph (?P<kind>bs|num tokens) (?P<list>\[.{0,100000})$",
        "Capture cuda graph bs [1, 2, 4, 8, 12, 16, 24]",
        "TP0 only: sglang 0.4.6.postN-0.5.13 (srt/model_executor/cuda_graph_runner.py); 'num "
        "tokens' for piecewise 0.5.4-0.5.13 (piecewise_cuda_graph_runner.py); 'Capture cpu graph "
        "bs' 0.5.2-0.5.23 (cpu_graph_runner.py). 0.5.14 on put the lists in the begin line",
        needs=(" graph bs [", " graph num tokens ["),
    ),
    _p(
        "capture_bar",
        rf"Capturing (?P<kind>batches|num tokens|prefill shape) \((?:bs=(?P<bs>\d{{1,9}}) |num_tokens=(?P<nt>\d{{1,9}}) )?"
        rf"(?:variant=\S{{1,40}} )?avail_mem=(?P<avail>{NUM}) GB\)",
        "Capturing batches (bs=24 avail_mem=4.00 GB):   0%|          | 0/7 [00:00<?, ?it/s]",
        "tqdm render, no prefix; TP0 only; largest size first. sglang 0.4.5 '(avail_mem=X GB)', "
        "0.4.9-0.5.23 '(bs=N avail_mem=X GB)'; piecewise 'Capturing num tokens (num_tokens=N "
        "avail_mem=X GB)' 0.5.4-0.5.20, 'Capturing prefill shape (...)' 0.5.21-0.5.23 "
        "(srt/model_executor/runner/prefill_cuda_graph_runner.py)",
        needs=("Capturing batches (", "Capturing num tokens (", "Capturing prefill shape ("),
    ),
    _p(
        "compile_bar",
        r"Compiling num tokens \(num_tokens=(?P<nt>\d{1,9})\)",
        "Compiling num tokens (num_tokens=20):   0%|          | 0/5 [00:00<?, ?it/s]",
        "piecewise compile phase; carries no memory figure",
        needs=("Compiling num tokens (num_tokens=",),
    ),
    _p(
        "plain_bar",
        r"^[\s\u23ce]{0,40}(?P<pct>\d{1,3})%\|[^|]{0,1000}\|\s{0,5}(?P<i>\d{1,9})/(?P<n>\d{1,9}) \[",
        "  0%|          | 0/13 [00:00<?, ?it/s]",
        "tqdm render without a description: every E2 capture bar, and the first render of "
        "every later bar (before the description is set); no memory figure",
        needs=("%|",),
    ),
    _p(
        "register_graphs",
        r"Registering (?P<n>\d{1,9}) cuda graph addresses",
        "Registering 3492 cuda graph addresses",
        needs=(" cuda graph addresses",),
    ),
    _p(
        "all_reduce_config",
        rf"All Reduce config: symmetric_memory = (?P<sym>{NUM}) MB, local_buffer = (?P<local>{NUM}) MB, "
        r"multicast = (?P<mc>True|False)",
        "All Reduce config: symmetric_memory = 16.00 MB, local_buffer = 8.01 MB, multicast = False",
        "sglang 0.5.16-0.5.18; 0.5.19-0.5.23 append ', pull = True|False' (srt/distributed/"
        "device_communicators/custom_all_reduce_v2.py); MB is MiB",
        needs=("All Reduce config: symmetric_memory = ",),
    ),
    _p(
        "custom_ar",
        r"^(?:\[AR\] (?:All-reduce call path: (?P<path>.{1,200})|Using (?P<impl>\w{1,80}))"
        r"|(?P<off>Custom allreduce is disabled (?:because|due to)|Setup Custom allreduce failed)(?P<why>.{0,500})"
        r"|(?P<v2>Custom allreduce v2) initialized successfully)",
        "Setup Custom allreduce failed with CUDART error: peer access is not supported between "
        "these two devices. To silence this warning, specify --disable-custom-all-reduce explicitly.",
        "legacy custom AR warnings (8.2; sglang 0.4.0-0.5.9 custom_all_reduce.py, 'Setup ... "
        "failed with {e}' 0.4.5-0.5.23 parallel_state.py); [AR] lines of ROCm builds (corpus 003, "
        "005); 'Custom allreduce v2 initialized successfully' on TP0, sglang 0.5.10-0.5.13 "
        "(srt/distributed/device_communicators/custom_all_reduce_v2.py)",
        needs=(
            "[AR] ",
            "Custom allreduce is disabled because",
            "Custom allreduce is disabled due to",
            "Setup Custom allreduce failed",
            "Custom allreduce v2 initialized successfully",
        ),
    ),
    _p(
        "device_name",
        r"Config file not found at [^\n]{0,4000}?device_name=(?P<name>[A-Za-z0-9_\-]{1,200}?)"
        r"(?:_down)?(?:,dtype=[^,.]{1,40})?(?:,block_shape=\[[^\]]{0,40}\])?\.json",
        "Using default MoE kernel config. Performance might be sub-optimal! Config file not found "
        "at /sglang/configs/triton_3_6_0/E=128,N=352,device_name=AMD_Radeon_AI_PRO_R9700.json, "
        "you can create them with https://github.com/sgl-project/sglang/tree/main/benchmark",
        "fused-MoE kernel config lookup: the GPU's name (corpus 003, 006, 011)",
        needs=("device_name=",),
    ),
    _p(
        "rocm_hint",
        r"^(?:Failed to import amdsmi with |(?:\[aiter\] )?import \[module_custom_all_reduce\] )",
        "Failed to import amdsmi with ModuleNotFoundError(\"No module named 'amdsmi'\")",
        "custom_all_reduce.py tries amdsmi only on ROCm builds (pynvml on CUDA; corpus 005, 006); "
        "the keyword is the exception's 'Error'. aiter (a ROCm-only library) prints '[aiter] "
        "import [module_custom_all_reduce] under ...' when its custom all-reduce loads, the "
        "default on ROCm from sglang 0.5.6 (custom_all_reduce.py dispatch_custom_allreduce)",
        needs=("Failed to import amdsmi with ", "import [module_custom_all_reduce] "),
    ),
    _p(
        "device_total",
        r"(?P<smi>Failed to get GPU memory capacity from nvidia-smi\. Falling back to "
        r"torch\.cuda\.mem_get_info\(\)\. )?Reported total GPU memory per device \(MiB\): "
        rf"\[(?P<list>[\d., ]{{0,4000}})\](?:, using min: (?P<min>{NUM}) MiB)?",
        "Failed to get GPU memory capacity from nvidia-smi. Falling back to "
        "torch.cuda.mem_get_info(). Reported total GPU memory per device (MiB): [124546], "
        "using min: 124546 MiB.",
        "launcher, before server_args: the device capacity of the 12.3 heuristics, MiB per "
        "visible device (corpus 021, DGX Spark GB10)",
        needs=("Reported total GPU memory per device (MiB): [",),
    ),
    _p(
        "hf_snapshot",
        r"Found local HF snapshot for (?P<name>[^\s;]{1,400}) at ",
        "Found local HF snapshot for Qwen/Qwen3.5-9B at /root/.cache/huggingface/hub/"
        "models--Qwen--Qwen3.5-9B/snapshots/c2022362; skipping download.",
        "a rank names the model it loads (corpus 014): the model's name where no server_args "
        "dump is in the log",
        needs=("Found local HF snapshot for ",),
    ),
    _p(
        "nsa_backends",
        r"Set NSA backends for (?P<kv>[\w.-]{1,40}) KV Cache: prefill=(?P<prefill>[\w-]{1,60}), "
        r"decode=(?P<decode>[\w-]{1,60})",
        "WARNING server_args.py:1172: Set NSA backends for fp8_e4m3 KV Cache: "
        "prefill=flashmla_auto, decode=flashmla_kv.",
        "launcher, before server_args, for DSA models (GLM-5, DeepSeek V3.2; corpus 003); "
        "after the logger's level and file:line",
        needs=("Set NSA backends for ",),
    ),
    _p(
        "launch_env",
        r"^(?:ENV_VAR_(?:CASE|SYS) (?P<k1>[A-Za-z_][A-Za-z0-9_]{0,100}):(?P<v1>.{0,2000})"
        r"|Setting ENV_VAR (?P<k2>[A-Za-z_][A-Za-z0-9_]{0,100})=(?P<v2>.{0,2000}))$",
        "Setting ENV_VAR SGLANG_DEEPEP_NUM_MAX_DISPATCH_TOKENS_PER_RANK=96",
        "test-harness environment echo, no prefix (corpus 019, 036)",
        needs=("ENV_VAR_CASE ", "ENV_VAR_SYS ", "Setting ENV_VAR "),
    ),
    _p(
        "launch_command",
        rf"^(?!{COMMAND_NOT})(?P<pre>.{{0,2000}}?)(?P<prog>{COMMAND_PROGRAM})"
        r"(?P<argv>(?:\s.{0,200000})?)$",
        "command=python3 -m sglang.launch_server --model-path m --tp-size 2 --mem-fraction-static 0.8",
        "a shell or harness echo of the command line (corpus 001, 007, 018, 019, 036); "
        "`sglang serve` has no rare byte for the reader's prefilter, so it is not read",
        needs=("sglang.launch_server", "sglang.bench_"),
    ),
    _p(
        "symm_prealloc",
        rf"^Pre-allocating symmetric memory pool with (?P<gib>{NUM}) GiB",
        "Pre-allocating symmetric memory pool with 4 GiB",
        needs=("Pre-allocating symmetric memory pool with ",),
    ),
    _p(
        "deepgemm_budget",
        rf"^DeepGEMM masked layout budget: (?P<budget>{NUM}) GiB from (?P<free>{NUM}) GiB free",
        "DeepGEMM masked layout budget: 2.50 GiB from 10.00 GiB free.",
        needs=("DeepGEMM masked layout budget: ",),
    ),
    _p(
        "hicache_host",
        rf"^Allocating (?P<gb>{NUM}) GB host memory for hierarchical (?:KV|Mamba) cache"
        rf"|^Allocating [\w-]{{1,40}} hierarchical KV host pool: \d{{1,15}} tokens, (?P<gb>{NUM}) GB host memory",
        "Allocating 100.00 GB host memory for hierarchical KV cache.",
        "host memory, decimal GB: sglang 0.4.2-0.5.16 as the example; 0.5.17-0.5.23 'Allocating "
        "<Pool> hierarchical KV host pool: N tokens, X GB host memory.' (srt/mem_cache/pool_host/"
        "base.py) and 'for hierarchical Mamba cache' (pool_host/mamba.py)",
        needs=(" GB host memory for hierarchical ", " hierarchical KV host pool: "),
    ),
    _p(
        "hicache_host_short",
        rf"Not enough host memory available\. Requesting (?P<want>{NUM}) GB but only have (?P<have>{NUM}) GB free",
        "Not enough host memory available. Requesting 200.00 GB but only have 120.50 GB free. "
        "Please reduce the size of the hierarchical cache.",
        "HiCache host pool; decimal GB (4.6)",
        needs=("Not enough host memory available. Requesting ",),
    ),
    _p(
        "runtime_reading",
        rf"^(?P<what>Update (?:engine weights online from disk|weights) begin"
        rf"|LoRA adapter (?:un)?loading (?:starts|completes): .{{0,300}})\. avail mem=(?P<avail>{NUM}) GB",
        "Update engine weights online from disk begin. avail mem=12.00 GB",
        "sglang 0.4.0-0.5.23 as the example, 0.2.15-0.3.6 'Update weights begin. avail mem=' "
        "(srt/model_executor/model_runner.py); LoRA load/unload starts/completes 0.4.9-0.5.23 "
        "(srt/lora/lora_manager.py)",
        needs=(
            "Update engine weights online from disk begin. avail mem=",
            "Update weights begin. avail mem=",
            "LoRA adapter loading ",
            "LoRA adapter unloading ",
        ),
    ),
    _p(
        "summary",
        r"^(?:\[gpu(?:_id)?=\d{1,4}\] )?max_total_num_tokens=(?P<tokens>\d{1,15})(?P<rest>.{0,2000})$",
        "max_total_num_tokens=46611, chunked_prefill_size=2048, max_prefill_tokens=16384, "
        "max_running_requests=2049, context_len=131072",
        "scheduler; key=value list, fields vary by era ('[gpu=N] ' first in sglang 0.2.9, "
        "srt/managers/tp_worker.py). Anchored: 'Warning: available_size=..., max_total_num_tokens="
        "...' (0.2.9-0.3.3 KV leak check) and '[unified-memory-pool] total_bytes=..., "
        "max_total_num_tokens=...' (0.5.16-0.5.23, srt/mem_cache/unified_memory_pool.py) are not it",
        needs=("max_total_num_tokens=",),
    ),
    _p(
        "imbalance",
        r"The memory capacity is unbalanced\.(?P<rest>.{0,2000})$",
        "The memory capacity is unbalanced. Some GPUs may be occupied by other processes. "
        "pre_model_load_memory=70.1234130859375, local_gpu_memory=78.5, local_gpu_memory * 0.9=70.65",
        "raw floats; printed by the healthy ranks",
        needs=("The memory capacity is unbalanced.",),
    ),
    _p(
        "not_enough_memory",
        rf"Not enough memory\. Please try to increase --mem-fraction-static\.(?: Current value: "
        rf"(?:self\.server_args\.)?mem_fraction_static=(?P<mfs>{NUM}))?",
        "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. "
        "Current value: mem_fraction_static=0.84",
        needs=("Not enough memory. Please try to increase --mem-fraction-static.",),
    ),
    # SGLang's newer pool-sizing errors (the forms of events.KV_SIZING_FORMS), each with the
    # released wording. sglang 0.5.14, srt/model_executor/model_runner_kv_cache_mixin.py,
    # _profile_available_bytes (0.5.23: srt/mem_cache/kv_cache_configurator.py).
    _p(
        "kv_no_memory",
        rf"Loaded weights leave no GPU memory for the KV cache under --mem-fraction-static="
        rf"(?P<mfs>{NUM})\.?(?: Raise --mem-fraction-static above (?P<suggest>{NUM}))?",
        "ValueError: Loaded weights leave no GPU memory for the KV cache under "
        "--mem-fraction-static=0.85. Raise --mem-fraction-static above 0.863 (minimum viable = "
        "1 - available/pre = 0.8628). If using speculative decoding, draft weights are now counted.",
        "0.5.14+: raised when the KV budget is not positive",
        needs=("Loaded weights leave no GPU memory for the KV cache",),
    ),
    # sglang 0.5.13, srt/model_executor/model_runner_kv_cache_mixin.py, handle_max_mamba_cache;
    # 0.5.23 srt/mem_cache/kv_cache_configurator.py ("is too small to serve any requests" too).
    _p(
        "state_cache_no_memory",
        r"Not enough GPU memory for hybrid \(mamba/linear-attention\) state cache\.|"
        r"Hybrid \(mamba/linear-attention\) state cache is too small to serve any requests\.",
        "RuntimeError: Not enough GPU memory for hybrid (mamba/linear-attention) state cache. "
        "Computed max_mamba_cache_size=0 (total_rest_memory=-1.00 GB, mamba_cache_per_req=52.31 "
        "MB). Try: (1) reduce --max-running-requests, (2) increase --mem-fraction-static, (3) "
        "reduce --speculative-num-draft-tokens, or (4) use GPUs with more memory.",
        "0.5.13+",
        needs=("state cache",),
    ),
    # sglang 0.5.20, srt/mem_cache/unified_memory_pool.py (the bs=1 floor check).
    _p(
        "unified_pool_no_memory",
        r"\[unified-memory-pool\] [^:]{1,120}: byte budget -?\d{1,20} cannot fit ONE worst-case "
        r"request",
        "RuntimeError: [unified-memory-pool] MHATokenToKVPool: byte budget 0 cannot fit ONE "
        "worst-case request (bs=1 floor 1073741824 = kv=1073741824). A pool this size "
        "retract-livelocks at runtime. Raise --mem-fraction-static, lower the model context "
        "length, or reduce reserved memory.",
        "0.5.20+",
        needs=("[unified-memory-pool] ",),
    ),
    # sglang 0.5.14, srt/model_executor/pool_configurator.py (SWA and DSV4 SWA pool caps).
    _p(
        "swa_cap_no_room",
        r"SWA pool cap \(.{0,120}?\) leaves no room for the full KV pool",
        "RuntimeError: SWA pool cap (65536 tokens, 12.50 GiB) leaves no room for the full KV "
        "pool within the available 10.20 GiB. Reduce --max-running-requests, lower "
        "SGLANG_SWA_EVICTION_INTERVAL, or increase --mem-fraction-static.",
        "0.5.14+",
        needs=("leaves no room for the full KV pool",),
    ),
    _p(
        "torch_oom",
        # The type starts a word (the lookbehind) and the rest is not anchored at the end: a
        # line of repeated fragments cost ~60 x 4000 backtracking steps per fragment (46 s/4 MiB).
        r"(?<![\w.])(?P<type>[\w.]{0,60}(?:OutOfMemoryError|RuntimeError)): "
        r"(?P<device>CUDA|HIP|NPU|XPU|MUSA) out of memory\.(?P<rest>.{0,4000})",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 540.00 MiB. GPU 0 has a total "
        "capacity of 14.76 GiB of which 298.75 MiB is free.",
        needs=(" out of memory.",),
    ),
    _p(
        "device_oom",
        r"(?P<type>[\w.]{0,60}Error): (?P<device>CUDA|HIP|NPU|ACL) error: out of memory",
        "torch.AcceleratorError: CUDA error: out of memory",
        needs=(" error: out of memory",),
    ),
    # sglang 0.5.17 srt/mem_cache/kv_vmm_backing.py _check ("{label} failed: {err}"), 0.5.18-
    # 0.5.23 cuda_vmm_utils.py check_drv ("{label}: {err}"): the driver's OOM when SGLang backs
    # KV pages (post-capture KV sizing). err renders as cuda-bindings' CUresult: its FastEnum
    # repr '<CUresult.CUDA_ERROR_OUT_OF_MEMORY: 2>' (13.x), 'CUresult.CUDA_ERROR_OUT_OF_MEMORY'
    # (an enum's str) or '2' (an IntEnum on Python 3.11+).
    _p(
        "vmm_oom",
        r"(?P<type>[\w.]{0,60}Error): (?P<call>cuMem(?:Create|Map))(?:\([a-z ]{1,30}\))?"
        r"(?: failed)?: (?:<?CUresult\.CUDA_ERROR_OUT_OF_MEMORY(?:: 2>)?|2$)",
        "RuntimeError: cuMemCreate(local): <CUresult.CUDA_ERROR_OUT_OF_MEMORY: 2>",
        needs=("cuMemCreate", "cuMemMap"),
    ),
    _p(
        "capture_failed",
        r"Capture (?:(?:prefill|frozen-KV MTP) )?(?i:cuda|cpu) graph failed: ?(?P<msg>.{0,4000})$"
        r"|Capture single-CG draft extend failed: ?(?P<msg>.{0,4000})$",
        # As the failure reads inside its exception (raised as "Exception: Capture ...").
        "Capture CUDA graph failed: CUDA out of memory. Tried to allocate 2.00 MiB.",
        "sglang 0.2.15-0.4.6 'cuda graph', 0.4.6.postN-0.5.23 'CUDA graph' (srt/model_executor/"
        "cuda_graph_runner.py, later runner/decode_cuda_graph_runner.py); 'CPU graph' 0.5.2-0.5.23 "
        "(cpu_graph_runner.py), 'prefill CUDA graph' 0.5.14-0.5.23 (runner/prefill_cuda_graph_"
        "runner.py), 'frozen-KV MTP cuda graph' 0.5.12-0.5.23, 'single-CG draft extend' 0.5.16-0.5.23",
        needs=(" graph failed:", "Capture single-CG draft extend failed:"),
    ),
    _p(
        "scheduler_exception",
        r"Scheduler hit an exception: ?(?P<rest>.{0,2000})$",
        "Scheduler hit an exception: Traceback (most recent call last):",
        needs=("Scheduler hit an exception:",),
    ),
    _p(
        "other_ranks_failed",
        r"TP rank (?P<tp>\d{1,6}) could finish the model loading, but there are other ranks that didn't finish",
        "TP rank 0 could finish the model loading, but there are other ranks that didn't finish loading. "
        "It is likely due to unexpected failures (e.g., OOM) or a slow node.",
        needs=(" could finish the model loading, but there are other ranks that didn't finish",),
    ),
    _p(
        "sigquit",
        r"Received sigquit from a child proces|SIGQUIT received\. .{0,200}?It usually means one child failed",
        "SIGQUIT received. signum=None, frame=None. It usually means one child failed.",
        "'Received sigquit from a child process' sglang 0.2-0.5.23 (srt/entrypoints/engine.py); "
        "'SIGQUIT received. ... one child failed' 0.5.3-0.5.23 (tokenizer_manager.py, the running "
        "phase's handler)",
        needs=("Received sigquit from a child proces", "SIGQUIT received. "),
    ),
    _p(
        "process_died",
        r"Subprocess (?P<name>[\w.-]{1,80}) \(pid=(?P<pid>\d{1,10})\) crashed with exit code "
        r"(?P<code>-?\d{1,6})",
        "Subprocess scheduler_0 (pid=22741) crashed with exit code -6. Triggering SIGQUIT for cleanup...",
        "the launcher's watchdog saw a child end (srt/utils/watchdog.py SubprocessWatchdog, in 0.5.23, "
        "not in 0.5.9); a negative code is the signal that ended it",
        needs=(") crashed with exit code ",),
    ),
    _p(
        "sigterm",
        r"SIGTERM received\. ",
        "SIGTERM received. signum=None frame=None. Draining requests and shutting down...",
        "someone stopped the server (tokenizer_manager.py sigterm_handler, 0.4.6-0.5.23): the deaths "
        "that follow are its shutdown",
        needs=("SIGTERM received. ",),
    ),
    _p(
        "fatal_error",
        r"^(?:Fatal Python error: (?P<python>.{1,300})"
        r"|.{0,300}?(?P<hsa>HSA_STATUS_ERROR_[A-Z_]{1,60}(?:: .{0,300})?))$",
        "Fatal Python error: Aborted",
        "a process killed by a signal without a Python traceback: faulthandler's report "
        "('Aborted', 'Segmentation fault'), or ROCm's runtime aborting on a device exception",
        needs=("Fatal Python error: ", "HSA_STATUS_ERROR_"),
    ),
    _p(
        "ready",
        r"The server is fired up and ready to roll",
        "The server is fired up and ready to roll!",
        needs=("The server is fired up and ready to roll",),
    ),
    _p(
        "http_up",
        r"Uvicorn running on |Application startup complete\.",
        "INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)",
        needs=("Uvicorn running on ", "Application startup complete."),
    ),
    _p(
        "graph_disabled",
        r"^(?:Disable (?P<which>piecewise|prefill) CUDA graph (?:capture )?(?:because|for|due to) (?P<why>.{0,500})"
        r"|Breakable CUDA graph is incompatible with (?P<why2>.{0,200}); disabling prefill CUDA graph)",
        "Disable piecewise CUDA graph because --disable-piecewise-cuda-graph is set",
        note="sglang 0.5.4-0.5.12 'Disable piecewise CUDA graph because ...', 0.5.14-0.5.23 "
        "'Disable prefill CUDA graph because|for|capture because ...' (srt/model_executor/"
        "model_runner_components/cuda_graph_setup.py), 'Breakable ...' 0.5.14-0.5.23 "
        "(srt/arg_groups/cuda_graph_hook.py)",
        needs=(
            "Disable piecewise CUDA graph because ",
            "Disable piecewise CUDA graph due to ",
            "Disable prefill CUDA graph ",
            "Breakable CUDA graph is incompatible with ",
        ),
    ),
    _p(
        "bench_result",
        r"^(?:(?P<offline>(?:Prefill|Total)\. {1,2}latency: |Decode\. {1,2}median latency: "
        r"|=+ ?Offline Throughput Benchmark Result)|(?P<serving>=+ ?Serving Benchmark Result))",
        "Prefill. latency: 0.00328 s, throughput:   4879.42 token/s",
        "bench_one_batch / bench_latency results, bench_offline_throughput's and a bench_serving "
        "client's result tables",
        needs=("Prefill. latency: ", "Total. latency: ", "median latency: ", "Benchmark Result"),
    ),
    _p(
        "serving",
        r"^(?P<kind>Decode|Prefill) batch(?: \[\d{1,12}\])?[.,]",
        "Decode batch. #running-req: 1, #token: 52, token usage: 0.00, cuda graph: True, "
        "gen throughput (token/s): 5.29, #queue-req: 0",
        "the scheduler served; the reader yields only the first per file and per start-up "
        "(ONCE_LITERALS), never every one. sglang 0.5.23 may print ' [iter]' before the comma "
        "(srt/managers/scheduler_components/metrics_reporter.py, LOG_FORWARD_ITERS)",
        needs=("Decode batch", "Prefill batch"),
    ),
    _p(
        "model_backend",
        r"^Using (?P<backend>Transformers) backend\.",
        "Using Transformers backend.",
        "the fallback implementation for an architecture SGLang does not implement",
        needs=("Using Transformers backend.",),
    ),
    _p(
        "frame",
        r'^\s{0,8}(?:\[rank\d{1,6}\]:\s{0,8})?File "(?P<path>[^"]{1,1000})", line (?P<line>\d{1,9}),? '
        r"in (?P<func>\S{1,300})",
        '  File "/sgl-workspace/sglang/python/sglang/srt/model_executor/cuda_graph_runner.py", '
        "line 929, in capture_one_batch_size",
        "a traceback frame of a Python file; unprefixed (faulthandler's dump after 'Fatal Python "
        "error' writes 'line N in FUNC', no comma: corpus 006); '<string>' and '<frozen ...>' "
        "frames too",
        needs=('.py", line ', '>", line '),
    ),
    _p(
        "exception_ignored",
        r"^Exception ignored (?P<what>.{0,300})",
        "Exception ignored in atexit callback: <function _exit_function at 0x7f2c1c2d8ca0>",
        "an unraisable exception (destructor, atexit): its traceback follows, the program goes on",
        needs=("Exception ignored ",),
    ),
    _p(
        "traceback_start",
        r"^\s{0,8}Traceback \(most recent call last\):",
        "Traceback (most recent call last):",
        "an unprefixed traceback (launcher, test harness)",
        needs=("Traceback (most recent call last):",),
    ),
    _p(
        "exception",
        r"^(?P<type>(?:[a-z_][a-z0-9_]{0,40}\.){0,5}(?:[A-Z][A-Za-z0-9_]{0,60}(?:Error|Exception)"
        r"|Exception))"
        r"(?:: (?P<msg>.{0,4000}))?$",
        "TypeError: cannot unpack non-iterable ForwardMetadata object",
        "last line of a traceback; unprefixed",
        needs=("Error", "Exception"),
    ),
)

BY_NAME: dict[str, LinePattern] = {p.name: p for p in PATTERNS}

# Literal keywords: a segment with none of these cannot match any pattern (or carry a
# memory figure), so the reader skips it without decoding. Tests check every example.
# Each is a literal its patterns cannot match without, chosen (where the wording allows)
# to hold a byte that runtime lines (Decode batch, uvicorn access) never print, such as
# B, _, y, x, U, V, R, C, %, ' or =: the pure-Python reader then finds them with one
# memchr (see logmem/parse/read.py). Figures: GB GiB MiB MB (every size SGLang prints, and the
# MEMORY_FIGURE units); mem usage= and avail mem/avail_mem (the unit-less figures).
KEYWORDS: tuple[str, ...] = (
    "GB", "GiB", "MiB", "MB", "avail mem", "avail_mem", "mem usage=",
    "server_args", "max_total_num_tokens", "Init torch distributed", "Init nccl",
    "KV cache", "KV Cache", "sliding window memory", "Sliding window memory", "Capture", "Capturing",
    "Compiling num tokens", "%|", "Registering", "memory capacity is unbalanced",
    "Not enough memory", "out of memory", "Error", "Exception", "exception", "Traceback",
    "didn't finish", "Received sigquit", "SIGQUIT received", "crashed with exit code",
    "SIGTERM received", "Fatal Python error", "HSA_STATUS_ERROR_", "ready to roll", "Uvicorn running",
    "Application startup complete", "CUDA graph", "[AR]", "Custom allreduce", "ENV_VAR", "device_name=",
    "sglang.launch_server", "sglang.bench_", "Prefill. latency", "Total. latency",
    "median latency", "Benchmark Result", "Using Transformers backend", '.py", line ',
    "not initialized from checkpoint", "jit/module_custom_all_reduce", "Post-capture KV sizing",
    "entry_bytes=", "; skipping download",
)  # fmt: skip
# Literals of lines a running server prints by the thousand (Decode / Prefill batch): the
# reader yields only the first segment that holds one in each file, and the first after each
# scheduler summary (read.iter_segments), so that serving is seen without reading every line.
ONCE_LITERALS: tuple[str, ...] = ("Decode batch", "Prefill batch")
ONCE_BYTES: tuple[bytes, ...] = tuple(x.encode() for x in ONCE_LITERALS)
KEYWORD_BYTES: regex.Pattern[bytes] = lazy(
    "|".join(regex.escape(k) for k in sorted(KEYWORDS, key=len, reverse=True)).encode()
)

# A record that carries one of these but matches no pattern is reported, never dropped.
MEMORY_FIGURE = lazy(
    r"\d(?:\.\d{1,9})? ?(?:GB|GiB|MiB|MB)\b|avail(?:_mem| mem)|mem usage", regex.IGNORECASE
)
