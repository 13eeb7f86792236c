"""Sentences: the English for the analysis stage's typed findings and graph-reserve terms.

One function per record type, the same words in every format (text, Markdown, HTML, JSON);
the numbers are rendered the way SGLang prints them (GiB, two decimals).
"""

from __future__ import annotations

import logmem.analysis.findings as fd
from logmem.analysis.failures.budget import fmt_mfs
from logmem.analysis.ledger import Bound, Lazy
from logmem.analysis.platform import math_library
from logmem.analysis.sizing import Sizing
from logmem.report import budget_words as budget_words  # registers PoolsVsBudget's words
from logmem.report import capture_sentences as capture_sentences  # registers its findings' words
from logmem.report import draft_words as draft_words  # registers its findings' words
from logmem.report import exhausted_words as exhausted_words  # registers Exhausted's words
from logmem.report import imbalance_words as imbalance_words  # registers Imbalance's words
from logmem.report import kv_logged_words as kv_logged_words  # registers KVPoolsLogged's words
from logmem.report import order_sentences as order_sentences  # registers its findings' words
from logmem.report import post_capture_words as post_capture_words  # registers its words
from logmem.report import uninitialized as uninitialized  # registers its finding's words
from logmem.report.budget_words import adjustment_text, lines_text
from logmem.report.capture_sentences import unified_clause
from logmem.report.causes import (
    bounded_words,
    cause_name,
    cell_source_text,
    phase_end,
    phase_name,
)
from logmem.report.causes import on_gpu as _on
from logmem.report.comm_sentences import custom_ar_off_words
from logmem.report.context_words import context_text
from logmem.report.finding_base import finding_text as finding_text
from logmem.report.finding_base import g as _g
from logmem.report.finding_base import graphs_name as graphs_name
from logmem.report.formula import kv_rule_text
from logmem.report.mamba_words import mamba_slots_text
from logmem.report.released_words import weights_release_text
from logmem.report.request_table_words import table_share_text, unsized_table_text
from logmem.sglang import rules


@finding_text.register
def _(f: fd.Weights) -> str:
    # A later release may be a temporary the load held: the drop is then the step's, not the
    # weights' own size.
    lead = (
        f"The weight step took {_g(f.bytes)} GiB per rank on {_on(f.rank)} ({f.model_type})"
        if f.released is not None
        else f"Weights take {_g(f.bytes)} GiB per rank on {_on(f.rank)} ({f.model_type})"
    )
    tail = weights_release_text(f.released) if f.released is not None else ""
    if f.cpu_offload_gb:
        # cpu_offload_gb caps what each rank offloads (GiB: SGLang multiplies by 1024**3); the
        # log does not say how much was offloaded, only what stayed on the GPU.
        return (
            f"{lead}; up to "
            f"{f.cpu_offload_gb:g} GiB of each rank's weights may live in CPU memory "
            f"(cpu_offload_gb={f.cpu_offload_gb:g}), so {_g(f.bytes)} GiB is what stayed on the "
            f"GPU, not the model's share per rank.{tail}"
        )
    return f"{lead}.{tail}"


def _per_token(sz: Sizing) -> str:
    """The full pool's bytes per token: the range print rounding allows, and the round cell."""
    if sz.exact_cell is not None:
        cell, line = sz.exact_cell
        return f"{cell:,} bytes per token (the full sub-pool's entry_bytes, line {line})"
    rng = sz.bytes_per_token_range
    if rng is None:
        return f"about {sz.bytes_per_token:,.0f} bytes per token" if sz.bytes_per_token else ""
    lo, hi = rng
    likely = f", likely {sz.likely_bytes_per_token:,}" if sz.likely_bytes_per_token else ""
    elems, size = sz.likely_elements_per_token, sz.kv_element_bytes
    if likely and elems and size and sz.kv_dtype:
        per = "1 byte" if size == 1 else f"{size:g} bytes"
        likely += f", i.e. {elems:,.0f} {sz.kv_dtype.removeprefix('torch.')} elements of {per}"
    span = f"{lo:,} bytes" if lo == hi else f"{lo:,} to {hi:,} bytes"
    return f"{span} per token by print rounding{likely}"


