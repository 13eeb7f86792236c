"""Which server_args keys cannot change GPU memory at start-up (re-exported by rules.py).

``diff`` and ``fit`` offer a differing key as a possible cause of a memory change only when it
can be one. Two kinds of key cannot: the settings named in ``NON_MEMORY_ARGS`` (seeds,
timeouts, logging, metrics, front-end parsing), and keys that only name a place or a label
(``memory_neutral_arg``'s naming rule), which stays right for a flag SGLang renames or adds.
"""

from __future__ import annotations

NON_MEMORY_ARGS: frozenset[str] = frozenset(
    {
        # process placement and credentials
        "node_rank",
        "api_key",
        "admin_api_key",
        # seeds and timeouts
        "random_seed",
        "watchdog_timeout",
        "dist_timeout",
        "soft_watchdog_timeout",
        # paths read on the CPU side, or the model's own (compare.comparable compares the model
        # by its weights line and architecture, so the same weights under another path are one)
        "model_path",
        "tokenizer_path",
        "quantization_param_path",
        "fastapi_root_path",
        # logging, metrics and tracing
        "log_level",
        "log_level_http",
        "log_requests",
        "log_requests_level",
        "log_requests_format",
        "log_requests_target",
        "show_time_cost",
        "decode_log_interval",
        "enable_metrics",
        "enable_metrics_for_all_schedulers",
        "export_metrics_to_file",
        "enable_cache_report",
        "enable_request_time_stats_logging",
        "bucket_time_to_first_token",
        "bucket_inter_token_latency",
        "bucket_e2e_request_latency",
        "collect_tokens_histogram",
        "prompt_tokens_buckets",
        "generation_tokens_buckets",
        "kv_events_config",
        "enable_trace",
        "uvicorn_access_log_exclude_prefixes",
        "gc_warning_threshold_secs",
        # front end (tokenizer process, parsers, streaming): CPU side
        "tool_call_parser",
        "reasoning_parser",
        "stream_interval",
        "stream_output",
        "allow_auto_truncate",
        "constrained_json_whitespace_pattern",
        "skip_server_warmup",
        "warmups",
    }
)
"""server_args keys that do not change GPU memory at start-up, beside those the naming rule of
``memory_neutral_arg`` covers: seeds, timeouts, logging and metrics switches, CPU-side parsing
(ServerArgs fields in sglang/srt/server_args.py, 0.4.6 to 0.5.9; the tokenizer, chat template
and KV scaling-factor file are read by the tokenizer process or into existing tensors, and
``model_path``'s weights are compared by the weights line instead)."""

# Keys that name where the server listens or what it is called (host, port, addresses, URLs,
# endpoints, names, templates) or a directory it writes or downloads to: the last part of
# the key says so. None of these sizes a tensor.
_NAMING_ENDS = frozenset(
    {"host", "port", "ports", "addr", "address", "ip", "url", "urls", "endpoint"}
    | {"name", "template", "dir", "folder"}
)
# A file or path key is a naming one when a word of it says the server writes there or
# stores, dumps, exports, traces or logs to it (file_storage_path, the 2024 spelling
# file_storage_pth, crash dumps, debug tensor dumps, modelopt's save and export paths).
_PATH_ENDS = frozenset({"path", "pth", "paths", "file"})
_OUTPUT_WORDS = frozenset({"storage", "dump", "save", "export", "trace", "log", "crash", "output"})


def memory_neutral_arg(key: str) -> bool:
    """True when server_args key ``key`` cannot change GPU memory at start-up: it is in
    ``NON_MEMORY_ARGS``, or its name says it is a place or a label (sglang/srt/server_args.py,
    all eras: 0.4.6 to 0.5.9 checked): its last word is host, port(s), addr(ess), ip, url(s),
    endpoint, name (served_model_name, hf_chat_template_name), template (chat_template) or
    dir / folder (download_dir, crash_dump_folder); or it is a path or file key (last word
    path, pth, paths or file) with a word saying the server writes to it (storage, dump,
    save, export, trace, log, crash, output).

    A path the server reads weights or a model configuration from stays memory-relevant
    (speculative_draft_model_path, lora_paths, kt_weight_path, decrypted_config_file,
    modelopt_checkpoint_restore_path, ...): another file there may be another model part."""
    if key in NON_MEMORY_ARGS:
        return True
    words = key.lower().split("_")
    if words[-1] in _NAMING_ENDS:
        return True
    return words[-1] in _PATH_ENDS and any(w in _OUTPUT_WORDS for w in words[:-1])
