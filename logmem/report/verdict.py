"""The verdict in words: the headline, why, and each fix with its price (from failures' facts).

Every figure a sentence quotes is a field of the facts; the arithmetic shown is the one the
failures stage did, so a person can check it against the log.
"""

from __future__ import annotations

from collections.abc import Sequence

import regex

import logmem.analysis.failures.facts as fx
from logmem.analysis.failures.budget import fmt_mfs
from logmem.analysis.failures.records import (
    CaptureError,
    CommBufferError,
    CutTraceback,
    ErrorRecord,
    KVSizing,
    OtherRanksUnfinished,
    OutOfMemory,
    PythonError,
    Unbalanced,
    message_of,
)
from logmem.analysis.failures.traces import NoiseKind, UpBy
from logmem.parse.events import SchedulerException
from logmem.report.death_words import death_text
from logmem.report.safe_text import short
from logmem.report.uninitialized import caveat_text
from logmem.sglang import rules

# --- the headline --------------------------------------------------------------------------------


# Offline tools without a scheduler process: their "serving" is the benchmark itself.
_NO_SCHEDULER = ("one_batch", "latency")


def phase_text(
    phase: str | None, size: int | None = None, unit: str = "bs", offline: str | None = None
) -> str:
    """A phase as a phrase for a sentence: 'while capturing the decode graph at bs 256'."""
    if phase == "serving" and offline is not None:
        if offline in _NO_SCHEDULER:
            return f"after start-up, during the bench_{offline} run"
        return f"after the scheduler started, during the bench_{offline} run"
    if phase is None:
        return "at an unknown point of start-up"
    if phase == "post-capture KV sizing":
        return "after the CUDA graphs, while SGLang sized and backed the KV pool (post-capture KV sizing)"
    if phase == "after post-capture KV sizing":
        return (
            "after SGLang backed the KV pool (post-capture KV sizing), before the scheduler started"
        )
    if phase.startswith("after capture "):
        return f"after the {phase.removeprefix('after capture ')} graph capture"
    if phase.startswith("capture "):
        where = f" at {unit} {size}" if size is not None else ""
        return f"while capturing the {phase.removeprefix('capture ')} graph{where}"
    draft = "the draft model's " if "draft" in phase else ""
    texts = {
        "before distributed init": "before distributed init",
        "distributed init": "during distributed init",
        "after distributed init": "after distributed init, before weight loading",
        "weights": f"while loading {draft or 'the '}weights",
        "pools": f"while sizing and allocating {draft or 'the '}KV cache",
        "after pools": f"after {draft or 'the '}memory pools (before graph capture)",
        "serving": "after the scheduler started (warm-up or serving)",
    }
    return texts.get(phase.replace("draft ", ""), phase)


def _ranks_text(total: int, ranks: Sequence[str]) -> str:
    if not ranks:
        return ""
    if len(ranks) == 1:
        return ranks[0] or "the GPU"
    if len(ranks) == total == 2:
        return f"both ranks ({ranks[0]}, {ranks[1]})"
    if len(ranks) == total and total > 2:
        return f"all {total} ranks"
    return f"{len(ranks)} ranks ({_compress(ranks)})"


def _compress(labels: Sequence[str]) -> str:
    """TP0, TP3, TP4, TP5 -> TP0, TP3-TP5 (only for plain TP labels)."""
    nums = []
    for x in labels:
        m = regex.fullmatch(r"TP(\d+)", x)
        if m is None:
            return ", ".join(labels)
        nums.append(int(m.group(1)))
    out: list[str] = []
    i = 0
    nums.sort()
    while i < len(nums):
        j = i
        while j + 1 < len(nums) and nums[j + 1] == nums[j] + 1:
            j += 1
        out.append(
            f"TP{nums[i]}"
            if i == j
            else (f"TP{nums[i]}, TP{nums[j]}" if j == i + 1 else f"TP{nums[i]}-TP{nums[j]}")
        )
        i = j + 1
    return ", ".join(out)


