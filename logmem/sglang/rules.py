"""SGLang's rules: every formula and constant of SGLang's that logmem relies on, each once.

Each rule names the SGLang source it comes from and the versions (format eras E0-E7, see
docs/reference.md) it applies to. Every other stage calls these; tests/test_rules.py fails
when a rule's constant or formula is written anywhere else in the package.

Inputs are plain numbers (bytes, counts, fractions) or the launch records read duck-typed,
so this module imports nothing of the package but ``logmem.units`` at run time: parse,
model, analysis, compare, estimate and report can all import it without a cycle.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from logmem.frozen import frozen
from logmem.parse.server_args import arg_number
from logmem.sglang.adjustments import AITER_LONG_CONTEXT as AITER_LONG_CONTEXT
from logmem.sglang.adjustments import MFS_ADJUSTMENTS as MFS_ADJUSTMENTS
from logmem.sglang.adjustments import MULTIMODAL_ARCHITECTURES as MULTIMODAL_ARCHITECTURES
from logmem.sglang.adjustments import MfsAdjustment as MfsAdjustment
from logmem.sglang.adjustments import adjustment_candidates as adjustment_candidates
from logmem.sglang.adjustments import mfs_adjustments as mfs_adjustments
from logmem.sglang.arg_memory import NON_MEMORY_ARGS as NON_MEMORY_ARGS
from logmem.sglang.arg_memory import memory_neutral_arg as memory_neutral_arg
from logmem.sglang.code_paths import ENV_GATES as ENV_GATES
from logmem.sglang.code_paths import EnvGate as EnvGate
from logmem.sglang.code_paths import env_gate as env_gate
from logmem.sglang.graph_rules import END_LINE_EMPTIES_CACHE as END_LINE_EMPTIES_CACHE
from logmem.sglang.graph_rules import CaptureListFlags as CaptureListFlags
from logmem.sglang.graph_rules import capture_list_flags as capture_list_flags
from logmem.sglang.graph_rules import graph_cap_flag as graph_cap_flag
from logmem.sglang.graph_rules import graph_disable_flag as graph_disable_flag
from logmem.sglang.graph_rules import graph_sized_in_tokens as graph_sized_in_tokens
from logmem.sglang.graph_rules import graphs_off as graphs_off
from logmem.sglang.graph_rules import kept_logits_bytes as kept_logits_bytes
from logmem.sglang.graph_rules import list_given_by_dump as list_given_by_dump
from logmem.sglang.graph_rules import verify_tokens_per_req as verify_tokens_per_req
from logmem.sglang.request_pool import DEFAULT_REQUEST_ROWS as DEFAULT_REQUEST_ROWS
from logmem.sglang.request_pool import MAMBA_REQUEST_RATIO as MAMBA_REQUEST_RATIO
from logmem.sglang.request_pool import REQ_TO_TOKEN_EXTRA_COLUMNS as REQ_TO_TOKEN_EXTRA_COLUMNS
from logmem.sglang.request_pool import default_max_running_requests as default_max_running_requests
from logmem.sglang.request_pool import default_rows_at_cap as default_rows_at_cap
from logmem.sglang.request_pool import default_slots_printed as default_slots_printed
from logmem.sglang.request_pool import mamba_request_ratio as mamba_request_ratio
from logmem.sglang.request_pool import req_to_token_bytes as req_to_token_bytes
from logmem.sglang.request_pool import req_to_token_bytes_for as req_to_token_bytes_for
from logmem.sglang.request_pool import req_to_token_context as req_to_token_context
from logmem.sglang.request_pool import req_to_token_padding_row as req_to_token_padding_row
from logmem.sglang.reserve import ACTIVATION_MIB_PER_TOKEN as ACTIVATION_MIB_PER_TOKEN
from logmem.sglang.reserve import ACTIVATION_MIN_TOKENS as ACTIVATION_MIN_TOKENS
from logmem.sglang.reserve import BREAKABLE_DEEPEP_MIB as BREAKABLE_DEEPEP_MIB
from logmem.sglang.reserve import DECODE_GRAPH_MIB_PER_BS as DECODE_GRAPH_MIB_PER_BS
from logmem.sglang.reserve import DEEPEP_A2A_RESERVE_MIB as DEEPEP_A2A_RESERVE_MIB
from logmem.sglang.reserve import DP_ATTENTION_LARGE_BS as DP_ATTENTION_LARGE_BS
from logmem.sglang.reserve import DP_ATTENTION_LARGE_BS_MIB as DP_ATTENTION_LARGE_BS_MIB
from logmem.sglang.reserve import DP_ATTENTION_MIB_PER_BS_DP as DP_ATTENTION_MIB_PER_BS_DP
from logmem.sglang.reserve import MLA_PREFILL_GRAPH_MIB as MLA_PREFILL_GRAPH_MIB
from logmem.sglang.reserve import PIECEWISE_MIB_PER_SIZE as PIECEWISE_MIB_PER_SIZE
from logmem.sglang.reserve import PREFILL_OFF_BACKENDS as PREFILL_OFF_BACKENDS
from logmem.sglang.reserve import PrefillGraph as PrefillGraph
from logmem.sglang.reserve import Reserve as Reserve
from logmem.sglang.reserve import ReserveTerm as ReserveTerm
from logmem.sglang.reserve import activation_reserve_bytes as activation_reserve_bytes
from logmem.sglang.reserve import decode_graph_on as decode_graph_on
from logmem.sglang.reserve import decode_max_bs as decode_max_bs
from logmem.sglang.reserve import graph_reserve as graph_reserve
from logmem.sglang.reserve import graph_reserve_mib_per_bs as graph_reserve_mib_per_bs
from logmem.sglang.reserve import post_capture_eager_gap as post_capture_eager_gap
from logmem.sglang.reserve import (
    pre_capture_activation_reserve_mib as pre_capture_activation_reserve_mib,
)
from logmem.sglang.reserve import prefill_graph as prefill_graph
from logmem.sglang.reserve import reserve_heuristic_applies as reserve_heuristic_applies
from logmem.sglang.spec_draft import DraftPoolRule as DraftPoolRule
from logmem.sglang.spec_draft import DraftPoolSource as DraftPoolSource
from logmem.sglang.spec_draft import DraftShare as DraftShare
from logmem.sglang.spec_draft import draft_pool_rule as draft_pool_rule
from logmem.sglang.spec_draft import draft_share as draft_share
from logmem.sglang.spec_draft import speculative_algorithm as speculative_algorithm
from logmem.units import GIB

if TYPE_CHECKING:
    from logmem.model.records import Launch, Model, Rank
    from logmem.parse.events import WeightsBegin, WeightsEnd

# --- print resolution ------------------------------------------------------------------------

PRINT_RESOLUTION_GIB = 0.005
"""Half a unit of the last printed digit of one reading.

