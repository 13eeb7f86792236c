"""The compare stage (diff, fit, whatif) returns typed facts; its sentences live in
logmem.report.compare_notes. This walks logmem/compare and fails on English built outside an
error message: a string of three or more words that is not a docstring, not inside a
``raise`` and not in a function that only composes error messages."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

COMPARE = Path(__file__).resolve().parent.parent / "logmem" / "compare"

# Functions whose text is an error message (raised as FitError / SelectionError by callers),
# not a report sentence: module -> names.
ERROR_TEXT = {
    "args.py": {"key_list", "confounder_parts", "confounder_message"},
    "load.py": {"_text"},  # LaunchChoiceError's message
    "replay.py": {"missing_sizing"},
}
# Names of log fields, not sentences (what a figure was read from).
FIELD_NAMES = {"KV line #tokens"}


def _prose(path: Path) -> list[str]:
    tree = ast.parse(path.read_text())
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Raise) or (
            isinstance(node, ast.FunctionDef) and node.name in ERROR_TEXT.get(path.name, set())
        ):
            skip.update(id(m) for m in ast.walk(node))
        body = getattr(node, "body", None)
        first = body[0] if isinstance(body, list) and body else None
        if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
            skip.add(id(first.value))
    found = []
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.JoinedStr):
            text = "".join(v.value for v in node.values if isinstance(v, ast.Constant))
            skip.update(id(v) for v in node.values)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
        else:
            continue
        if len(text.split()) >= 3 and text not in FIELD_NAMES:
            found.append(f"{path.name}:{node.lineno}: {text[:60]!r}")
    return found


@pytest.mark.parametrize("path", sorted(COMPARE.glob("*.py")), ids=lambda p: p.name)
def test_compare_builds_no_sentences(path: Path) -> None:
    assert _prose(path) == []


def test_the_scan_finds_a_sentence(tmp_path: Path) -> None:
    bad = tmp_path / "x.py"
    bad.write_text('def f(n):\n    return f"the pool holds {n} tokens"\n')
    assert _prose(bad) == ["x.py:2: 'the pool holds  tokens'"]


def test_every_fact_has_a_sentence() -> None:
    import dataclasses

    from logmem.compare import notes as cn
    from logmem.report.compare_notes import note_text

    facts = [
        c
        for c in vars(cn).values()
        if isinstance(c, type) and dataclasses.is_dataclass(c) and c.__module__ == cn.__name__
    ]
    sources = {cn.RowsSource, cn.HeuristicTerms, cn.MeasuredGrowth, cn.ContextCheck}
    sources |= {cn.MeasuredSlope, cn.GivenSlope, cn.HeuristicSlope}
    for c in facts:
        if c in sources:
            continue
        fields = {f.name: _sample(f.type) for f in dataclasses.fields(c)}
        assert note_text(c(**fields)).strip(), c.__name__


def _sample(t: object) -> object:
    text = str(t)
    if text.endswith("| None"):
        return None
    if "tuple" in text:
        return ()
    if text.startswith("int") or "int |" in text:
        return 1
    if "float" in text:
        return 0.5
    if "bool" in text:
        return True
    if "SlopeSource" in text:
        from logmem.compare.notes import GivenSlope

        return GivenSlope(1.0, None)
    return "x"
