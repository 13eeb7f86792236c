"""Model stage, records: a start-up as the log tells it (launches -> ranks -> models, pools,
graph captures with their bucket samples), per rank and in log order.

Later stages (attribution, fit, failures, reports) read these records and never go back to
the text. logmem.model.build makes them from events; its docstring has the grouping rules.
A figure the log does not print is None here, never 0.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from logmem.frozen import frozen
from logmem.model.boundaries import LaunchStart, Repeat
from logmem.parse import events as ev
from logmem.parse.lines import Source
from logmem.units import Mem

if TYPE_CHECKING:
    from logmem.model.command import CommandFlags


@frozen
class Sample:
    """Free memory at the start of one bucket (one per bucket, in capture order)."""

    size: int | None
    avail: Mem
    source: Source = field(compare=False, repr=False)
    index: int | None = None  # 0-based bucket in capture order, from tqdm's n/total


# How a capture showed itself in the log (Graph.opened_by).
OPENED_BY_BEGIN = "begin line"
OPENED_BY_SIZES = "sizes line"  # versions without a begin line announce it by its sizes list
OPENED_BY_BARS = "bars"  # a fragment that starts mid-capture: renders, then the end line
OPENED_BY_END = "end line"  # an end line alone (a trimmed or filtered log)


@frozen
class Graph:
    """One capture block of one graph family on one rank."""

    name: str
    backend: str
    begin: ev.CaptureBegin | None
    end: ev.CaptureEnd | None
    sizes: tuple[int, ...] | None
    sizes_source: str | None  # "begin line" | "bs line" | "num tokens line" | "end line"
    samples: tuple[Sample, ...]
    bars: int  # progress-bar renders seen, with or without a reading
    bar_total: int | None = None  # tqdm's total: the number of buckets, when sizes are not printed
    opened_by: str = OPENED_BY_BEGIN
    # The start-up step printed after a capture that has no end line (the next capture, a model
    # load, pools, the scheduler summary, the ready line): it shows that the capture finished.
    closed_by: ev.Event | None = field(default=None, compare=False)
    # When no sizes list is printed (or it is elided with '...') but tqdm's total gives the
    # number of buckets: the largest size by SGLang's list rules, and which rule gave it.
    inferred_largest: int | None = None
    inferred_rule: str | None = None
    # The line that opened it: its begin, its sizes list, or (bars, end line) its end line.
    opening: ev.Event | None = field(default=None, compare=False)

    @property
    def begin_bytes(self) -> int | None:
        return self.begin.avail.bytes if self.begin and self.begin.avail else None

    @property
    def end_bytes(self) -> int | None:
        return self.end.avail.bytes if self.end and self.end.avail else None

    @property
    def static_bytes(self) -> int | None:
        """Capture begin minus the first bucket's reading: buffers allocated before any bucket."""
        if self.begin_bytes is None or not self.samples:
            return None
        return self.begin_bytes - self.samples[0].avail.bytes

    @property
    def largest_bucket_bytes(self) -> int | None:
        if len(self.samples) < 2:
            return None
        return self.samples[0].avail.bytes - self.samples[1].avail.bytes

    @property
    def other_buckets_bytes(self) -> int | None:
        if len(self.samples) < 2 or self.end_bytes is None:
            return None
        return self.samples[1].avail.bytes - self.end_bytes

    @property
    def capture_order(self) -> list[int] | None:
        """The printed sizes in the order SGLang captures them, largest first (None: no list).

        ``capture()`` in ``cuda_graph_runner.py`` iterates ``reversed(self.capture_bs)`` from
        sglang 0.4.4 on (read in 0.4.4, 0.4.4.post1 - 0.4.9; 0.4.3 and earlier iterate the list
        ascending but print no reading in the bar), and the bar's description is set before each
        bucket is captured, so a reading belongs to the bucket it starts."""
        return sorted(self.sizes, reverse=True) if self.sizes else None

    def sample_bucket(self, i: int) -> int | None:
        """The 0-based bucket (capture order) of sample i: from the sizes list, else tqdm's count."""
        smp = self.samples[i]
        # The sizes list is exact; tqdm's count can lag one behind a new description when
        # renders are throttled, so it is only the fallback.
        order = self.capture_order
        if order and smp.size in order:
            return order.index(smp.size)
        return smp.index

    def sample_size(self, i: int) -> tuple[int | None, str | None]:
        """The size of sample i's bucket and where it comes from: the bar's own ``bs=`` (or
        num_tokens), else the sizes list at the bucket tqdm's count gives (the old bar format
        ``Capturing batches (avail_mem=...)`` prints no size: 0.4.4.post1 - 0.4.8), else
        (None, None). The one assignment the ledger's spans and the bucket table both use."""
        smp = self.samples[i]
        if smp.size is not None:
            return smp.size, "progress bar"
        order = self.capture_order
        b = self.sample_bucket(i)
        if order is not None and b is not None and 0 <= b < len(order):
            return order[b], self.sizes_source
        return None, None

    @property
    def static_measured(self) -> bool:
        """The first reading is taken at the first bucket, so begin - it is the static buffers."""
        return bool(self.samples) and self.sample_bucket(0) in (0, None)

    @property
    def largest_measured(self) -> bool:
        """Readings at the first two buckets exist, so their difference is the largest bucket."""
        return (
            len(self.samples) >= 2
            and self.sample_bucket(0) in (0, None)
            and self.sample_bucket(1) in (1, None)
        )

    @property
    def largest_size(self) -> int | None:
        """The largest captured size: the printed list, else a reading at the first bucket
        (SGLang captures largest first), else SGLang's list rule for tqdm's bucket count.
        A reading at a later bucket (a paste that kept only the 100% render) is not it."""
        return self._largest()[0]

    @property
    def largest_size_source(self) -> str | None:
        """Where largest_size comes from: "sizes list", "first bar", or the rule's name."""
        return self._largest()[1]

    def _largest(self) -> tuple[int | None, str | None]:
        if self.sizes:
            return max(self.sizes), "sizes list"
        first = self.samples[0] if self.samples else None
        if first is not None and first.size is not None and first.index in (0, None):
            return first.size, "first bar"
        if self.inferred_largest is not None:
            return self.inferred_largest, self.inferred_rule
        return None, None

    @property
    def bucket_count(self) -> int | None:
        """How many sizes were captured: the printed list, else tqdm's total."""
        return len(self.sizes) if self.sizes else self.bar_total

    @property
    def tokens_per_req(self) -> int | None:
        return self.begin.tokens_per_req if self.begin else None

    @property
    def step(self) -> int | None:
        return (
            self.begin.step
            if self.begin and self.begin.step is not None
            else (self.end.step if self.end else None)
        )

    @property
    def label(self) -> str:
        """The family name, with the EAGLE step for multi-step draft-extend captures."""
        return self.name if self.step is None else f"{self.name} (step {self.step})"

    @property
    def complete(self) -> bool:
        """The capture finished: its end line, or a later start-up step, was printed."""
        return self.end is not None or self.closed_by is not None

    @property
    def memory_printed(self) -> bool:
        """Any free-memory figure belongs to this capture (begin, end, usage or a bar reading)."""
        return bool(
            self.samples
            or (self.begin is not None and self.begin.avail is not None)
            or (self.end is not None and (self.end.avail is not None or self.end.usage is not None))
        )

    @property
    def captured_without_memory(self) -> bool:
        """Captured, memory not printed (E0/E1 logs): never the same as no capture at all."""
        return self.complete and not self.memory_printed


