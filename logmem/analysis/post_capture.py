"""SGLang's post-capture KV sizing, recomputed from the log (sglang 0.5.17-0.5.23).

With ``SGLANG_ENABLE_POST_CAPTURE_KV_SIZING=1`` (srt/environ.py; never printed) SGLang sizes
the KV pool twice (scheduler.py ``init_model_worker``):

1. before the graphs, the usual rule (``rest = A - P x (1 - mfs)``, ``rest // cell`` tokens)
   sizes a CUDA virtual-address *reservation* (srt/mem_cache/kv_vmm_backing.py
   ``KvVmmBufferOwner``, one page per buffer backed): its KV line is ``KV Cache is allocated``
   in 0.5.17 and ``KV Cache VA upper bound`` from 0.5.18 (memory_pool.py
   ``_finalize_allocation_log``); no memory is taken for it;
2. after the graphs, ``compute_post_capture_kv_resize`` (srt/model_executor/
   model_runner_components/kv_pool_runtime.py) reads free memory (min over ranks), keeps
   ``headroom = pre_model_load_memory x (1 - mem_fraction_static)``, and backs
   ``min((free - headroom + backed) // cell, reserved tokens)`` tokens: the
   ``Post-capture KV sizing: KV cache allocated ... avail mem=`` line. The headroom grows to
   ``pre_capture_activation_reserve_mb`` when the decode graph's max bs is below
   max_running_requests (a warning says so) or for Mamba-like models, and 0.5.22 on keeps
   sampling / multimodal / KV-canary reservations too: those are not modelled here.

Which rank binds is the one with the least free memory before its post-capture line (SGLang's
all-reduce MIN); its last reading before the line is the capture's end (0.5.22 on, the sampling
warm-up runs between them unlogged, so the true free memory at the sizing can be lower).
"""

from __future__ import annotations

from logmem.frozen import frozen
from logmem.model.records import Launch, Rank
from logmem.parse import events as ev
from logmem.sglang import rules


@frozen
class PostCapture:
    """The two sizings of one launch, on its binding rank (all figures as printed)."""

    rank: str  # the binding rank: least free before its post-capture line
    line: int  # its post-capture line
    tokens: int | None
    kv_bytes: int  # KV size: every backed page, K and V together
    avail_bytes: int | None  # that rank's free memory after the backing
    before_bytes: int | None  # that rank's last reading before the line (the capture's end)
    before_line: int | None
    reserved_tokens: int | None  # the pre-capture reservation's #tokens (its full pool)
    reserved_bytes: int | None  # the reservation's K + V span of its full pool (address space)
    reserved_line: int | None
    reserved_parts: int = 2  # printed sizes of the reservation (K and V, or one KV)
    # P x (1 - rule mfs): the headroom SGLang keeps free; None without P or mem_fraction_static.
    headroom_bytes: int | None = None
    draft: tuple[tuple[int, int | None], ...] = ()  # (bytes, tokens) of draft post-capture lines
    reserved_pools: int = 0  # reservation lines of the target (2 for a sliding-window model)
    # The reservation printed as 'KV Cache is allocated' (sglang 0.5.17), not 'VA upper bound'.
    reserved_as_allocated: bool = False
    # The sizing's warnings on that rank (ev.PostCaptureNote): (a, b, line) of the decode graph's
    # max bs below max_running_requests (the headroom raised), of max_running_requests capped.
    eager_gap: tuple[int, int, int] | None = None
    requests_capped: tuple[int, int, int] | None = None
    # A sliding-window model: the SWA tokens of the pool backed after the graphs (its 'Post-
    # capture KV sizing: full_layer_tokens=F, swa_layer_tokens=S' line; `tokens` is F), and
    # (bytes, tokens, line) of the SWA pool's reservation (swa_memory_pool.py reserves 'Full',
    # then 'SWA'). None without sliding-window layers.
    swa_tokens: int | None = None
    swa_line: int | None = None  # the split's line
    reserved_swa: tuple[int, int | None, int] | None = None
    # --enable-unified-memory (unified_memory_pool.py, 0.5.22 on): one buffer of reserved_bytes
    # holds both sub-pools; reserved_tokens and reserved_swa's tokens come from the 'Use sliding
    # window memory pool' line before it, and the full sub-pool's entry_bytes is the cell:
    # (bytes, line) of its sub-pool line.
    unified: bool = False
    full_entry: tuple[int, int] | None = None

    @property
    def capped(self) -> bool:
        """The reservation's token count held the pool (the sizing's ``cap_tokens``)."""
        return self.tokens is not None and self.tokens == self.reserved_tokens

    @property
    def expected_bytes(self) -> int | None:
        """What the budget gives before the reservation's first pages are added back:
        free memory after the capture minus the headroom (an upper bound: the warm-up between
        them is unlogged)."""
        if self.before_bytes is None or self.headroom_bytes is None:
            return None
        return self.before_bytes - self.headroom_bytes


def committed_between(rank: Rank, lines: tuple[int, int]) -> bool:
    """A weight commit (--startup-weight-load-mode overlap) was printed inside the step."""
    return any(
        m.committed is not None and lines[0] < m.committed.source.line_no <= lines[1]
        for m in rank.models
    )