def _what(rec: ErrorRecord | None) -> str:
    if isinstance(rec, OutOfMemory):
        if rec.comm_library:
            return f"{rec.comm_library} could not allocate its buffer"
        return f"{rec.device or 'GPU'} out of memory"
    if isinstance(rec, KVSizing):
        return _kv_sizing_what(rec)
    if isinstance(rec, Unbalanced):
        return '"The memory capacity is unbalanced"'
    if isinstance(rec, CaptureError):
        return f"CUDA graph capture failed ({quoted(rec.message)})"
    if isinstance(rec, CommBufferError):
        return f"{rec.library} error ({quoted(rec.message)})"
    if isinstance(rec, PythonError):
        return f"{rec.exc_type} ({quoted(rec.message)})"
    if isinstance(rec, OtherRanksUnfinished):
        return f"TP rank {rec.tp_rank} finished loading but other ranks did not"
    if isinstance(rec, CutTraceback):
        return "a traceback the log cuts before its exception line"
    return "a child process died without a traceback"


# SGLang's pool-sizing errors by form (parse.events.KV_SIZING_FORMS): what failed, and
# SGLang's words for it.
_KV_SIZING_WHAT = {
    "not_enough": ("", '"Not enough memory" for the KV cache'),
    "no_kv_memory": (
        "the KV budget is not positive",
        '"Loaded weights leave no GPU memory for the KV cache"',
    ),
    "state_cache": (
        "no room for the Mamba state cache",
        '"Not enough GPU memory for hybrid (mamba/linear-attention) state cache"',
    ),
    "unified_pool": (
        "the unified memory pool cannot fit one request",
        '"byte budget ... cannot fit ONE worst-case request"',
    ),
    "swa_cap": (
        "no room for the full KV pool beside the SWA pool",
        '"SWA pool cap ... leaves no room for the full KV pool"',
    ),
}


def _kv_sizing_what(rec: KVSizing) -> str:
    at = (
        f" at mem_fraction_static={fmt_mfs(rec.mem_fraction_static)}"
        if rec.mem_fraction_static
        else ""
    )
    if rec.form == "asks_mfs" or rec.form not in _KV_SIZING_WHAT:
        said = f" ({quoted(rec.message)})" if rec.message else ""
        return f"{rec.exc_type or 'an error'} asking to raise --mem-fraction-static{said}{at}"
    what, words = _KV_SIZING_WHAT[rec.form]
    if not what:
        return f"{words}{at}"
    return f"{what} (SGLang: {words}{at})"


def quoted(message: str) -> str:
    """An exception's message for a headline: shortened, or said to be missing (never "()")."""
    return short(message) if message.strip() else "no message printed"


def _memory_word(m: bool | None) -> str:
    if m is None:
        return "Memory-related or not: cannot tell."
    return "Memory-related." if m else "Not memory-related."


def _unit(graph: str | None) -> str:
    return "num_tokens" if graph is not None and rules.graph_sized_in_tokens(graph) else "bs"


# A failure's words (logmem.report.fixes, .notes) are imported by the functions that word
# one: a clean launch's report does not load them (2 ms of a small log's analyze).


def headline_text(f: fx.Failure) -> str:
    """The verdict's first line: what happened, where, on which ranks, with the figures."""
    from logmem.report.fixes import gib_text as _g

    where = phase_text(f.phase, f.size, _unit(f.graph), f.offline)
    if f.kind == "stopped":
        rank = f.ranks[0] if f.ranks else "?"
        extra = ""
        if f.phase and f.phase.startswith("capture "):
            extra = _capture_state(f)
        # The last line logmem recognised in the file (unrecognised lines may follow it), and
        # the rank's own last line when other ranks printed after it.
        line = f" (last recognised line {f.line.line_no})" if f.line else ""
        if f.line and f.rank_line:
            line = (
                f" (its last line {f.rank_line.line_no}; the last recognised line of the log "
                f"is {f.line.line_no})"
            )
        # Another launch follows in the file: this start-up stops there, not the log.
        followed = any(isinstance(n, fx.LogStops) and n.next_launch_line for n in f.notes)
        what = "this start-up stops" if followed else "the log stops"
        return (
            f"Incomplete: {what} {where}{extra} on {rank or 'the GPU'}{line}; "
            f"this is not a complete start-up."
        )
    figures = ""
    if f.tried_bytes is not None and f.free_bytes is not None:
        figures = f" (tried {_g(f.tried_bytes)} GiB, {_g(f.free_bytes)} GiB free)"
    elif f.phase and f.phase.startswith("capture") and f.bucket_free_bytes is not None:
        on = f" on {f.bar_rank}" if f.bar_rank else ""
        figures = f" ({_g(f.bucket_free_bytes)} GiB free at that bucket{on})"
    on_ranks = _ranks_text(f.ranks_total, f.ranks)
    return (
        f"Crashed: {_what(f.record)}{' on ' + on_ranks if on_ranks else ''} {where}{figures}. "
        f"{_memory_word(f.memory_related)}"
    )


