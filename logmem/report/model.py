"""Report model: an Analysis -> verdict, findings and tables that text, Markdown and HTML all draw.

The numbers are decided here once, so the formats cannot disagree about them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import field, replace
from typing import TYPE_CHECKING, Any

from logmem.analysis.attribution import LaunchLedger, RankLedger
from logmem.analysis.captures import total_cost
from logmem.analysis.comm_inputs import EnvValue, env_values
from logmem.analysis.comm_join import Communication, communication
from logmem.analysis.failures import verdict
from logmem.analysis.ledger import Bound
from logmem.frozen import frozen
from logmem.model.records import Launch, Rank
from logmem.parse import events as ev
from logmem.report.causes import (
    bound_note,
    bounded,
    cause_name,
    cause_note,
    ledger_note,
    phase_name,
)
from logmem.report.communication import comm_view
from logmem.report.device_words import DeviceTop, device_top, in_use_note, pre_start_rows
from logmem.report.graph_lines import graph_sentences
from logmem.report.input_notes import input_stop_note, summarised_sentences
from logmem.report.inputs_text import input_sentences
from logmem.report.launch_title import launch_title
from logmem.report.memory_split import split_notes
from logmem.report.mfs_words import coverage_text, default_mfs_text, measured_text
from logmem.report.sentences import finding_text, reserve_term_text
from logmem.report.verdict import verdict_lines as verdict_text
from logmem.units import format_gib

if TYPE_CHECKING:
    from logmem.model.analysis import Analysis


@frozen
class Table:
    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    align: tuple[str, ...] = ()  # "l" | "r" per column; default: first left, rest right
    notes: tuple[str, ...] = ()
    indent: tuple[int, ...] = ()  # per row: 0 a phase, 1 a cause under it

    def alignment(self, i: int) -> str:
        if self.align:
            return self.align[i]
        return "l" if i == 0 else "r"


@frozen
class Section:
    title: str
    tables: tuple[Table, ...] = ()
    paragraphs: tuple[str, ...] = ()
    details: bool = False  # collapsed in Markdown/HTML


@frozen
class LaunchReport:
    title: str
    verdict: tuple[str, ...]
    findings: tuple[str, ...]
    sections: tuple[Section, ...]
    ledger: LaunchLedger = field(compare=False, repr=False)
    communication: Communication | None = field(default=None, compare=False, repr=False)


@frozen
class Report:
    title: str
    launches: tuple[LaunchReport, ...]
    input_notes: tuple[str, ...]


def _g(n: int | None, signed: bool = False) -> str:
    return format_gib(n, signed=signed, unknown="-")


def main_rank(launch: Launch) -> Rank | None:
    """The rank a report leads with: the one with bucket readings, else the first."""
    return launch.main_rank


def rank_name(label: str) -> str:
    return label or "the GPU (no rank tag)"


_UNORDERED = "out of time order: not reliable"


def ledger_table(led: RankLedger, extra: str = "", top: DeviceTop | None = None) -> Table:
    rows: list[tuple[str, ...]] = []
    indent: list[int] = []
    footnotes: list[str] = []
    if top is not None and top.pre is not None and led.phases:  # the device total, rec.2
        phase, cause = pre_start_rows(top.pre)
        footnotes.append(f"[1] {cause[0]}: {in_use_note(top.pre, top.device)}")
        rows += [phase, (f"{cause[0]} [1]", *cause[1:])]
        indent += [0, 1]
    for p in led.phases:
        rows.append(
            (
                phase_name(p),
                _g(p.before_bytes),
                _g(p.after_bytes),
                bounded(p.delta_bytes, p.bound),
                "",
                f"{p.lines[0]}-{p.lines[1]}",
            )
        )
        indent.append(0)
        for c in p.causes:
            name = cause_name(c)
            note = cause_note(c)
            if note:
                footnotes.append(f"[{len(footnotes) + 1}] {name}: {note}")
                name = f"{name} [{len(footnotes)}]"
            amount = bounded(c.bytes, c.bound)
            rows.append((name, "", "", amount, c.kind, ",".join(str(x) for x in c.lines)))
            indent.append(1)
    notes = list(footnotes)
    if led.out_of_order:
        notes.insert(
            0, f"Not reliable: {rank_name(led.rank)}'s lines run back in time (see Findings)."
        )
    if led.phases:
        total = sum(p.delta_bytes for p in led.phases)
        floored = led.last_bytes is not None and led.phases[-1].bound is not Bound.EXACT
        in_all = f"at least {_g(total)}" if floored else _g(total)
        notes.append(
            f"From {_g(led.first_bytes)} GiB free to {_g(led.last_bytes)} GiB: {in_all} GiB in all; "
            "each drop is split into causes, and what the log does not explain is shown as unattributed."
        )
    if led.empty is not None:
        notes.append(ledger_note(led))
    if top is not None and top.note:
        notes.append(top.note)
    if extra:
        notes.append(extra)
    return Table(
        f"Ledger of {rank_name(led.rank)} (GiB" + (f"; {_UNORDERED})" if led.out_of_order else ")"),
        ("phase / cause", "before", "after", "drop", "kind", "lines"),
        tuple(rows),
        ("l", "r", "r", "r", "l", "r"),
        tuple(notes),
        tuple(indent),
    )


_RANK_COLUMNS: tuple[tuple[str, Callable[[Rank], int | None]], ...] = (
    (
        "before weights",
        lambda r: (
            r.target.weights_begin.avail.bytes if r.target and r.target.weights_begin else None
        ),
    ),
    (
        "after weights",
        lambda r: r.target.weights_end.avail.bytes if r.target and r.target.weights_end else None,
    ),
    (
        "after pools",
        lambda r: r.target.pool_end.avail.bytes if r.target and r.target.pool_end else None,
    ),
    (
        "capture begin",
        # The first capture's own begin: a later capture's is not where capturing began.
        lambda r: r.graphs[0].begin_bytes if r.graphs else None,
    ),
    (
        "after capture",
        lambda r: next((g.end_bytes for g in reversed(r.graphs) if g.end_bytes is not None), None),
    ),
)


def ranks_table(led: LaunchLedger) -> Table | None:
    L = led.launch
    shown = {rl.rank for rl in led.ranks}  # the ranks the report shows (select)
    if len(L.ranks) < 2 or len(shown) < 2:
        return None
    rows = []
    unknown: set[Bound] = set()
    for r in (r for r in L.ranks if r.label in shown):
        total = total_cost(r.graphs)
        bad = not total.bound.known
        if bad:
            unknown.add(total.bound)
        mark = " *" if r.label == led.binding_rank and led.imbalance_bytes is not None else ""
        rows.append(
            (
                rank_name(r.label) + mark,
                *(_g(f(r)) for _, f in _RANK_COLUMNS),
                "unknown"
                if bad
                else bounded(total.bytes, total.bound)
                if total.bytes is not None
                else "-",
            )
        )
    notes = [f"graphs {bound_note(b)}." for b in sorted(unknown, key=lambda b: b.value)]
    if any(r.label == led.binding_rank for r in L.ranks) and led.imbalance_bytes is not None:
        notes.append(
            "* the binding rank: least free memory before loading; SGLang sizes every rank's KV pool from it."
        )
    if any(not r.prints_bars for r in L.ranks) and any(r.prints_bars for r in L.ranks):
        notes.append(
            "Only the rank that prints progress bars has per-bucket readings; others show totals."
        )
    return Table(
        "Free memory per rank (GiB)",
        ("rank", *(c for c, _ in _RANK_COLUMNS), "graphs"),
        tuple(rows),
        notes=tuple(notes),
    )


def bucket_tables(led: RankLedger) -> list[Table]:
    out = []
    for p in led.phases:
        if not p.buckets:
            continue
        rows = tuple(
            (
                str(b.size) if b.size is not None else "?",
                _g(b.avail_bytes),
                bounded(b.cost_bytes, b.bound),
                str(b.line),
            )
            for b in p.buckets
        )
        src = p.graph.sizes_source if p.graph is not None else None
        notes = (
            f"sizes from the {src}" if src else "sizes from the progress bar",
            "cost = free at this bucket's start minus free at the next one's (or the end line)",
            *sorted(
                {f"cost {bound_note(b.bound)}." for b in p.buckets if b.bound is not Bound.EXACT}
            ),
        )
        out.append(
            Table(
                f"Buckets of {phase_name(p)} on {rank_name(led.rank)} (GiB)",
                ("size", "free at start", "cost", "line"),
                rows,
                notes=notes,
            )
        )
    return out


def sizing_table(led: LaunchLedger) -> Table | None:
    sz = led.sizing
    if sz is None:
        return None
    rows = [
        (
            f"P: free before weights ({coverage_text(sz.pre_load_coverage)})",
            _g(sz.pre_load_bytes),
            sz.pre_load_rank or "(untagged)",
        ),
        (
            f"free after weights ({coverage_text(sz.after_weights_coverage)})",
            _g(sz.after_weights_bytes),
            "",
        ),
        ("mem_fraction_static", f"{sz.mem_fraction_static:g}", "server_args"),
        *(
            (
                f"x {a.factor:g} ({a.scope})",
                f"{sz.rule_mfs:.4g}",
                f"SGLang {a.versions} scales it after printing server_args",
            )
            for a in sz.adjustments
        ),
        ("rest = after - P x (1 - mfs)", _g(sz.rest_bytes), "SGLang's KV rule (reference 12.2)"),
        ("pools logged", _g(sz.logged_pool_bytes), "KV (+ Mamba) lines"),
    ]
    if sz.kv_tokens:
        rows.append(("KV tokens", f"{sz.kv_tokens:,}", ""))
    if sz.bytes_per_token_range:
        lo, hi = sz.bytes_per_token_range
        # No round cell in the range: the range itself is the figure (003's 61,462-61,464).
        likely = f"{sz.likely_bytes_per_token:,}" if sz.likely_bytes_per_token else f"{lo:,}-{hi:,}"
        what = "the rule and max_total_num_tokens" if sz.rule_tokens else "the printed sizes"
        note = (
            f"consistent with {what}: {lo:,} to {hi:,}"
            if sz.likely_bytes_per_token
            else (f"what {what} allow; no round cell size among them")
        )
        rows.append(("bytes per token", likely, note))
    if sz.kv_dtype is not None and sz.kv_dtype_line is not None:
        by = "KV line" if isinstance(sz.kv_dtype_line, ev.KVPool) else "Using KV cache dtype"
        rows.append(
            (
                "KV dtype",
                sz.kv_dtype.removeprefix("torch."),
                f"{by}, line {sz.kv_dtype_line.source.line_no}",
            )
        )
    if led.default_mfs is not None:
        rows.append(("default mfs rule", *default_mfs_text(led.default_mfs)))
    if led.reserve is not None:
        for term in led.reserve.terms:
            rows.append(
                (
                    f"graph reserve: {reserve_term_text(term)}",
                    _g(term.bytes),
                    "default-mfs reserve formula (12.3 b/c)",
                )
            )
        rows.append(
            (
                "graph reserve, total",
                _g(led.reserve.reserve_bytes),
                measured_text(led),
            )
        )
    return Table(
        "KV sizing against SGLang's rules",
        ("quantity", "value", "source"),
        tuple(rows),
        ("l", "r", "l"),
    )


def expected_table(led: LaunchLedger, config: dict[str, Any]) -> tuple[Table, tuple[str, ...]]:
    from logmem.estimate.crosscheck import crosscheck
    from logmem.report.estimate.words import (
        check_label,
        check_note,
        gib_or_bytes,
        mismatch_text,
        notes_text,
    )

    cc = crosscheck(led, config)
    rows = []
    for c in cc.checks:
        verdict = (
            "differs"
            if c.differs
            else (
                "agrees" if c.measured_bytes is not None and c.expected_bytes is not None else "-"
            )
        )
        measured = gib_or_bytes(c, c.measured_bytes)
        if c.measured_range is not None and c.measured_range[0] != c.measured_range[1]:
            measured = f"{c.measured_range[0]:,} to {c.measured_range[1]:,} B"
        rows.append(
            (
                check_label(c),
                measured,
                gib_or_bytes(c, c.expected_bytes),
                verdict,
            )
        )
    notes = tuple(t for t in map(check_note, cc.checks) if t)
    notes += notes_text(cc.estimate.notes[:6])
    t = Table(
        "Measured against config.json (GiB unless per token)",
        ("quantity", "measured", "expected", ""),
        tuple(rows),
        ("l", "r", "r", "l"),
        notes,
    )
    return t, tuple(mismatch_text(m) for m in cc.findings)


def communication_section(c: Communication) -> Section:
    """The groups x mechanisms table, what the log measured of it, and the findings."""
    v = comm_view(c)
    tables = tuple(Table(g.title, g.columns, g.rows, g.align, g.notes) for g in v.grids)
    return Section("Communication", tables, (v.summary, *v.findings))


def launch_report(
    L: Launch,
    led: LaunchLedger,
    n_launches: int,
    all_ranks: bool = False,
    config: dict[str, Any] | None = None,
    env: Sequence[EnvValue] = (),
    ranks_shown: tuple[str, ...] = (),
) -> LaunchReport:
    """One launch's report; ``led`` is its ledger as Analysis.ledger builds it (with the
    other launches' KV lines and the --model-config)."""
    led = shown_ledger(led, ranks_shown)
    sections: list[Section] = []
    main = main_rank(L)
    # Few ranks (or ranks the user picked): every ledger in full; many: the others folded.
    full = all_ranks or bool(ranks_shown) or len(led.ranks) <= 2
    leading = [r for r in led.ranks if full or (main is not None and r.rank == main.label)]
    split = split_notes(L)  # PyTorch's OOM split, on the failing rank's ledger
    if leading:
        shown = dict(split)
        folded = [k for k in split if k not in {r.rank for r in leading}]
        if folded and not any(r.rank in split for r in leading):
            # The failing rank's ledger is folded away in text: say it under the one shown.
            shown[leading[0].rank] = f"On {rank_name(folded[0])}: {split[folded[0]]}"
        sections.append(
            Section(
                "Ledger",
                tuple(
                    ledger_table(r, shown.get(r.rank, ""), device_top(led, r.rank)) for r in leading
                ),
            )
        )
    rt = ranks_table(led)
    if rt is not None:
        sections.append(Section("Ranks", (rt,)))
    st = sizing_table(led)
    if st is not None:
        sections.append(Section("Sizing checks", (st,)))
    extra: tuple[str, ...] = ()
    if config is not None:
        et, extra = expected_table(led, config)
        sections.append(Section("Expected from config.json", (et,)))
    com = communication(led, config, env)
    if com is not None:
        sections.append(communication_section(com))
    if main is not None and (rl := led.rank(main.label)) is not None:
        bts = bucket_tables(rl)
        if bts:
            sections.append(Section("Graph buckets", tuple(bts), details=True))
    others = [
        ledger_table(r, split.get(r.rank, ""), device_top(led, r.rank))
        for r in led.ranks
        if r not in leading
    ]
    if others:
        sections.append(Section("Other ranks", tuple(others), details=True))
    title = launch_title(L, n_launches)
    found = tuple(finding_text(f) for f in led.findings) + tuple(graph_sentences(L))
    return LaunchReport(title, tuple(verdict_lines(L)), found + extra, tuple(sections), led, com)


