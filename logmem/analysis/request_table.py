"""The request-to-token table as a lever: what --context-length and --max-running-requests make
of it, and a finding when it is a sizeable share of what the start-up leaves free.

The table (rules.req_to_token_bytes) is allocated after the KV budget is sized, outside it, so
either flag frees its memory without changing the KV pool while SGLang's default slot count
stays where it is (rules.default_max_running_requests). Figures come from the scheduler summary
or server_args (analysis.sizing.req_to_token) and SGLang's rules on them; none is invented.
"""

from __future__ import annotations

from typing import ClassVar

from logmem.analysis.findings_kinds import FindingKind
from logmem.analysis.findings_left import LeftFree
from logmem.analysis.sizing import req_to_token, req_to_token_padded, sizing
from logmem.frozen import frozen
from logmem.model.records import Launch
from logmem.parse.lines import Source
from logmem.sglang import rules
from logmem.sglang.eras import printed_on
from logmem.sglang.spec_draft import speculative_algorithm
from logmem.units import GIB

# A table this share of the headroom left is a lever worth naming: freeing it gives the first
# requests' activations a tenth more room or better (008: 1.00 of 8.34 GiB; 038: 0.43 of 2.67).
_SIZEABLE_SHARE = 0.10
# Below this the table is no lever, whatever is left (it prints as 0.05 GiB or less).
_SIZEABLE_MIN_BYTES = GIB // 20


@frozen
class TableAt:
    """The table at another setting: its request slots (as SGLang sizes them) and bytes."""

    max_running_requests: int
    context_len: int
    bytes: int
    padding_row: bool  # one row more than max_running_requests (rules.req_to_token_padding_row)


@frozen
class RequestTable:
    """The launch's request-to-token table, and what it becomes at --context-length ``to``."""

    max_running_requests: int  # as printed (summary) or passed
    context_len: int
    bytes: int
    padding_row: bool  # the table holds one row more (rules.req_to_token_padding_row)
    passed: bool  # --max-running-requests was given
    # A --max-running-requests N gets a row more (the release's padding row for a pool size).
    passed_padding_row: bool = True
    # Speculative decoding sizes the shared KV pool with the request count (model_runner.py
    # draft_runner_cache_size, 0.4.6 - 0.5.2): then --max-running-requests moves the pool too.
    speculative: bool = False
    # At --context-length kv_tokens (the context exceeds the pool): None when the context fits,
    # or SGLang's slot count there is unknown (a --max-total-tokens cap hides the profiled
    # tokens the default is sized from).
    at_context: TableAt | None = None
    # The scheduler summary line the count was read from (None: server_args gave it), and the
    # default slot count it stands for when it prints the padding row too (0.3.6 - 0.4.6:
    # 2,049 for 2,048; rules.default_slots_printed).
    printed_at: Source | None = None
    default_slots: int | None = None

    @property
    def slot_bytes(self) -> int:
        """One request slot's row: (context_len + 4) x 4 B."""
        return rules.req_to_token_bytes(1, self.context_len, False)

    @property
    def rows(self) -> int:
        return self.max_running_requests + (1 if self.padding_row else 0)


@frozen
class RequestTableShare:
    """The table is a sizeable share of what is left free at the end of the main rank's ledger:
    both flags that shrink it, with what each frees."""

    kind: ClassVar[FindingKind] = FindingKind.REQUEST_TABLE_SHARE
    rank: str
    table: RequestTable
    left: LeftFree  # what is left free (its reading, when and line)


def request_table(launch: Launch, kv_tokens: int | None) -> RequestTable | None:
    """The table as the log sizes it (None: rows or context not logged), with its size at
    --context-length ``kv_tokens`` when the context exceeds that pool."""
    got = req_to_token(launch)
    if got is None:
        return None
    n, ctx, size = got
    pad = req_to_token_padded(launch)
    passed = isinstance(launch.args.get("max_running_requests"), int)
    at = None
    if kv_tokens and kv_tokens < ctx:
        at = _at_context(launch, n, ctx, kv_tokens, passed)
    passed_pad = rules.req_to_token_padding_row(printed_on(launch), True)
    spec = speculative_algorithm(launch.args) is not None
    s = launch.summary
    from_summary = s is not None and s.get_int("max_running_requests") == n
    tokens = s.max_total_num_tokens if s is not None else None
    default = rules.default_slots_printed(printed_on(launch), passed, n, tokens)
    src = s.source if from_summary and s is not None else None
    return RequestTable(n, ctx, size, pad, passed, passed_pad, spec, at, src, default)


