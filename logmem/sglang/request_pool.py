"""SGLang's request pool: the request-to-token table's size, the default slot count, and how a
hybrid Mamba model's state slots cap the running requests. Re-exported by logmem.sglang.rules.

Read in the released wheels: ``srt/model_executor/model_runner.py`` ``init_memory_pool``
(sglang 0.4.6, 0.5.2; from 0.5.9 ``model_runner_kv_cache_mixin.py``) and
``srt/mem_cache/memory_pool.py`` ``ReqToTokenPool`` (same versions).
"""

from __future__ import annotations

from datetime import date

from logmem.sglang.releases import RELEASES

REQ_TO_TOKEN_EXTRA_COLUMNS = 4
"""The request-to-token table's columns beyond the context: ``max_context_len=context_len + 4``
(``model_runner.py`` ``init_memory_pool`` 0.4.6; ``extra_max_context_len = 4`` in 0.5.2 and
``model_runner_kv_cache_mixin.py`` 0.5.9, which add ``speculative_num_draft_tokens`` with
speculative decoding: a few columns more, not counted here); read for 2025-04 - 2026-02."""


def req_to_token_bytes(
    max_running_requests: int, context_len: int, padding_row: bool = True
) -> int:
    """The request-to-token table: ``(max_running_requests + 1) x (context_len + 4) x 4 B``
    with a padding row, ``max_running_requests x (context_len + 4) x 4 B`` without.

    ``ReqToTokenPool`` (``mem_cache/memory_pool.py``) holds one int32 row of ``max_context_len``
    (``REQ_TO_TOKEN_EXTRA_COLUMNS``) per slot, ``torch.zeros((size, max_context_len),
    dtype=torch.int32)``; allocated in ``init_memory_pool`` after the KV budget is sized, so
    outside it, before ``Memory pool end``, and never logged (0.4.6, 0.5.2, 0.5.9 read, 2025-04 - 2026-02). Whether
    the printed max_running_requests counts the padding row depends on the release:
    ``req_to_token_padding_row``."""
    rows = max_running_requests + (1 if padding_row else 0)
    return rows * (context_len + REQ_TO_TOKEN_EXTRA_COLUMNS) * 4


def req_to_token_padding_row(printed: date | None, passed: bool) -> bool:
    """Whether the request-to-token table holds one row more than the printed
    ``max_running_requests`` (the scheduler's ``min(..., req_to_token_pool.size)``), read in the
    released wheels (srt/model_executor/model_runner.py ``init_memory_pool``; from 0.5.9
    model_runner_kv_cache_mixin.py; srt/mem_cache/memory_pool.py ``ReqToTokenPool``):

    * sglang 0.3.6 - 0.4.6.post5 (to 2025-06-09): ``ReqToTokenPool(size=max_num_reqs + 1)``:
      the default prints that size (2049), the padding row included; a passed
      --max-running-requests prints itself, one row less;
    * 0.4.7 - 0.5.10 (2025-06-10 on): ``size=max_num_reqs``, no padding row;
    * 0.5.13 (2026-06-11) - 0.5.23: ``_alloc_size = size + 1``: one row more than printed.

    Undated: True (the larger table). A printed value the token count bounds (``tokens // 2``
    below the pool) understates the rows in every release."""
    if printed is None:
        return True
    if printed < RELEASES["0.4.7"]:
        return passed
    return printed >= RELEASES["0.5.13"]


def default_slots_printed(
    printed: date | None, passed: bool, count: int, tokens: int | None
) -> int | None:
    """SGLang's default request-pool size behind a summary's ``max_running_requests=count``,
    when the log proves it: sglang 0.3.6 - 0.4.6.post5 print ``min(max_total_num_tokens // 2,
    req_to_token_pool.size)`` (srt/managers/tp_worker.py 0.4.3), the pool's size being
    ``max_num_reqs + 1`` (model_runner.py ``init_memory_pool``: 2049 for the default 2048), so
    a count below ``tokens // 2`` within the default's bounds plus one is ``max_num_reqs`` + 1.
    A passed value, another release (none before 0.3.6 read; no padding row printed from
    0.4.7), an undated log or an unknown token count: None (not claimed)."""
    lo, hi = DEFAULT_REQUEST_ROWS
    if passed or printed is None or tokens is None:
        return None
    if not RELEASES["0.3.6"] <= printed < RELEASES["0.4.7"]:
        return None
    if not lo < count <= hi + 1 or count >= tokens // 2:
        return None
    return count - 1


