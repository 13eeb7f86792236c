"""SGLang's CUDA-graph capture lists (reference 12.4): which sizes a capture of N buckets took.

When a log prints no sizes list (E0-E2) or an author elided it (``[1, 2, 4, ...]``), tqdm's
total (``52/52``) still says how many buckets were captured. SGLang's lists are cut at the
largest size, so N buckets are the first N entries of the list's generator: the largest
captured size is the N-th entry. Each generator applies to the versions named with it; the
answer is given only when every generator that applies (by the log's date, the launch's
settings, and the bar readings seen) names the same size.

Sources, read in the released wheels (docs/sglang-sources.md): ``get_batch_sizes_to_capture`` in
srt/model_executor/cuda_graph_runner.py of sglang 0.3.6 - 0.5.2 (the list by variant and GPU),
``ServerArgs._generate_cuda_graph_batch_sizes`` (srt/server_args.py, 0.5.3 - 0.5.13;
``_generate_decode_cuda_graph_batch_sizes`` 0.5.14 - 0.5.16, srt/arg_groups/cuda_graph_hook.py
``generate_decode_cuda_graph_batch_sizes`` 0.5.20 - 0.5.23), and the piecewise token lists
(reference 12.4). Corpus dates agree: 2025-09-11 (corpus 011, v0.5.2, old list) and 2025-10-16
(corpus 029, new list). The runner then drops sizes for two-batch overlap and the attention-TP /
context-parallel alignment (logmem.sglang.capture_align), before its clamp to the request pool.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from logmem.frozen import frozen
from logmem.sglang.capture_align import NO_FILTER, AlignInputs, Alignment, alignments

Month = tuple[int, int]
_BIG_BS = 8192
_BIG_TOKENS = 1 << 17


def _old_default() -> list[int]:
    # 0.3.6 - 0.4.4: [1, 2, 4] + [i * 8 for i in range(1, 21)]; 0.4.5 - 0.5.2: [1, 2, 4, 8] +
    # range(16, 161, 8), the same values; + range(160, 257, 8) on large GPUs (0.4.5 on ROCm,
    # 0.4.6 over 81,920 MiB with dp 1, 0.4.6.post5 - 0.4.7 over 96 GiB, 0.4.8 on over 90 GiB).
    return [1, 2, 4, 8, *range(16, 257, 8)]


_HUGE = list(range(272, 513, 16))
"""+ range(256, 513, 16) on the largest GPUs: sglang 0.4.7 over 180,000 MB (CUDA or not), 0.4.8 -
0.5.2 over 160,000 MiB (srt/model_executor/cuda_graph_runner.py, get_batch_sizes_to_capture)."""


def _jun_2025_default() -> list[int]:
    return [*_old_default(), *_HUGE]


def _new_default() -> list[int]:
    return [1, 2, 4, 8, 12, *range(16, 257, 8), *range(272, 512, 16), *range(512, _BIG_BS, 32)]


def _old_speculative() -> list[int]:
    # 0.4.5 - 0.4.6.post5: range(1, 9) + range(10, 33, 2) + range(40, 161, 16), + 168-256.
    return [*range(1, 9), *range(10, 33, 2), *range(40, 161, 16), *range(168, 257, 8)]


def _jun_2025_speculative() -> list[int]:
    # 0.4.7 - 0.5.2: range(1, 9) + range(10, 33, 2) + range(40, 64, 8) + range(80, 161, 16).
    return [
        *range(1, 9),
        *range(10, 33, 2),
        *range(40, 64, 8),
        *range(80, 161, 16),
        *range(168, 257, 8),
        *_HUGE,
    ]


def _oct_2025_speculative() -> list[int]:
    # 0.5.3 - 0.5.4: range(40, 64, 4), without 64 (0.5.5 on: range(40, 65, 4)).
    return [
        *range(1, 9),
        *range(10, 33, 2),
        *range(40, 64, 4),
        *range(72, 257, 8),
        *range(272, _BIG_BS, 16),
    ]


def _new_speculative() -> list[int]:
    return [
        *range(1, 9),
        *range(10, 33, 2),
        *range(40, 65, 4),
        *range(72, 257, 8),
        *range(272, _BIG_BS, 16),
    ]


def _2024_no_padding() -> list[int]:
    # 0.3.6 - 0.4.0: list(range(1, 32)) + [64, 128].
    return [*range(1, 32), 64, 128]


def _old_no_padding() -> list[int]:
    # 0.4.6 - 0.4.6.post5: range(1, 33) + range(40, 161, 16) (0.4.5's raised a TypeError), + 168-256.
    return [*range(1, 33), *range(40, 161, 16), *range(168, 257, 8)]


def _jun_2025_no_padding() -> list[int]:
    # 0.4.7 - 0.5.2: range(1, 33) + range(48, 161, 16).
    return [*range(1, 33), *range(48, 161, 16), *range(168, 257, 8), *_HUGE]


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
    appends_max_bs: bool = False  # max bs is added when not in the list (0.5.10 on)


# Windows overlap where the change date is not known: there both rules apply, and an answer
# is given only when they agree.
RULES: tuple[ListRule, ...] = (
    ListRule("SGLang's 2024 list", "bs", "default", None, (2024, 12), _old_default, 23),
    ListRule("SGLang's 2025 list", "bs", "default", (2025, 1), (2025, 6), _old_default),
    ListRule(
        "SGLang's Jun-Sep 2025 list", "bs", "default", (2025, 6), (2025, 9), _jun_2025_default
    ),
    ListRule("SGLang's list since Oct 2025", "bs", "default", (2025, 10), (2026, 3), _new_default),
    ListRule(
        "SGLang's list since Oct 2025", "bs", "default", (2026, 2), None, _new_default, None, True
    ),
    ListRule(
        "SGLang's early 2025 speculative list",
        "bs",
        "speculative",
        None,
        (2025, 4),
        lambda: list(range(1, 33)),  # 0.4.3.post4 - 0.4.4
    ),
    ListRule(
        "SGLang's 2025 speculative list",
        "bs",
        "speculative",
        (2025, 4),
        (2025, 6),
        _old_speculative,
    ),
    ListRule(
        "SGLang's Jun-Sep 2025 speculative list",
        "bs",
        "speculative",
        (2025, 6),
        (2025, 9),
        _jun_2025_speculative,
    ),
    ListRule(
        "SGLang's Oct 2025 speculative list",
        "bs",
        "speculative",
        (2025, 10),
        (2025, 11),
        _oct_2025_speculative,
    ),
    ListRule(
        "SGLang's speculative list since Oct 2025",
        "bs",
        "speculative",
        (2025, 11),
        (2026, 3),
        _new_speculative,
    ),
    ListRule(
        "SGLang's speculative list since Oct 2025",
        "bs",
        "speculative",
        (2026, 2),
        None,
        _new_speculative,
        None,
        True,
    ),
    ListRule(
        "SGLang's 2024 no-padding list", "bs", "no padding", None, (2024, 12), _2024_no_padding
    ),
    ListRule(
        "SGLang's early 2025 no-padding list",
        "bs",
        "no padding",
        (2025, 1),
        (2025, 4),
        lambda: [*range(1, 33), 64, 96, 128, 160],  # 0.4.3.post4 - 0.4.4
    ),
    ListRule(
        "SGLang's 2025 no-padding list", "bs", "no padding", (2025, 4), (2025, 6), _old_no_padding
    ),
    ListRule(
        "SGLang's Jun-Sep 2025 no-padding list",
        "bs",
        "no padding",
        (2025, 6),
        (2025, 9),
        _jun_2025_no_padding,
    ),
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
"""Windows (months) overlap where a change falls inside a month or a dev build may have it: there
both rules apply, and an answer is given only when they agree. Early 2025's own speculative and
no-padding lists (0.4.3 - 0.4.4) are ``_EARLY_2025``."""


@frozen
class ListContext:
    """What the log says about the launch that picks SGLang's list."""

    speculative: bool | None = None  # None: not printed (server_args missing)
    no_padding: bool | None = None
    max_bs: int | None = None  # cuda_graph_max_bs as resolved
    request_pool: int | None = None  # max_running_requests (SGLang clamps the list to it)
    month: Month | None = None  # when the capture was printed
    draft_loaded: bool = False  # the rank loaded a draft model (speculative decoding)
    # The decode list the dump prints (server_args ``cuda_graph_bs``: the user's, or from 0.5.3
    # the generated one; E7 ``cuda_graph_config.decode.bs``): the list the capture took, before
    # the runner's pool clamp. None: the dump prints none.
    dumped_list: tuple[int, ...] | None = None
    # What the dump says that the runner's filter reads (two-batch overlap, the attention-TP /
    # CP alignment); None: no dump, or one that cannot tell it (capture_align.AlignInputs).
    align: AlignInputs | None = None
    verify_graph: bool = False  # the target's graph (a verify graph when speculative)
    logged: tuple[int, ...] = ()  # the sizes this graph's capture logged (whatif's own launch)

    def filter_forms(self) -> tuple[Alignment, ...]:
        """The runner's filter forms at this context's month that keep every size the launch
        logged; no filter when the dump cannot tell it (no server_args: the list's variant is
        taken as the default's too) or the logged list contradicts every form (the log wins)."""
        forms = alignments(self.align, self.month, self.verify_graph) or (NO_FILTER,)
        fit = tuple(f for f in forms if all(f.keeps(x) for x in self.logged))
        return fit or (NO_FILTER,)

    @staticmethod
    def from_args(args: Mapping[str, Any] | None, request_pool: int | None) -> ListContext:
        if not args:
            return ListContext(request_pool=request_pool)
        from logmem.sglang.reserve import decode_max_bs

        spec = args.get("speculative_algorithm", "absent")
        pad = args.get("disable_cuda_graph_padding")
        return ListContext(
            speculative=None if spec == "absent" else spec not in (None, "None"),
            no_padding=pad if isinstance(pad, bool) else None,
            # As resolved: 0.5.14 on the dump has no cuda_graph_max_bs, only cuda_graph_config's
            # decode max_bs (0.5.22 on lowered to --max-running-requests: decode_max_bs.py).
            max_bs=decode_max_bs(args),
            request_pool=request_pool,
            dumped_list=_dumped_list(args),
            align=AlignInputs.from_args(args),
        )


