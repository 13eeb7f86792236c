"""SGLang's default ``mem_fraction_static`` by release: the forms of the rule read in the released
wheels (``pip download sglang==V``; docs/sglang-sources.md lists what each says), with the
dates that bound which forms a log can show.

A log's date only bounds its SGLang version from above (an old image can run later), and a
change read first in release R may already be in a dev build after the release before it. So a
form is *possible* for a log printed after the last release read without it, and *current* from
the first release read with it. The callers (logmem.sglang.default_mfs) take the form whose
value is the dump's, else the one current at the log's date.

Release dates are logmem.sglang.releases'. Like rules.py this imports nothing of the package at
run time but ``logmem.frozen`` and that table.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date, timedelta
from typing import Any

from logmem.frozen import frozen
from logmem.sglang.releases import RELEASES


@frozen
class Form:
    """One form of a rule: the releases read that have it, and the last one read without it."""

    versions: str  # "0.5.3-0.5.5": the releases read with this form
    first: str  # the first release read with it
    after: str | None  # the last release read without it (None: the first form read)

    @property
    def released(self) -> date:
        """From this date the form is the current release's."""
        return RELEASES[self.first]

    @property
    def possible_from(self) -> date:
        """From this date a build may have it (a dev build after the release before)."""
        return date.min if self.after is None else RELEASES[self.after] + timedelta(days=1)


def forms_for(forms: tuple[Any, ...], printed: date | None) -> tuple[Any, ...]:
    """The forms a log printed on ``printed`` can show, the one current at that date first and
    then the older ones newest first (every form when undated). A form only possible by a dev
    build (after the last release without it, before the first release with it) comes after
    the current one."""
    if printed is None:
        return tuple(reversed(forms))
    possible = [f for f in forms if f.form.possible_from <= printed]
    released = [f for f in possible if f.form.released <= printed]
    current = released[-1:] if released else possible[:1]
    rest = [f for f in reversed(possible) if f not in current]
    return (*current, *rest)


# --- era (a): the tp table and its large-GPU forms (server_args.py __post_init__) ----------


@frozen
class TableForm:
    """A form of the era-a default (``ServerArgs.__post_init__``, "Set mem fraction static")."""

    form: Form
    table: tuple[tuple[int, float], ...]  # (>= world, mfs), largest first
    world: bool  # keyed on tp x pp (else tp_size)
    large_gpu: (
        str | None
    )  # what it does above TABLE_GPU_LIMIT_MIB: None | "0.4.6" | "0.4.6.post5" | "0.4.7"


TABLE_GPU_LIMIT_MIB = 81920
"""Above this gpu_mem (MiB) the era-a table is not used (sglang 0.4.6 on, srt/server_args.py,
``__post_init__``: ``if gpu_mem <= 81920``)."""

_TABLE = ((16, 0.79), (8, 0.81), (4, 0.85), (2, 0.87), (1, 0.88))

TABLE_FORMS = (
    # sglang 0.3.6, srt/server_args.py, __post_init__: tp_size >= 8 gives 0.82.
    TableForm(
        Form("up to 0.3.6", "0.3.6", None), ((16, 0.79), (8, 0.82), *_TABLE[2:]), False, None
    ),
    # sglang 0.4.0, 0.4.3.post4, 0.4.4, 0.4.5: 0.81, on every GPU.
    TableForm(Form("0.4.0-0.4.5", "0.4.0", "0.3.6"), _TABLE, False, None),
    # sglang 0.4.6: the table up to 81,920 MiB, (gpu_mem - 13 x 1024) / gpu_mem above (unrounded).
    TableForm(Form("0.4.6", "0.4.6", "0.4.5"), _TABLE, False, "0.4.6"),
    # sglang 0.4.6.post5: the table on tp x pp up to 81,920 MiB, 0.88 above; over 96 GiB
    # min(m + 48 GiB x (1 - m) / gpu_mem, (gpu_mem - 18 GiB) / gpu_mem).
    TableForm(Form("0.4.6.post5", "0.4.6.post5", "0.4.6"), _TABLE, True, "0.4.6.post5"),
    # sglang 0.4.7: as 0.4.6.post5, and 0.79 on CUDA GPUs over 180,000 MiB; a speculative
    # launch reserves 20 GiB over 96 GiB and takes x 0.95 at or below it.
    TableForm(Form("0.4.7", "0.4.7", "0.4.6.post5"), _TABLE, True, "0.4.7"),
)
"""The era-a forms read (sglang 0.3.6 - 0.4.7, srt/server_args.py, ``__post_init__``); the GPU-tier
reserve replaced them in 0.4.8."""