def req_to_token_bytes_for(max_num_reqs: int, context_len: int, printed: date | None) -> int:
    """The table for a request-pool size of ``max_num_reqs`` (a --max-running-requests value or
    SGLang's default): a passed value prints itself, so its rows are
    ``req_to_token_padding_row(printed, passed=True)`` (same sources and eras)."""
    return req_to_token_bytes(max_num_reqs, context_len, req_to_token_padding_row(printed, True))


DEFAULT_REQUEST_ROWS = (2048, 4096)
"""The bounds of SGLang's default request-pool size (``init_memory_pool``, ``model_runner.py``
0.3.6 - 0.5.3 read, 2024-11 - 2025-10; ``model_runner_kv_cache_mixin.py`` 0.5.9). The size is
computed from the profiled token count before ``--max-total-tokens`` clamps it (0.4.6, 0.5.2,
0.5.9 read), so the printed ``#tokens`` does not always give the row count."""


def default_max_running_requests(max_total_tokens: int, context_len: int) -> int:
    """SGLang's default request-pool size: ``min(max(int(tokens / ctx x 512), 2048), 4096)``,
    ``tokens`` the profiled count (``profile_max_num_token``), before ``--max-total-tokens``.

    ``init_memory_pool`` (``model_runner.py`` 0.4.6, 0.5.2; ``model_runner_kv_cache_mixin.py``
    0.5.9), about 2025 on; around 2024 the cap was 5120."""
    lo, hi = DEFAULT_REQUEST_ROWS
    return min(max(int(max_total_tokens / context_len * 512), lo), hi)


def default_rows_at_cap(table_bytes: int, profiled_tokens: int) -> bool:
    """Whether SGLang's default request pool must be at its cap (4,096 rows) for a table of at
    most ``table_bytes``, given at least ``profiled_tokens`` profiled tokens (same source as
    ``default_max_running_requests``): the default is below the cap only for a context above
    ``tokens / 8``, and such a table holds at least 2,048 rows of it, ``tokens x 1,024 B``."""
    lo, hi = DEFAULT_REQUEST_ROWS
    return profiled_tokens * 512 // hi * lo * 4 >= table_bytes


def req_to_token_context(
    table_bytes: int, max_running_requests: int, padding_row: bool = True
) -> int:
    """The context length at which ``req_to_token_bytes`` gives ``table_bytes``: its inverse in
    ``context_len`` (same source and eras)."""
    rows = max_running_requests + (1 if padding_row else 0)
    return round(table_bytes / (rows * 4)) - REQ_TO_TOKEN_EXTRA_COLUMNS


MAMBA_REQUEST_RATIO = 3
"""``MAMBA_CACHE_SIZE_MAX_RUNNING_REQUESTS_RATIO``: Mamba state slots per running request while
the radix cache is on (``model_runner_kv_cache_mixin.py`` 0.5.9, 2026-02, ``init_memory_pool``)."""


def mamba_request_ratio(
    radix_cache: bool | None, extra_buffer: bool | None, speculative: bool | None
) -> int | None:
    """Mamba state slots per running request: ``max_num_reqs = min(max_num_reqs,
    max_mamba_cache_size // ratio)`` (``model_runner_kv_cache_mixin.py`` 0.5.9
    ``init_memory_pool``, 2026-02). ``--disable-radix-cache``: 1; else 3
    (``MAMBA_REQUEST_RATIO``), plus 1 with ``--mamba-scheduler-strategy extra_buffer`` and
    speculative decoding (``MAMBA_CACHE_V2_ADDITIONAL_RATIO_NO_OVERLAP``) or 2 without
    (``..._OVERLAP``). None: a setting it needs is unknown. sglang 0.5.2 capped at the slots
    themselves (ratio 1 whatever the radix cache), so this holds from the ratio's introduction
    (after 0.5.2, before 0.5.9; not dated more closely). With --disable-radix-cache and no
    --max-running-requests, ``handle_max_mamba_cache`` sizes the slots by
    ``--mamba-full-memory-ratio`` as with the radix cache on: the pools do not change."""
    if radix_cache is False:
        return 1
    if radix_cache is None or extra_buffer is None:
        return None
    if not extra_buffer:
        return MAMBA_REQUEST_RATIO
    if speculative is None:
        return None
    return MAMBA_REQUEST_RATIO + (1 if speculative else 2)
