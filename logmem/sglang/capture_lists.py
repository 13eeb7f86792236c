"""SGLang's CUDA-graph capture lists (reference 12.4): which sizes a capture of N buckets took.

When a log prints no sizes list (E0-E2) or an author elided it (``[1, 2, 4, ...]``), tqdm's
total (``52/52``) still says how many buckets were captured. SGLang's lists are cut at the
largest size, so N buckets are the first N entries of the list's generator: the largest
captured size is the N-th entry. Each generator applies to the versions named with it; the
answer is given only when every generator that applies (by the log's date, the launch's
settings, and the bar readings seen) names the same size.

Sources (reference 12.4): ``get_batch_sizes_to_capture`` in ``cuda_graph_runner.py``
(v0.2 @01cc04e and mid 2025 @0021673c), the server_args-generated ``cuda_graph_bs`` of late
2025 / 2026, and the piecewise token lists. Corpus dates place the decode-list change between
2025-09-11 (corpus 011, old list) and 2025-10-16 (corpus 029, new list).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from logmem.frozen import frozen

Month = tuple[int, int]
_BIG_BS = 8192
_BIG_TOKENS = 1 << 17


def _old_default() -> list[int]:
    # v0.2: [1, 2, 4] + range(8, 161, 8); mid 2025: [1, 2, 4, 8] + range(16, 161, 8), plus
    # range(160, 257, 8) on GPUs over 96 GB: the same values, in one ascending list.
    return [1, 2, 4, 8, *range(16, 257, 8)]


def _new_default() -> list[int]:
    return [1, 2, 4, 8, 12, *range(16, 257, 8), *range(272, 512, 16), *range(512, _BIG_BS, 32)]


def _old_speculative() -> list[int]:
    return [*range(1, 9), *range(10, 33, 2), *range(40, 161, 16), *range(168, 257, 8)]


def _new_speculative() -> list[int]:
    return [
        *range(1, 9),
        *range(10, 33, 2),
        *range(40, 65, 4),
        *range(72, 257, 8),
        *range(272, _BIG_BS, 16),
    ]


def _old_no_padding() -> list[int]:
    return [*range(1, 33), *range(40, 161, 16), *range(168, 257, 8)]


def _new_no_padding() -> list[int]:
    return list(range(1, _BIG_BS))


def _tokens_oct_2025() -> list[int]:
    return [
        *range(4, 33, 4),
        *range(48, 257, 16),
        *range(288, 513, 32),
        *range(640, 4097, 128),
        *range(4352, _BIG_TOKENS, 256),
    ]


def _tokens_later() -> list[int]:
    return [
        *range(4, 33, 4),
        *range(48, 257, 16),
        *range(288, 513, 32),
        *range(576, 1025, 64),
        *range(1280, 4097, 256),
        *range(4608, _BIG_TOKENS, 512),
    ]


@frozen
class ListRule:
    name: str
    family: str  # "bs" | "tokens"
    variant: str  # "default" | "speculative" | "no padding"
    since: Month | None  # first month it may apply to (None: since the start)
    until: Month | None  # last month it may apply to (None: still)
    sizes: Callable[[], list[int]]
    max_len: int | None = None  # a list that is never longer (v0.2 stops at 160)


# Windows overlap where the change date is not known: there both rules apply, and an answer
# is given only when they agree.
RULES: tuple[ListRule, ...] = (
    ListRule("SGLang's 2024 list", "bs", "default", None, (2024, 12), _old_default, 23),
    ListRule("SGLang's 2025 list", "bs", "default", (2025, 1), (2025, 9), _old_default),
    ListRule("SGLang's list since Oct 2025", "bs", "default", (2025, 10), None, _new_default),
    ListRule(
        "SGLang's 2025 speculative list", "bs", "speculative", None, (2025, 9), _old_speculative
    ),
    ListRule(
        "SGLang's speculative list since Oct 2025",
        "bs",
        "speculative",
        (2025, 10),
        None,
        _new_speculative,
    ),
    ListRule("SGLang's 2025 no-padding list", "bs", "no padding", None, (2025, 9), _old_no_padding),
    ListRule(
        "SGLang's no-padding list since Oct 2025",
        "bs",
        "no padding",
        (2025, 10),
        None,
        _new_no_padding,
    ),
    ListRule(
        "SGLang's Oct 2025 token list", "tokens", "default", (2025, 10), (2026, 7), _tokens_oct_2025
    ),
    ListRule("SGLang's later token list", "tokens", "default", (2025, 12), None, _tokens_later),
)


@frozen
class ListContext:
    """What the log says about the launch that picks SGLang's list."""

    speculative: bool | None = None  # None: not printed (server_args missing)
    no_padding: bool | None = None
    max_bs: int | None = None  # cuda_graph_max_bs as resolved
    request_pool: int | None = None  # max_running_requests (SGLang clamps the list to it)
    month: Month | None = None  # when the capture was printed
    draft_loaded: bool = False  # the rank loaded a draft model (speculative decoding)

    @staticmethod
    def from_args(args: Mapping[str, Any] | None, request_pool: int | None) -> ListContext:
        if not args:
            return ListContext(request_pool=request_pool)
        spec = args.get("speculative_algorithm", "absent")
        max_bs = args.get("cuda_graph_max_bs")
        pad = args.get("disable_cuda_graph_padding")
        return ListContext(
            speculative=None if spec == "absent" else spec not in (None, "None"),
            no_padding=pad if isinstance(pad, bool) else None,
            max_bs=max_bs if isinstance(max_bs, int) and not isinstance(max_bs, bool) else None,
            request_pool=request_pool,
        )