SGLang prints every memory figure with ``f"{x:.2f} GB"`` from
``get_available_gpu_memory`` (``python/sglang/srt/utils.py``, later ``utils/common.py``),
whose "GB" is GiB: ``Load weight begin/end``, ``KV Cache is allocated``, ``Memory pool end``,
``Capture ... begin/end`` and the summary's ``available_gpu_mem``, in every era E0-E7.
So one reading is known to +-0.005 GiB."""

PRINT_RESOLUTION_BYTES = round(PRINT_RESOLUTION_GIB * GIB)
"""``PRINT_RESOLUTION_GIB`` in bytes."""

DIFFERENCE_RESOLUTION_GIB = 2 * PRINT_RESOLUTION_GIB
"""A difference of two printed readings (a drop, a bucket cost, SGLang's own ``mem usage``
= before - after) is known to +-0.01 GiB (same sources and eras as ``PRINT_RESOLUTION_GIB``)."""

DIFFERENCE_RESOLUTION_BYTES = round(DIFFERENCE_RESOLUTION_GIB * GIB)
"""``DIFFERENCE_RESOLUTION_GIB`` in bytes."""


def at_floor(avail_bytes: int) -> bool:
    """A free-memory reading printed as 0.00 GB (or below): the driver's zero, not SGLang's.

    The reading is the driver's free bytes (``torch.cuda.mem_get_info`` in
    ``get_available_gpu_memory``, ``python/sglang/srt/utils.py``, later ``utils/common.py``),
    which cannot go below 0. SGLang keeps no floor of its own: it neither clamps the reading nor
    keeps a minimum of free memory (``profile_max_num_token`` in ``model_runner.py`` takes the
    reading as it is; read in sglang 0.3.6, 0.4.6, 0.5.2, 0.5.3 and 0.5.9, 2024-11 - 2026-02).
    A driver that spills to system memory (WSL) keeps reporting 0.00 while allocations go on,
    so a further drop from there cannot be seen (seen in a May-2025 WSL log, sglang 0.4.6)."""
    return avail_bytes < PRINT_RESOLUTION_BYTES


def printed_sum_error_bytes(parts: int) -> float:
    """How far off a sum of ``parts`` printed sizes can be: +-0.005 GiB each.

    E.g. the ``KV Cache is allocated`` line of an MHA pool prints ``K size`` and ``V size``
    (two parts), an MLA pool one ``KV size`` (``mem_cache/memory_pool.py``, E2-E7)."""
    return parts * PRINT_RESOLUTION_GIB * GIB


def bytes_per_token_range(
    total_bytes: int | None, tokens: int | None, parts: int, page_size: int = 1
) -> tuple[int, int] | None:
    """Whole bytes per token consistent with a pool's printed size(s) and ``#tokens``.

    ``KV Cache is allocated. #tokens: N, K size: ..., V size: ...`` (``MHATokenToKVPool`` /
    ``MLATokenToKVPool``, ``mem_cache/memory_pool.py``, E2 on) prints each size to +-0.005 GiB.
    The buffers hold ``N + page_size`` slots (reference 4.1): with page_size 1 that is below the
    print error, but a page of 128 (Ascend, some attention backends) moves the cell by ~0.1%."""
    if total_bytes is None or not tokens:
        return None
    err = printed_sum_error_bytes(parts)
    slots = tokens + max(1, page_size)
    lo, hi = (total_bytes - err) / slots, (total_bytes + err) / slots
    return max(0, int(lo) + 1), int(hi)


def page_size(args: Mapping[str, Any]) -> int:
    """server_args' ``page_size`` (``server_args.py``, all eras; 1 when the dump lacks it or
    prints none: SGLang's default)."""
    v = args.get("page_size")
    return v if isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= 1 << 16 else 1


