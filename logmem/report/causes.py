"""The ledger's words: the name and note of every cause and the name of every phase.

Attribution (logmem.analysis.attribution, captures, attribution_pools) records what a cause
or phase is (ledger.What, ledger.PhaseWhat) and the numbers its label needs (ledger.Facts,
ledger.PhaseFacts); every reporter (text, markdown, html, JSON ledger rows, frames, plots,
sentences) words them here, so a reporter can restyle one place.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from logmem.analysis.ledger import (
    Bound,
    CaptureEnd,
    CaptureStart,
    Cause,
    CellOrigin,
    CellSource,
    Facts,
    KVLabel,
    Lazy,
    Phase,
    PhaseFacts,
    PhaseWhat,
    RankLedger,
    Span,
    What,
)
from logmem.sglang import rules
from logmem.sglang.comm import Library
from logmem.units import GIB, format_gib, gib

_FIXED: dict[What, str] = {
    What.AR_SYMMETRIC: "all-reduce symmetric memory",
    What.AR_LOCAL: "all-reduce local buffer",
    What.DRAFT_INIT: "the draft worker's distributed init",
    What.REQ_TABLE: "request-to-token table",
    What.STATIC: "static buffers (before the first bucket)",
    What.REMAINING: "the remaining buckets",
    What.GRAPH_TOTAL: "graph capture (total)",
    What.RELEASED: "released in capture (net)",
    What.ROUNDING: "rounding of printed values",
    What.GIVEN_BACK: "given back: free memory rose (unlogged)",
    What.DRAFT_EMBED_HEAD: "draft embed/lm_head given back",
    What.DRAFT_EMBED: "draft embedding given back",
    What.UNATTRIBUTED: "unattributed",
    What.SMALL_POOLS_AND_WORKSPACES: "unlogged: small pools + workspaces",
    What.WEIGHTS_AND_POOLS: "weights + unlogged pools",
    What.WORKSPACES_BEFORE: "workspaces before it began (unlogged)",
    What.AFTER_CAPTURE_REST: "unlogged: between the capture and the pool (0.5.22 on: sampling warm-up)",
}

# Remainders before a capture: what they are, then "(unlogged)".
_BEFORE_CAPTURE: dict[What, str] = {
    What.ATTENTION_WORKSPACES: "attention workspaces, sampling",
    What.BETWEEN_CAPTURES: "between captures",
}

_KV_LABEL = {
    KVLabel.KV: "KV pool",
    KVLabel.SWA: "SWA KV pool",
    KVLabel.FULL: "full-attention KV pool",
}


def _role(f: Facts | PhaseFacts | None = None) -> str:
    """The model a cause or phase is of: the draft, a second model with no sign of being a
    draft (logmem.model.rank_build.draft_evidence), or the target (no word)."""
    if f is not None and f.draft:
        return "draft "
    return "second model's " if f is not None and f.second else ""


def size_text(size: int | None, tokens: bool, per_req: int | None = None) -> str:
    """A bucket's size in its graph's unit: "num_tokens 8192" for a token-sized graph
    (rules.graph_sized_in_tokens), "bs 8 = 32 tokens" for a verify batch, else "bs 8"."""
    if size is None:
        return "?"
    if per_req is not None and not tokens:
        return f"bs {size} = {size * per_req:,} tokens"  # a verify batch: bs x draft tokens
    return f"num_tokens {size}" if tokens else f"bs {size}"


def verify_label(graph: str, per_req: int | None) -> str:
    """A graph family's label, said to be the target's verify graph where it is one."""
    if per_req is None:
        return graph
    what = "" if "verify" in graph else ": the target's verify graph"
    return f"{graph}{what}, bs x {per_req} draft tokens per bucket"


def span_text(s: Span) -> str:
    """A stretch of buckets: "bucket bs 8", "12 buckets, bs 256 to 8", or only their count."""
    if s.first is not None and s.count == 1:
        return f"bucket {size_text(s.first, s.tokens, s.per_req)}"
    if s.first is not None and s.last is not None:
        return f"{s.count} buckets, {size_text(s.first, s.tokens)} to {s.last}"
    return f"{s.count} bucket{'s' if s.count != 1 else ''}" if s.count > 0 else "buckets"


def _kv_what(f: Facts) -> str:
    return f"KV cache for {f.tokens:,} tokens" if f.tokens else "KV pool"


def _kv_pool(f: Facts) -> str:
    if f.after_capture:
        tok = f", {f.tokens:,} tokens" if f.tokens is not None else ""
        if f.swa_tokens and f.tokens is not None:
            # kv_pool_runtime.py: the full and SWA pools of a sliding-window model, one KV size.
            return (
                f"{_role(f)}KV pools (K+V, {f.tokens:,} full-layer + {f.swa_tokens:,} "
                "sliding-window tokens), backed after capture"
            )
        return f"{_role(f)}KV pool (K+V{tok}), backed after capture"
    if f.unified:
        # unified_memory_pool.py: one byte buffer whose sub-pools share its bytes.
        subs = " + ".join(f.unified)
        tok = ""
        if f.tokens is not None and f.swa_tokens is not None:
            tok = f"; {f.tokens:,} full-layer + {f.swa_tokens:,} sliding-window tokens"
        elif f.tokens is not None:
            tok = f"; {f.tokens:,} full-layer tokens"
        return f"{_role(f)}unified KV pool (one buffer: {subs}{tok})"
    tok = ""
    if f.tokens is not None:
        tok = f"; {f.tokens:,} tokens per summary" if f.summary_tokens else f", {f.tokens:,} tokens"
    return f"{_role(f)}{_KV_LABEL[f.kv_label]} ({'KV' if f.one_buffer else 'K+V'}{tok})"


def _first_buckets(f: Facts) -> str:
    n = f.count or 0
    return f"static buffers + first {n} bucket{'s' if n != 1 else ''} (one reading)"


def _largest(f: Facts) -> str:
    s = f.span
    return f"largest bucket ({size_text(s.first, s.tokens, s.per_req) if s and s.first else 'first bucket'})"


def _ws(f: Facts) -> str:
    return " + workspaces" if f.workspaces else ""


def _lib(f: Facts) -> str:
    return f.library.value if f.library is not None else "NCCL"


def _car(f: Facts) -> bool:
    """Custom all-reduce exists on CUDA and ROCm only, and not where the launch has none
    (TP 1, disabled: analysis.attribution.comms_facts)."""
    return _lib(f) in ("NCCL", "RCCL") and not f.no_custom_ar


_SECOND = "second model's"

# Causes whose words depend on their facts.
_WORDED: dict[What, Callable[[Facts], str]] = {
    # The platform's collective library (NCCL, RCCL on ROCm, HCCL on Ascend): analysis.platform.
    What.COMMS: lambda f: f"{_lib(f)} / gloo" + (" / custom all-reduce" if _car(f) else ""),
    What.OTHER_COMMS: lambda f: f"{_lib(f)} / gloo / other communicators",
    What.DRAFT_POOLS: lambda f: (
        f"unlogged: {_SECOND if f.second else 'draft'} pools not printed{_ws(f)}"
    ),
    What.BEYOND_TABLE: lambda f: f"unlogged: pools{_ws(f)} beyond the request-to-token table",
    What.LIKELY_TABLE: lambda f: (
        f"unlogged: likely the request-to-token table (size not printed){_ws(f)}"
    ),
    What.SMALL_POOLS: lambda f: (
        "unlogged (small pools, allocator, the reserved KV pool's first pages)"
        if f.kv_deferred
        else "unlogged (small pools, allocator)"
    ),
    What.WEIGHTS: lambda f: f"{_role(f)}weights",
    What.KV_POOL: _kv_pool,
    What.MAMBA: lambda f: f"{_role(f)}Mamba state ({f.slots} slots)",
    What.KV_FROM_CELL: lambda f: f"{_kv_what(f)} (no KV line)",
    What.KV_FROM_RULE: lambda f: f"{_kv_what(f)} (rule, no KV line)",
    What.KV_FROM_DROP: lambda f: (
        f"{_kv_what(f)} (no KV line)" + ("" if f.table_known else " + unlogged pools")
    ),
    What.STATIC_AND_FIRST: _first_buckets,
    What.LARGEST: _largest,
    What.OTHER_BUCKETS: lambda f: f"other {f.count} buckets",
    What.BEFORE_STOP: lambda f: f"{span_text(f.span or Span(0))}, before the stop",
    What.SPAN: lambda f: (
        f"{span_text(f.span or Span(0))} to the end line (not a per-bucket cost)"
        if f.to_end
        else span_text(f.span or Span(0))
    ),
}


def cause_name(c: Cause) -> str:
    """What a person reads for the cause (the ledger table's row, a plot's label)."""
    f, w = c.facts, c.what
    if w is What.UNATTRIBUTED and f.after_capture:
        # A post-capture pool's step (attribution_pools.post_capture_causes): free memory rose.
        return "unattributed: KV size also counts the pages backed before capture"
    if w in _FIXED:
        return _FIXED[w]
    if w in _WORDED:
        return _WORDED[w](f)
    # Remainders before a capture (and plain "unlogged"); a step that runs to the capture's
    # first bar also holds its static buffers.
    if w not in _BEFORE_CAPTURE and w is not What.UNLOGGED:
        raise ValueError(f"no words for {w}")  # pragma: no cover - a What left out above
    head = _BEFORE_CAPTURE.get(w, "unlogged")
    if f.static_buffers:
        return f"{head} + its static buffers (unlogged)"
    return f"{head} (unlogged)" if w in _BEFORE_CAPTURE else head


def lazy_text(lazy: tuple[Lazy, ...], ep_size: int | None, library: Library | None = None) -> str:
    """What the first capture of a kind also allocates lazily, or ""."""
    words = {
        Lazy.PEER_BUFFERS: f"{library.value if library else 'NCCL'} peer buffers (at the first "
        "collective)",
        Lazy.DEEPEP: "DeepEP's all-to-all buffer (moe_a2a_backend='deepep')",
        Lazy.EP_ALL_TO_ALL: f"expert-parallel (ep_size={ep_size}) all-to-all buffers",
        Lazy.DP_ATTENTION: "DP-attention gather buffers",
        Lazy.UNNAMED: "ones the log does not name (no server_args says which MoE all-to-all "
        f"backend runs; the rank tags say expert parallelism is on, ep_size={ep_size})",
    }
    if not lazy:
        return ""
    return "includes lazy allocations made on the first capture: " + ", ".join(
        words[x] for x in lazy
    )


_BOUND_NOTE = {
    Bound.AT_LEAST: "at least: free memory reached the 0.00 GiB floor, so the drop may be larger",
    Bound.FLOOR: "unknown: free memory was already at the 0.00 GiB floor, so a further drop "
    "cannot be seen",
    Bound.MASKED: "unknown: the end line's mem usage is negative, the net of the graphs' cost and "
    "a larger release",
}


def bound_note(bound: Bound) -> str:
    """Why a figure is a lower bound or unknown, or "" for a measured one."""
    return _BOUND_NOTE.get(bound, "")


def bounded(n: int | None, bound: Bound, signed: bool = False) -> str:
    """A table cell for a figure and its bound: "0.08", ">=0.08" or "unknown"."""
    if not bound.known:
        return "unknown"
    text = format_gib(n, signed=signed, unknown="-")
    return f">={text}" if bound is Bound.AT_LEAST and n is not None else text


def bounded_words(n: int | None, bound: Bound) -> str:
    """The same in prose: "0.08", "at least 0.08" or "unknown"."""
    if not bound.known:
        return "unknown"
    text = format_gib(n, unknown="-")
    return f"at least {text}" if bound is Bound.AT_LEAST and n is not None else text


def lazy_list(c: Cause) -> str:
    """The lazy allocations a cause's facts name, as a list ("" when none)."""
    return lazy_text(c.facts.lazy, c.facts.ep_size, c.facts.library).partition(": ")[2]


