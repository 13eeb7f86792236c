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


def _p(
    name: str, pattern: str, example: str, note: str = "", *, needs: tuple[str, ...] = ()
) -> LinePattern:
    return LinePattern(name, pattern, example, note, needs)


PATTERNS: tuple[LinePattern, ...] = (
    _p(
        "server_args",
        r"server_args=(?P<body>(?:ServerArgs\(|\{).*)$",
        "server_args=ServerArgs(model_path='/home/model/Qwen/QwQ-32B', tp_size=4, mem_fraction_static=0.85)",
        "launcher, no rank; repr form until ~Aug 2026, dict form after (10.1)",
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
        rf"^Init torch distributed ends\.(?: elapsed=(?P<elapsed>{NUM}) s,)? mem usage=(?P<usage>{NUM}) GB",
        "Init torch distributed ends. elapsed=12.85 s, mem usage=3.69 GB",
        "elapsed= from PR #15426 (Dec 2025)",
        needs=("Init torch distributed ends.",),
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
        "weights_uninitialized",
        r"^Some weights are not initialized from checkpoints: (?P<list>\[.{0,4194304})",
        "Some weights are not initialized from checkpoints: ['language_model.layers.0.moe.experts."
        "w13_weight', 'language_model.layers.0.moe.experts.w2_weight']",
        "model loader, per rank, before Load weight end (seen 2026-05, E6: corpus 006; "
        "docs/reference.md 3.2); the list can be thousands of names: counted, never kept",
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
        rf"^KV Cache is allocated\. (?:dtype: (?P<dtype>[^,]{{1,60}}), )?(?:#tokens: (?P<tokens>\d{{1,15}}), )?"
        rf"(?:K size: (?P<k>{NUM}) GB, V size: (?P<v>{NUM}) GB|KV size: (?P<kv>{NUM}) GB)",
        "KV Cache is allocated. #tokens: 46611, K size: 1.42 GB, V size: 1.42 GB",
        "MLA/NSA pools print one KV size; newest inserts 'dtype: ...'; Jan 2025 had no #tokens",
        needs=("KV Cache is allocated. ",),
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
        rf"^Mamba Cache is allocated\. max_mamba_cache_size: (?P<n>\d{{1,12}}), "
        rf"conv_state size: (?P<conv>{NUM}) ?GB, ssm_state size: (?P<ssm>{NUM}) ?GB"
        rf"(?: {{0,2}}intermediate_ssm_state_cache size: (?P<iss>{NUM}) ?GB"
        rf" {{0,2}}intermediate_conv_window_cache size: (?P<icw>{NUM}) ?GB)?",
        "Mamba Cache is allocated. max_mamba_cache_size: 186, conv_state size: 0.10GB, "
        "ssm_state size: 4.38GB ",
        needs=("Mamba Cache is allocated. max_mamba_cache_size: ",),
    ),
    _p(
        "swa_plan",
        r"^Use sliding window memory pool(?: \(all SWA\))?\. (?:full_layer_tokens=(?P<full>-?\d{1,15}), )?"
        r"swa_layer_tokens=(?P<swa>-?\d{1,15})",
        "Use sliding window memory pool. full_layer_tokens=61419, swa_layer_tokens=49135",
        "negative values precede a crash",
        needs=("Use sliding window memory pool",),
    ),
    _p(
        "swa_summary",
        rf"^SWAKVPool mem usage: (?P<usage>{NUM}) GB, swa size: (?P<swa>\d{{1,15}}), full size: (?P<full>\d{{1,15}})",
        "SWAKVPool mem usage: 2.64 GB, swa size: 49135, full size: 61419",
        needs=("SWAKVPool mem usage: ",),
    ),
    _p(
        "dsv4_kv_plan",
        rf"^DSv4 memory calculation: bytes_per_full_token=(?P<bpt>{NUM}), available_bytes=(?P<avail>{NUM}) GB, "
        r"full_token=(?P<tokens>\d{1,15})",
        "DSv4 memory calculation: bytes_per_full_token=176983.05, available_bytes=87.26 GB, full_token=529408",
        needs=("DSv4 memory calculation: bytes_per_full_token=",),
    ),
    _p(
        "pool_end",
        rf"^Memory pool end\. avail mem=(?P<avail>{NUM}) GB",
        "Memory pool end. avail mem=2.09 GB",
        needs=("Memory pool end. avail mem=",),
    ),
    _p(
        "capture_begin",
        r"^Capture (?:(?P<name>[a-z][a-z ]{0,40}?) )?(?P<backend>(?i:cuda|npu|cpu|xpu|musa|hpu)) graph begin\."
        r"(?P<rest>.{0,100000})$",
        "Capture cuda graph begin. This can take up to several minutes. avail mem=1.45 GB",
        "G0-G2; 'piecewise CUDA', 'draft', 'draft extend', E7 'target decode CUDA' ...",
        needs=(" graph begin.",),
    ),
    _p(
        "capture_end",
        r"^Capture (?:(?P<name>[a-z][a-z ]{0,40}?) )?(?P<backend>(?i:cuda|npu|cpu|xpu|musa|hpu)) graph end\."
        r"(?P<rest>.{0,2000})$",
        "Capture cuda graph end. Time elapsed: 7.23 s. avail mem=0.53 GB. mem usage=0.93 GB.",
        "field order differs by era: G1 avail first, G2 usage first, E7 'elapsed=' with commas",
        needs=(" graph end.",),
    ),
    _p(
        "capture_sizes",
        r"^Capture (?i:cuda) graph (?P<kind>bs|num tokens) (?P<list>\[.{0,100000})$",
        "Capture cuda graph bs [1, 2, 4, 8, 12, 16, 24]",
        "TP0 only, E3-E6; 'num tokens' for piecewise",
        needs=(" graph bs [", " graph num tokens ["),
    ),
    _p(
        "capture_bar",
        rf"Capturing (?P<kind>batches|num tokens) \((?:bs=(?P<bs>\d{{1,9}}) |num_tokens=(?P<nt>\d{{1,9}}) )?"
        rf"(?:variant=\S{{1,40}} )?avail_mem=(?P<avail>{NUM}) GB\)",
        "Capturing batches (bs=24 avail_mem=4.00 GB):   0%|          | 0/7 [00:00<?, ?it/s]",
        "tqdm render, no prefix; TP0 only; largest size first",
        needs=("Capturing batches (", "Capturing num tokens ("),
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
        "format string only (8.1); MB is MiB",
        needs=("All Reduce config: symmetric_memory = ",),
    ),
    _p(
        "custom_ar",
        r"^(?:\[AR\] (?:All-reduce call path: (?P<path>.{1,200})|Using (?P<impl>\w{1,80}))"
        r"|(?P<off>Custom allreduce is disabled because|Setup Custom allreduce failed)(?P<why>.{0,500}))",
        "Setup Custom allreduce failed with CUDART error: peer access is not supported between "
        "these two devices. To silence this warning, specify --disable-custom-all-reduce explicitly.",
        "legacy custom AR warnings (8.2); [AR] lines of ROCm builds (corpus 003, 005)",
        needs=("[AR] ", "Custom allreduce is disabled because", "Setup Custom allreduce failed"),
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
        r"^Failed to import amdsmi with ",
        "Failed to import amdsmi with ModuleNotFoundError(\"No module named 'amdsmi'\")",
        "custom_all_reduce.py tries amdsmi only on ROCm builds (pynvml on CUDA; corpus 005, 006); "
        "the keyword is the exception's 'Error'",
        needs=("Failed to import amdsmi with ",),
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
        r"^(?!\s{0,8}Example:)(?P<pre>.{0,2000}?)(?<![\w.'])"
        r"(?P<prog>python[0-9.]{0,6} {1,8}-m {1,8}sglang\.(?:launch_server|bench_one_batch"
        r"|bench_offline_throughput))(?P<argv>(?:\s.{0,200000})?)$",
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
        rf"^Allocating (?P<gb>{NUM}) GB host memory for hierarchical KV cache",
        "Allocating 100.00 GB host memory for hierarchical KV cache.",
        "host memory, decimal GB",
        needs=(" GB host memory for hierarchical KV cache",),
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
        rf"^(?P<what>Update engine weights online from disk begin|LoRA adapter loading starts: .{{0,300}})\. "
        rf"avail mem=(?P<avail>{NUM}) GB",
        "Update engine weights online from disk begin. avail mem=12.00 GB",
        needs=(
            "Update engine weights online from disk begin. avail mem=",
            "LoRA adapter loading starts: ",
        ),
    ),
    _p(
        "summary",
        r"max_total_num_tokens=(?P<tokens>\d{1,15})(?P<rest>.{0,2000})$",
        "max_total_num_tokens=46611, chunked_prefill_size=2048, max_prefill_tokens=16384, "
        "max_running_requests=2049, context_len=131072",
        "scheduler; key=value list, fields vary by era",
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
    _p(
        "capture_failed",
        r"Capture (?i:cuda) graph failed: ?(?P<msg>.{0,4000})$",
        # As the failure reads inside its exception (raised as "Exception: Capture ...").
        "Capture CUDA graph failed: CUDA out of memory. Tried to allocate 2.00 MiB.",
        needs=(" graph failed:",),
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
        r"Received sigquit from a child proces",
        "Received sigquit from a child process. It usually means the child failed.",
        needs=("Received sigquit from a child proces",),
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
        r"^(?:Disable (?P<which>piecewise|prefill) CUDA graph because (?P<why>.{0,500})"
        r"|Breakable CUDA graph is incompatible with (?P<why2>.{0,200}); disabling prefill CUDA graph)",
        "Disable piecewise CUDA graph because --disable-piecewise-cuda-graph is set",
        needs=(
            "Disable piecewise CUDA graph because ",
            "Disable prefill CUDA graph because ",
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
        r"^(?P<kind>Decode|Prefill) batch[.,]",
        "Decode batch. #running-req: 1, #token: 52, token usage: 0.00, cuda graph: True, "
        "gen throughput (token/s): 5.29, #queue-req: 0",
        "the scheduler served; the reader yields only the first per file and per start-up "
        "(ONCE_LITERALS), never every one",
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
        r'^\s{0,8}(?:\[rank\d{1,6}\]:\s{0,8})?File "(?P<path>[^"]{1,1000})", line (?P<line>\d{1,9}), '
        r"in (?P<func>\S{1,300})",
        '  File "/sgl-workspace/sglang/python/sglang/srt/model_executor/cuda_graph_runner.py", '
        "line 929, in capture_one_batch_size",
        "a traceback frame of a Python file; unprefixed",
        needs=('.py", line ',),
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
    "KV cache", "KV Cache", "sliding window memory", "Capture", "Capturing",
    "Compiling num tokens", "%|", "Registering", "memory capacity is unbalanced",
    "Not enough memory", "out of memory", "Error", "Exception", "exception", "Traceback",
    "didn't finish", "Received sigquit", "ready to roll", "Uvicorn running",
    "Application startup complete", "CUDA graph", "[AR]", "Custom allreduce", "ENV_VAR", "device_name=",
    "sglang.launch_server", "sglang.bench_", "Prefill. latency", "Total. latency",
    "median latency", "Benchmark Result", "Using Transformers backend", '.py", line ',
    "not initialized from checkpoint",
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
