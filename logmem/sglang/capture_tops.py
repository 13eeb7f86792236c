"""The largest batch size SGLang captures at a given ``--cuda-graph-max-bs`` (logmem whatif), by
the capture-list rules of logmem.sglang.capture_lists (which re-exports these names), split from
it for its length.

Checked against ``get_batch_sizes_to_capture`` (srt/model_executor/cuda_graph_runner.py) of the
released wheels (docs/sglang-sources.md): 0.4.3.post4 (Mar 2025: [1, 2, 4] + range(8, 161, 8),
168-256 added on ROCm builds only, filtered to <= max bs and the request pool, never extended);
0.4.5 (Apr 2025: 160-256 on ROCm); 0.4.6 (late Apr 2025: 168-256 on GPUs over 81,920 MiB with
dp_size 1, not extended); 0.4.6.post5 / 0.4.7 (May-Jun 2025: over 96 GiB; 0.4.7 also 256-512
over 180,000 MiB) and 0.4.8 - 0.5.2 (Jun-Sep 2025: over 90 GiB, 256-512 over 160,000 MiB), which
extend a list whose top is below max bs in steps of 16 up to it. From 0.5.3 server_args
generates the list up to max bs, adding max bs itself from 0.5.10. In every era the runner then
drops the sizes two-batch overlap and the attention-TP / CP alignment do not keep
(logmem.sglang.capture_align), so the top at a max bs may be below it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from logmem.frozen import frozen
from logmem.sglang.capture_align import NO_FILTER, Alignment

if TYPE_CHECKING:
    from logmem.sglang.capture_lists import ListContext, ListRule, Month

_SMALL_TOP = 160  # the old lists' top without the large-GPU part
_EXTENDS_FROM: tuple[int, int] = (
    2025,
    6,
)  # extended up to max bs from here (0.4.6.post5 already did)
_NOT_EXTENDED_UNTIL: tuple[int, int] = (2025, 4)  # 0.4.6 did not
_BIG_TOP = 256  # the old lists' top with the large-GPU part, without the largest GPUs' one


@frozen
class GpuFacts:
    """What the log says about the device, for the list's large-GPU part."""

    capacity_mib: int | None = None  # SGLang's gpu_mem (the launcher's device-total line)
    at_least_mib: int | None = None  # a lower bound (free memory before weights)
    rocm: bool = False  # ROCm evidence in the log
    dp_size: int = 1


@frozen
class CaptureTop:
    """The largest batch SGLang captures at ``--cuda-graph-max-bs requested``."""

    sizes: tuple[int, ...]  # ascending; more than one: the log cannot tell which
    rule: str  # the list rule's name
    list_tops: tuple[int, ...]  # the default list's own top(s) (before max bs and the pool)
    extended: bool | None  # the list is extended up to max bs (None: cannot be told, or n/a)
    pool: int | None  # the request pool the list is clamped to
    generated: bool  # the list is generated up to max bs (since Oct 2025)
    why: str | None = None  # "gpu" | "date": why more than one size
    gpu_part: bool = False  # the old list has a large-GPU part (168-256; not the 2024 list)
    # Every list the rules that apply may capture at ``requested`` (ascending, clamped to the
    # pool): whatif prices the buckets a larger max bs adds from them.
    lists: tuple[tuple[int, ...], ...] = ()
    # The runner's filter forms that applied and left a list (capture_align), when one drops
    # sizes (the sizes two-batch overlap and the attention-TP / CP alignment keep); () when none
    # does. A form that leaves no size fails SGLang's start-up (assert len(capture_bs) > 0).
    filters: tuple[Alignment, ...] = ()