def _capture_state(f: fx.Failure) -> str:
    from logmem.report.fixes import gib_text as _g

    if f.bucket_free_bytes is not None:
        return f" ({_g(f.bucket_free_bytes)} GiB free)"
    if f.compiling_size is not None:
        return f" (compiling num_tokens {f.compiling_size})"
    if f.capture_begin_bytes is not None:
        return f" (before the first bucket; {_g(f.capture_begin_bytes)} GiB free at capture begin)"
    return ""


def verdict_lines(v: fx.Verdict) -> list[str]:
    """The plain-sentence verdict every report prints first: the outcome, why, and each fix."""
    oc = v.outcome
    lines: list[str] = []
    if oc.status == "ready":
        n = v.ranks_printing
        if v.nodes is not None and v.nodes > 1 and v.world and v.world > n:
            # Only this node's ranks are in the log: the others' start-up is not seen here.
            names = _rank_list(v.rank_labels)
            count = (
                f"the {n} rank{'s' if n != 1 else ''} in this log{names} (the launch has "
                f"{v.world} over {v.nodes} nodes; the others print no memory lines here)"
            )
        elif v.world and v.world > n:
            count = f"{v.world} ranks ({n} print memory lines)"
        else:
            count = f"{n} rank{'s' if n != 1 else ''}"
        lines.append(f"Ready: start-up finished on {count}{_up_text(oc)}.")
    elif oc.failure is not None:
        from logmem.report.fixes import fix_text, sentence
        from logmem.report.notes import explanation_text

        f = oc.failure
        lines.append(headline_text(f))
        explanation = explanation_text(f)
        if explanation:
            lines.append(sentence(explanation))
        lines.extend(fix_text(x) for x in f.fixes)
        if f.memory_related and not f.fixes and not any(_says_why(n) for n in f.notes):
            lines.append("No fix can be computed from this log (figures missing).")
    else:
        lines.append("Incomplete: the log holds no rank lines, so start-up cannot be judged.")
    lines.extend(caveat_text(x, oc.status == "ready") for x in v.not_loaded)
    lines.extend(_order_lines(v))
    if oc.runtime_errors:
        e = v.first_runtime_error
        what = short(message_of(e.record, e.source)) if e is not None else "an error"
        at = f" (first at line {e.source.line_no}: {what})" if e is not None and e.source else ""
        died = isinstance(oc.runtime_errors[0].opening, SchedulerException)
        if v.peer_lost:
            where = "another node" if v.nodes is not None and v.nodes > 1 else "another rank"
            tail = (
                "a scheduler crashed at runtime, after the launch came up (not a start-up "
                "failure), when a collective failed because a peer rank exited or the network "
                f"failed (the collective library's remote error): look first at {where}'s log"
            )
        elif died:
            tail = (
                "a scheduler crashed at runtime, after the launch came up: not a start-up failure"
            )
        else:
            tail = "they are not start-up failures"
        lines.append(f"{len(oc.runtime_errors)} error(s) after start-up{at}; {tail}.")
    lines.extend(death_text(d, v.not_loaded) for d in oc.runtime_deaths)
    lines.extend(_noise_lines(oc.noise))
    return lines


def _says_why(n: fx.Note) -> bool:
    """A note that says why no setting fixes it (so "figures missing" would be false)."""
    return isinstance(n, (fx.LargerThanGpu, fx.RuleDoesNotExplain))


