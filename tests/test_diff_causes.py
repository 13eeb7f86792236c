"""logmem diff names what else changed beside max bs (review24 #5, #6): SGLang's graph reserve
only where it is the launches' rule, compared with all graph memory; the communication
environment; the attention TP behind a weights change; a readable per-rank layout."""

from __future__ import annotations

from pathlib import Path

from conftest import corpus_log
from logmem.api import read_log
from logmem.compare.diff import diff_launches
from logmem.compare.load import LaunchRef
from logmem.report.compare import render_text
from logmem.report.compare_json import to_json

FIX = Path(__file__).resolve().parent.parent / "fixtures"
E2 = [FIX / f"pair-e2-maxbs{n}-constructed.log" for n in (80, 160)]
E7 = [FIX / f"pair-e7-maxbs{n}-constructed.log" for n in (128, 256)]


def _diff(a: Path, b: Path):  # type: ignore[no-untyped-def]
    la, lb = read_log(str(a)).launches[0], read_log(str(b)).launches[0]
    return diff_launches(la, LaunchRef("A", (str(a),), 0), lb, LaunchRef("B", (str(b),), 0))


def test_no_graph_reserve_comparison_where_the_tp_table_and_a_passed_mfs_rule() -> None:
    # pair-e2 is dated 2025-03 (era a, the tp table) and its 0.85 is not the table's 0.87.
    d = _diff(*E2)
    assert d.slopes and all(s.heuristic is None for s in d.slopes)
    text = render_text(d)
    assert "heuristic reserves" not in text
    assert all(s["heuristic"] is None for s in to_json(d)["slopes"])


def test_graph_reserve_is_set_against_all_graph_memory() -> None:
    # pair-e7 is era c: the reserve is the rule. The capture totals are 2,007 and 2,806 MiB
    # at max bs 128 and 256 (capture end mem usage): 799 / 128 = 6.24 MiB per bs.
    d = _diff(*E7)
    h = next(s.heuristic for s in d.slopes if s.heuristic is not None)
    assert round(h.measured_mib_per_bs, 1) == 6.2
    assert h.sizes == (128, 256)
    text = render_text(d)
    assert "the capture end's mem usage" in text
    assert "at max bs 128 it sets aside 256 MiB, the capture used 2,007" in text
    assert "largest bucket + static buffers): ratio" not in text
