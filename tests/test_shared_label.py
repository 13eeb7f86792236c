"""Two processes printing one rank label (two servers, or two containers, writing one file):
the rank's ledger mixes their readings, so it is set aside like an out-of-order rank, and the
report says why in those words (findings_order.SharedLabel)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from conftest import CORPUS, FIXTURES
from logmem.analysis.attribution import build_ledger
from logmem.analysis.findings_order import SharedLabel, set_aside, shared_labels
from logmem.api import read_log
from logmem.report.jsonout import render as render_json
from logmem.report.text import render as render_text

TWO = FIXTURES / "two-servers-001-constructed.log"
ONE = FIXTURES / "001-qwq32b-tp4-l4-docs.log"


def test_second_load_begun_before_the_first_ended_is_a_second_process() -> None:
    L = read_log(str(TWO)).launches[0]
    found = shared_labels(L)
    assert [(f.rank, f.step, f.first_line, f.again_line) for f in found] == [
        ("TP0", "load", 34, 35),
        ("TP1", "load", 36, 37),
    ]
    assert all(f.set_aside for f in found)
    assert set_aside(L) == ("TP0", "TP1")


def test_the_sizing_comes_from_the_ranks_one_process_prints() -> None:
    two = build_ledger(read_log(str(TWO)).launches[0])
    one = build_ledger(read_log(str(ONE)).launches[0])
    assert two.sizing is not None and one.sizing is not None
    assert two.sizing.rest_bytes == one.sizing.rest_bytes
    assert two.binding_rank in ("TP2", "TP3")


def test_report_says_two_processes_not_out_of_time_order() -> None:
    a = read_log(str(TWO))
    text = render_text(a)
    assert (
        "TP0, TP1: each printed by two processes (see Findings), so their figures are not used"
        in text
    )
    assert "Two processes print as TP0: its 'Load weight begin' at line 35" in text
    assert "out of time order" not in text
    # The copies without a figure are the other process's, not a paste of the log twice.
    assert "overlapping pastes" not in text
    doc = json.loads(render_json(a))
    ranks = {r["rank"]: r for r in doc["launches"][0]["ranks"]}
    assert ranks["TP0"]["ledger_shared_label"] is True
    assert ranks["TP2"]["ledger_shared_label"] is False
    assert doc["launches"][0]["ranks_set_aside"] == ["TP0", "TP1"]


def test_one_rank_both_processes_print_hedges_every_figure(tmp_path: Path) -> None:
    """A single-rank log of two servers: no other rank to use, so every figure read off the
    ledger says it mixes two processes' readings."""
    rank = re.compile(r"^\[[0-9-]+ [0-9:]+ TP0\] ")
    out = []
    for line in (
        (FIXTURES / "024-llama31-8b-docs-notebook-output-oct2024.log").read_text().split("\n")
    ):
        out.append(line)
        if rank.match(line) and "avail mem=" in line:
            out.append(
                re.sub(r"avail mem=([0-9.]+)", lambda m: f"avail mem={float(m[1]) - 2:.2f}", line)
            )
    path = tmp_path / "two.log"
    path.write_text("\n".join(out))
    text = render_text(read_log(str(path)))
    assert (
        "TP0: printed by two processes (see Findings): the figures below come from ledgers" in text
    )
    assert "(Not reliable: read off a ledger that mixes two processes' readings.)" in text


def test_drafts_restarts_and_real_logs_are_one_process_per_label() -> None:
    """A draft model's load follows the target's end; a restart is a new launch: neither is a
    shared label, in any fixture or corpus log but the constructed one."""
    paths = sorted(FIXTURES.glob("*.log")) + sorted(CORPUS.glob("*.log"))
    seen = []
    for path in paths:
        for L in read_log(str(path), require_startup=False).launches:
            seen += [(path.name, f.rank) for f in shared_labels(L) if isinstance(f, SharedLabel)]
    assert seen == [(TWO.name, "TP0"), (TWO.name, "TP1")]