def _before(rank: Rank, line: int) -> ev.Event | None:
    """The rank's last free-memory reading printed before ``line``."""
    last = None
    for e in rank.events:
        if e.source.line_no >= line:
            break
        if (
            isinstance(e, (ev.CaptureEnd, ev.CaptureBegin))
            and e.avail is not None
            or isinstance(e, (ev.PoolEnd, ev.WeightsEnd, ev.WeightsBegin))
        ):
            last = e
    return last


def _avail(e: ev.Event | None) -> int | None:
    a = getattr(e, "avail", None)
    return a.bytes if a is not None else None


def post_capture(
    launch: Launch, pre_load_bytes: int | None, rule_mfs: float | None
) -> PostCapture | None:
    """The launch's post-capture sizing on its binding rank, or None when no rank printed a
    post-capture line."""
    found: list[tuple[int, Rank, ev.PostCaptureKV]] = []
    for r in launch.ranks:
        t = r.target
        pc = t.post_capture if t is not None else None
        if pc is None:
            continue
        free = _avail(_before(r, pc.source.line_no))
        found.append((free if free is not None else 1 << 62, r, pc))
    if not found:
        return None
    _, rank, pc = min(found, key=lambda x: (x[0], x[1].label))
    t = rank.target
    assert t is not None
    reserved = t.reserved_kv_pools
    main = t.reserved_full_pool  # a sliding-window model's 'Full' pool, not its 'SWA' one
    unified = isinstance(main, ev.UnifiedReserved)
    reserved_tokens = main.tokens if main is not None else None
    swa_res: tuple[int, int | None, int] | None = None
    if unified and main is not None:
        plan = _last(t.pools, ev.SWAPlan, main.source.line_no, split=False)
        if plan is not None:
            reserved_tokens = plan.full_tokens
            swa_res = (main.total_bytes, plan.swa_tokens, plan.source.line_no)
    else:
        other = next((p for p in reserved if p is not main and p.label == "SWA"), None)
        if other is not None:
            swa_res = (other.total_bytes, other.tokens, other.source.line_no)
    split = _last(t.pools, ev.PostCaptureSplit, pc.source.line_no, split=True)
    full_sub = next(
        (p for p in t.pools if isinstance(p, ev.UnifiedSubPool) and p.name == "full"), None
    )
    last = _before(rank, pc.source.line_no)
    headroom = (
        rules.outside_budget_bytes(pre_load_bytes, rule_mfs)
        if pre_load_bytes is not None and rule_mfs is not None
        else None
    )
    drafts = tuple(
        (p.total_bytes, p.tokens)
        for m in rank.models
        for p in m.pools
        if isinstance(p, ev.PostCaptureKV) and p.draft
    )
    return PostCapture(
        rank.label,
        pc.source.line_no,
        pc.tokens,
        pc.total_bytes,
        pc.avail.bytes if pc.avail is not None else None,
        _avail(last),
        last.source.line_no if last is not None else None,
        reserved_tokens,
        main.total_bytes if main is not None else None,
        main.source.line_no if main is not None else None,
        1 if main is not None and main.kv is not None else 2,
        headroom,
        drafts,
        len(reserved),
        main is not None and not isinstance(main, ev.KVReserved),
        _note(rank, "eager_gap", pc.source.line_no),
        _note(rank, "requests_capped", pc.source.line_no),
        split.swa_tokens if split is not None and split.swa_tokens else None,
        split.source.line_no if split is not None and split.swa_tokens else None,
        swa_res,
        unified,
        (full_sub.entry_bytes, full_sub.source.line_no) if unified and full_sub else None,
    )


def _last(
    pools: tuple[ev.Event, ...], kind: type[ev.SWAPlan], line: int, split: bool
) -> ev.SWAPlan | None:
    """The model's last SWA plan line of ``kind`` printed before ``line``: with ``split`` the
    post-capture split, else a plan that is not one (the pre-capture split of the rule)."""
    found = [
        p
        for p in pools
        if isinstance(p, kind)
        and isinstance(p, ev.PostCaptureSplit) == split
        and p.source.line_no < line
    ]
    return found[-1] if found else None


def _note(rank: Rank, what: str, line: int) -> tuple[int, int, int] | None:
    """(a, b, line) of the rank's last post-capture warning of kind ``what`` before ``line``."""
    found = [
        (e.a, e.b, e.source.line_no)
        for e in rank.events
        if isinstance(e, ev.PostCaptureNote)
        and e.what == what
        and e.a is not None
        and e.b is not None
        and e.source.line_no < line
    ]
    return found[-1] if found else None


def reservation_cell_range(pc: PostCapture, page_size: int) -> tuple[int, int] | None:
    """Bytes per token the reservation's printed sizes allow: its tensors span exactly
    (tokens + page) cells, where the backed KV size is rounded up to whole pages per buffer."""
    if pc.unified:
        # The unified buffer's reservation is bytes, not cells: the full sub-pool's line prints
        # a token's bytes exactly.
        e = pc.full_entry[0] if pc.full_entry else None
        return (e, e) if e else None
    if pc.reserved_bytes is None or not pc.reserved_tokens:
        return None
    return rules.bytes_per_token_range(
        pc.reserved_bytes, pc.reserved_tokens, pc.reserved_parts, page_size
    )