def rule_bytes_per_token_range(rest_bytes: int, tokens: int, mfs: float) -> tuple[int, int]:
    """Whole bytes per token consistent with ``max_total_num_tokens = rest // cell`` when only
    the token count is printed (E0/E1 print no KV line): ``cell`` lies in
    ``((rest - e) / (tokens + 1), (rest + e) / tokens]`` where ``e`` is what the printed A and P
    leave of rest (+-0.005 GiB each, P counted x (1 - mfs); ``profile_max_num_token``,
    ``model_runner.py``, all eras E0-E7)."""
    err = PRINT_RESOLUTION_BYTES * (1 + (1 - mfs))
    return max(0, int((rest_bytes - err) / (tokens + 1)) + 1), int((rest_bytes + err) / tokens)


# --- KV-pool sizing ---------------------------------------------------------------------------


def outside_budget_bytes(pre_load_bytes: int, mfs: float) -> int:
    """What SGLang keeps outside the static budget: ``P x (1 - mem_fraction_static)``, rounded
    to whole bytes: the headroom for activations, CUDA graphs and everything unlogged.

    ``ModelRunner.profile_max_num_token`` (``model_executor/model_runner.py``; from
    ``model_runner_kv_cache_mixin.py`` about Nov 2025, ``pool_configurator.py`` 2026), all eras
    E0-E7; P is ``pre_model_load_memory`` (``pre_load_reading``). Post-capture KV sizing keeps
    the same headroom free after the graphs (sglang 0.5.17-0.5.23, srt/model_executor/
    model_runner_components/kv_pool_runtime.py ``compute_post_capture_kv_resize``)."""
    return round(pre_load_bytes * (1 - mfs))


def kv_budget_bytes(after_weights_bytes: int, pre_load_bytes: int, mfs: float) -> int:
    """The KV budget: ``rest = A - P x (1 - mem_fraction_static)``, rounded once, to whole bytes.

    Same source and eras as ``outside_budget_bytes``: P is ``pre_model_load_memory``
    (``pre_load_reading``), A the free memory after the weights (``after_weights_reading``),
    both minimums over ranks. E0/E1 print no KV line, so this rule is the only measure of
    their pool. ``max_total_num_tokens = rest // cell bytes`` (hybrid Mamba models first give
    the Mamba state its share of rest)."""
    return after_weights_bytes - outside_budget_bytes(pre_load_bytes, mfs)


def mfs_step_bytes(pre_load_bytes: int, d_mfs: float) -> int:
    """Bytes that moving mem_fraction_static by ``d_mfs`` moves into (or out of) the KV budget:
    ``P x d``, rounded down, so that asking for them back never needs more than ``d`` (the
    derivative of ``kv_budget_bytes``; same source and eras)."""
    return math.floor(pre_load_bytes * d_mfs)


