"""What a launch's tracebacks are, beyond their last line: where start-up ended, which
tracebacks are not the server's errors, and where an exception was raised.

* Start-up ends at the ready line. A process that never prints one ends it elsewhere: a
  node without an HTTP server (the second node of a multi-node launch, an Engine script)
  at its first "Decode batch" / "Prefill batch" line, or at its scheduler summary when
  server_args says node_rank > 0; an offline benchmark at its first results.
* Not the server's errors: a traceback printed at interpreter exit (Python's "Exception
  ignored in ...", multiprocessing's resource_tracker) and a test harness's own traceback
  (unittest / pytest frames, SGLang's test utilities).
* Where an exception was raised: the innermost frame that names a component (the graph-capture
  machinery, an attention backend, a compiled kernel, the model's own code).
"""

from __future__ import annotations

from enum import Enum

from logmem.frozen import frozen
from logmem.model.records import Launch, Traceback
from logmem.parse import events as ev
from logmem.parse.lazy import lazy
from logmem.parse.lines import Source

# --- where start-up ended ----------------------------------------------------------------------


class UpBy(Enum):
    READY = "ready"  # "The server is fired up and ready to roll!"
    SERVING = "serving"  # the first Decode/Prefill batch line of a node without an HTTP server
    SUMMARY = "summary"  # the scheduler summary of a node that prints no ready line (node_rank > 0)
    RESULTS = "results"  # an offline benchmark's first results


@frozen
class Up:
    """The line after which an error is a runtime error, and what it is."""

    by: UpBy
    source: Source


_OFFLINE = lazy(r"sglang[./]bench_(one_batch|latency|offline_throughput)\b")


def offline_tool(launch: Launch) -> str | None:
    """The offline tool this launch is (bench_one_batch, bench_latency, bench_offline_throughput:
    none prints a ready line), as its echoed command line or a traceback frame names it."""
    names = [e.program for e in launch.all_events() if isinstance(e, ev.LaunchCommand)]
    names += [f.path for t in launch.tracebacks for f in t.frames]
    found = (m.group(1) for x in names if (m := _OFFLINE.search(x)) is not None)
    return next(found, None)


def _first(events: list[ev.Event], kind: type[ev.Event]) -> ev.Event | None:
    return next((e for e in events if isinstance(e, kind)), None)


def came_up(launch: Launch) -> Up | None:
    """Where start-up ended for errors (None: it did not, as far as the log shows)."""
    ready = _first(list(launch.events), ev.Ready)
    if ready is not None:
        return Up(UpBy.READY, ready.source)
    events = launch.all_events()
    offline = offline_tool(launch)
    results = [e for e in events if isinstance(e, ev.BenchResult)]
    if offline is not None or any(r.kind == "offline" for r in results):
        first = next((r for r in results if r.kind == "offline"), None)
        return Up(UpBy.RESULTS, first.source) if first is not None else None
    found: list[Up] = []
    if not any(isinstance(e, ev.HttpUp) for e in events):
        # No HTTP server in this log: no warm-up either, so serving means it came up.
        serving = _first(events, ev.Serving)
        if serving is not None:
            found.append(Up(UpBy.SERVING, serving.source))
    node_rank = launch.args.get("node_rank")
    if isinstance(node_rank, int) and node_rank > 0 and launch.summary is not None:
        found.append(Up(UpBy.SUMMARY, launch.summary.source))
    return min(found, key=lambda u: (u.source.path, u.source.line_no)) if found else None


def after(src: Source | None, up: Up | None) -> bool:
    """An error is a runtime error when start-up had ended and it is not provably earlier."""
    if up is None:
        return False
    if src is None or src.path != up.source.path:
        return True
    return src.line_no > up.source.line_no


# --- tracebacks that are not the server's errors ------------------------------------------------


class NoiseKind(Enum):
    EXIT = "exit"  # printed at interpreter exit (unraisable, resource_tracker)
    HARNESS = "harness"  # a test harness's own traceback


_EXIT_FRAME = lazy(r"multiprocessing/resource_tracker\.py|/atexit\b|weakref\.py")
_HARNESS_FRAME = lazy(r"/unittest/(?:case|main|suite)\.py|/_pytest/|/sglang/test/")


