"""The diff's sentences on what else changed beside a table's settings
(logmem.compare.diff_causes): how ranks were paired, a first bucket that also holds the
communication buffers, the attention TP behind a weights change. report.compare.notes
registers them on note_text."""

from __future__ import annotations

from typing import Any

from logmem.compare import notes as cn
from logmem.report.causes import on_gpu as _on
from logmem.report.compare import comparable as cmpw
from logmem.sglang.comm import env_value_text
from logmem.sglang.default_mfs import LARGE_GPU_MIB, RESERVE_FLOOR_MIB, Rule
from logmem.sglang.rules import DECODE_GRAPH_MIB_PER_BS
from logmem.units import format_gib as _gs


def no_reserve_text(n: cn.NoReserveComparison) -> str:
    def one(
        label: str,
        rule: Rule | None,
        passed: bool | None,
        matches: bool | None,
        excluded: bool,
        floor: bool,
    ) -> str:
        off = ", which does not give the value server_args prints" if matches is False else ""
        if rule is Rule.TP_TABLE:
            how = f"SGLang up to 0.4.7 sets it from a tp_size table{off}"
        elif rule is Rule.LARGE_GPU:
            how = f"SGLang 0.4.6 - 0.4.7's rule for GPUs above 80 GiB{off}"
        elif rule is Rule.PASSED:
            how = "passed by the user"
        elif rule is Rule.RESERVE and excluded:
            how = "the reserve formula gives its value on no GPU with this free memory: passed"
        elif rule is Rule.RESERVE and floor:
            how = (
                f"on this GPU (above {LARGE_GPU_MIB // 1024} GiB) the reserve formula's "
                f"{RESERVE_FLOOR_MIB // 1024} GiB floor, which max bs does not move"
            )
        elif rule is Rule.RESERVE:
            how = "the reserve formula" + (", the command line passes it" if passed else "")
        elif rule is Rule.POST_CAPTURE:
            how = "post-capture KV sizing's reserve (no graph term), which max bs does not move"
        else:
            how = "unknown (the log gives no date, or no server_args value, to tell the rule by)"
        return f"{label}: {how}"

    (ra, rb), (pa, pb), (ma, mb) = _pair(n.rules), _pair(n.passed), _pair(n.matches)
    (xa, xb), (fa, fb) = n.excluded, n.floor
    what = (
        "the reserve it uses does not move with max bs here"
        if (fa or fb) and not (xa or xb)
        else "it is not the default-mfs rule of these launches"
    )
    sa, sb = one("A", ra, pa, ma, xa, fa), one("B", rb, pb, mb, xb, fb)
    both = f"A and B{sa[1:]}" if sa[1:] == sb[1:] else f"{sa}; {sb}"
    return (
        f"No comparison with SGLang's graph reserve ({DECODE_GRAPH_MIB_PER_BS:g} MB per unit of "
        f"max bs): {what} ({both}; analyze's 'default mfs rule' row)."
    )


def ranks_matched_text(n: cn.RanksMatched) -> str:
    shown = ", ".join(f"{x or '(GPU)'} ~ {y or '(GPU)'}" for x, y in n.pairs[:3])
    more = f", ... ({len(n.pairs)} pairs)" if len(n.pairs) > 3 else ""
    how = ""
    if n.same_tags and (n.differ_tags or n.one_sided_tags):
        sizes = ", ".join(f"{k} {x} -> {y}" for k, x, y in n.sizes)
        parts = []
        if n.differ_tags:
            parts.append(f"the {' and '.join(n.differ_tags)} rank differs")
        if n.one_sided_tags:
            parts.append(f"only one label carries {' and '.join(n.one_sided_tags)}")
        how = (
            f"; in every pair the {' and '.join(n.same_tags)} ranks are the same and "
            + " and ".join(parts)
            + (f" ({sizes})" if sizes else "")
        )
    return (
        "'X ~ Y' rows set A's rank X beside B's rank Y. Ranks whose labels are in both logs are "
        "paired by label; the others in the order the logs list them (A's n-th unmatched rank "
        f"with B's n-th){how}: {shown}{more}."
    )


def _pair(t: tuple[Any, ...], missing: Any = None) -> tuple[Any, Any]:
    """A fact's (A, B) pair; an empty one (a fact built without figures) reads as missing."""
    return (t[0], t[1]) if len(t) == 2 else (missing, missing)


def _mb(n: int | None) -> str:
    return "-" if n is None else _gs(n)


