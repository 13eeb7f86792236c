"""Builders: a pattern's match and its record -> the typed event, numbers converted once.

One builder per pattern of logmem.parse.patterns (``BUILDERS``, keyed by pattern name).
A figure the line does not print is None, never 0.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import regex

from logmem.parse import figures as fg
from logmem.parse.backends import build_nsa_backends
from logmem.parse.device_total import build_device_total
from logmem.parse.events import (
    AllReduceConfig,
    BarRender,
    BenchResult,
    CaptureBegin,
    CaptureEnd,
    CaptureSizes,
    CustomAllReduce,
    DeviceName,
    DSv4Plan,
    Event,
    ExceptionIgnored,
    ExceptionLine,
    FatalError,
    Frame,
    GraphDisabled,
    HttpUp,
    InitBegin,
    InitEnd,
    KVAvailable,
    KVDtype,
    KVPool,
    KVReserved,
    LaunchCommand,
    LaunchEnv,
    MambaPool,
    ModelBackend,
    ModelSnapshot,
    OtherRanksFailed,
    PoolEnd,
    PostCaptureKV,
    PostCaptureSplit,
    ProcessDied,
    Ready,
    RegisterGraphs,
    RocmHint,
    SchedulerException,
    ServerArgs,
    Serving,
    SigQuit,
    SigTerm,
    Summary,
    SWAPlan,
    SWASummary,
    TorchOOM,
    TracebackStart,
    WeightsBegin,
    WeightsCommitted,
    WeightsEnd,
)
from logmem.parse.figures import b_imbalance, b_kv_not_allocated, b_misc, b_post_capture_note
from logmem.parse.kv_sizing import kv_sizing_builder
from logmem.parse.lazy import lazy
from logmem.parse.lines import Record
from logmem.parse.oom_builders import b_capture_failed, b_torch_oom
from logmem.parse.patterns import BY_NAME
from logmem.parse.server_args import parse_server_args
from logmem.parse.uninitialized import build_uninitialized
from logmem.units import Mem

# --- helpers ---------------------------------------------------------------------------

_FIELD = {
    "avail": lazy(r"avail mem=(-?\d{1,9}(?:\.\d{1,9})?) GB"),
    "usage": lazy(r"mem usage=(-?\d{1,9}(?:\.\d{1,9})?) GB"),
    "elapsed": lazy(r"(?:Time elapsed: |elapsed=)(-?\d{1,9}(?:\.\d{1,9})?) s"),
    "bs": lazy(r"\bbs=(\[[^\]]{0,100000}\]?)"),
    "num_tokens": lazy(r"\bnum_tokens=(\[[^\]]{0,100000}\]?)"),
    "backend": lazy(r"\bbackend=([\w-]{1,40})"),
    "per_req": lazy(r"num_tokens_per_(?:req|bs)=(\d{1,6})"),
    "step": lazy(r"\bstep=(\d{1,6})"),
}


def _search(key: str, text: str) -> str | None:
    m = _FIELD[key].search(text)
    return m.group(1) if m else None


def _mem(number: str | None, unit: str = "GB") -> Mem | None:
    return Mem.parse(number, unit) if number is not None else None


def _float(text: str | None) -> float | None:
    return float(text) if text is not None else None


def parse_int_list(text: str | None) -> tuple[int, ...] | None:
    """'[1, 2, 4]' -> (1, 2, 4); None when elided ('...') or cut."""
    if text is None:
        return None
    text = text.strip()
    if not text.startswith("[") or not text.endswith("]") or "..." in text or "\u2026" in text:
        return None
    inner = text[1:-1].strip()
    if not inner:
        return ()
    try:
        return tuple(int(x) for x in inner.split(","))
    except ValueError:
        return None


def _graph_name(name: str | None, backend: str | None) -> tuple[str, str]:
    """('target verify', 'CUDA') -> ('target verify', 'CUDA graph'); no name is decode. The
    'single-CG draft extend' lines name no backend: a single CUDA graph (sglang 0.5.16-0.5.23,
    srt/speculative/multi_layer_eagle_draft_extend_cuda_graph_runner.py)."""
    return (name.strip() if name else "decode"), f"{backend or 'CUDA'} graph"


def _kv_pairs(text: str) -> tuple[tuple[str, str], ...]:
    out = []
    for part in text.split(","):
        if "=" in part:
            k, _, v = part.partition("=")
            out.append((k.strip(), v.strip()))
    return tuple(out)


# --- builders: pattern name -> Event ---------------------------------------------------

Builder = Callable[[regex.Match[str], Record], "Event | None"]


def _b_server_args(m: regex.Match[str], r: Record) -> Event:
    args, form, error = parse_server_args(m.group("body"))
    return ServerArgs(rank=r.rank, source=r.source, args=args, form=form, error=error)


def _b_load_end(m: regex.Match[str], r: Record) -> Event:
    details = tuple((k, v) for k, v in _kv_pairs(m.group("mid")) if k)
    return WeightsEnd(
        rank=r.rank,
        source=r.source,
        avail=Mem.parse(m.group("avail")),
        usage=_mem(m.group("usage")),
        elapsed_s=_float(m.group("elapsed")),
        model_type=m.group("type"),
        details=details,
    )


def _b_capture_begin(m: regex.Match[str], r: Record) -> Event:
    name, backend = _graph_name(m.group("name"), m.group("backend"))
    rest = m.group("rest")
    sizes = parse_int_list(_search("bs", rest))
    if sizes is None:
        sizes = parse_int_list(_search("num_tokens", rest))
    step = m.group("step") or _search("step", rest)
    per_req = _search("per_req", rest)
    return CaptureBegin(
        rank=r.rank,
        source=r.source,
        name=name,
        backend=backend,
        avail=_mem(_search("avail", rest)),
        sizes=sizes,
        graph_backend=_search("backend", rest),
        tokens_per_req=int(per_req) if per_req else None,
        step=int(step) if step else None,
    )


def _b_capture_end(m: regex.Match[str], r: Record) -> Event:
    name, backend = _graph_name(m.group("name"), m.group("backend"))
    rest = m.group("rest")
    step = _search("step", rest)
    return CaptureEnd(
        rank=r.rank,
        source=r.source,
        name=name,
        backend=backend,
        # sglang 0.5.22-0.5.23 print the decode list here, not in the begin line
        # (srt/model_executor/model_runner_components/cuda_graph_setup.py).
        sizes=parse_int_list(_search("bs", rest)),
        avail=_mem(_search("avail", rest)),
        usage=_mem(_search("usage", rest)),
        elapsed_s=_float(_search("elapsed", rest)),
        step=int(step) if step else None,
    )


def _b_summary(m: regex.Match[str], r: Record) -> Event:
    fields = _kv_pairs(m.group("rest"))
    avail = next((v for k, v in fields if k in ("available_gpu_mem", "available_cpu_mem")), None)
    am = regex.match(r"(-?\d{1,9}(?:\.\d{1,9})?) GB", avail) if avail else None
    return Summary(
        rank=r.rank,
        source=r.source,
        max_total_num_tokens=int(m.group("tokens")),
        fields=fields,
        available=Mem.parse(am.group(1)) if am else None,
    )


def _b_frame(m: regex.Match[str], r: Record) -> Event:
    return Frame(
        rank=r.rank,
        source=r.source,
        path=m.group("path"),
        line=int(m.group("line")),
        func=m.group("func"),
    )


_BAR_COUNT = lazy(r"(\d{1,9})/(\d{1,9}) {0,2}\[")


_ENV_WORD = lazy(r"^([A-Z_][A-Z0-9_]{0,100})=(\S{0,2000})$", regex.ASCII)


def _b_command(m: regex.Match[str], r: Record) -> Event:
    words = (_ENV_WORD.match(w) for w in m.group("pre").split()[-40:])
    return LaunchCommand(
        rank=r.rank,
        source=r.source,
        program=" ".join(m.group("prog").split()),
        argv=m.group("argv").strip(),
        env=tuple((w.group(1), w.group(2)) for w in words if w is not None),
    )


def _b_custom_ar(m: regex.Match[str], r: Record) -> Event:
    if m.group("path") is not None:
        state, text = "path", m.group("path")
    elif m.group("impl") is not None or m.group("v2") is not None:
        state, text = "using", m.group("impl") or m.group("v2")
    else:
        state = "failed" if m.group("off").startswith("Setup") else "disabled"
        text = m.group("why").strip()
    return CustomAllReduce(rank=r.rank, source=r.source, state=state, text=text.strip())


def _b_bar(m: regex.Match[str], r: Record) -> Event:
    size = m.group("bs") or m.group("nt")
    c = _BAR_COUNT.search(r.message, m.end(), m.end() + 400)
    return BarRender(
        rank=r.rank,
        source=r.source,
        kind=m.group("kind"),
        size=int(size) if size else None,
        avail=Mem.parse(m.group("avail")),
        count=int(c.group(1)) if c else None,
        total=int(c.group(2)) if c else None,
    )


def _b_exception(m: regex.Match[str], r: Record) -> Event | None:
    return ExceptionLine(
        rank=r.rank, source=r.source, exc_type=m.group("type"), message=m.group("msg") or ""
    )


def _b_serving(m: regex.Match[str], r: Record) -> Event:
    # Spelled out, not _mk: a busy server's "Decode batch ... mem usage=" lines are the most
    # frequent matched kind, and _mk's keyword dict costs a microsecond each.
    return Serving(rank=r.rank, source=r.source, kind=m.group("kind").lower())


def _mk(cls: type[Event], **conv: Callable[[regex.Match[str]], Any]) -> Builder:
    def build(m: regex.Match[str], r: Record) -> Event:
        return cls(rank=r.rank, source=r.source, **{k: f(m) for k, f in conv.items()})

    return build


def _g(name: str, unit: str = "GB") -> Callable[[regex.Match[str]], Mem]:
    return lambda m: Mem.parse(m.group(name), unit)


def _go(name: str) -> Callable[[regex.Match[str]], Mem | None]:
    return lambda m: _mem(m.group(name))


def _i(name: str) -> Callable[[regex.Match[str]], int | None]:
    return lambda m: int(m.group(name)) if m.group(name) is not None else None


def _fatal(m: regex.Match[str]) -> str:
    # faulthandler's whole line ('Fatal Python error: Aborted'); ROCm's from its status name.
    return str(f"Fatal Python error: {m['python']}" if m["python"] else m["hsa"]).strip()


BUILDERS: dict[str, Builder] = {
    "server_args": _b_server_args,
    "init_begin": _mk(InitBegin, wording=lambda m: m.group(0)),
    "init_end": _mk(InitEnd, usage=_g("usage"), elapsed_s=lambda m: _float(m.group("elapsed"))),
    "load_begin": _mk(WeightsBegin, avail=_g("avail")),
    "load_end": _b_load_end,
    "weights_committed": _mk(
        WeightsCommitted,
        commit_s=lambda m: float(m.group("commit")),
        window_s=lambda m: float(m.group("window")),
        total_s=lambda m: float(m.group("total")),
    ),
    "weights_uninitialized": build_uninitialized,
    "kv_dtype": _mk(KVDtype, dtype=lambda m: m.group("dtype")),
    "kv_pool": _mk(
        KVPool,
        tokens=_i("tokens"),
        k=_go("k"),
        v=_go("v"),
        kv=_go("kv"),
        dtype=lambda m: m.group("dtype"),
        label=lambda m: m.group("label"),
    ),
    "kv_post_capture": _mk(
        PostCaptureKV,
        tokens=_i("tokens"),
        k=lambda m: None,
        v=lambda m: None,
        kv=_g("kv"),
        dtype=lambda m: m.group("dtype"),
        avail=_go("avail"),
        draft=lambda m: m.group("draft") is not None,
    ),
    "post_capture_note": b_post_capture_note,
    "kv_reserved": _mk(
        KVReserved,
        tokens=_i("tokens"),
        k=_go("k"),
        v=_go("v"),
        kv=_go("kv"),
        dtype=lambda m: m.group("dtype"),
        label=lambda m: m.group("label"),
    ),
    "post_capture_split": _mk(PostCaptureSplit, full_tokens=_i("full"), swa_tokens=_i("swa")),
    **fg.POST_CAPTURE_BUILDERS,
    "kv_not_allocated": b_kv_not_allocated,
    "kv_available": _mk(KVAvailable, avail=_g("avail")),
    "mamba_pool": _mk(
        MambaPool,
        max_size=_i("n"),
        conv=_g("conv"),
        ssm=_g("ssm"),
        intermediate_ssm=_go("iss"),
        intermediate_conv=_go("icw"),
    ),
    "swa_plan": _mk(SWAPlan, full_tokens=_i("full"), swa_tokens=_i("swa")),
    "swa_summary": _mk(SWASummary, usage=_g("usage"), swa_size=_i("swa"), full_size=_i("full")),
    "dsv4_kv_plan": _mk(
        DSv4Plan,
        bytes_per_token=lambda m: float(m.group("bpt")),
        avail=_g("avail"),
        tokens=_i("tokens"),
    ),
    "pool_end": _mk(PoolEnd, avail=_g("avail")),
    "capture_begin": _b_capture_begin,
    "capture_end": _b_capture_end,
    "capture_sizes": _mk(
        CaptureSizes,
        kind=lambda m: m.group("kind"),
        sizes=lambda m: parse_int_list(m.group("list")),
    ),
    "capture_bar": _b_bar,
    "compile_bar": _mk(BarRender, kind=lambda m: "compile", size=_i("nt"), avail=lambda m: None),
    "plain_bar": _mk(
        BarRender,
        kind=lambda m: "plain",
        size=lambda m: None,
        avail=lambda m: None,
        count=_i("i"),  # E0-E2 bars have no description: n/total is their only figure
        total=_i("n"),
    ),
    "register_graphs": _mk(RegisterGraphs, count=_i("n")),
    "all_reduce_config": _mk(
        AllReduceConfig,
        symmetric=_g("sym", "MB"),
        local=_g("local", "MB"),
        multicast=lambda m: m.group("mc") == "True",
    ),
    "custom_ar": _b_custom_ar,
    "launch_env": _mk(
        LaunchEnv,
        key=lambda m: m.group("k1") or m.group("k2"),
        value=lambda m: (m.group("v1") if m.group("k1") else m.group("v2")).strip(),
    ),
    "launch_command": _b_command,
    "device_name": _mk(DeviceName, name=lambda m: m.group("name")),
    "hf_snapshot": _mk(ModelSnapshot, name=lambda m: m.group("name")),
    "rocm_hint": _mk(RocmHint, text=lambda m: m.string[m.start() :]),
    "device_total": build_device_total,
    "nsa_backends": build_nsa_backends,
    "symm_prealloc": b_misc("symm_prealloc", "gib", "GiB"),
    "deepgemm_budget": b_misc("deepgemm_budget", "budget", "GiB"),
    "hicache_host": b_misc("hicache_host", "gb", "decimal"),
    "hicache_host_short": b_misc("hicache_host_short", "want", "decimal"),
    "runtime_reading": b_misc("runtime_reading", "avail"),
    "summary": _b_summary,
    "imbalance": b_imbalance,
    "not_enough_memory": kv_sizing_builder("not_enough"),
    "kv_no_memory": kv_sizing_builder("no_kv_memory"),
    "state_cache_no_memory": kv_sizing_builder("state_cache"),
    "unified_pool_no_memory": kv_sizing_builder("unified_pool"),
    "swa_cap_no_room": kv_sizing_builder("swa_cap"),
    "torch_oom": b_torch_oom,
    "device_oom": _mk(
        TorchOOM,
        exc_type=lambda m: m.group("type"),
        device=lambda m: m.group("device"),
        message=lambda m: m.group(0),  # the driver's OOM prints none of PyTorch's figures
    ),
    "capture_failed": b_capture_failed,
    "scheduler_exception": _mk(SchedulerException, text=lambda m: m.group("rest")),
    "other_ranks_failed": _mk(OtherRanksFailed, tp_rank=_i("tp")),
    "sigquit": _mk(SigQuit),
    "process_died": _mk(
        ProcessDied, process=lambda m: m["name"], pid=_i("pid"), exit_code=_i("code")
    ),
    "sigterm": _mk(SigTerm),
    "fatal_error": _mk(FatalError, kind=lambda m: "python" if m["python"] else "hsa", text=_fatal),
    "ready": _mk(Ready),
    "http_up": _mk(HttpUp),
    "graph_disabled": _mk(
        GraphDisabled,
        which=lambda m: m.group("which") or "prefill",
        why=lambda m: m.group("why") or m.group("why2") or "",
    ),
    "bench_result": _mk(BenchResult, kind=lambda m: "offline" if m.group("offline") else "serving"),
    "serving": _b_serving,
    "model_backend": _mk(ModelBackend, backend=lambda m: m.group("backend").lower()),
    "frame": _b_frame,
    "exception_ignored": _mk(ExceptionIgnored, what=lambda m: m.group("what").strip()),
    "traceback_start": _mk(TracebackStart),
    "exception": _b_exception,
}


assert set(BUILDERS) == set(BY_NAME), "every pattern needs a builder"
