"""whatif under SGLang's post-capture KV sizing (sglang 0.5.17-0.5.23): the pool is backed
after the graphs from what they left, so graph memory moves the pool, not the headroom."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from logmem.compare import whatif_facts as wf
from logmem.compare.replay import Replay
from logmem.sglang import rules
from logmem.units import MIB


class PostCaptureReplay:
    """Post-capture KV sizing replayed (sglang 0.5.17-0.5.23 kv_pool_runtime.py
    compute_post_capture_kv_resize): budget = free after the graphs - headroom + the pages
    backed, tokens = min(budget // cell, the reservation's). The headroom is P x (1 - mfs), or
    the pre-capture activation reserve when the decode graph's max bs is below
    max_running_requests (rules.post_capture_eager_gap). So the pool loses what the graphs or
    the headroom gain over the launch's, and the headroom after it stays what SGLang keeps."""

    def __init__(
        self,
        md: Replay,
        t0: int,
        cur_bs: int | None,
        requests: int | None,
        gap0: bool,
        reserve_mib: float | None,
        args: dict[str, Any],
    ) -> None:
        self.md, self.t0, self.cur_bs, self.requests = md, t0, cur_bs, requests
        self.gap0, self.args = gap0, args
        self.reserve = round(reserve_mib * MIB) if reserve_mib is not None else None
        self.h0 = self.kept(md.m0, gap0)
        self.unmodelled: set[int] = set()  # max bs whose headroom SGLang's inputs do not give

    def gap(self, bs: int | None) -> bool:
        if bs is None or bs == self.cur_bs or self.requests is None:
            return self.gap0
        return rules.post_capture_eager_gap(self.args, bs, self.requests)

    def kept(self, m: float, gap: bool) -> int | None:
        h = self.md.outside(m)
        if not gap:
            return h
        return max(h, self.reserve) if self.reserve is not None else None

    def tokens(self, m: float, bs: int | None, graph_change: int, replayed: int) -> int:
        """The pool at ``m`` and max bs ``bs``; ``replayed`` (the rule's move) where the
        headroom is not known."""
        h = self.kept(m, self.gap(bs))
        if h is None or self.h0 is None:
            if bs is not None:
                self.unmodelled.add(bs)
            return replayed
        lost = graph_change + h - self.h0
        per = self.md.bpt / self.md.share
        lost_t = math.ceil(lost / per) if lost > 0 else -int(-lost // per)
        return max(0, min(self.t0 - lost_t, self.md.tokens(m)))

    def note(self, n: wf.PostCaptureSized, bs: int | None, m: float) -> wf.PostCaptureSized:
        """The post-capture note for the prediction at max bs ``bs`` (None: unchanged), ``m``."""
        if bs is None or bs == self.cur_bs:
            return n
        gap = self.gap(bs)
        changed = (
            (bs, self.requests, self.reserve, gap)
            if gap != self.gap0 and self.requests is not None and self.reserve is not None
            else None
        )
        return replace(
            n,
            modelled=bs not in self.unmodelled,
            gap=changed,
            headroom_bytes=self.md.outside(m),
        )