def _big(month: Month | None, gpu: GpuFacts) -> bool | None:
    """Whether the old list's large-GPU part (168-256) applies; None: cannot be told."""
    cap = gpu.capacity_mib
    lo = cap if cap is not None else gpu.at_least_mib

    def over(mib: int) -> bool | None:
        if lo is not None and lo > mib:
            return True
        return None if cap is None else cap > mib

    rules: list[bool | None] = []
    if month is None or month <= (2025, 4):
        rules.append(gpu.rocm)  # 0.4.3 - 0.4.5: ROCm builds only
    if month is None or month == (2025, 4):
        o = over(81920)
        rules.append(o and gpu.dp_size == 1 if o is not None else None)
    if month is None or month >= (2025, 5):
        a, b = over(90 * 1024), over(96 * 1024)
        rules.append(a if a == b else None)
    return rules[0] if all(r == rules[0] for r in rules) else None


def _huge(month: Month | None, gpu: GpuFacts) -> bool | None:
    """Whether the old list's largest-GPU part (272-512) applies: 0.4.7 over 180,000 MiB, 0.4.8 -
    0.5.2 over 160,000 MiB (srt/model_executor/cuda_graph_runner.py); None: cannot be told."""
    if month is not None and month < (2025, 6):
        return False
    cap = gpu.capacity_mib
    lo = cap if cap is not None else gpu.at_least_mib

    def over(mib: int) -> bool | None:
        if lo is not None and lo > mib:
            return True
        return None if cap is None else cap > mib

    a, b = over(160_000), over(180_000)
    if month is not None and month > (2025, 6):
        return a
    if month is None:
        return None if a is not False else False
    return a if a == b else None


def _extends(month: Month | None) -> bool | None:
    if month is None:
        return None
    if month >= _EXTENDS_FROM:
        return True
    return False if month <= _NOT_EXTENDED_UNTIL else None


def _old_list(
    base: list[int], requested: int, pool: int | None, extend: bool, form: Alignment = NO_FILTER
) -> tuple[int, ...]:
    """SGLang's steps on an old list (cuda_graph_runner.py up to 0.5.2): add the pool size when
    the list's top exceeds it, drop what two-batch overlap / the attention-TP alignment does not
    keep (capture_align), cut at max bs, extend in steps of 16 up to it (from mid 2025; the
    extension is not filtered), clamp to the pool."""
    sizes = list(base)
    if pool is not None and max(sizes) > pool:
        sizes.append(pool)
    sizes = [x for x in sizes if x <= requested and form.keeps(x)]
    if not sizes:
        return ()
    if extend and max(sizes) < requested:
        sizes += list(range(max(sizes), requested + 1, 16))
    return tuple(sorted({x for x in sizes if pool is None or x <= pool}))


def _generated_list(
    full: list[int], requested: int, pool: int | None, appends: bool, form: Alignment = NO_FILTER
) -> tuple[int, ...]:
    """A list generated up to max bs (0.5.3 on, + max bs itself from 0.5.10), then the runner's
    filter and clamp to the request pool (capture_lists.filter_clamp)."""
    from logmem.sglang.capture_lists import filter_clamp

    cut = [x for x in full if x <= requested]
    if appends and cut and cut[-1] != requested:
        cut.append(requested)
    return tuple(filter_clamp(cut, pool, form))


def _old_bases(rule: ListRule, month: Month | None, gpu: GpuFacts) -> list[list[int]]:
    """The lists an old (runner-built) rule can start from on this GPU: its part up to 160, with
    168-256 on a large GPU and 272-512 on the largest (``_big``, ``_huge``: both when the log
    cannot tell)."""
    full = rule.sizes()
    if rule.max_len is not None or max(full) <= _SMALL_TOP:
        return [full[: rule.max_len] if rule.max_len else full]
    small = [x for x in full if x <= _SMALL_TOP]
    mid = [x for x in full if _SMALL_TOP < x <= _BIG_TOP]
    top = [x for x in full if x > _BIG_TOP]
    big, huge = _big(month, gpu), (_huge(month, gpu) if top else False)
    out = []
    for b in (big,) if big is not None else (False, True):
        for h in (huge,) if huge is not None else (False, True):
            if h and not b:
                continue  # over 160,000 MiB is over 90 GiB
            out.append(small + (mid if b else []) + (top if h else []))
    return out or [small]