@frozen
class Model:
    role: str  # "target" | "draft"
    weights_begin: ev.WeightsBegin | None
    weights_end: ev.WeightsEnd | None
    # KVPool, MambaPool, SWAPlan, SWASummary, KVAvailable, DSv4Plan, UnifiedSubPool
    pools: tuple[ev.Event, ...]
    pool_end: ev.PoolEnd | None
    # "Using KV cache dtype: X", printed by the model runner before it allocates this model's
    # pools (TP0 only: the other ranks of the launch allocate the same dtype, so they get
    # TP0's line). The dtype of the KV lines that do not print their own (before E7).
    kv_dtype: ev.KVDtype | None = None
    # "Some weights are not initialized from checkpoints: [...]", printed by this rank while
    # it loaded this model: parameters the load left as allocated, not from the checkpoint.
    uninitialized: ev.WeightsUninitialized | None = None
    # --startup-weight-load-mode overlap (sglang 0.5.18-0.5.23): the line saying the real
    # weights were committed after the graphs; such a load prints no 'Load weight end' reading.
    committed: ev.WeightsCommitted | None = None
    # A traceback of the launch ran through SGLang's post-capture resize (kv_pool_runtime.py
    # compute_post_capture_kv_resize): the mode was on though no post-capture line was printed,
    # so 0.5.17's 'KV Cache is allocated' lines were reservations (launch_build.resize_failed).
    resize_failed: bool = False

    @property
    def kv_pools(self) -> tuple[ev.KVPool, ...]:
        """The KV pools that hold memory: under post-capture KV sizing the line printed after
        the graphs (ev.PostCaptureKV), else every KV line."""
        kv = tuple(
            p for p in self.pools if isinstance(p, ev.KVPool) and not isinstance(p, ev.KVReserved)
        )
        post = tuple(p for p in kv if isinstance(p, ev.PostCaptureKV))
        return () if self.resize_failed and not post else post or kv

    @property
    def post_capture(self) -> ev.PostCaptureKV | None:
        """The KV pool SGLang backed after the CUDA graphs (post-capture KV sizing), if any."""
        return next((p for p in self.pools if isinstance(p, ev.PostCaptureKV)), None)

    @property
    def reserved_kv_pools(self) -> tuple[ev.KVPool, ...]:
        """KV lines printed before the graphs for a pool backed after them: address space, not
        memory. sglang 0.5.17 prints them as 'KV Cache is allocated' (memory_pool.py
        _finalize_allocation_log, the tensors' reserved span of KvVmmBufferOwner); 0.5.18 on
        says 'VA upper bound' (ev.KVReserved, reserved whether or not the sizing ran)."""
        if self.post_capture is None and not self.resize_failed:
            return tuple(p for p in self.pools if isinstance(p, ev.KVReserved))
        return tuple(
            p
            for p in self.pools
            if isinstance(p, ev.KVPool) and not isinstance(p, ev.PostCaptureKV)
        )

    @property
    def reserved_full_pool(self) -> ev.KVPool | None:
        """The full pool's reservation line (post-capture KV sizing): sglang 0.5.17-0.5.23
        SWAKVPool reserves its 'Full' pool, then its 'SWA' one (swa_memory_pool.py)."""
        return full_kv(self.reserved_kv_pools, len(self.reserved_kv_pools) >= 2)

    @property
    def kv_deferred(self) -> bool:
        """Post-capture KV sizing: the pool step before the graphs only reserved the KV pool."""
        return bool(self.reserved_kv_pools) or self.post_capture is not None or self.resize_failed

    def pool_dtype(self, p: ev.KVPool) -> tuple[str | None, ev.Event | None]:
        """A KV pool's dtype and the line that printed it: its own KV line (E7), else this
        model's "Using KV cache dtype" line; (None, None) when neither printed one."""
        if p.dtype is not None:
            return p.dtype, p
        if self.kv_dtype is not None:
            return self.kv_dtype.dtype, self.kv_dtype
        return None, None

    @property
    def mamba_pools(self) -> tuple[ev.MambaPool, ...]:
        return tuple(p for p in self.pools if isinstance(p, ev.MambaPool))

    @property
    def unified_sub_pools(self) -> tuple[ev.UnifiedSubPool, ...]:
        """A unified pool's sub-pools (--enable-unified-memory), the full one first: the order
        in which the ledger names them and the sizing prices a token."""
        return unified_sub_pools(self.pools)

    @property
    def swa_plan(self) -> ev.SWAPlan | None:
        """The 'Use sliding window memory pool' split of a sliding-window model, if printed."""
        return swa_plan(self.pools)