def cause_note(c: Cause) -> str:
    """How the cause's figure was found (a footnote), or ""."""
    why = bound_note(c.bound)
    rest = _cause_note(c)
    return "; ".join(x for x in (why, rest) if x)


def _cause_note(c: Cause) -> str:
    f, w = c.facts, c.what
    g = format_gib
    if w is What.REQ_TABLE:
        rows = f"({f.n_req} + 1)" if f.pad_row else f"{f.n_req}"
        return f"{rows} x ({f.ctx} + {rules.REQ_TO_TOKEN_EXTRA_COLUMNS}) x 4 B"
    if w is What.ROUNDING and f.bound_bytes is not None:
        return f"within +-{f.bound_bytes / GIB:.2f} GiB"
    if w is What.STATIC:
        return "bar renders carry no bucket count: assumed consecutive" if f.assumed else ""
    if w is What.RELEASED:
        net = format_gib(-c.bytes)
        return (
            f"mem usage=-{net} GB: at least {net} GiB was released during the capture (temporaries "
            "freed, or another process); the graphs' own cost is inside this net figure"
        )
    if w in (What.DRAFT_EMBED_HEAD, What.DRAFT_EMBED):
        # rules.draft_share: set_embed_and_head / set_embed end in torch.cuda.empty_cache().
        own = "embed_tokens and lm_head" if w is What.DRAFT_EMBED_HEAD else "embed_tokens"
        call = "set_embed_and_head" if w is What.DRAFT_EMBED_HEAD else "set_embed"
        return (
            f"after the draft's pool, SGLang's {call} frees the draft's own {own} (loaded "
            "with its weights) for the target's and empties the allocator's cache, which also "
            "returns its unused cached blocks; net of what this step allocated"
        )
    if w is What.GRAPH_TOTAL:
        if f.not_bar_rank:
            return "no bucket readings on this rank (only the bar-printing rank has them)"
        return ""
    if w is What.KV_FROM_CELL and f.tokens and f.cell_bytes is not None:
        source = cell_source_text(f.cell_source) if f.cell_source else "another KV line"
        return f"{f.tokens:,} tokens x {f.cell_bytes:,.0f} B per token ({source})"
    if w is What.KV_FROM_RULE and f.mfs is not None:
        rng = f.per_token
        per = f"; {rng[0]:,} to {rng[1]:,} bytes per token (derived)" if rng else ""
        return f"{g(f.after_weights_bytes)} - {g(f.pre_load_bytes)} x (1 - {f.mfs:.4g}){per}"
    if w is What.KV_FROM_DROP and f.tokens:
        x = c.bytes
        unknown = "" if f.table_known else "; includes the request-to-token table, not printed"
        return f"about {g(x)} GiB / {f.tokens:,} = {x / f.tokens:,.0f} bytes per token (derived{unknown})"
    return lazy_text(f.lazy, f.ep_size, f.library)