def shown_ledger(led: LaunchLedger, shown: tuple[str, ...]) -> LaunchLedger:
    """The ledger with only the ranks a report shows (api.select); the launch, the sizing and
    the findings stay the whole launch's."""
    if not shown:
        return led
    return replace(led, ranks=tuple(rl for rl in led.ranks if rl.rank in shown))


def verdict_lines(L: Launch) -> list[str]:
    """The verdict sentences every format prints first."""
    return verdict_text(verdict(L))


def analysis_report(a: Analysis, all_ranks: bool = False) -> Report:
    notes = []
    for st in a.stats:
        parts = [f"{st.path}: {st.lines:,} lines"]
        if st.compression:
            parts.append(f"{st.compression}-compressed")
        if not st.ends_with_newline and not st.stopped:  # a stop note says more
            parts.append("no newline at the end (cut off?)")
        if st.encoding:
            parts.append(f"{st.encoding} text")
        if st.truncated_segments:
            parts.append(f"{st.truncated_segments} over-long line(s) cut to 4 MiB")
        if st.stopped:
            parts.append(input_stop_note(st.stopped, st.compression, st.bytes_read, st.stop_detail))
        notes.append(", ".join(parts))
    if a.unmatched:
        notes.append(
            f"{a.unmatched.total} line(s) carry a memory figure but match no pattern "
            "(`logmem lines` lists them)."
        )
    notes.extend(input_sentences(a))
    notes.extend(summarised_sentences(a.summarised))
    stray = sum(L.stray_bars for L in a.launches)
    if stray:
        notes.append(f"{stray} progress-bar render(s) had no open capture to belong to.")
    return Report(
        "logmem memory report",
        tuple(
            launch_report(
                L,
                a.ledger(L),
                len(a.launches),
                all_ranks,
                a.model_config,
                env_values(a),
                a.shown_ranks,
            )
            for L in a.launches
        ),
        tuple(notes),
    )
