"""The ledger holds facts, the report layer its words (issue 11 item 3).

Attribution records what a cause or phase is (ledger.What, ledger.PhaseWhat) and the numbers
its label needs; logmem.report.causes words them. Logic that tests a cause's English ("starts
with unlogged", "workspaces in the name") breaks when a reporter restyles it: these tests keep
the English out of the records and out of the code that builds them.
"""

from __future__ import annotations

import ast
import dataclasses

import pytest

from conftest import REPO
from logmem.analysis import ledger
from logmem.analysis.ledger import Cause, Facts, Phase, PhaseFacts, PhaseWhat, What
from logmem.frozen import realise
from logmem.report.causes import cause_name, cause_note, phase_name

ANALYSIS = REPO / "logmem" / "analysis"
# The only str fields the records keep: ids and names printed by the log (a capture's label,
# a rank), never a label composed by logmem.
ID_FIELDS = {
    "Cause": {"kind", "part"},
    "Phase": {"key"},
    "Facts": {"unified"},  # a unified pool's sub-pool names, as the log printed them
    # Names the log printed (a rank, a file, a model path, a dtype), never composed text.
    "CellSource": {"rank", "file", "model", "kv_dtype"},
    "PhaseFacts": {"graph", "from_kind", "to_kind"},
    "NoLedger": {"reading"},  # the one reading's kind (Reading.kind), bytes and line
}
BUILDERS = {"Cause", "Phase", "Facts", "PhaseFacts", "NoLedger", "remainder", "pool_causes"}


def _str_fields(cls: type) -> set[str]:
    """Fields that can hold a str (annotations are strings: `from __future__ import annotations`)."""
    return {f.name for f in dataclasses.fields(realise(cls)) if "str" in str(f.type)}


@pytest.mark.parametrize("name", sorted(ID_FIELDS))
def test_ledger_records_hold_no_text(name: str) -> None:
    cls = getattr(ledger, name)
    assert _str_fields(cls) <= ID_FIELDS[name], f"{name} holds text: word it in logmem.report"


def _words(node: ast.AST) -> list[str]:
    """String pieces with a space in them: words, not ids like "logged" or f"capture:{g}"."""
    out = []
    for n in ast.walk(node):
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and " " in n.value:
            out.append(n.value)
    return out


def test_analysis_builds_no_cause_or_phase_text() -> None:
    found = []
    for path in sorted(ANALYSIS.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            f = node.func
            name = (
                f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
            )
            if name in BUILDERS:
                args = [*node.args, *(k.value for k in node.keywords)]
                found += [(path.name, node.lineno, w) for a in args for w in _words(a)]
    assert not found, f"English built for a ledger record in logmem/analysis: {found}"


def test_the_check_sees_a_label() -> None:
    tree = ast.parse('Cause(f"{n} buckets", 3, "derived")')
    assert _words(tree) == [" buckets"]


def test_every_cause_and_phase_has_words() -> None:
    for w in What:
        assert cause_name(Cause(w, 0, "derived"))
        cause_note(Cause(w, 0, "derived"))
    for p in PhaseWhat:
        assert phase_name(Phase("k", p, 0, 0, (), (1, 2)))


def test_the_words_come_from_the_facts() -> None:
    kv = Cause(What.KV_POOL, 1, "logged", (3,), Facts(draft=True, tokens=46_611))
    assert cause_name(kv) == "draft KV pool (K+V, 46,611 tokens)"
    table = Cause(What.REQ_TABLE, 1, "estimated", (), Facts(n_req=2048, ctx=8192))
    assert (cause_name(table), cause_note(table)) == (
        "request-to-token table",
        "(2048 + 1) x (8192 + 4) x 4 B",
    )
    rest = Cause(What.BEYOND_TABLE, 1, "unattributed", (), Facts(workspaces=True))
    assert cause_name(rest) == "unlogged: pools + workspaces beyond the request-to-token table"
    facts = PhaseFacts(graph="decode", end=ledger.CaptureEnd.STOPPED)
    cap = Phase("capture:decode", PhaseWhat.CAPTURE, 2, 1, (), (1, 2), facts=facts)
    assert phase_name(cap) == "capture decode (stopped)"
