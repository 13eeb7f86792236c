"""Report model: an Analysis -> verdict, findings and tables that text, Markdown and HTML all draw.

The numbers are decided here once, so the formats cannot disagree about them. The Table and
Section records live in logmem.report.table, the ledger, ranks and bucket tables in
logmem.report.ledger_tables.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import field, replace
from typing import TYPE_CHECKING, Any

from logmem.analysis.attribution import LaunchLedger
from logmem.analysis.comm_inputs import EnvValue, env_values
from logmem.analysis.comm_join import Communication, communication
from logmem.analysis.exhausted import Exhausted
from logmem.analysis.failures import verdict
from logmem.analysis.failures.capture_rest import peer_up
from logmem.frozen import frozen
from logmem.model.records import Launch
from logmem.parse import events as ev
from logmem.report.budget_words import mfs_source_text
from logmem.report.capture_rest_words import peer_text
from logmem.report.communication import comm_view
from logmem.report.config_fit_words import config_fit_line, threshold_fix
from logmem.report.device_words import device_top
from logmem.report.exhausted_words import caveat_text, fix_lines
from logmem.report.finding_lines import finding_lines
from logmem.report.fold import (
    Fold,
    bucket_rank,
    fold_note,
    fold_of,
    folded_ranks_table,
    leading_ranks,
)
from logmem.report.input_notes import cri_note, input_stop_note, summarised_sentences
from logmem.report.inputs_text import input_sentences
from logmem.report.launch_title import launch_title
from logmem.report.ledger_tables import bucket_tables, ledger_table, ranks_table
from logmem.report.memory_split import split_notes
from logmem.report.mfs_words import coverage_text, default_mfs_text, measured_text
from logmem.report.sentences import reserve_term_text
from logmem.report.table import Section, Table, gib_cell, rank_name
from logmem.report.verdict import verdict_lines as verdict_text

if TYPE_CHECKING:
    from logmem.model.analysis import Analysis


@frozen
class LaunchReport:
    title: str
    verdict: tuple[str, ...]
    findings: tuple[str, ...]
    sections: tuple[Section, ...]
    ledger: LaunchLedger = field(compare=False, repr=False)
    communication: Communication | None = field(default=None, compare=False, repr=False)
    # A launch of many ranks: the ranks shown in full (report.fold); None: all of them.
    fold: Fold | None = field(default=None, compare=False, repr=False)
    other_ranks: int = 0  # ranks whose ledger is not in the Ledger section (shown or folded)
    leading: tuple[str, ...] = ()  # the ranks of the Ledger section (report.fold.leading_ranks)


@frozen
class Report:
    title: str
    launches: tuple[LaunchReport, ...]
    input_notes: tuple[str, ...]


def sizing_table(led: LaunchLedger) -> Table | None:
    sz = led.sizing
    if sz is None:
        return None
    rows = [
        (
            f"P: free before weights ({coverage_text(sz.pre_load_coverage)})",
            gib_cell(sz.pre_load_bytes),
            sz.pre_load_rank or "(untagged)",
        ),
        (
            f"free after weights ({coverage_text(sz.after_weights_coverage)})",
            gib_cell(sz.after_weights_bytes),
            "",
        ),
        ("mem_fraction_static", f"{sz.mem_fraction_static:g}", mfs_source_text(sz.mfs_lines)),
        *(
            (
                f"x {a.factor:g} ({a.scope})",
                f"{sz.rule_mfs:.4g}",
                f"SGLang {a.versions} scales it after printing server_args",
            )
            for a in sz.adjustments
        ),
        (
            "rest = after - P x (1 - mfs)",
            gib_cell(sz.rest_bytes),
            "SGLang's KV rule (reference 12.2)"
            + ("; it sized only the reservation" if sz.post_capture else ""),
        ),
    ]
    pc = sz.post_capture
    if pc is None:
        rows.append(("pools logged", gib_cell(sz.logged_pool_bytes), "KV (+ Mamba) lines"))
    else:
        # Post-capture KV sizing (logmem.analysis.post_capture, kv_pool_runtime.py).
        if pc.reserved_bytes is not None:
            tok = f", {pc.reserved_tokens:,} tokens" if pc.reserved_tokens else ""
            swa = pc.reserved_swa
            if swa is not None and pc.unified:
                tok = (
                    f", one unified buffer of {pc.reserved_tokens:,} full-layer + "
                    f"{swa[1]:,} sliding-window tokens (their split: line {swa[2]})"
                    if pc.reserved_tokens and swa[1] is not None
                    else ", one unified buffer"
                )
            elif swa is not None:
                tok = f", full layers{tok}"
            rows.append(
                (
                    "reserved before capture",
                    gib_cell(pc.reserved_bytes),
                    f"address space, not memory{tok}; line {pc.reserved_line}"
                    if swa is not None and pc.unified
                    else f"address space, not memory{tok} (line {pc.reserved_line})",
                )
            )
            if swa is not None and not pc.unified:
                stok = f", {swa[1]:,} tokens" if swa[1] is not None else ""
                rows.append(
                    (
                        "SWA pool reserved",
                        gib_cell(swa[0]),
                        f"address space, not memory, sliding-window layers{stok} (line {swa[2]})",
                    )
                )
        rows += [
            (
                f"free after capture ({rank_name(pc.rank)})",
                gib_cell(pc.before_bytes),
                f"line {pc.before_line}" if pc.before_line else "",
            ),
            ("headroom P x (1 - mfs)", gib_cell(pc.headroom_bytes), "kept free by the sizing"),
            (
                "pool backed after capture",
                gib_cell(pc.kv_bytes),
                f"Post-capture KV sizing line {pc.line}",
            ),
            ("free after the pool", gib_cell(pc.avail_bytes), f"line {pc.line}"),
        ]
    if sz.kv_tokens:
        swa_tok = pc.swa_tokens if pc is not None else None
        rows.append(("KV tokens", f"{sz.kv_tokens:,}", "full layers" if swa_tok else ""))
        if swa_tok and pc is not None:
            rows.append(
                ("SWA tokens", f"{swa_tok:,}", f"Post-capture KV sizing, line {pc.swa_line}")
            )
    if sz.bytes_per_token_range:
        lo, hi = sz.bytes_per_token_range
        # No round cell in the range: the range itself is the figure (003's 61,462-61,464).
        likely = f"{sz.likely_bytes_per_token:,}" if sz.likely_bytes_per_token else f"{lo:,}-{hi:,}"
        what = (
            "the rule and max_total_num_tokens"
            if sz.rule_tokens
            else "the reservation's printed sizes"
            if pc is not None and pc.reserved_bytes is not None
            else "the printed sizes"
        )
        note = (
            f"consistent with {what}: {lo:,} to {hi:,}"
            if sz.likely_bytes_per_token
            else (f"what {what} allow; no round cell size among them")
        )
        if pc is not None and pc.unified and pc.full_entry is not None:
            note = f"the full sub-pool's entry_bytes (line {pc.full_entry[1]})"
        elif sz.exact_cell is not None:
            note = f"the full sub-pool's entry_bytes (line {sz.exact_cell[1]})"
        split = (pc is not None and pc.reserved_swa is not None) or (
            sz.exact_cell is not None and len(sz.pools) > 1
        )
        label = "bytes per full token" if split else "bytes per token"
        rows.append((label, likely, note))
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
                    gib_cell(term.bytes),
                    "default-mfs reserve formula (12.3 b/c)",
                )
            )
        rows.append(
            (
                "graph reserve, total",
                gib_cell(led.reserve.reserve_bytes),
                measured_text(led),
            )
        )
    return Table(
        "KV sizing against SGLang's rules",
        ("quantity", "value", "source"),
        tuple(rows),
        ("l", "r", "l"),
    )


def expected_table(
    led: LaunchLedger, config: dict[str, Any]
) -> tuple[Table, tuple[str, ...], tuple[str, ...]]:
    """The cross-check table, the findings that go first (a config for another model: every
    finding after it reads differently) and the mismatch findings that go last."""
    from logmem.estimate.crosscheck import ModelDiffers, crosscheck
    from logmem.report.estimate.words import (
        check_label,
        check_note,
        check_verdict,
        gib_or_bytes,
        mismatch_text,
        notes_text,
    )

    cc = crosscheck(led, config)
    rows = []
    for c in cc.checks:
        verdict = check_verdict(c)
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
    first = tuple(mismatch_text(m) for m in cc.findings if isinstance(m, ModelDiffers))
    last = tuple(mismatch_text(m) for m in cc.findings if not isinstance(m, ModelDiffers))
    return t, first, last


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
    peers: Sequence[Launch] = (),
) -> LaunchReport:
    """One launch's report; ``led`` is its ledger as Analysis.ledger builds it (with the
    other launches' KV lines and the --model-config)."""
    led = shown_ledger(led, ranks_shown)
    sections: list[Section] = []
    # Few ranks (or ranks the user picked): every ledger in full; many: the others folded.
    full = all_ranks or bool(ranks_shown) or len(led.ranks) <= 2
    lead_labels = leading_ranks(led, full)
    lead_set = set(lead_labels)  # a set: with --all-ranks every rank leads
    leading = [r for r in led.ranks if r.rank in lead_set]
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
    fold = None if full else fold_of(led)
    rt = ranks_table(led)
    if rt is not None and fold is not None:
        rt = folded_ranks_table(rt, led, fold)
        sections.append(Section("Ranks", (rt,), (fold_note(fold, len(led.ranks)),)))
    elif rt is not None:
        sections.append(Section("Ranks", (rt,)))
    st = sizing_table(led)
    if st is not None:
        sections.append(Section("Sizing checks", (st,)))
    lead: tuple[str, ...] = ()
    extra: tuple[str, ...] = ()
    if config is not None:
        et, lead, extra = expected_table(led, config)
        sections.append(Section("Expected from config.json", (et,)))
    com = communication(led, config, env)
    if com is not None:
        sections.append(communication_section(com))
    if (rl := bucket_rank(led)) is not None:
        bts = bucket_tables(rl)
        if bts:
            sections.append(Section("Graph buckets", tuple(bts), details=True))
    others = [
        ledger_table(r, split.get(r.rank, ""), device_top(led, r.rank))
        for r in led.ranks
        if r not in leading and (fold is None or r.rank in fold.shown)
    ]
    if others:
        sections.append(Section("Other ranks", tuple(others), details=True))
    title = launch_title(L, n_launches)
    found = lead + finding_lines(led) + extra
    n_other = len(led.ranks) - len(leading)
    sections_t = tuple(sections)
    return LaunchReport(
        title,
        tuple(verdict_lines(L, led, peers)),
        found,
        sections_t,
        led,
        com,
        fold,
        n_other,
        lead_labels,
    )


