"""The words for the request-to-token table as a lever (logmem.analysis.request_table): what
--context-length and --max-running-requests make of it, and what each frees."""

from __future__ import annotations

from logmem.analysis.request_table import RequestTable, RequestTableShare, TableBounds
from logmem.report.causes import on_gpu
from logmem.report.finding_base import about
from logmem.sglang import rules
from logmem.units import GIB, MIB, format_gib


def _size(n: int) -> str:
    """GiB as the ledger prints it, MiB below what that shows as 0.01."""
    return f"{format_gib(n)} GiB" if n >= GIB // 100 else f"{n / MIB:.2f} MiB"


def _rows(n: int, pad: bool, ctx: int) -> str:
    """2,048 rows x (131,072 + 4) x 4 B; the padding row as '+ 1'."""
    rows = f"({n:,} + 1)" if pad else f"{n:,}"
    return f"{rows} rows x ({ctx:,} + {rules.REQ_TO_TOKEN_EXTRA_COLUMNS}) x 4 B"


def context_table_clause(t: RequestTable | None) -> str:
    """What --context-length at the pool does to the table, for the context-vs-pool sentence."""
    if t is None:
        return "and the request-to-token table (outside the KV budget) shrinks with it"
    at = t.at_context
    if at is None:
        return (
            f"and the request-to-token table ({format_gib(t.bytes)} GiB now, "
            f"{_rows(t.max_running_requests, t.padding_row, t.context_len)}; outside "
            "the KV budget) shrinks with it"
        )
    freed = t.bytes - at.bytes
    # A freed amount below what two decimals of GiB show is said in MiB, all three figures alike.
    fig = _size if freed >= GIB // 100 else (lambda n: f"{n / MIB:.1f} MiB")
    return (
        f"and the request-to-token table, allocated after the KV pool is sized, shrinks from "
        f"{fig(t.bytes)} to {fig(at.bytes)} "
        f"({_rows(at.max_running_requests, at.padding_row, at.context_len)}): "
        f"{fig(freed)} freed, the KV pool unchanged"
    )


def _slots_text(t: RequestTable) -> str:
    """The launch's request slots as the log gives them: passed, or the summary's count (the
    default, with the padding row that release prints)."""
    n = t.max_running_requests
    if t.passed:
        return f"passed here as {n:,}"
    at = f", line {t.printed_at.line_no}" if t.printed_at is not None else ""
    if t.default_slots is not None:
        return (
            f"the default here: {t.default_slots:,}; the summary prints {n:,}{at}, the padding "
            "row included"
        )
    return f"not passed here; the summary prints max_running_requests={n:,}{at}"


def table_share_text(f: RequestTableShare, when: str) -> str:
    t, left = f.table, f.left
    if left.at_floor:
        share = f"with 0.00 GiB read free {when} (the driver's zero)"
    elif t.bytes > left.bytes:
        share = f"more than the {format_gib(left.bytes)} GiB left free {when}"
    else:
        share = f"{t.bytes / left.bytes:.0%} of the {format_gib(left.bytes)} GiB left free {when}"
    slots = _slots_text(t)
    at = t.at_context
    ctx = (
        f" ({format_gib(at.bytes)} GiB at {at.context_len:,}, the pool's tokens)"
        if at is not None
        else ""
    )
    n = "(N + 1)" if t.passed_padding_row else "N"
    keeps = "" if t.speculative else " and leave the KV pool as it is"
    return (
        f"The request-to-token table takes {format_gib(t.bytes)} GiB on {on_gpu(f.rank)} "
        f"({_rows(t.max_running_requests, t.padding_row, t.context_len)}, SGLang's rule), "
        f"{share}; SGLang allocates it after sizing the KV budget, outside it, so two flags free "
        f"its memory{keeps}: --max-running-requests N ({slots}) makes it {n} x "
        f"{_size(t.slot_bytes)} and caps the requests running at once; --context-length C makes "
        f"each row (C + 4) x 4 B{ctx}."
    )


def unsized_table_text(amount: int, where: str, lines: tuple[int, ...], t: TableBounds) -> str:
    """A pool step's unlogged remainder that is most likely the request-to-token table."""
    (r_lo, r_hi), (c_lo, c_hi) = t.rows, t.context
    if t.profiled_tokens is not None:
        bound = (
            f"SGLang's default gives it {r_hi:,} request slots here (sized from the profiled "
            f"tokens before --max-total-tokens clamps them: at least {t.profiled_tokens:,} from "
            f"the KV budget, which put the default at its cap for any context whose table fits), "
            f"so the context is at most about {about(c_lo)} tokens"
        )
    elif r_lo == r_hi:
        bound = f"with {r_lo:,} request slots, the context is at most about {about(c_lo)} tokens"
    else:
        bound = (
            f"with SGLang's default of {r_lo:,} to {r_hi:,} request slots, the context is at "
            f"most about {about(c_hi)} ({r_lo:,} slots) to {about(c_lo)} tokens ({r_hi:,})"
        )
    rows = "(request slots + 1)" if t.padding_row else "request slots"
    shown = ", ".join(str(n) for n in lines)
    if t.offline is not None:
        pin = (
            f"only the model's context length would pin it down (bench_{t.offline} prints no "
            "scheduler summary)"
        )
    else:
        pin = (
            "the scheduler summary line (max_running_requests, context_len) or context_length in "
            "the server_args would pin it down"
        )
    fix = (
        ""
        if t.passed
        else "; --max-running-requests N (at least the batch a run needs) makes it N rows"
    )
    return (
        f"{format_gib(amount)} GiB of {where} is in no printed line (lines {shown}): most likely "
        f"the request-to-token table ({rows} x (context length + "
        f"{rules.REQ_TO_TOKEN_EXTRA_COLUMNS}) x 4 B), which this log does not size; {bound}, "
        "where the table alone would take it all (the step's other unlogged allocations, small "
        f"pools and allocator, share it). {pin[0].upper()}{pin[1:]}{fix}."
    )