@finding_text.register
def _(f: fd.KVBudget) -> str:
    sz = f.sizing
    tok = f" for {sz.kv_tokens:,} tokens" if sz.kv_tokens else ""
    per = _per_token(sz)
    logged = ""
    if sz.logged_pool_bytes and not sz.pools:
        logged = f"; the pools logged {_g(sz.logged_pool_bytes)} GiB{tok}" + (
            f" ({per})" if per else ""
        )
    elif sz.logged_pool_bytes:
        each = ", ".join(
            f"{lab} {_g(b)} GiB" + (f" for {tk:,} tokens" if tk else "") for lab, b, tk in sz.pools
        )
        full = sz.pools[-1][0]
        logged = f"; the pools logged {_g(sz.logged_pool_bytes)} GiB ({each})" + (
            f"; the {full} pool takes {per}" if per else ""
        )
    elif sz.rule_tokens and per:
        logged = (
            f"; no KV line: {sz.rule_tokens:,} tokens (max_total_num_tokens) in that budget "
            f"give {per}"
        )
    budget = sz.budget_bytes_per_token
    if budget and sz.full_cell_bytes and budget > sz.full_cell_bytes + 0.5:
        others = (
            "the Mamba state's"
            if not sz.pools
            else "the SWA pool's"
            if sz.pools[0][0] == "SWA"
            else "the other pools'"
        )
        logged += f"; with {others} share a token costs {budget:,.0f} bytes of the budget"
    mfs = f"{sz.mem_fraction_static:g}" + "".join(f" x {a.factor:g}" for a in sz.adjustments)
    why = "".join(
        f"; SGLang scales mem_fraction_static {adjustment_text(a)} after printing server_args"
        for a in sz.adjustments
    )
    if sz.mfs_lines is not None:  # no server_args: the flag as the echoed command passed it
        why += (
            f"; mem_fraction_static from the echoed command line ({lines_text(sz.mfs_lines)}), "
            "as the log prints no server_args"
        )
    return (
        f"KV budget by SGLang's rule: "
        f"{kv_rule_text(sz.after_weights_bytes, sz.pre_load_bytes, mfs, sz.rest_bytes)}{logged}{why}."
    )


@finding_text.register
def _(f: fd.KVLoggedAvailable) -> str:
    return (
        f"SGLang logged {_g(f.avail_bytes)} GiB available for the KV cache (line {f.line}); "
        f"the rule above gives {_g(f.rest_bytes)}."
    )


@finding_text.register
def _(f: fd.BudgetNotPositive) -> str:
    head = f"The KV budget is not positive at mem_fraction_static {fmt_mfs(f.mfs)}"
    if f.pool_from_mfs is None:
        return (
            f"{head}, and no value below 1 makes it positive: put fewer weights on each GPU "
            "(more GPUs or a larger TP, a smaller quantization, --cpu-offload-gb)."
        )
    return (
        f"{head}: it turns positive from --mem-fraction-static {fmt_mfs(f.pool_from_mfs)} "
        f"(each 0.01 above adds {_g(f.step_bytes)} GiB), or with fewer weights on each GPU."
    )


@finding_text.register
def _(f: fd.PoolStep) -> str:
    floor = " (free memory reached the 0.00 GiB floor, so the drop may be larger)"
    text = f"The pool step drops {_step(f, f' on {_on(f.rank)}')}"
    text += floor if f.bound is Bound.AT_LEAST else ""
    d = f.draft
    if d is not None:
        text += (
            f"; the draft model's own pool step (lines {d.lines[0]}-{d.lines[1]}) drops {_step(d)}"
        )
        text += floor if d.bound is Bound.AT_LEAST else ""
    return text + "."


def _step(f: fd.PoolStep, where: str = "") -> str:
    parts = ", ".join(f"{cause_name(c)} {bounded_words(c.bytes, c.bound)}" for c in f.causes)
    return f"{bounded_words(f.drop_bytes, f.bound)} GiB{where}: {parts}"