def phase_name(p: Phase) -> str:
    """What a person reads for the phase."""
    f, w = p.facts, p.what
    role = _role(f)
    if w is PhaseWhat.INIT:
        return "distributed init"
    if w is PhaseWhat.WEIGHTS:
        return f"{role}weights"
    if w is PhaseWhat.WEIGHTS_AND_POOLS:
        if f.committed:
            # --startup-weight-load-mode overlap: the storage is allocated here, the real
            # values are copied in after capture (startup_weight_load.py).
            kv = "; KV pool reserved, backed after capture" if f.kv_deferred else ""
            return (
                f"{role}weights and pools (weight storage here, real weights committed after "
                f"capture{kv})"
            )
        kv = "; KV pool reserved, backed after capture" if f.kv_deferred else ""
        return f"{role}weights and pools (no Load weight end{kv})"
    if w is PhaseWhat.POOLS:
        to = f"no pool end line; to {f.to_kind.replace('_', ' ')}" if f.to_kind else ""
        kv = "KV pool reserved, backed after capture" if f.kv_deferred else ""
        note = "; ".join(x for x in (kv, to) if x)
        name = "other pools" if f.kv_deferred else "KV and other pools"
        return f"{role}{name}" + (f" ({note})" if note else "")
    if w is PhaseWhat.KV_AFTER_CAPTURE:
        return f"{role}KV pool after capture (post-capture KV sizing)"
    if w is PhaseWhat.PRE_CAPTURE:
        return f"before capture {f.graph}" + (" (to its first bar)" if f.first_bar else "")
    if w is PhaseWhat.PRE_WEIGHTS:
        return f"before {role}weights"
    if w is PhaseWhat.WARMUP:
        if f.committed:
            return "after capture (warm-up, weight commit)"
        return "after capture (warm-up)"
    if w is PhaseWhat.TO_SUMMARY:
        return "until the scheduler summary"
    if w is PhaseWhat.GAP:
        return f"{f.from_kind.replace('_', ' ')} -> {f.to_kind.replace('_', ' ')}"
    n = f.verify_per_req
    verify = (
        ""
        if n is None
        else f" (target verify, bs x {n} tokens)"
        if "verify" not in f.graph
        else f" (bs x {n} tokens)"
    )
    return f"capture {f.graph}{verify}{_capture_suffix(f.start, f.end)}"