def _dumped_list(args: Mapping[str, Any]) -> tuple[int, ...] | None:
    cfg = args.get("cuda_graph_config")
    dec = cfg.get("decode") if isinstance(cfg, Mapping) else None
    for v in (dec.get("bs") if isinstance(dec, Mapping) else None, args.get("cuda_graph_bs")):
        if isinstance(v, list) and v and all(isinstance(x, int) and x > 0 for x in v):
            return tuple(sorted(set(v)))
    return None


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


def filter_clamp(sizes: Sequence[int], pool: int | None, form: Alignment) -> list[int]:
    """The runner's steps on a list cut at max bs: add the request pool's size (padded up to the
    alignment from 0.5.10) when the list exceeds it, drop the sizes the filter does not keep
    (capture_align), clamp to the pool. Up to 0.5.2 the pool is added before the cut, which
    keeps the same sizes (the cut removes a pool above max bs either way)."""
    p = form.pool(pool) if pool is not None else None
    out = list(sizes)
    if p is not None and out and max(out) > p:
        out.append(p)
    out = [x for x in out if form.keeps(x) and (p is None or x <= p)]
    return sorted(set(out))


def _captured(
    rule: ListRule, family: str, ctx: ListContext, count: int, form: Alignment = NO_FILTER
) -> list[int] | None:
    """The sizes a capture of ``count`` buckets took under ``rule`` and the runner's filter
    ``form``, or None if it cannot have ``count``. SGLang cuts the list at cuda_graph_max_bs
    (when known, the cut list must have exactly ``count`` sizes), filters it and clamps it to the
    request pool, ending it at the pool size."""
    full = rule.sizes()
    if rule.max_len is not None:
        full = full[: rule.max_len]
    if family == "bs" and ctx.max_bs is not None:
        full = [x for x in full if x <= ctx.max_bs]
        if rule.appends_max_bs and full and full[-1] < ctx.max_bs:
            full.append(ctx.max_bs)  # 0.5.10 on: "if max_bs not in capture_bs: append"
    if family == "bs":
        full = filter_clamp(full, ctx.request_pool, form)
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
    if family == "bs" and ctx.dumped_list is not None:
        # The dump's list is what the runner starts from: cut at max bs (up to 0.5.2 the runner
        # then extended a list whose top is below max bs in steps of 16: not told here).
        top = ctx.max_bs
        listed = [x for x in ctx.dumped_list if top is None or x <= top]
        old = ctx.month is None or ctx.month <= (2025, 10)
        if not listed or (old and top is not None and listed[-1] < top):
            return None
        dumped = ListRule("the dump's cuda_graph_bs", "bs", "default", None, None, lambda: listed)
        rules: tuple[ListRule, ...] = (dumped,)
        ctx = replace(ctx, max_bs=None)
    else:
        rules = RULES
    found: dict[int, list[str]] = {}
    forms = ctx.filter_forms() if family == "bs" else (NO_FILTER,)
    for rule in rules:
        if rules is RULES and not _applies(rule, family, ctx):
            continue
        for form in forms:
            ascending = _captured(rule, family, ctx, count, form)
            if ascending is None:
                continue
            largest = ascending[-1]
            if any(i is not None and not 0 <= i < count for i, _ in seen) or any(
                i is not None and ascending[count - 1 - i] != size for i, size in seen
            ):
                continue
            if rule.name not in found.get(largest, []):
                found.setdefault(largest, []).append(rule.name)
    if len(found) != 1:
        return None
    ((largest, names),) = found.items()
    name = names[0] if len(names) == 1 else f"SGLang's lists (all {len(names)} that apply agree)"
    return largest, name


def generated_list(listed: Sequence[int], ctx: ListContext) -> bool:
    """Whether one of SGLang's list generators that apply at ``ctx`` (the log's month, the
    variant) gives ``listed`` when cut at its largest size (with max bs appended, 0.5.10 on).
    A dumped list that none gives was the launch's own ``--cuda-graph-bs``."""
    want = sorted(set(listed))
    if not want:
        return False
    top = want[-1]
    for rule in RULES:
        if not _applies(rule, "bs", ctx):
            continue
        full = rule.sizes()[: rule.max_len] if rule.max_len is not None else rule.sizes()
        cut = [x for x in full if x <= top]
        if rule.appends_max_bs and cut and cut[-1] < top:
            cut.append(top)
        if cut == want:
            return True
    return False


# The largest batch a given cuda_graph_max_bs captures (logmem whatif): capture_tops.py.
from logmem.sglang.capture_tops import CaptureTop as CaptureTop  # noqa: E402
from logmem.sglang.capture_tops import GpuFacts as GpuFacts  # noqa: E402
from logmem.sglang.capture_tops import largest_at_max_bs as largest_at_max_bs  # noqa: E402