def smallest_mfs_with_pool(after_weights_bytes: int, pre_load_bytes: int) -> float | None:
    """The mem_fraction_static at which the KV budget is zero: ``1 - A / P`` (any larger value
    gives a pool). From ``kv_budget_bytes`` = 0; SGLang raises "Not enough memory" at or below
    it (``profile_max_num_token``, ``model_runner.py`` / ``pool_configurator.py``, all eras).
    None when P is not positive."""
    if pre_load_bytes <= 0:
        return None
    return 1 - after_weights_bytes / pre_load_bytes


def imbalance_budget_loss_bytes(gap_bytes: int, mfs: float) -> int:
    """What a rank with ``gap`` less free memory costs every rank's KV budget: ``mfs x gap``.

    ``kv_budget_bytes`` takes P and A as minimums over ranks (``get_available_gpu_memory(...,
    distributed=True)``: an all-reduce MIN, ``utils.py``; E2 on, and the imbalance check in
    ``init_torch_distributed``): the tight rank lowers both by the gap, so rest falls by
    ``gap - gap x (1 - mfs)``."""
    return round(mfs * gap_bytes)


# The readings the budget is computed from. Rank/Model records are read duck-typed (no import
# of logmem.model at run time), so the model builder may itself call these rules.


def pre_load_reading(rank: Rank, draft: bool = False) -> WeightsBegin | None:
    """P's reading on one rank: the model's ``Load weight begin`` avail.

    SGLang takes ``pre_model_load_memory`` right after ``Init torch distributed ends``
    (``ModelRunner.init_torch_distributed``, ``model_runner.py``; ``distributed/bootstrap.py``
    newest), before anything of size is allocated, so the next reading printed, ``Load weight
    begin``, is the same free memory (E2-E7; E0/E1 print no init end). A draft worker (EAGLE,
    MTP ...) has its own ModelRunner and its own P."""
    m = rank.draft if draft else rank.target
    return m.weights_begin if m is not None else None


def after_weights_reading(rank: Rank, draft: bool = False) -> WeightsEnd | None:
    """A's reading on one rank: the last ``Load weight end`` printed before the model's pools.

    ``profile_max_num_token`` reads free memory when it sizes the pool
    (``post_model_load_memory``, or a fresh ``get_available_gpu_memory``): after every weight
    loaded by then. Up to about 2026-Q2 the target's whole init (weights, pools, graphs) ran
    before the draft's, so that is the target's own ``Load weight end``; newest SGLang
    (``managers/scheduler.py`` @0003215c, E7) loads the target and the draft weights before
    any pool, so the draft's end is the one the target's pool is sized from (fixture 021:
    46.25, not the target's 47.80, matches the logged pools). A draft's own pool (older
    SGLang) is sized after its own load: its ``Load weight end``."""
    m = rank.draft if draft else rank.target
    if m is None:
        return None
    if draft:
        return m.weights_end
    first_pool = _first_pool_line(rank, m)
    last = m.weights_end
    for other in rank.models:
        we = other.weights_end
        if we is None or (last is not None and _line_key(we) <= _line_key(last)):
            continue
        if first_pool is None or _line_key(we) < first_pool:
            last = we
    return last


def _line_key(e: Any) -> tuple[str, int]:
    return (e.source.path, e.source.line_no)


def _first_pool_line(rank: Rank, m: Model) -> tuple[str, int] | None:
    """Where the model's pool step starts: its first pool line or Memory pool end, else (a
    crash while sizing) the first capture or the summary, whichever the rank printed first."""
    marks = [_line_key(m.pools[0])] if m.pools else []
    if m.pool_end is not None:
        marks.append(_line_key(m.pool_end))
    if not marks:
        marks += [_line_key(g.begin) for g in rank.graphs if g.begin is not None]
        if rank.summary is not None:
            marks.append(_line_key(rank.summary))
    return min(marks) if marks else None


@frozen
class BudgetReadings:
    """P and A of ``kv_budget_bytes`` as a launch printed them: minimums over its ranks."""

    pre_load_bytes: int | None
    pre_load_rank: str | None  # the rank that set P (the "binding" rank)
    after_weights_bytes: int | None
    after_weights_rank: str | None
    ranks_seen: int  # ranks that printed P's reading
    after_weights_ranks_seen: int = 0  # ranks that printed A's reading