def _applies(rule: ListRule, family: str, ctx: ListContext) -> bool:
    if rule.family != family:
        return False
    if ctx.month is not None:
        if rule.since is not None and ctx.month < rule.since:
            return False
        if rule.until is not None and ctx.month > rule.until:
            return False
    if family == "tokens":
        return True
    speculative = ctx.speculative if ctx.speculative is not None else ctx.draft_loaded
    if rule.variant == "speculative":
        return speculative
    if speculative:
        return False
    if rule.variant == "no padding":
        return ctx.no_padding is True
    return ctx.no_padding is not True


def _captured(rule: ListRule, family: str, ctx: ListContext, count: int) -> list[int] | None:
    """The sizes a capture of ``count`` buckets took under ``rule``, or None if it cannot have
    ``count``. SGLang cuts the list at cuda_graph_max_bs (when known, the cut list must have
    exactly ``count`` sizes) and clamps it to the request pool, ending it at the pool size."""
    full = rule.sizes()
    if rule.max_len is not None:
        full = full[: rule.max_len]
    if family == "bs" and ctx.max_bs is not None:
        full = [x for x in full if x <= ctx.max_bs]
    pool = ctx.request_pool if family == "bs" else None
    if pool is not None and full and full[-1] > pool:
        full = [*(x for x in full if x < pool), pool]
    if len(full) < count or (family == "bs" and ctx.max_bs is not None and len(full) != count):
        return None
    return full[:count]


def largest_from_count(
    count: int,
    family: str,
    ctx: ListContext,
    seen: Sequence[tuple[int | None, int]] = (),
) -> tuple[int, str] | None:
    """The largest size of a capture of ``count`` buckets, and the rule's name; None when the
    rules that apply disagree or none fits. ``seen``: (0-based bucket in capture order, size)
    of bar readings, each of which a fitting list must reproduce."""
    if count < 1:
        return None
    found: dict[int, list[str]] = {}
    for rule in RULES:
        if not _applies(rule, family, ctx):
            continue
        ascending = _captured(rule, family, ctx, count)
        if ascending is None:
            continue
        largest = ascending[-1]
        if any(i is not None and not 0 <= i < count for i, _ in seen) or any(
            i is not None and ascending[count - 1 - i] != size for i, size in seen
        ):
            continue
        found.setdefault(largest, []).append(rule.name)
    if len(found) != 1:
        return None
    ((largest, names),) = found.items()
    name = names[0] if len(names) == 1 else f"SGLang's lists (all {len(names)} that apply agree)"
    return largest, name


# --- The largest batch a given cuda_graph_max_bs captures (logmem whatif) ----------------
# Checked against get_batch_sizes_to_capture of the released packages: 0.4.3.post4 (Mar 2025:
# [1, 2, 4] + range(8, 161, 8), 168-256 added on ROCm builds only, filtered to <= max bs and
# the request pool, never extended); 0.4.6 (late Apr 2025: 168-256 on GPUs over 81,920 MiB with
# dp_size 1, not extended); 0.4.6.post5 / 0.4.7 (May-Jun 2025: over 96 GiB) and 0.4.8-0.5.2
# (Jun-Sep 2025: over 90 GiB), which extend a list whose top is below max bs in steps of 16 up
# to it. Since Oct 2025 server_args generates the list up to max bs (reference 12.4).
_SMALL_TOP = 160  # the old lists' top without the large-GPU part
_EXTENDS_FROM: Month = (2025, 6)  # extended up to max bs from here (0.4.6.post5 already did)
_NOT_EXTENDED_UNTIL: Month = (2025, 4)  # 0.4.6 did not
# 0.4.3.post4's lists of the other variants (Mar 2025); 0.4.6's are the rules' ones.
_EARLY_2025: dict[str, list[int]] = {
    "speculative": list(range(1, 33)),
    "no padding": [*range(1, 33), 64, 96, 128, 160],
}


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


