"""A snapshot's plain data -> frozen records, for every form PyTorch has written.

Forms (see /shared/reference/torch-snapshot.md, and torch/cuda/_memory_viz.py):

* before 2.1: a bare list of segments, blocks carrying ``history: [{real_size, frames}]``;
* 2.1 and later: a dict with ``segments`` and ``device_traces`` (one list per device), later
  ``allocator_settings``, ``external_annotations``, ``user_metadata`` and host keys;
* expandable segments: ``is_expandable`` segments, ``segment_map`` / ``segment_unmap`` in traces.

Keys not known yet are ignored and never walked into. Every figure that is used is checked
for its type and range, so a hostile file that gets past the loader with plain but wrong data
gets a clear error rather than a traceback or a nonsense sum. Frames and their lists are
shared between blocks in a real snapshot (the pickler memoizes them): they are converted once
per object, which also keeps a file that shares one list a million times linear.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from logmem.frozen import frozen
from logmem.torch_snapshot.load import SnapshotError

MAX_BYTES_FIGURE = 1 << 62  # larger than any device; beyond it a size is not a size
MAX_ITEMS = 20_000_000  # blocks + trace entries + frame references visited


@frozen
class Frame:
    filename: str
    line: int
    name: str


# A pool that a capture filled: SGLang's graph runners, torch.compile's cudagraph trees.
CAPTURE_FILES = ("cuda_graph", "graph_runner", "cudagraph")


def short_path(filename: str) -> str:
    for marker in ("site-packages/", "dist-packages/"):
        at = filename.rfind(marker)
        if at >= 0:
            return filename[at + len(marker) :]
    return filename


def is_internal(f: Frame) -> bool:
    """PyTorch's own Python code, or a C++ frame: not where the caller's code asked."""
    if f.line <= 0 or not f.filename.endswith(".py"):
        return True
    path = "/" + short_path(f.filename).lstrip("/")
    return path.startswith("/torch/") or "/site-packages/torch/" in f.filename


@frozen
class Block:
    address: int | None
    size: int
    requested_size: int | None  # None: not recorded (old snapshots without history)
    state: str  # active_allocated | active_pending_free | inactive (as written)
    frames: tuple[Frame, ...]  # innermost first, up to the last one a site needs
    in_capture: bool  # a frame of its whole stack is in a graph-capture file

    @property
    def allocated(self) -> bool:
        return self.state == "active_allocated"

    @property
    def active(self) -> bool:
        return self.state.startswith("active")


PoolId = tuple[int, int]


@frozen
class Segment:
    device: int
    address: int | None
    total_size: int
    stated_allocated: int | None  # the segment's own allocated_size, for a consistency check
    segment_type: str | None  # "small" | "large"
    pool_id: PoolId | None
    is_expandable: bool
    frames: tuple[Frame, ...]
    blocks: tuple[Block, ...]


@frozen
class TraceEntry:
    action: str
    addr: int | None
    size: int | None
    time_us: int | None
    pool_id: PoolId | None  # only newer builds write it
    device_free: int | None  # "oom" entries
    frames: tuple[Frame, ...]


@frozen
class Snapshot:
    path: str
    form: str  # "segments list (before 2.1)" | "dict"
    segments: tuple[Segment, ...]
    traces: tuple[tuple[int, tuple[TraceEntry, ...]], ...]  # (device, entries) oldest first
    allocator_settings: tuple[tuple[str, str], ...]
    keys: tuple[str, ...]  # top-level keys present (dict form)

    @property
    def devices(self) -> tuple[int, ...]:
        found = {s.device for s in self.segments} | {d for d, t in self.traces if t}
        return tuple(sorted(found))


def _bad(where: str, why: str) -> SnapshotError:
    return SnapshotError(f"not a PyTorch memory snapshot: {where} {why}")


def _int(v: Any, where: str, *, optional: bool = False, signed: bool = False) -> int | None:
    if v is None and optional:
        return None
    if type(v) is not int:  # bool is an int subclass: True is not a size
        raise _bad(where, f"is a {type(v).__name__}, not an integer")
    if not (-MAX_BYTES_FIGURE if signed else 0) <= v < MAX_BYTES_FIGURE:
        raise _bad(where, "is out of range for a memory figure")
    return v


def _size(v: Any, where: str) -> int:
    out = _int(v, where)
    assert out is not None
    return out


def _str(v: Any, where: str, default: str = "") -> str:
    if v is None:
        return default
    if not isinstance(v, str):
        raise _bad(where, f"is a {type(v).__name__}, not a string")
    return v


def _dict(v: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(v, dict):
        raise _bad(where, f"is a {type(v).__name__}, not a dict")
    return v


def _list(v: Any, where: str) -> Sequence[Any]:
    if v is None:
        return ()
    if not isinstance(v, (list, tuple)):
        raise _bad(where, f"is a {type(v).__name__}, not a list")
    return v


def _pool(v: Any, where: str) -> PoolId | None:
    if v is None:
        return None
    seq = _list(v, where)
    if len(seq) != 2:
        raise _bad(where, "is not a pair of integers")
    a, b = (_int(x, where, signed=True) for x in seq)
    assert a is not None and b is not None
    return (a, b)


class _Reader:
    """Converts once per shared object and counts what it visits (see the module docstring).

    A stack is kept only up to its `depth`-th frame outside PyTorch and C++ (what a site
    shows): a long trace has millions of frame references, most of them deeper than that."""

    def __init__(self, depth: int) -> None:
        self.depth = max(depth, 1)
        self._frames: dict[int, tuple[Any, tuple[Frame, ...]]] = {}
        self._frame: dict[int, tuple[Any, Frame, bool]] = {}
        self._capture: dict[int, tuple[Any, bool]] = {}
        self.visited = 0

    def _count(self, n: int) -> None:
        self.visited += n
        if self.visited > MAX_ITEMS:
            raise SnapshotError(
                f"not a PyTorch memory snapshot: more than {MAX_ITEMS:,} blocks, trace entries "
                "and frames to visit"
            )

    def frames(self, v: Any, where: str) -> tuple[Frame, ...]:
        if v is None:
            return ()
        hit = self._frames.get(id(v))
        if hit is not None and hit[0] is v:
            return hit[1]
        seq = _list(v, where)
        out: list[Frame] = []
        outside = 0
        for i, f in enumerate(seq):
            frame, internal = self.frame(f, f"{where}[{i}]")
            out.append(frame)
            outside += not internal
            if outside == self.depth:
                break
        self._count(len(out))
        kept = tuple(out)
        self._frames[id(v)] = (v, kept)  # keep v alive so its id is not reused
        return kept

    def frame(self, v: Any, where: str) -> tuple[Frame, bool]:
        hit = self._frame.get(id(v))
        if hit is not None and hit[0] is v:
            return hit[1], hit[2]
        d = _dict(v, where)
        line = _int(d.get("line", 0), f"{where}.line", optional=True, signed=True)
        out = Frame(
            _str(d.get("filename"), f"{where}.filename"),
            line or 0,
            _str(d.get("name"), f"{where}.name"),
        )
        internal = is_internal(out)
        self._frame[id(v)] = (v, out, internal)
        return out, internal

    def in_capture(self, v: Any) -> bool:
        """Whether any frame of a whole stack is in a graph-capture file (for pool kinds)."""
        if not isinstance(v, (list, tuple)):
            return False
        hit = self._capture.get(id(v))
        if hit is not None and hit[0] is v:
            return hit[1]
        self._count(len(v))
        found = any(
            isinstance(f, dict)
            and isinstance(f.get("filename"), str)
            and any(k in f["filename"] for k in CAPTURE_FILES)
            for f in v
        )
        self._capture[id(v)] = (v, found)
        return found

    def block(self, v: Any, where: str) -> Block:
        d = _dict(v, where)
        size = _size(d.get("size"), f"{where}.size")
        if "frames" in d or "history" not in d:
            raw = d.get("frames")
            frames = self.frames(raw, f"{where}.frames")
            req = _int(d.get("requested_size"), f"{where}.requested_size", optional=True)
        else:  # before 2.1: what was asked for and where, in the first history entry
            hist = _list(d.get("history"), f"{where}.history")
            h0 = _dict(hist[0], f"{where}.history[0]") if hist else {}
            raw = h0.get("frames")
            frames = self.frames(raw, f"{where}.history[0].frames")
            req = _int(h0.get("real_size"), f"{where}.history[0].real_size", optional=True)
        return Block(
            address=_int(d.get("address"), f"{where}.address", optional=True),
            size=size,
            requested_size=req,
            state=_str(d.get("state"), f"{where}.state", "unknown"),
            frames=frames,
            in_capture=self.in_capture(raw),
        )

    def segment(self, v: Any, where: str) -> Segment:
        d = _dict(v, where)
        blocks = _list(d.get("blocks"), f"{where}.blocks")  # counted by from_data
        device = _int(d.get("device", 0), f"{where}.device")
        assert device is not None
        return Segment(
            device=device,
            address=_int(d.get("address"), f"{where}.address", optional=True),
            total_size=_size(d.get("total_size"), f"{where}.total_size"),
            stated_allocated=_int(
                d.get("allocated_size"), f"{where}.allocated_size", optional=True
            ),
            segment_type=_str(d.get("segment_type"), f"{where}.segment_type") or None,
            pool_id=_pool(d.get("segment_pool_id"), f"{where}.segment_pool_id"),
            is_expandable=d.get("is_expandable") is True,
            frames=self.frames(d.get("frames"), f"{where}.frames"),
            blocks=tuple(self.block(b, f"{where}.blocks[{i}]") for i, b in enumerate(blocks)),
        )

    def entry(self, v: Any, where: str) -> TraceEntry:
        d = _dict(v, where)
        return TraceEntry(
            action=_str(d.get("action"), f"{where}.action", "unknown"),
            addr=_int(d.get("addr"), f"{where}.addr", optional=True),
            size=_int(d.get("size"), f"{where}.size", optional=True),
            time_us=_int(d.get("time_us"), f"{where}.time_us", optional=True, signed=True),
            pool_id=_pool(d.get("pool_id"), f"{where}.pool_id"),
            device_free=_int(d.get("device_free"), f"{where}.device_free", optional=True),
            frames=self.frames(d.get("frames"), f"{where}.frames"),
        )


def _settings(v: Any) -> tuple[tuple[str, str], ...]:
    """allocator_settings as text, one level deep (nested values shown by their type)."""
    if not isinstance(v, dict):
        return ()
    out: list[tuple[str, str]] = []
    for k, x in list(v.items())[:64]:
        if not isinstance(k, str):
            continue
        if isinstance(x, (str, int, float, bool)) or x is None:
            out.append((k, str(x)[:200]))
        elif isinstance(x, dict):
            shown = ", ".join(
                f"{a}: {b}" for a, b in list(x.items())[:16] if isinstance(b, (str, int, float))
            )
            out.append((k, "{" + shown[:200] + "}"))
        else:
            out.append((k, type(x).__name__))
    return tuple(out)


def from_data(data: Any, path: str, depth: int = 1) -> Snapshot:
    """The records of one snapshot (raises SnapshotError on anything but a snapshot's shape);
    stacks are kept to `depth` frames outside PyTorch (see _Reader)."""
    r = _Reader(depth)
    segs: Sequence[Any]
    traces_raw: Sequence[Any] = ()
    settings: Any = None
    keys: tuple[str, ...] = ()
    if isinstance(data, list):
        form, segs = "segments list (before 2.1)", data
    elif isinstance(data, dict):
        if "segments" not in data:
            shown = ", ".join(repr(k)[:40] for k in list(data)[:8])
            raise _bad("the top-level dict", f"has no 'segments' (keys: {shown or 'none'})")
        form = "dict"
        segs = _list(data["segments"], "segments")
        traces_raw = _list(data.get("device_traces"), "device_traces")
        settings = data.get("allocator_settings")
        keys = tuple(k for k in data if isinstance(k, str))
    else:
        raise _bad("the top level", f"is a {type(data).__name__}, not a dict or list")
    # Count every block and entry before converting any: memo references can make a small
    # file name the same long list thousands of times, and that must cost nothing to refuse.
    r._count(len(segs))
    for s in segs:
        blocks = s.get("blocks") if isinstance(s, dict) else None
        r._count(len(blocks) if isinstance(blocks, (list, tuple)) else 0)
    for t in traces_raw:
        r._count(len(t) if isinstance(t, (list, tuple)) else 0)
    segments = tuple(r.segment(s, f"segments[{i}]") for i, s in enumerate(segs))
    traces: list[tuple[int, tuple[TraceEntry, ...]]] = []
    for dev, t in enumerate(traces_raw):
        entries = _list(t, f"device_traces[{dev}]")
        traces.append(
            (
                dev,
                tuple(r.entry(e, f"device_traces[{dev}][{i}]") for i, e in enumerate(entries)),
            )
        )
    return Snapshot(path, form, segments, tuple(traces), _settings(settings), keys)
