"""Events of the pool step: KV pools (printed, reserved, backed after capture, unified), the
Mamba state, the sliding-window split and the DeepSeek-V4 plan. Re-exported by
logmem.parse.events, where every stage reads them (``ev.KVPool``).
"""

from __future__ import annotations

from logmem.frozen import frozen
from logmem.parse.event_base import Event
from logmem.units import Mem


@frozen(kw_only=True)
class KVDtype(Event):
    dtype: str


@frozen(kw_only=True)
class KVPool(Event):
    tokens: int | None
    k: Mem | None
    v: Mem | None
    kv: Mem | None
    dtype: str | None
    # allocation_label before 'KV Cache' (0.5.17-0.5.23 _finalize_allocation_log): 'Full', 'SWA'.
    label: str | None = None

    @property
    def total_bytes(self) -> int:
        if self.kv is not None:
            return self.kv.bytes
        return (self.k.bytes if self.k else 0) + (self.v.bytes if self.v else 0)


@frozen(kw_only=True)
class PostCaptureKV(KVPool):
    """The KV pool backed after the graphs (0.5.17-0.5.23 kv_pool_runtime.py
    compute_post_capture_kv_resize): #tokens, KV size (K and V, every backed page), avail mem
    after it (the target's line; a draft's, 0.5.22 on, prints none)."""

    avail: Mem | None
    draft: bool


@frozen(kw_only=True)
class PostCaptureNote(Event):
    """The sizing's warnings (kv_pool_runtime.py): eager_gap, requests_capped; 0.5.23's canary."""

    what: str  # eager_gap (decode max bs a < requests b) | requests_capped (a -> b) | canary
    a: int | None = None
    b: int | None = None
    amount: Mem | None = None


@frozen(kw_only=True)
class KVReserved(KVPool):
    """``[label ]KV Cache VA upper bound. ...`` (0.5.18-0.5.23 memory_pool.py
    _finalize_allocation_log): address space reserved for N tokens before the graphs, not memory."""


@frozen(kw_only=True)
class UnifiedReserved(KVReserved):
    """``[unified-memory-pool] UnifiedKVPool reserved VA upper bound: total_bytes=X GB (=N B), ...``
    (0.5.22-0.5.23): the full and SWA sub-pools' one buffer as address space; kv is N bytes."""

    sub_pools: int


@frozen(kw_only=True)
class UnifiedAllocated(KVPool):
    """``[unified-memory-pool] UnifiedKVPool allocated: total_bytes=X GB (=N B), ...``
    (0.5.16-0.5.23, --enable-unified-memory without post-capture sizing): the KV pool, one
    buffer of the sub-pools taken as memory before the graphs; kv is N bytes, the tokens are
    the scheduler summary's (the line prints none)."""

    sub_pools: int


@frozen(kw_only=True)
class UnifiedSubPool(Event):
    """A unified pool's ``sub-pool 'NAME': ... entry_bytes=E`` line: E, a token's bytes in it."""

    name: str
    kind: str
    layers: int
    entry_bytes: int
    max_slots: int


@frozen(kw_only=True)
class WeightsCommitted(Event):
    """``Load weight end. Committed real weights after CUDA graph capture in X s``: overlap load
    (0.5.18-0.5.23 startup_weight_load.py); storage allocated before the capture, no figure."""

    commit_s: float
    window_s: float
    total_s: float


@frozen(kw_only=True)
class KVAvailable(Event):
    avail: Mem


@frozen(kw_only=True)
class MambaPool(Event):
    max_size: int | None  # None: sglang 0.5.2-0.5.3 did not print max_mamba_cache_size
    conv: Mem
    ssm: Mem
    intermediate_ssm: Mem | None
    intermediate_conv: Mem | None

    @property
    def total_bytes(self) -> int:
        parts = (self.conv, self.ssm, self.intermediate_ssm, self.intermediate_conv)
        return sum(p.bytes for p in parts if p is not None)


@frozen(kw_only=True)
class SWAPlan(Event):
    full_tokens: int | None
    swa_tokens: int


@frozen(kw_only=True)
class SWASummary(Event):
    usage: Mem
    swa_size: int
    full_size: int


@frozen(kw_only=True)
class PostCaptureSplit(SWAPlan):
    """``Post-capture KV sizing: full_layer_tokens=F, swa_layer_tokens=S`` (0.5.17-0.5.23)."""


@frozen(kw_only=True)
class DSv4Plan(Event):
    bytes_per_token: float
    avail: Mem
    tokens: int