def noise_kind(tb: Traceback, ignored_lines: set[tuple[str, int]]) -> NoiseKind | None:
    """EXIT, HARNESS or None (a traceback of the server or the tool itself).

    `ignored_lines` are the lines right after a Python "Exception ignored in ..." line: a
    traceback opened there is an unraisable exception's (a destructor, an atexit callback)."""
    at = tb.opening.source if tb.opening is not None else None
    if at is not None and (at.path, at.line_no) in ignored_lines:
        return NoiseKind.EXIT
    if any(_HARNESS_FRAME.search(f.path) for f in tb.frames):
        return NoiseKind.HARNESS
    if any(_EXIT_FRAME.search(f.path) for f in tb.frames):
        return NoiseKind.EXIT
    return None


def ignored_lines(launch: Launch) -> set[tuple[str, int]]:
    """(path, line) of the line after each "Exception ignored in ..." (its traceback's start)."""
    return {
        (e.source.path, e.source.line_no + 1)
        for e in launch.events
        if isinstance(e, ev.ExceptionIgnored)
    }


# --- where an exception was raised -------------------------------------------------------------


class Where(Enum):
    CAPTURE = "capture"  # the graph-capture machinery itself (torch.cuda.graphs, the runner)
    ATTENTION = "attention"  # an attention backend, or the model's attention code
    KERNEL = "kernel"  # a compiled kernel library (sgl_kernel, triton, flashinfer, aiter ...)
    MODEL = "model"  # the model's own code (other than attention)
    UNKNOWN = "unknown"  # no frame names a component (no frames in the paste, or elsewhere)


@frozen
class RaisedIn:
    where: Where
    frame: ev.Frame | None  # the innermost frame that names it
    component: str | None  # the library or backend file, as its path names it


# Frames that only pass a call on (module __call__, decorators): they name no component.
_PASS_ON = lazy(
    r"torch/nn/modules/module\.py|torch/utils/_contextlib\.py|/functools\.py|contextlib\.py"
)
_CAPTURE_FRAME = lazy(
    r"torch/cuda/graphs\.py|cuda_graph_runner\.py|graph_runner\.py|torch/_dynamo/|"
    r"torch/_inductor/|compilation/"
)
_KERNEL = lazy(
    r"/(?P<lib>sgl_kernel|triton|flashinfer|aiter|deep_gemm|flash_attn|flash_mla|vllm|"
    r"cutlass|xformers|torch_npu|mooncake)/"
)
_ATTENTION_BACKEND = lazy(r"/layers/attention/(?P<file>[\w]{1,80})\.py")
_MODEL_FILE = lazy(r"/models/(?P<file>[\w]{1,80})\.py")
_ATTENTION_FUNC = lazy(r"(?i)attn|attention|mla|rope")
# Messages that are capture's own whatever the frame: an operation a capturing stream refuses.
_CAPTURE_WORDS = lazy(
    r"(?i)stream is capturing|cudaErrorStreamCapture|capture_begin|not permitted when stream"
)


def raised_in(tb: Traceback, message: str) -> RaisedIn:
    """The component the innermost frames name (see Where)."""
    if _CAPTURE_WORDS.search(message):
        return RaisedIn(Where.CAPTURE, None, None)
    frames = [f for f in tb.frames if not _PASS_ON.search(f.path)]
    for f in reversed(frames):
        k = _KERNEL.search(f.path)
        if k is not None:
            return RaisedIn(Where.KERNEL, f, k.group("lib"))
        a = _ATTENTION_BACKEND.search(f.path)
        if a is not None:
            return RaisedIn(Where.ATTENTION, f, a.group("file"))
        m = _MODEL_FILE.search(f.path)
        if m is not None:
            where = Where.ATTENTION if _ATTENTION_FUNC.search(f.func) else Where.MODEL
            return RaisedIn(where, f, m.group("file"))
        if _CAPTURE_FRAME.search(f.path):
            return RaisedIn(Where.CAPTURE, f, None)
    return RaisedIn(Where.UNKNOWN, None, None)