def first_bucket_text(n: cn.FirstBucketShared) -> str:
    def line(a: int | None, b: int | None) -> str:
        at = [f"{w} l.{x}" for w, x in (("A", a), ("B", b)) if x is not None]
        return f", {' / '.join(at)}" if at else ""

    def value(k: str, v: str | None) -> str:
        return env_value_text(k, v) if v else "not echoed"

    env = [f"{k} ({value(k, a)} -> {value(k, b)}{line(la, lb)})" for k, a, b, la, lb in n.env]
    args = [
        f"{k} ({x!r} -> {y!r})" if isinstance(x, str) else f"{k} ({x} -> {y})"
        for k, x, y in n.settings
    ]
    parts = env + args
    listed = (
        ", ".join(parts[:-1]) + (" and " if len(parts) > 1 else "") + parts[-1]
        if parts
        else "their communication settings"
    )
    (la, lb), (ta, tb) = _pair(n.largest), _pair(n.total)
    figs = []
    if la is not None and lb is not None:
        figs.append(f"largest bucket {_mb(la)} -> {_mb(lb)} GiB")
    if ta is not None and tb is not None:
        figs.append(f"total {_mb(ta)} -> {_mb(tb)} GiB")
    bs = (
        f"cuda_graph_max_bs ({n.max_bs[0]} -> {n.max_bs[1]}) alone"
        if n.max_bs is not None
        else "the batch sizes"
    )
    return (
        f"{_on(n.rank)} {n.graph} ({', '.join(figs)}): this capture came first, and its first "
        "bucket also holds the communication buffers allocated on first use (peer buffers of "
        f"NCCL / HCCL, the DeepEP buffer). The launches also differ in {listed}: the change "
        f"cannot be put on {bs}."
    )


def attention_tp_text(n: cn.AttentionTPChanged) -> str:
    (wa, wb), (ta, tb) = _pair(n.weights, 0), _pair(n.attn_tp, 1)
    dp = _pair(n.dp_size)
    big, small = ("B", "A") if tb < ta else ("A", "B")  # the launch whose ranks hold more
    low, high = min(ta, tb), max(ta, tb)
    whole = " (at attention TP 1: all of them)" if low == 1 else ""
    lm = (
        ", and so of the lm_head, which enable_dp_lm_head splits over the attention TP group too"
        if n.dp_lm_head
        else ""
    )
    also = (
        f" {', '.join(n.also_differ)} also differ, which change the weights per rank too."
        if n.also_differ
        else ""
    )
    return (
        f"Weights on {_on(n.rank)}: {_gs(wa)} -> {_gs(wb)} GiB ({_gs(wb - wa, signed=True)}) for the "
        f"same checkpoint at tp_size {n.tp_size}. With DP attention the attention TP is tp_size / "
        f"dp_size: {n.tp_size} / {dp[0]} = {ta} in A, {n.tp_size} / {dp[1]} = {tb} "
        f"in B, so a rank of {big} holds {high // low}x the share of the attention weights a rank "
        f"of {small} holds{whole}{lm}. The logs do not print the attention weights' size: the "
        "change is consistent with this, not computed from it." + also
    )


def uninitialized_text(n: cn.WeightsUninitializedIn) -> str:
    count = (
        f"{'' if n.complete else 'at least '}{n.names:,} {'MoE expert ' if n.experts else ''}"
        f"weight{'s' if n.names != 1 else ''}"
    )
    draft = n.role == "draft"
    also = "".join(f"; also {r or 'the GPU'} at line {ln}" for r, ln in n.other_ranks[:1])
    more = f" and {len(n.other_ranks) - 1} more ranks" if len(n.other_ranks) > 1 else ""
    return (
        f"{n.side} line {n.line} ({n.rank or 'the GPU'}{also}{more}): {count}{' of the draft model' if draft else ''} "
        "were not initialized from the checkpoint (left as allocated, not the checkpoint's values): "
        f"{n.side}'s {'draft ' if draft else ''}weights figure is not a working model's, so the "
        f"weights change is not {'the models' if n.models_differ else 'the settings'}' difference."
    )


def _and(xs: list[str]) -> str:
    return xs[0] if len(xs) == 1 else f"{', '.join(xs[:-1])} and {xs[-1]}"


def mfs_not_all_derived_text(n: cn.MfsNotAllDerived) -> str:
    k, count = n.derivable, len(n.labels)
    digits = n.labels[0].isdigit()
    who = ("Launches " if digits else "") + _and(list(n.labels))
    same = len(set(n.mfs)) == 1
    mfs = (
        f"the same mem_fraction_static {n.mfs[0]:g}"
        if same
        else f"mem_fraction_static {_and([f'{m:g}' for m in n.mfs])}"
    )
    wins = "; ".join(
        f"{'launch ' if digits else ''}{lab}: {', '.join(f'{lo:,}-{hi:,}' for lo, hi in ws)} MiB"
        for lab, ws in zip(n.labels, n.windows)
    )
    reserve = _and([f"{r:,.0f}" for r in n.graph_reserve_mib])
    where = "disjoint GPU sizes" if k == 1 else "GPU sizes that no one GPU holds all of"
    rest = count - k
    many = _WORDS.get(rest, str(rest))
    return (
        f"{who} print {mfs} at cuda_graph_max_bs {_and([str(b) for b in n.max_bs])}, with the same "
        f"free memory before loading ({_gs(n.free_bytes)} GiB: most likely one GPU model). SGLang's "
        f"default (this era's reserve formula) would reserve {reserve} MiB for their graphs, so it "
        f"gives {'that value' if same else 'these values'} only on {where} ({wins}): at most "
        f"{_WORDS.get(k, str(k))} of them derived {'it' if same else 'its value'}; at least {many} "
        f"passed {'it' if same else 'theirs'} (or the formula does not model "
        f"{'it' if rest == 1 else 'them'})."
    )