def _spec(args: Mapping[str, Any]) -> bool:
    return args.get("speculative_algorithm") not in (None, "None")


def table_form_values(
    t: TableForm,
    args: Mapping[str, Any],
    capacity_mib: float | None,
    at_least_mib: float | None = None,
    rocm: bool | None = None,
) -> tuple[tuple[float, ...], bool]:
    """The form's possible mem_fraction_static values for these resolved server_args, and
    whether they are all it can give here (False: it needs the device capacity the log does not
    print, or a tp_size it lacks). ``at_least_mib``: a lower bound of the capacity (the free
    memory before loading); ``rocm``: None when not known."""
    tp, pp = args.get("tp_size"), args.get("pp_size") or 1
    if not isinstance(tp, int) or isinstance(tp, bool) or tp < 1 or not isinstance(pp, int):
        return (), False
    key = tp * pp if t.world else tp
    table = next(v for lo, v in t.table if key >= lo)
    if t.large_gpu is None:
        return (table,), True
    if capacity_mib is None:
        large = at_least_mib is not None and at_least_mib > TABLE_GPU_LIMIT_MIB
        if large and t.large_gpu == "0.4.7" and at_least_mib and at_least_mib > 180_000:
            return ((0.79,), True) if rocm is False else ((0.79,), False)
        # At or below 81,920 MiB the table; above, a value of the capacity.
        return ((), False) if large else ((table,), False)
    if t.large_gpu == "0.4.7" and capacity_mib > 180_000 and rocm is None:
        # CUDA gives 0.79, ROCm the 96 GiB rule: both, and the log does not say which.
        return (0.79, _large_value(t, table, capacity_mib, args, True)), False
    return (_large_value(t, table, capacity_mib, args, rocm),), True


def _large_value(
    t: TableForm, table: float, cap: float, args: Mapping[str, Any], rocm: bool | None
) -> float:
    if t.large_gpu == "0.4.6":
        return table if cap <= TABLE_GPU_LIMIT_MIB else (cap - 13 * 1024) / cap
    m = table if cap <= TABLE_GPU_LIMIT_MIB else 0.88
    if t.large_gpu == "0.4.7" and cap > 180_000 and rocm is not True:
        return 0.79  # CUDA (with rocm unknown the caller is told the values are not all)
    if cap > 96 * 1024:
        return _post5(m, cap, args, t)
    return m * 0.95 if t.large_gpu == "0.4.7" and _spec(args) else m


def _post5(m: float, cap: float, args: Mapping[str, Any], t: TableForm) -> float:
    reserve = 20 * 1024 if t.large_gpu == "0.4.7" and _spec(args) else 18 * 1024
    return min(m + 48 * 1024 * (1 - m) / cap, (cap - reserve) / cap)


# --- the GPU-tier reserve (0.4.8 - 0.5.2) and the reserve formula (0.5.3 on) --------------

TIER_FORM = Form("0.4.8-0.5.2", "0.4.8", "0.4.7")
"""The GPU-tier reserve (sglang 0.4.8, 0.4.9, 0.4.10, 0.5.1, 0.5.2, srt/server_args.py,
``__post_init__``): read in all five; 0.5.3 replaced it by the reserve formula."""

TIER_STANDALONE_FROM = "0.5.2"
"""The GPU-tier rule reserves 6 GiB (not 2) for STANDALONE speculative decoding from sglang
0.5.2 (srt/server_args.py, ``__post_init__``; 0.4.8-0.5.1 add 2 GiB for any algorithm)."""