def _up_text(oc: fx.Outcome) -> str:
    """How a launch without a ready line shows it came up."""
    if oc.up is None or oc.up.by is UpBy.READY:
        return ""
    line = oc.up.source.line_no
    if oc.up.by is UpBy.RESULTS:
        tool = f"the bench_{oc.offline} run" if oc.offline else "the offline run"
        return f"; {tool} printed its results (line {line}; it prints no ready line)"
    if oc.up.by is UpBy.SUMMARY:
        return (
            f"; this node (node_rank > 0) prints no ready line: its scheduler summary (line "
            f"{line}) ends start-up"
        )
    return f"; this log has no HTTP server and no ready line: it served from line {line}"


def _noise_lines(noise: Sequence[fx.Noise]) -> list[str]:
    out = []
    for kind, who in ((NoiseKind.EXIT, "at interpreter exit"), (NoiseKind.HARNESS, "")):
        group = [x for x in noise if x.kind is kind]
        if not group:
            continue
        e = group[0].error
        what = f" ({short(message_of(e.record, e.source))})" if e is not None else ""
        n = len(group)
        s = "s" if n != 1 else ""
        if kind is NoiseKind.EXIT:
            lines = f"{n} traceback{s} printed {who}{what}: exit noise, not failures of the launch."
        else:
            lines = _harness_text(group, f"{n} traceback{s} from a test harness{what}")
        out.append(lines)
    return out


_RELATION = {"<=": "at most", "<": "below", ">=": "at least", ">": "above"}


def _harness_text(group: Sequence[fx.Noise], head: str) -> str:
    """A test harness's tracebacks: a test failed. When it is a failed comparison, its figures
    say what the server missed; it is still not a start-up or memory error."""
    c = next((x.check for x in group if x.check is not None), None)
    late = all(x.after_up for x in group)
    if c is None:
        when = " after start-up" if late else ""
        return (
            f"{head}: a test failed{when} (the test's traceback, not one the server printed); "
            "it is not a start-up or memory error."
        )
    seen = next((x.results for x in group if x.results is not None), None)
    after_results = f" after the benchmark results at line {seen.line_no}" if seen else ""
    if late:
        ran = "the server came up and " + ("served" if seen else "ran") + " but missed that target"
    else:
        ran = "what it measured missed that target"
    return (
        f"{head}: a test failed its threshold{after_results}: it requires "
        f"{_RELATION[c.required]} {c.limit} and got {c.actual}; {ran}. This is not a start-up "
        "or memory error."
    )


def _rank_list(labels: tuple[str, ...]) -> str:
    """ ", TP2 and TP3" for a few ranks; nothing for many (the ranks table lists them)."""
    if not 0 < len(labels) <= 4:
        return ""
    names = labels[0] if len(labels) == 1 else f"{', '.join(labels[:-1])} and {labels[-1]}"
    return f", {names}"


def _order_lines(v: fx.Verdict) -> list[str]:
    """Ranks whose ledgers are not reliable (lines out of time order, or two processes per
    label): whose figures are used instead, or that no rank is reliable (findings_order.trusted)."""
    shared = set(v.shared)
    if v.set_aside:
        one = len(v.set_aside) == 1
        used = [x for x in v.rank_labels if x not in v.set_aside]
        mine = "its" if one else "their"
        if shared >= set(v.set_aside):
            why = "printed by two processes" if one else "each printed by two processes"
        elif shared & set(v.set_aside):
            why = f"{mine} lines are out of time order, or printed by two processes"
        else:
            why = f"{mine} lines are out of time order"
        return [
            f"{_compress(v.set_aside)}: {why} (see Findings), so {mine} figures are not used; "
            f"the sizing and the findings below use {_compress(used)}."
        ]
    if v.unreliable:
        who = _compress(v.unreliable) or "the untagged rank"
        if shared >= set(v.unreliable):
            return [
                f"{who}: {'printed' if len(v.unreliable) == 1 else 'each printed'} by two "
                "processes (see Findings): the figures below come from ledgers that mix two processes' "
                "readings and are not reliable."
            ]
        return [
            f"{who}: lines out of time order, and no rank's are in order (see Findings): the "
            "figures below come from ledgers that pair readings in the wrong order and are "
            "not reliable."
        ]
    return []