def _big(month: Month | None, gpu: GpuFacts) -> bool | None:
    """Whether the old list's large-GPU part (168-256) applies; None: cannot be told."""
    cap = gpu.capacity_mib
    lo = cap if cap is not None else gpu.at_least_mib

    def over(mib: int) -> bool | None:
        if lo is not None and lo > mib:
            return True
        return None if cap is None else cap > mib

    rules: list[bool | None] = []
    if month is None or month <= (2025, 3):
        rules.append(gpu.rocm)  # 0.4.3: ROCm builds only
    if month is None or month == (2025, 4):
        o = over(81920)
        rules.append(o and gpu.dp_size == 1 if o is not None else None)
    if month is None or month >= (2025, 5):
        a, b = over(90 * 1024), over(96 * 1024)
        rules.append(a if a == b else None)
    return rules[0] if all(r == rules[0] for r in rules) else None


def _extends(month: Month | None) -> bool | None:
    if month is None:
        return None
    if month >= _EXTENDS_FROM:
        return True
    return False if month <= _NOT_EXTENDED_UNTIL else None


def _old_top(base: list[int], requested: int, pool: int | None, extend: bool) -> int | None:
    """SGLang's steps on an old list: add the pool size when the list's top exceeds it, cut at
    max bs, extend in steps of 16 up to it (from mid 2025), clamp to the pool."""
    sizes = list(base)
    if pool is not None and max(sizes) > pool:
        sizes.append(pool)
    sizes = [x for x in sizes if x <= requested]
    if not sizes:
        return None
    if extend and max(sizes) < requested:
        sizes += list(range(max(sizes), requested + 1, 16))
    sizes = [x for x in sizes if pool is None or x <= pool]
    return max(sizes) if sizes else None


def largest_at_max_bs(requested: int, ctx: ListContext, gpu: GpuFacts) -> CaptureTop | None:
    """The largest batch size captured at cuda_graph_max_bs ``requested`` by every list rule
    that applies to ``ctx`` (its month, variant and request pool). None when no rule applies."""
    pool = ctx.request_pool
    tops: set[int] = set()
    list_tops: set[int] = set()
    names: list[str] = []
    ext_seen: set[bool | None] = set()
    generated = gpu_part = dated = False
    for rule in RULES:
        if not _applies(rule, "bs", ctx):
            continue
        full = rule.sizes()
        if rule.until is None or rule.until >= (2025, 10):  # generated up to max bs
            generated = True
            cut = [x for x in full if x <= requested]
            if not cut:
                continue
            top = cut[-1] if pool is None or cut[-1] <= pool else pool
            tops.add(top)
            names.append(rule.name)
            continue
        if rule.max_len is not None:
            bases = [full[: rule.max_len]]
        else:
            gpu_part = True
            big = _big(ctx.month, gpu)
            small = [x for x in full if x <= _SMALL_TOP]
            bases = [small] if big is False else [full] if big else [small, full]
            early = _EARLY_2025.get(rule.variant)
            if early is not None and (ctx.month is None or ctx.month <= (2025, 4)):
                # 0.4.3's own speculative / no-padding lists (168-256 added on ROCm builds)
                late = ctx.month is None or ctx.month == (2025, 4)
                rocm = [*early, *range(168, 257, 8)]
                bases = (bases if late else []) + ([rocm] if gpu.rocm else [early])
                dated = dated or late
        extends = False if rule.max_len is not None else _extends(ctx.month)
        ext_seen.add(extends)
        found = {
            t
            for base in bases
            for e in ((extends,) if extends is not None else (False, True))
            if (t := _old_top(base, requested, pool, e)) is not None
        }
        list_tops.update(max(b) for b in bases)
        tops |= found
        names.append(rule.name)
    if not tops:
        return None
    why = None
    if len(tops) > 1:
        why = "date" if ctx.month is None or None in ext_seen or dated else "gpu"
    name = names[0] if len(set(names)) == 1 else f"SGLang's lists ({len(names)} apply)"
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
    )