def budget_readings(launch: Launch, draft: bool = False) -> BudgetReadings:
    """P and A for one launch: ``min`` over ranks of ``pre_load_reading`` and
    ``after_weights_reading`` (the all-reduce MIN of ``get_available_gpu_memory(...,
    distributed=True)``, ``utils.py``, E2 on; with the rank-0 filter of E3 only TP0 prints)."""
    pre = _min_over(launch.ranks, lambda r: pre_load_reading(r, draft))
    post = _min_over(launch.ranks, lambda r: after_weights_reading(r, draft))
    return BudgetReadings(
        pre[0] if pre else None,
        pre[1] if pre else None,
        post[0] if post else None,
        post[1] if post else None,
        sum(1 for r in launch.ranks if pre_load_reading(r, draft) is not None),
        sum(1 for r in launch.ranks if after_weights_reading(r, draft) is not None),
    )


RULE_INPUTS = ("mem_fraction_static", "free_before_weights", "free_after_weights")
"""The KV rule's inputs (kv_budget_bytes): the flag, P and A; same as kv_budget_bytes, all eras."""


def rule_mfs(args: Mapping[str, Any]) -> float | None:
    """``mem_fraction_static`` as the KV rule can use it (server_args.py: a float flag that
    model_runner.py's rule multiplies P by; all eras): a number in (0, 1], else unknown."""
    return arg_number(args, "mem_fraction_static", 1e-6, 1.0)


def rule_inputs_missing(launch: Launch) -> tuple[str, ...]:
    """Which of RULE_INPUTS the launch's log lacks (a server_args line without the flag, a
    log that starts after Load weight begin or prints no Load weight end reading); same
    readings as budget_readings, all eras."""
    readings = budget_readings(launch)
    have = (
        rule_mfs(launch.args) is not None,
        readings.pre_load_bytes is not None,
        readings.after_weights_bytes is not None,
    )
    return tuple(name for name, ok in zip(RULE_INPUTS, have) if not ok)


def _min_over(ranks: Iterable[Rank], reading: Any) -> tuple[int, str] | None:
    vals = [(e.avail.bytes, r.label) for r in ranks if (e := reading(r)) is not None]
    return min(vals) if vals else None


# --- SGLang's own adjustments of mem_fraction_static: logmem/sglang/adjustments.py ----------


def kv_rule_tolerance_bytes(mfs: float, parts: int, cell_bytes: float | None) -> float:
    """How far the logged pool may sit from ``kv_budget_bytes`` by print rounding alone.

    A and P are printed to +-0.005 GiB (P counts x (1 - mfs)), each printed pool size to
    +-0.005 GiB (``printed_sum_error_bytes``), and ``max_total_num_tokens = rest // cell`` drops
    up to one cell while the buffers hold ``#tokens + page_size`` slots (``profile_max_num_token``
    and ``memory_pool.py``, all eras E0-E7; one page of up to 128 slots is allowed for)."""
    reading = PRINT_RESOLUTION_BYTES * (1 + (1 - mfs))
    return reading + printed_sum_error_bytes(parts) + 129 * (cell_bytes or 0)


# --- the context against the KV pool ---------------------------------------------------------


def context_fits(kv_tokens: int, context_len: int) -> bool:
    """Whether the KV pool holds one request of the full context: ``kv_tokens >= context_len``.

    A running request keeps one KV slot per token of its prompt and output in the token pool
    (``TokenToKVPoolAllocator``, ``mem_cache/memory_pool.py``, later ``mem_cache/allocator.py``;
    ``max_total_num_tokens`` is that pool's size, all eras E0-E7), so a request of ``context_len`` tokens needs that many slots at once."""
    return kv_tokens >= context_len


REQUEST_INPUT_MARGIN = 5
"""``max_req_input_len = max_req_len - 5`` (same source and versions as ``max_request_len``)."""


def max_request_len(context_len: int, kv_tokens: int) -> int:
    """The longest request SGLang serves, prompt plus output: ``max_req_len = min(context_len
    - 1, max_total_num_tokens - 1)`` (``managers/tp_worker.py`` ``TpModelWorker.__init__``,
    read in sglang 0.3.6, 0.4.6, 0.5.2, 0.5.3 and 0.5.9, 2024-11 - 2026-02; 0.5.9 takes
    ``max_token_pool_size``, the smaller of the SWA and full pools of a hybrid SWA model).

    A KV pool smaller than the context does not fail the launch (only ``max_req_len <= 0``
    does: "Memory pool size is too small"): it shortens every request. The scheduler rejects
    a prompt of ``max_req_len - 5`` tokens or more (``managers/utils.py``
    ``validate_input_length``, 400 "Input length ... exceeds the maximum allowed length"; with
    ``--allow-auto-truncate`` the prompt is cut instead) and cuts ``max_new_tokens`` to
    ``max_req_len - prompt - 1`` (``managers/scheduler.py`` ``handle_generate_request``).
    ``/v1/models`` still reports ``max_model_len = context_len`` (``entrypoints/http_server.py``,
    same versions), so a client learns the cap only from the rejections."""
    return min(context_len - 1, kv_tokens - 1)