def _capture_suffix(start: CaptureStart | None, end: CaptureEnd | None) -> str:
    """How far the phase is the capture itself: its name says what the log left out."""
    words = {
        CaptureStart.NO_BEGIN: "no begin line",
        CaptureStart.MID_CAPTURE: "log starts mid-capture",
        CaptureStart.FIRST_BAR: "from its first bar",
        CaptureEnd.STOPPED: "stopped",
        CaptureEnd.LAST_BAR: "to its last bar",
        CaptureEnd.NO_END: "no end line",
    }
    parts = [words[x] for x in (start, end) if x is not None]
    return f" ({'; '.join(parts)})" if parts else ""


def phase_end(p: Phase) -> str:
    """When a phase ended, as a phrase: never 'at the end of before capture'."""
    f = p.facts
    if p.what is PhaseWhat.PRE_CAPTURE:
        if f.first_bar:
            return f"at the {f.graph} capture's first bar"
        return f"when the {f.graph} capture began"
    if p.what is PhaseWhat.PRE_WEIGHTS:
        return f"just {phase_name(p)}"  # "just before draft weights"
    if p.what is PhaseWhat.GAP:
        return f"at the {f.to_kind.replace('_', ' ')} line"
    return f"at the end of {phase_name(p)}"


def ledger_rows(led: RankLedger) -> list[dict[str, Any]]:
    """Flat rows {phase, cause, gib, bytes, kind, lines} for JSON and DataFrames."""
    rows = []
    for p in led.phases:
        for c in p.causes:
            rows.append(
                {
                    "phase": p.key,
                    "phase_name": phase_name(p),
                    "cause": cause_name(c),
                    "gib": gib(c.bytes) if c.bound.known else None,
                    "bytes": c.bytes if c.bound.known else None,
                    "kind": c.kind,
                    "lines": list(c.lines),
                    "note": cause_note(c),
                }
            )
            if c.bound is not Bound.EXACT:
                # Only on bounded rows, so that every other row stays as it was.
                rows[-1]["bound"] = c.bound.value
    return rows