@finding_text.register
def _(f: fd.KVSourcesDisagree) -> str:
    room = "its drop minus the request-to-token table" if f.table_known else "its drop"
    return (
        f"The pool step on {_on(f.rank)} printed no KV line, and {f.tokens:,} tokens at "
        f"{f.cell_bytes:,.0f} bytes per token (from {cell_source_text(f.cell_source)}) take {_g(f.kv_bytes)} GiB, "
        f"more than the {_g(f.room_bytes)} GiB of the step ({room}): the sources disagree (a "
        "different model, dtype or parallel layout than they seem), so the KV cache is shown as "
        "derived from the step."
    )


@finding_text.register
def _(f: fd.Workspaces) -> str:
    return (
        f"{_g(f.bytes)} GiB went to unlogged attention-backend workspaces between "
        f"Memory pool end and the first capture on {_on(f.rank)}."
    )


def left_when(f: fd.LeftFree) -> str:
    """When the reading of what is left was taken, as the LeftFree sentence says it."""
    return {
        fd.LeftWhen.AFTER_CAPTURE: "after capture",
        fd.LeftWhen.PHASE_END: phase_end(f.phase),
        fd.LeftWhen.SUMMARY: "at the scheduler summary",
        fd.LeftWhen.LOG_STOPS: f"when the log stops (in capture {f.phase.facts.graph})",
    }[f.when]


@finding_text.register
def _(f: fd.LeftFree) -> str:
    when = left_when(f)
    if f.end is fd.StartupEnd.CRASHED:
        # Not headroom: start-up never got past this reading.
        when = f"during capture {f.phase.facts.graph}" if f.when is fd.LeftWhen.LOG_STOPS else when
        if f.crashed is not None:
            # The failing rank is another: its own last reading is where the crash stood.
            label, left, line = f.crashed
            return (
                f"{_g(f.bytes)} GiB was free on {_on(f.rank)} {when}, its last reading before "
                f"{label} crashed (start-up did not finish); {label} last read {_g(left)} GiB "
                f"free (line {line})."
            )
        return (
            f"{_g(f.bytes)} GiB was free on {_on(f.rank)} {when}, the last reading SGLang printed "
            "before the crash (start-up did not finish)."
        )
    if f.end is fd.StartupEnd.STOPPED:
        if f.when is fd.LeftWhen.LOG_STOPS:
            return f"{_g(f.bytes)} GiB is free on {_on(f.rank)} {when}, before start-up finished."
        if f.pools_after is not None:
            # The rank allocated a pool after it: the reading is not what it had at the end.
            size, line = f.pools_after
            return (
                f"{_g(f.bytes)} GiB was free on {_on(f.rank)} {when}, before its KV pool "
                f"({_g(size)} GiB, line {line}); the log stops before the next reading "
                "(start-up had not finished)."
            )
        return (
            f"{_g(f.bytes)} GiB was free on {_on(f.rank)} {when}, the last reading before the "
            "log stops (start-up had not finished)."
        )
    served = (
        f"the log shows the scheduler serving a batch after start-up (line {f.served_line})"
        if f.served_line is not None
        else ""
    )
    if f.at_floor:
        # The driver reports no free memory below 0 (rules.at_floor): unknown headroom, not zero.
        tail = f"; {served}" if served else ": the first requests may run out of memory"
        return (
            f"Free memory on {_on(f.rank)} reads 0.00 GiB {when}: the driver reports no free memory "
            f"below zero (SGLang keeps no floor of its own), so the headroom is unknown{tail}."
        )
    if f.tight:
        tight = (
            f" — very little, although {served}"
            if served
            else " — very little: the first requests may run out of memory"
        )
        return f"{_g(f.bytes)} GiB is left free on {_on(f.rank)} {when}{tight}."
    if f.unmeasured_after:
        return (
            f"{_g(f.bytes)} GiB is left free on {_on(f.rank)} {when}, before graph capture; the "
            "capture printed no memory, so the headroom the server ends with is lower by an "
            "unknown amount."
        )
    return f"{_g(f.bytes)} GiB is left free on {_on(f.rank)} {when}."


def _at_bucket(f: fd.BottomedOut) -> str:
    """Where in a capture the low point is: a bucket's reading, not the capture's end line."""
    b = f.bucket
    if b is None or b.size is None:
        return ", a bar reading" if b is not None else ""
    tokens = f.phase.graph is not None and rules.graph_sized_in_tokens(f.phase.graph.name)
    return f", the bar at {'num_tokens' if tokens else 'bs'} {b.size}"