GPU_TIERS = (
    (20 * 1024, 2.8, 10),
    (35 * 1024, 2.8, 10),
    (90 * 1024, 9.5, 2),
    (100 * 1024, 12.0, 2),
    (160 * 1024, 12.0, 2),
)
"""The GPU-tier rule (sglang 0.4.8, 0.4.9, 0.4.10, 0.5.1, 0.5.2, srt/server_args.py,
``__post_init__``, "Set mem fraction static"): below each capacity (MiB), ``reserved = (base +
tp x pp / d) x 1024`` MiB. Read in the released wheels; used only where its value is the
dump's, since a log's date cannot tell this rule's image from the table's or the formula's."""

GPU_TIER_TOP_MIB = 32 * 1024
"""The GPU-tier rule's reserve at or above 160 GiB (same source and versions)."""

GPU_TIER_DP_ATTENTION_MIB = 4096
"""The GPU-tier rule's extra reserve with ``enable_dp_attention`` (same source and versions)."""

GPU_TIER_SPEC_MIB = 2048
"""The GPU-tier rule's extra reserve with any speculative algorithm (same source and versions;
STANDALONE ``GPU_TIER_STANDALONE_MIB`` from 0.5.2)."""

GPU_TIER_STANDALONE_MIB = 6144
"""The GPU-tier rule's extra reserve for STANDALONE speculative decoding (sglang 0.5.2,
srt/server_args.py, ``__post_init__``; the algorithm is not in 0.5.1)."""


def tier_reserved_mib(args: Mapping[str, Any], gpu_mem_mib: float) -> float | None:
    """The GPU-tier rule's reserve (MiB, ``GPU_TIERS``; sglang 0.4.8 - 0.5.2, srt/server_args.py,
    ``__post_init__``), None without tp_size."""
    tp, pp = _pos(args.get("tp_size")), _pos(args.get("pp_size")) or 1
    if tp is None:
        return None
    world = tp * pp
    reserved: float = GPU_TIER_TOP_MIB
    for below, base, div in GPU_TIERS:
        if gpu_mem_mib < below:
            reserved = (base + world / div) * 1024
            break
    spec = args.get("speculative_algorithm")
    if spec == "STANDALONE":
        reserved += GPU_TIER_STANDALONE_MIB
    elif spec not in (None, "None"):
        reserved += GPU_TIER_SPEC_MIB
    if args.get("enable_dp_attention"):
        reserved += GPU_TIER_DP_ATTENTION_MIB
    return reserved