def shown_ledger(led: LaunchLedger, shown: tuple[str, ...]) -> LaunchLedger:
    """The ledger with only the ranks a report shows (api.select); the launch, the sizing and
    the findings stay the whole launch's."""
    if not shown:
        return led
    return replace(led, ranks=tuple(rl for rl in led.ranks if rl.rank in shown))


def verdict_lines(
    L: Launch, led: LaunchLedger | None = None, peers: Sequence[Launch] = ()
) -> list[str]:
    """The verdict sentences every format prints first; with the ledger, a launch that came up
    with free memory at the 0.00 floor before or during capture gets its caveat and fixes; with
    the input's other launches, one that came up at another mem_fraction_static is cited after
    the mem_fraction_static fix."""
    v = verdict(L)
    lines = verdict_text(v)
    at = next((i for i, x in enumerate(lines) if x.startswith("Fix: --mem-fraction-static")), None)
    # --model-config's cell and context: the value that holds one full context, after the
    # threshold the log alone gives (said to be config.json's, report.config_fit_words).
    cfg = led.config if led is not None else None
    extra = config_fit_line(cfg) if cfg is not None and threshold_fix(v.outcome) else None
    if extra is not None and at is not None:
        at += 1
        lines.insert(at, extra)
    peer = peer_up(L, peers) if peers else None
    if peer is not None:
        lines.insert(len(lines) if at is None else at + 1, peer_text(peer))
    if led is not None:
        for f in led.findings:
            if isinstance(f, Exhausted):
                lines[1:1] = [caveat_text(f), *fix_lines(f)]
    return lines


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
        if st.container == "cri":
            parts.append(cri_note(st))
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
                a.all_launches,
            )
            for L in a.launches
        ),
        tuple(notes),
    )
