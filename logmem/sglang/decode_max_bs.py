"""SGLang 0.5.22's clamp of a default decode max bs to ``--max-running-requests``.

sglang 0.5.22 - 0.5.23, srt/arg_groups/memory_hook.py ``handle_gpu_memory_settings``: when the
decode graph's max bs was not given (``decode_max_bs_is_default``: no ``--cuda-graph-max-bs-decode``
nor a ``cuda_graph_config`` decode max_bs) and ``--max-running-requests`` is, the GPU-tier default
(8 ... 512) is lowered to ``max_running_requests`` before the list is generated and before the
``max_bs x 2`` MiB reserve of the default mem_fraction_static. 0.5.21 (2026-10-01) and earlier
keep the GPU default (the runner then clamps the list to the request pool anyway, so the sizes
captured are the same; the reserve and an explicit max bs are what differ). The dump prints the
resolved value (``cuda_graph_config.decode.max_bs``), which logmem reads (reserve.decode_max_bs):
this says where it came from.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from logmem.frozen import frozen
from logmem.sglang.reserve import decode_max_bs

CLAMP_RELEASES = "0.5.22 - 0.5.23"
_WITHOUT, _WITH = (2026, 10), (2026, 10)  # 0.5.21 (2026-10-01) / 0.5.22 (2026-10-15)


@frozen
class MaxBsClamped:
    """The dump's decode max bs equals --max-running-requests, with no max bs passed."""

    max_bs: int
    certain: bool  # False: the log's month holds releases without the clamp too (Oct 2026)


def clamped_to_requests(
    args: Mapping[str, Any] | None, month: tuple[int, int] | None
) -> MaxBsClamped | None:
    """The clamp, where the dump shows it may have applied: 0.5.22 on (by the log's month), no
    decode max bs passed (``cuda_graph_max_bs_decode`` unset; a ``--cuda-graph-config`` JSON is
    not told apart from the resolved one, hence "may"), and the resolved decode max bs equal to
    ``max_running_requests``. None otherwise (a month before Oct 2026 or none: no clamp)."""
    if not args or month is None or month < _WITHOUT:
        return None
    if args.get("cuda_graph_max_bs_decode") is not None:
        return None
    if args.get("cuda_graph_bs_decode") is not None:
        return None
    n = args.get("max_running_requests")
    bs = decode_max_bs(args)
    if not isinstance(n, int) or isinstance(n, bool) or bs is None or bs != n:
        return None
    return MaxBsClamped(bs, month > _WITH)