def unified_sub_pools(pools: Iterable[ev.Event]) -> tuple[ev.UnifiedSubPool, ...]:
    """The unified pool's sub-pool lines among a model's pool lines, the full one first."""
    subs = [p for p in pools if isinstance(p, ev.UnifiedSubPool)]
    return tuple(sorted(subs, key=lambda p: p.name != "full"))


def swa_plan(pools: Iterable[ev.Event]) -> ev.SWAPlan | None:
    """The sliding-window split line among a model's pool lines."""
    return next((p for p in pools if isinstance(p, ev.SWAPlan)), None)


@frozen
class Traceback:
    """A crash report of one rank (or of an unprefixed process): its opening and its errors."""

    rank: str | None
    opening: ev.Event | None  # SchedulerException or TracebackStart
    errors: tuple[
        ev.Event, ...
    ]  # ExceptionLine, TorchOOM, NotEnoughMemory, CaptureFailed, Imbalance
    # Its innermost frames (at most MAX_FRAMES, outermost first): where it was raised.
    frames: tuple[ev.Frame, ...] = ()


# Frames kept per traceback: the innermost ones say where an exception was raised (a deep
# model forward has ~40; a hostile log cannot grow a traceback past this).
MAX_FRAMES = 48


@frozen
class Rank:
    label: str
    tags: tuple[tuple[str, int], ...]
    init_begin: ev.InitBegin | None
    init_end: ev.InitEnd | None
    models: tuple[Model, ...]
    graphs: tuple[Graph, ...]
    events: tuple[ev.Event, ...]  # everything this rank printed, in order
    summary: ev.Summary | None
    prints_bars: bool

    def tag(self, name: str) -> int | None:
        return next((n for t, n in self.tags if t == name), None)

    @property
    def target(self) -> Model | None:
        return next((m for m in self.models if m.role == "target"), None)

    @property
    def draft(self) -> Model | None:
        return next((m for m in self.models if m.role == "draft"), None)

    def all(self, kind: type[ev.Event]) -> tuple[ev.Event, ...]:
        return tuple(e for e in self.events if isinstance(e, kind))

    @property
    def last_event(self) -> ev.Event | None:
        return self.events[-1] if self.events else None