def _pos(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


@frozen
class FormulaForm:
    """A form of ``_handle_gpu_memory_settings``' reserve (sglang 0.5.3 on, srt/server_args.py;
    srt/arg_groups/memory_hook.py, ``handle_gpu_memory_settings``, from 0.5.20)."""

    form: Form
    piecewise: str  # "none" | "max_tokens_div4" | "max_tokens_div8" (after the floor) | "sizes_x8"
    mla_flat: bool  # an MLA model's piecewise/prefill graph reserves a flat 1536 MiB
    standalone_mib: int  # STANDALONE speculative decoding's extra
    other_spec_mib: int  # the other speculative algorithms' extra (NGRAM none)
    decode_gated: bool  # the decode term only with the decode graph on (before: always)
    deepep: bool  # reserve_for_deepep_a2a_mb(): 2048 MiB with DeepEP and the decode graph
    breakable_deepep: bool  # a breakable prefill graph with DeepEP: + 1024 MiB


FORMULA_FORMS = (
    # 0.5.3, 0.5.4, 0.5.5: 512 + activations + max_bs x 2 + tp x pp / 8 x 1024 + DP attention,
    # the 10 GiB floor above 60 GiB, then STANDALONE 6 GiB / other speculative (not NGRAM) 2 GiB.
    FormulaForm(
        Form("0.5.3-0.5.5", "0.5.3", "0.5.2"), "none", False, 6144, 2048, False, False, False
    ),
    # 0.5.6: + piecewise_cuda_graph_max_tokens // 4 after the floor (enable_piecewise_cuda_graph).
    FormulaForm(
        Form("0.5.6", "0.5.6", "0.5.5"), "max_tokens_div4", False, 6144, 2048, False, False, False
    ),
    # 0.5.7: // 8.
    FormulaForm(
        Form("0.5.7", "0.5.7", "0.5.6"), "max_tokens_div8", False, 6144, 2048, False, False, False
    ),
    # 0.5.8, 0.5.9: len(piecewise_cuda_graph_tokens) x 8 before the floor.
    FormulaForm(
        Form("0.5.8-0.5.9", "0.5.8", "0.5.7"), "sizes_x8", False, 6144, 2048, False, False, False
    ),
    # 0.5.10, 0.5.13: on unless disable_piecewise_cuda_graph, an MLA model 1536 MiB flat; the
    # other speculative algorithms 4 GiB.
    FormulaForm(
        Form("0.5.10-0.5.13", "0.5.10", "0.5.9"), "sizes_x8", True, 6144, 4096, False, False, False
    ),
    # 0.5.14: cuda_graph_config; the decode term only with the decode graph on; no speculative
    # extra.
    FormulaForm(Form("0.5.14", "0.5.14", "0.5.13"), "sizes_x8", True, 0, 0, True, False, False),
    # 0.5.16: reserve_for_graph_mb() and reserve_for_deepep_a2a_mb() (2 GiB after the floor).
    FormulaForm(Form("0.5.16", "0.5.16", "0.5.14"), "sizes_x8", True, 0, 0, True, True, False),
    # 0.5.20, 0.5.23 (srt/arg_groups/memory_hook.py): + 1 GiB for a breakable prefill graph with
    # DeepEP.
    FormulaForm(
        Form("0.5.20-0.5.23", "0.5.20", "0.5.16"), "sizes_x8", True, 0, 0, True, True, True
    ),
)
"""The reserve formula's forms read (sglang 0.5.3 - 0.5.23). Every one adds ``tp_size x pp_size /
8 x 1024`` as a float (not integer division) and the 10 GiB floor above 60 GiB."""


@frozen
class PostCaptureForm:
    """A form of the default mem_fraction_static under post-capture KV sizing
    (``post_capture_kv_sizing_planned()``, SGLANG_ENABLE_POST_CAPTURE_KV_SIZING): ``reserved =
    base + tp x pp / 8 x 1024`` MiB, no activation or graph term and no 10 GiB floor, then
    ``round((gpu_mem - reserved) / gpu_mem, 3)`` (sglang 0.5.17, srt/server_args.py
    ``_handle_gpu_memory_settings``; 0.5.22-0.5.23 srt/arg_groups/memory_hook.py
    ``handle_gpu_memory_settings``)."""

    form: Form
    base_mib: int


POST_CAPTURE_FORMS = (
    # 0.5.16 (read in round 25), 0.5.17: 512.
    PostCaptureForm(Form("0.5.16-0.5.17", "0.5.16", "0.5.14"), 512),
    # 0.5.18, 0.5.20, 0.5.22, 0.5.23: 1536.
    PostCaptureForm(Form("0.5.18-0.5.23", "0.5.18", "0.5.17"), 1536),
)
"""The post-capture reserve's forms read (a log shows the mode by its post-capture KV line)."""

NEWEST_FORMULA = FORMULA_FORMS[-1]
ERA_B_FORMULA = FORMULA_FORMS[3]  # 0.5.8-0.5.9: the form reference 12.3 (b) describes


def formula_spec_mib(f: FormulaForm, args: Mapping[str, Any]) -> int:
    """The form's speculative extra (MiB)."""
    spec = args.get("speculative_algorithm")
    if spec == "STANDALONE":
        return f.standalone_mib
    return f.other_spec_mib if spec not in (None, "NGRAM", "None") else 0