def _at_context(launch: Launch, n: int, ctx: int, to: int, passed: bool) -> TableAt | None:
    """The table at --context-length ``to``: a passed slot count stays; SGLang's default is
    sized again from the profiled tokens (the printed pool's, unless --max-total-tokens caps it:
    then unknown), so it may rise towards its cap as the context falls."""
    printed = printed_on(launch)
    if passed:
        pad = req_to_token_padded(launch)
        return TableAt(n, to, rules.req_to_token_bytes(n, to, pad), pad)
    lo, hi = rules.DEFAULT_REQUEST_ROWS
    s = launch.summary
    tokens = s.max_total_num_tokens if s is not None else None
    mtt = launch.args.get("max_total_tokens")
    # The printed count must be the default (not a Mamba or token-count bound) for the rule to
    # say what it becomes; the padding row of sglang 0.3.6 - 0.4.6 prints as one more slot.
    if not tokens or isinstance(mtt, int) or not lo <= n <= hi + 1:
        return None
    m = rules.default_max_running_requests(tokens, to)
    pad = rules.req_to_token_padding_row(printed, True)  # a pool size, not a printed count
    return TableAt(m, to, rules.req_to_token_bytes(m, to, pad), pad)


def request_table_share(
    table: RequestTable | None, left: LeftFree | None
) -> RequestTableShare | None:
    """The finding when the table is at least a tenth of what a launch that came up has left
    (and more than a rounding figure)."""
    if table is None or left is None or not left.serving:
        return None
    if table.bytes < _SIZEABLE_MIN_BYTES or table.bytes < _SIZEABLE_SHARE * max(left.bytes, 0):
        return None
    return RequestTableShare(left.rank, table, left)


@frozen
class TableBounds:
    """What SGLang's request-to-token table would need to be the unexplained amount of a pool
    step that does not size it."""

    rows: tuple[int, int]  # request slots: the flag's value, or SGLang's default bounds
    # The context lengths at which the table alone would be the whole remainder: upper bounds,
    # since the step's other unlogged allocations (small pools, allocator) share the remainder.
    context: tuple[int, int]
    padding_row: bool = True  # the table holds one row more (rules.req_to_token_padding_row)
    # The default's rows pinned to its cap by the KV budget (rules.default_rows_at_cap): at
    # least this many profiled tokens (the budget over the largest cell the KV line allows).
    profiled_tokens: int | None = None
    offline: str | None = None  # the offline tool (bench_one_batch ...): no scheduler summary
    passed: bool = False  # --max-running-requests was given


def table_bounds(amount: int, launch: Launch) -> TableBounds:
    """The request slots SGLang gave the table (the flag, else its default bounds, or its cap
    when the KV budget pins it) and the context lengths at which such a table is ``amount``."""
    # Imported here: analysis.failures imports findings_sizing, which imports this module.
    from logmem.analysis.failures.traces import offline_tool

    n = launch.args.get("max_running_requests")
    passed = isinstance(n, int) and n > 0
    rows = (n, n) if isinstance(n, int) and n > 0 else rules.DEFAULT_REQUEST_ROWS
    pad = rules.req_to_token_padding_row(printed_on(launch), passed)
    profiled = None if passed else _profiled_tokens_min(launch)
    if profiled is not None and rules.default_rows_at_cap(amount, profiled):
        cap = rules.DEFAULT_REQUEST_ROWS[1]
        rows = (cap, cap)
    else:
        profiled = None
    ctx = (
        rules.req_to_token_context(amount, rows[1], pad),
        rules.req_to_token_context(amount, rows[0], pad),
    )
    return TableBounds(rows, ctx, pad, profiled, offline_tool(launch), passed)


def _profiled_tokens_min(launch: Launch) -> int | None:
    """The fewest tokens SGLang can have profiled before --max-total-tokens clamped them: the KV
    budget over the largest cell its one KV line allows (None: no budget, or pools of another
    kind, whose profiled count follows other rules)."""
    sz = sizing(launch)
    if sz is None or sz.mamba_bytes or len(sz.pools) > 1 or sz.post_capture is not None:
        return None
    if speculative_algorithm(launch.args) is not None:
        return None
    rng = sz.bytes_per_token_range
    if rng is None or rng[1] <= 0 or sz.rest_bytes <= 0:
        return None
    return sz.rest_bytes // rng[1]