def full_contexts(kv_tokens: int, context_len: int) -> float:
    """How many requests of the full context the KV pool holds at once (same source as
    ``context_fits``): ``kv_tokens / context_len``."""
    return kv_tokens / context_len


def slots_tokens(max_running_requests: int, context_len: int) -> int:
    """The most KV tokens the running requests can ever hold: ``max_running_requests`` slots of
    ``context_len`` tokens each (the scheduler admits no more requests than
    ``max_running_requests``, ``managers/scheduler.py``, E1-E7)."""
    return max_running_requests * context_len


CONTEXT_LENGTH_KEYS = (
    "max_sequence_length",
    "seq_length",
    "max_seq_len",
    "model_max_length",
    "max_position_embeddings",
)
"""The config keys SGLang reads the model's context length from, first found wins
(``CONTEXT_LENGTH_KEYS``, ``utils/hf_transformers_utils.py`` in 0.5.9, ``hf_transformers_utils.py``
in 0.4.6: the same list)."""


def config_context_length(text_config: Mapping[str, Any]) -> tuple[int, str] | None:
    """The context length SGLang serves when ``--context-length`` is not given, and the key it
    came from: ``get_context_length`` on the text config (``utils/hf_transformers_utils.py``,
    read in 0.4.6 and 0.5.9; ``ModelConfig._derive_context_length``, ``configs/model_config.py``,
    uses it when ``context_length`` is None). The first ``CONTEXT_LENGTH_KEYS`` value, times
    ``rope_scaling["factor"]`` unless the scaling names ``original_max_position_embeddings`` or
    is ``rope_type`` llama3. SGLang falls back to 2048, but it reads a transformers config
    object whose class may default a key the JSON lacks, so a config.json without any of the
    keys gives None (unknown), not 2048."""
    scaling = text_config.get("rope_scaling")
    factor: float = 1
    if isinstance(scaling, Mapping) and scaling:
        f = scaling.get("factor", 1)
        ok = isinstance(f, (int, float)) and not isinstance(f, bool) and 0 < f < 1e6
        factor = f if ok else 1
        if "original_max_position_embeddings" in scaling or scaling.get("rope_type") == "llama3":
            factor = 1
    for key in CONTEXT_LENGTH_KEYS:
        value = text_config.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 1e12:
            return None  # SGLang would take it; a value no server serves is not a length
        n = int(factor * value)
        return (n, key) if n > 0 else None
    return None


MFS_GRID = tuple(i / 1000 for i in range(1, 1001))
"""The mem_fraction_static values logmem tries: (0, 1] in steps of 0.001, as users pass it
(``--mem-fraction-static`` takes a float in (0, 1], ``server_args.py``, all eras)."""


def smallest_mfs_holding(tokens_at: Callable[[float], int], context_len: int) -> float | None:
    """The smallest ``MFS_GRID`` value whose KV pool (``tokens_at(mfs)``, a non-decreasing
    function of mfs) holds one full context by ``context_fits`` (same source and eras); None
    when even 1.0 does not."""
    return next((m for m in MFS_GRID if context_fits(tokens_at(m), context_len)), None)


# --- default mem_fraction_static: the reserve is in logmem/sglang/reserve.py ---------------

DEEPEP_DEFAULT_DISPATCH_TOKENS = 128
"""Default ``SGLANG_DEEPEP_NUM_MAX_DISPATCH_TOKENS_PER_RANK``: the T the DeepEP low-latency
buffer is proportional to (DeepEP ``csrc/config.hpp`` ``get_low_latency_rdma_size_hint``).
SGLang's default read in the released wheels: sglang 0.4.10, srt/layers/moe/ep_moe/
token_dispatcher.py, ``get_int_env_var(..., 128)``; 0.5.5, srt/layers/moe/token_dispatcher/
deepep.py, the same; 0.5.9 - 0.5.23, srt/environ.py, ``EnvInt(128)`` (2025-07 - 2026-10)."""


# --- CUDA graphs: logmem/sglang/graph_rules.py (re-exported above) ---------------------------