def largest_at_max_bs(requested: int, ctx: ListContext, gpu: GpuFacts) -> CaptureTop | None:
    """The largest batch size captured at cuda_graph_max_bs ``requested`` by every list rule
    that applies to ``ctx`` (its month, variant and request pool). None when no rule applies."""
    from logmem.sglang.capture_lists import RULES, _applies  # the module re-exports this one

    pool = ctx.request_pool
    tops: set[int] = set()
    list_tops: set[int] = set()
    names: list[str] = []
    per_rule: list[frozenset[int]] = []
    lists: set[tuple[int, ...]] = set()
    ext_seen: set[bool | None] = set()
    generated = gpu_part = False
    forms = ctx.filter_forms()
    used: set[Alignment] = set()  # the forms that leave a list (an empty one fails start-up)
    for rule in RULES:
        if not _applies(rule, "bs", ctx):
            continue
        full = rule.sizes()
        if rule.until is None or rule.until >= (2025, 10):  # generated up to max bs
            generated = True
            # 0.5.10 on: max bs itself is added when the list skips it.
            made = set()
            for form in forms:
                if x := _generated_list(full, requested, pool, rule.appends_max_bs, form):
                    made.add(x)
                    used.add(form)
            if not made:
                continue
            lists |= made
            found = {x[-1] for x in made}
            tops |= found
            per_rule.append(frozenset(found))
            names.append(rule.name)
            continue
        bases = _old_bases(rule, ctx.month, gpu)
        if rule.max_len is None and max(full) > _SMALL_TOP:
            gpu_part = True
        if gpu.rocm and "early" in rule.name:
            bases = [[*b, *range(168, 257, 8)] for b in bases]  # 0.4.3: + 168-256 on ROCm
        extends = False if rule.max_len is not None else _extends(ctx.month)
        ext_seen.add(extends)
        captured = set()
        for base in bases:
            for e in (extends,) if extends is not None else (False, True):
                for form in forms:
                    if x := _old_list(base, requested, pool, e, form):
                        captured.add(x)
                        used.add(form)
        lists |= captured
        found = {x[-1] for x in captured}
        list_tops.update(max(b) for b in bases)
        tops |= found
        per_rule.append(frozenset(found))
        names.append(rule.name)
    if not tops:
        return None
    why = None
    if len(tops) > 1:
        # Filter forms differ by release (capture_align), as the rules' windows do.
        by_date = ctx.month is None or None in ext_seen or len(set(per_rule)) > 1
        by_date = by_date or len(used) > 1
        why = "date" if by_date else "gpu"
    names = list(dict.fromkeys(names))  # a list split by a later change keeps its name
    name = names[0] if len(names) == 1 else f"SGLang's lists ({len(names)} apply)"
    extended = next(iter(ext_seen)) if len(ext_seen) == 1 else None
    return CaptureTop(
        tuple(sorted(tops)),
        name,
        tuple(sorted(list_tops)),
        extended,
        pool,
        generated,
        why,
        gpu_part,
        tuple(sorted(lists)),
        tuple(f for f in forms if f in used) if any(f.filters for f in used) else (),
    )


def pool_left_list_whole(largest_captured: int, request_pool: int) -> bool:
    """Whether the request pool cut nothing from a decode-family capture list: SGLang drops every
    size above ``req_to_token_pool.size`` (padded up to the bs alignment) and adds that size when
    the list went past it, so a largest captured bs below the pool means the list the flags gave
    was captured whole (0.5.17 srt/model_executor/runner/base_cuda_graph_runner.py
    ``get_batch_sizes_to_capture``; the same filter in srt/model_executor/cuda_graph_runner.py
    from 0.4.3.post4). The pool follows the KV tokens (``resolve_max_num_reqs``: min(max(tokens /
    context_len x 512, 2048), 4096), at most tokens // 2), so ``mem_fraction_static`` reaches
    the graphs only through this cut: the capture itself comes after the pool, from the same
    list (the attention backends size their graph buffers from max bs and context_len)."""
    return largest_captured < request_pool