@frozen
class LaunchBrief:
    """A launch kept only as these facts (logmem.model.cap: an input with very many launches)."""

    index: int  # its number, as --launch numbers launches
    path: str
    lines: tuple[int, int]  # its first and last line read
    outcome: str  # ready | crashed | incomplete (logmem.analysis.failures.outcome)
    tokens: int | None  # max_total_num_tokens of its scheduler summary; None: none printed


@frozen
class Launch:
    index: int
    server_args: ev.ServerArgs | None
    ranks: tuple[Rank, ...]
    tracebacks: tuple[Traceback, ...]
    events: tuple[ev.Event, ...]  # launch-level: ready, http_up, sigquit, unprefixed errors
    stray_bars: int  # bar renders with no open capture to belong to
    paths: tuple[str, ...]
    # The launches just before this one, kept only as briefs (logmem.model.cap).
    briefs: tuple[LaunchBrief, ...] = field(default=(), compare=False)
    # Why it begins where it does when it is not the first launch of its file (the line and
    # the evidence, logmem.model.boundaries), and the line the next launch of its file
    # begins at: a launch followed by another ended there, cut or not.
    start: LaunchStart | None = field(default=None, compare=False)
    next_start: Source | None = field(default=None, compare=False)
    # A rank's lines printed again (same text and time) before the launch came up:
    # overlapping pastes of one log, read once (logmem.model.boundaries.Repeat).
    repeats: tuple[Repeat, ...] = field(default=(), compare=False)
    # The last line of this launch read in the next launch's file (LaunchStart.after): lines
    # after it and before next_start were not read, so the next launch may begin among them.
    next_after: int | None = field(default=None, compare=False)

    @property
    def args(self) -> dict[str, Any]:
        """The launch's settings: its server_args dump's; with none, the flags of its echoed
        command line that are sure (model.command: never a value a terminal may have cut)."""
        if self.server_args is not None:
            return self.server_args.args
        return self._command_args

    @cached_property
    def _command_args(self) -> dict[str, Any]:
        flags = self.command_flags
        return flags.args() if flags is not None else {}

    @property
    def args_from(self) -> str | None:
        """Where ``args`` come from: "server_args", "command" (the echoed command line), None."""
        if self.server_args is not None:
            return "server_args"
        return "command" if self.args else None

    @cached_property
    def command(self) -> ev.LaunchCommand | None:
        """The command line echoed last before the server_args dump (None: none)."""
        from logmem.model.command import last_command

        sa = self.server_args
        return last_command(self._in_line_order, sa.source.line_no if sa is not None else None)

    @cached_property
    def command_flags(self) -> CommandFlags | None:
        """The flags of ``command`` (None: no command line)."""
        from logmem.model.command import command_flags

        return command_flags(self.command) if self.command is not None else None

    def rank(self, label: str) -> Rank | None:
        return next((r for r in self.ranks if r.label == label), None)

    @cached_property  # asked once per rank by the reports: computed once
    def main_rank(self) -> Rank | None:
        """The rank reports lead with: the one that printed bucket readings, else the first."""
        bars = next((r for r in self.ranks if r.prints_bars), None)
        if bars is not None or not self.ranks:
            return bars
        # Else the rank that printed the most free-memory readings (ties: the first).
        return max(self.ranks, key=lambda r: sum(1 for e in r.events if _is_reading(e)))

    @cached_property  # asked once per rank by the reports: computed once
    def summary(self) -> ev.Summary | None:
        """The scheduler summary line (TP0's when several ranks print it)."""
        found = [r.summary for r in self.ranks if r.summary is not None]
        return found[0] if found else None

    @property
    def captures_without_memory(self) -> tuple[tuple[str, Graph], ...]:
        """(rank, graph) for every capture that finished but printed no memory figure."""
        return tuple(
            (r.label, g) for r in self.ranks for g in r.graphs if g.captured_without_memory
        )

    @property
    def ready(self) -> ev.Event | None:
        return next((e for e in self.events if isinstance(e, ev.Ready)), None)

    def all_events(self) -> list[ev.Event]:
        """Every event of the launch in file and line order (a new list: the caller's own)."""
        return list(self._in_line_order)

    # Asked by a dozen analyses (platform, eras, failures, communication, the HTML sources):
    # sorting 82 thousand events each time was a tenth of a 4,096-rank report.
    @cached_property
    def _in_line_order(self) -> tuple[ev.Event, ...]:
        out: list[ev.Event] = []
        if self.server_args:
            out.append(self.server_args)
        for r in self.ranks:
            out.extend(r.events)
        out.extend(self.events)
        return tuple(sorted(out, key=lambda e: (e.source.path, e.source.line_no)))


def _is_reading(e: ev.Event) -> bool:
    if isinstance(e, (ev.WeightsBegin, ev.WeightsEnd, ev.PoolEnd)):
        return True
    return isinstance(e, (ev.CaptureBegin, ev.CaptureEnd)) and e.avail is not None


def full_kv(kv: tuple[ev.KVPool, ...], swa: bool) -> ev.KVPool | None:
    """A model's full KV pool among its KV lines. sglang 0.5.17-0.5.23 label a sliding-window
    model's pools 'Full' and 'SWA' and build the full one first (swa_memory_pool.py SWAKVPool,
    memory_pool.py _finalize_allocation_log); unlabelled lines of a sliding-window model are
    SWA first, then full (reference 4.3, swa_memory_pool.py @00381c02)."""
    if not kv:
        return None
    labelled = next((p for p in kv if p.label == "Full"), None)
    if labelled is not None:
        return labelled
    if any(p.label == "SWA" for p in kv):
        return next((p for p in kv if p.label != "SWA"), None)
    return kv[1] if swa and len(kv) >= 2 else kv[0]