def ledger_note(led: RankLedger) -> str:
    """Why a rank has no ledger, or ""."""
    e = led.empty
    if e is None:
        return ""
    if e.reading is not None:
        kind, amount, line = e.reading
        return (
            f"this rank printed one free-memory reading ({kind.replace('_', ' ')} "
            f"{format_gib(amount)} GiB, line {line}); a ledger needs two"
        )
    tp0 = " (mid-2025 SGLang printed model-runner lines on TP0 only)" if e.tp0_only else ""
    return "this rank printed no free-memory readings" + tp0


def on_gpu(rank: str | None) -> str:
    """A rank as a sentence names it: its label, or "the GPU" when the log tags none."""
    return rank or "the GPU"


def cell_source_text(s: CellSource) -> str:
    """Where a pool step with no KV line got its bytes per token."""
    rank = on_gpu(s.rank)
    if s.origin is CellOrigin.LAUNCH:
        where = f"line {s.line}" + (f" of {s.file}" if s.file else "")
        return (
            f"launch {s.launch}'s KV line, {rank} {where}: {format_gib(s.total_bytes)} GiB for "
            f"{s.tokens or 0:,} tokens; same model and KV settings"
        )
    if s.origin is CellOrigin.CONFIG:
        return (
            f"--model-config {s.model or 'config.json'}: its attention layers' KV per token "
            f"for this launch's layout, {s.kv_dtype} KV, attention TP {s.attn_tp}"
        )
    return f"{rank}'s KV line, line {s.line}"