_WORDS = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five"}


def mfs_set_aside_text(n: cn.MfsSetAside) -> str:
    digits = bool(n.labels) and n.labels[0].isdigit()
    vals = " vs ".join(f"{m:g}" if isinstance(m, float) else str(m) for m in n.mfs)
    each = "; ".join(
        f"{'launch ' if digits else ''}{lab}: {pool:,} requests{f' (line {line})' if line else ''} against "
        f"bs {top}"
        for lab, pool, line, top in zip(n.labels, n.pools, n.pool_lines, n.largest)
    )
    return (
        f"mem_fraction_static differs ({vals}) but does not stand in the way of the slope: it "
        "sizes the KV pool, and SGLang captures the graphs after the pool, from the list the "
        "batch-size flags give; it reaches that list only through the request pool, which follows "
        "the KV tokens and cuts the list where it is smaller. Each launch's request pool "
        f"(max_running_requests) is above its largest captured bs ({each}), so no list was cut. "
        "The KV cache section carries mem_fraction_static's effect."
    )


def sizing_modes_text(n: cn.SizingModesDiffer) -> str:
    post, start = n.post_capture, "B" if n.post_capture == "A" else "A"
    rank = n.rank or "(GPU)"
    if n.rank_b is not None:  # B's rank is another label ('' for an untagged GPU)
        rank += f" ~ {n.rank_b or '(GPU)'}"
    return (
        f"The launches size the KV pool in different modes: {start} in its pool step, before the "
        f"graphs; {post} after capture (SGLang 0.5.17+'s post-capture KV sizing), its pool step "
        "holding only the other pools and the reserved KV pool. So KV pool is set beside KV "
        f"pool: {start}'s pool step ({_gs(n.start_up_bytes)} GiB on {rank}, the KV pool with its "
        f"other pools) beside {post}'s post-capture KV step ({_gs(n.after_capture_bytes)} GiB); "
        f"{post}'s own pool step ({_gs(n.pool_step_bytes)} GiB) has no counterpart in {start}, "
        "whose other pools are inside its pool step."
    )


def no_term_split_text(n: cn.NoTermSplit) -> str:
    """Why diff's KV block has no split into the rule's terms."""
    sides = {(has, missing) for _, has, missing in n.no_args}
    if len(n.no_args) == 2 and len(sides) == 1:  # both sides lack them alike: say it once
        has, missing = sides.pop()
        why = [cmpw.rule_inputs_missing_text("A and B", has, missing, plural=True)]
    else:
        why = [cmpw.rule_inputs_missing_text(x, has, miss) for x, has, miss in n.no_args]
    for x in n.elided:
        why.append(
            f"{x}'s server_args line is elided by its author ('...'), so a setting it "
            "leaves out is unknown, not SGLang's default"
        )
    if n.ranges is not None:
        (a0, a1), (b0, b1) = n.ranges
        gap = max(0, b0 - a1, a0 - b1)
        why.append(
            f"the bytes per token differ (A {a0:,}-{a1:,}, B {b0:,}-{b1:,} within print rounding: "
            f"at least {gap:,} B apart; another model, KV dtype or TP split), so a token of A is "
            "not a token of B"
        )
    elif n.bytes_per_token is not None:
        ba, bb = n.bytes_per_token
        why.append(
            f"the bytes per token differ ({ba:,} vs {bb:,}: another model, KV dtype or TP split), so "
            "a token of A is not a token of B"
        )
    if n.post_capture is not None:
        start = "B" if n.post_capture == "A" else "A"
        why.append(
            f"the launches size the KV pool in different modes ({n.post_capture} after capture, "
            "from the free memory after the graphs: SGLang 0.5.17+'s post-capture KV sizing; "
            f"{start} at start-up), so one rule's terms do not split the change"
        )
    if n.caps is not None:
        shown = " vs ".join(f"{c:,}" if c is not None else "not set" for c in n.caps)
        why.append(f"--max-total-tokens differs ({shown}), so a cap, not the rule, sets a pool")
    return "No split into the rule's terms: " + "; and ".join(why) + "."