@finding_text.register
def _(f: fd.BottomedOut) -> str:
    at = f"line {f.line}, {phase_name(f.phase)}{_at_bucket(f)}"
    u = f.unsampled
    if f.unified_line is not None:
        # System RAM (UnifiedMemory): the OS, its page cache and other processes move it both
        # ways, so its least reading bounds nothing an allocation must fit in.
        inside = (
            f" (inside {phase_name(u)}, which the log does not sample, it may have read lower)"
            if u is not None
            else ""
        )
        return (
            f"The lowest reading was {_g(f.bytes)} GiB ({at}), before it rose to "
            f"{_g(f.last_bytes)} GiB{inside}. nvidia-smi gave no memory total (line "
            f"{f.unified_line}): on a unified-memory device such as GB10 these readings are the "
            "system's available RAM, which the OS, its page cache and other processes move both "
            "ways, so the lowest one is not a fixed limit an extra allocation would have to fit in."
        )
    if u is not None:
        # No readings inside the capture: free memory there may have gone lower (graphs, and a
        # release that came only later), so this is the least reading, not the least point.
        bars = "only one bar reading" if u.buckets else "no bar readings"
        return (
            f"The lowest reading of free memory is {_g(f.bytes)} GiB ({at}), before it rose to "
            f"{_g(f.last_bytes)} GiB. Inside {phase_name(u)}, which the log does not sample "
            f"({bars}), it may have been lower: what an extra allocation there would have to "
            f"fit in is at most {_g(f.bytes)} GiB."
        )
    return (
        f"Free memory bottomed out at {_g(f.bytes)} GiB ({at}) "
        f"before rising to {_g(f.last_bytes)} GiB: the lowest point is what an extra "
        "allocation there would have to fit in."
    )


@finding_text.register
def _(f: fd.RequestTableShare) -> str:
    return table_share_text(f, left_when(f.left))


@finding_text.register
def _(f: fd.MambaSlotsLimit) -> str:
    return mamba_slots_text(f)


@finding_text.register
def _(f: fd.UnifiedMemory) -> str:
    return (
        f"nvidia-smi gave SGLang no memory total (line {f.line}), as on a unified-memory device "
        "such as GB10 or on a MIG slice; on a unified-memory device every 'free' figure below is "
        "the system's available RAM, shared with the OS, its page cache and other processes."
    )


_SNAPSHOT = "a torch memory snapshot taken during start-up (logmem snapshot)"


def _smi(device: str) -> str:
    """The device's own process/memory monitor."""
    return {"npu": "npu-smi", "rocm": "rocm-smi", "musa": "mthreads-gmi"}.get(device, "nvidia-smi")


@finding_text.register
def _(f: fd.Unexplained) -> str:
    where = f"the step '{phase_name(f.phase)}' on {_on(f.rank)}"
    if f.likely is fd.LikelyCause.GIVEN_BACK:
        return (
            f"In {where}, free memory rose by {_g(-f.bytes)} GiB beyond what its causes explain: "
            "memory was given back (temporaries freed"
            f"{unified_clause(f.device, '', 'or', 'another process on the GPU releasing memory')}), "
            "not taken; "
            f"{_smi(f.device)} or {_SNAPSHOT} would show what was released."
        )
    if f.likely is fd.LikelyCause.REQUEST_TABLE and f.table is not None:
        return unsized_table_text(f.bytes, where, f.lines, f.table)
    if f.likely is fd.LikelyCause.BEYOND_TABLE:
        return (
            f"{_g(f.bytes)} GiB of {where} is neither a printed pool nor the request-to-token "
            "table: possibly another process on the GPU (free memory is device-wide), or a "
            f"buffer this SGLang version allocates with the pools without a line; {_smi(f.device)} "
            f"during start-up or {_SNAPSHOT} would pin it down."
        )
    return (
        f"{_g(f.bytes)} GiB went in {where} with no line printing it (workspaces, "
        f"communicators, lazily created buffers); {_SNAPSHOT} would pin it down."
    )


@finding_text.register
def _(f: fd.Reserve) -> str:
    return (
        f"SGLang's default-mem_fraction_static heuristic (late 2025 on) would reserve "
        f"{_g(f.reserve_bytes)} GiB for these graphs; the captures used "
        f"{_g(f.measured_bytes)} GiB on {_on(f.rank)}."
    )


@finding_text.register
def _(f: fd.Reuse) -> str:
    names = {
        Lazy.PEER_BUFFERS: f"{f.library.value if f.library else 'NCCL'} peer buffers",
        Lazy.DEEPEP: "DeepEP",
        Lazy.EP_ALL_TO_ALL: "EP all-to-all",
        Lazy.DP_ATTENTION: "DP-attention gather buffers",
        Lazy.UNNAMED: "unnamed expert-parallel buffers",
    }
    listed = [names[x] for x in f.lazy]
    lazy = f" ({', '.join([*listed, f'{math_library(f.library)} workspaces'])})" if f.lazy else ""
    parts = ", ".join(
        f"{r.graph} {_g(r.largest_bytes)} GiB against {_g(r.first_largest_bytes)} for {r.first_graph}"
        for r in f.graphs
    )
    return (
        f"Later captures have small largest buckets ({parts}): the buffers allocated lazily on the "
        f"first capture{lazy} are reused."
    )


@finding_text.register
def _(f: fd.RankGraphSpread) -> str:
    return (
        f"{f.rank} used {_g(f.bytes)} GiB for capture {f.graph}, {f.share:.0%} "
        f"{'more' if f.more else 'less'} than {f.main_rank or 'the main rank'}."
    )


@finding_text.register
def _(f: fd.ContextVsPool) -> str:
    return context_text(f)


def reserve_term_text(t: rules.Reserve) -> str:
    """One term of SGLang's graph reserve, the way server_args.py computes it."""
    if t.term is rules.ReserveTerm.DECODE:
        return f"decode graph: max_bs {t.max_bs} x {rules.DECODE_GRAPH_MIB_PER_BS:g} MB"
    if t.term is rules.ReserveTerm.DP_ATTENTION:
        return (
            f"DP attention: {t.max_bs} x dp {t.dp_size} x {rules.DP_ATTENTION_MIB_PER_BS_DP:g} MB"
        )
    if t.term is rules.ReserveTerm.DP_ATTENTION_LARGE_BS:
        return (
            f"DP attention, max_bs > {rules.DP_ATTENTION_LARGE_BS}: {t.max_bs} x {t.dp_size} x "
            f"{rules.DP_ATTENTION_LARGE_BS_MIB:g} MB"
        )
    if t.term is rules.ReserveTerm.PIECEWISE:
        return f"piecewise graph: {t.sizes} sizes x {rules.PIECEWISE_MIB_PER_SIZE} MB"
    if t.term is rules.ReserveTerm.PIECEWISE_MAX_TOKENS:
        return f"piecewise graph: max tokens {t.max_tokens} // {t.divisor} MB"
    if t.term is rules.ReserveTerm.PREFILL:
        return f"prefill graph: {t.sizes} sizes x {rules.PIECEWISE_MIB_PER_SIZE} MB"
    if t.term is rules.ReserveTerm.MLA_PREFILL:
        return f"prefill graph, MLA model: a flat {rules.MLA_PREFILL_GRAPH_MIB} MB"
    if t.term is rules.ReserveTerm.BREAKABLE_DEEPEP:
        return f"breakable prefill graph with DeepEP: {rules.BREAKABLE_DEEPEP_MIB} MB"
    return f"DeepEP all-to-all: {rules.DEEPEP_A2A_RESERVE_MIB} MB"


@finding_text.register
def _(f: fd.CustomAllReduceOff) -> str:
    lines = ", ".join(str(n) for n in f.lines[:4]) + (" ..." if len(f.lines) > 4 else "")
    who = f" on {', '.join(f.ranks)}" if 1 < len(f.ranks) <= 4 else ""
    return (
        f"{custom_ar_off_words(f.state, f.text)} (line{'s' if len(f.lines) > 1 else ''} "
        f"{lines}{who}): "
        f"the TP group all-reduces through {f.library} alone, so this ledger holds no custom "
        "all-reduce buffers; with no server_args dump the log gives no communication table."
    )
