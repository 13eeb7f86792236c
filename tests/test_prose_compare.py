"""The compare stage (diff, fit, whatif) and the estimate stage return typed facts; their
sentences live in logmem.report (compare_notes.py, estimate_words.py). This walks
logmem/compare and logmem/estimate and fails on English built outside an error message: a
string of three or more words that is not a docstring, not inside a ``raise`` and not in a
function that only composes error messages."""

from __future__ import annotations

import ast
import dataclasses
import typing
from enum import Enum
from pathlib import Path

import pytest

from logmem.frozen import realise

PACKAGE = Path(__file__).resolve().parent.parent / "logmem"
COMPARE = PACKAGE / "compare"
ESTIMATE = PACKAGE / "estimate"

# Functions whose text is an error message (raised as FitError / SelectionError /
# EstimateError by callers), not a report sentence: (folder, module) -> names.
ERROR_TEXT = {
    ("compare", "args.py"): {"key_list", "confounder_parts", "confounder_message"},
    ("compare", "load.py"): {"_text"},  # LaunchChoiceError's message
    # The FitError of Replay (_budget_only: what the rule still gives without a KV line).
    ("compare", "replay.py"): {"missing_sizing", "_logged_mfs_hint", "_budget_only"},
    # SGLang's start-up refusal, raised as EstimateError (the CLI shows it as a usage error).
    ("estimate", "build.py"): {"_check_sharding", "_group_words"},
}
# Names of log fields or dimensions, not sentences (what a figure was read from).
FIELD_NAMES = {
    "KV line #tokens",
    # sharding.Indivisible.what: the dimension a parallel size must divide, quoted only in
    # _check_sharding's error message.
    "MLP intermediate size",
    "expert intermediate size",
}


def _prose(path: Path) -> list[str]:
    tree = ast.parse(path.read_text())
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Raise) or (
            isinstance(node, ast.FunctionDef)
            and node.name in ERROR_TEXT.get((path.parent.name, path.name), set())
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


STAGE_MODULES = sorted(COMPARE.glob("*.py")) + sorted(ESTIMATE.glob("*.py"))


@pytest.mark.parametrize("path", STAGE_MODULES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_stage_builds_no_sentences(path: Path) -> None:
    assert _prose(path) == []


def test_every_allowed_entry_is_still_needed() -> None:
    """An allow-list entry whose function is gone would hide nothing but rot."""
    for (folder, module), names in ERROR_TEXT.items():
        tree = ast.parse((PACKAGE / folder / module).read_text())
        defined = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
        assert names <= defined, (folder, module, names - defined)


def test_the_scan_finds_a_sentence(tmp_path: Path) -> None:
    bad = tmp_path / "x.py"
    bad.write_text('def f(n):\n    return f"the pool holds {n} tokens"\n')
    assert _prose(bad) == ["x.py:2: 'the pool holds  tokens'"]


def test_every_fact_has_a_sentence() -> None:
    from logmem.compare import notes as cn
    from logmem.compare import whatif_notes
    from logmem.report.compare.notes import note_text

    # compare.notes re-exports whatif's facts, split from it (round 30): checked here as before.
    homes = {cn.__name__, whatif_notes.__name__}
    facts = [
        c
        for c in vars(cn).values()
        if isinstance(c, type) and dataclasses.is_dataclass(realise(c)) and c.__module__ in homes
    ]
    assert whatif_notes.KVRuleReplayed in facts
    sources = {cn.RowsSource, cn.HeuristicTerms, cn.MeasuredGrowth, cn.ContextCheck}
    sources |= {
        cn.MeasuredSlope,
        cn.GivenSlope,
        cn.HeuristicSlope,
        cn.FailedBucketSlope,
        cn.BarsSlope,
    }
    for c in facts:
        if c in sources:
            continue
        fields = {f.name: _sample(f.type) for f in dataclasses.fields(realise(c))}
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
    if "EraGuess" in text:
        from logmem.sglang.eras import EraGuess

        return EraGuess(None, None)
    if "FailedBucketSlope" in text:
        from logmem.compare.notes import FailedBucketSlope

        return FailedBucketSlope("decode", 8, True)
    if "PoolsVsBudget" in text:
        from logmem.analysis.findings_sizing import GapReason, PoolsVsBudget

        return PoolsVsBudget(1 << 30, GapReason.CELLS_BIGGER, rule_bytes=1 << 30, tokens=1000)
    if "SlopeSource" in text:
        from logmem.compare.notes import GivenSlope

        return GivenSlope(1.0, None)
    return "x"


def _estimate_samples(c: type) -> list[object]:
    """Instances of an estimate fact: one per member of each enum field and one with each
    optional field given (the rest sampled)."""
    hints = typing.get_type_hints(c)
    fields = dataclasses.fields(realise(c))
    base: dict[str, object] = {}
    enums: dict[str, list[object]] = {}
    for f in fields:
        t = hints[f.name]
        if isinstance(t, type) and issubclass(t, Enum):
            enums[f.name] = list(t)
            base[f.name] = next(iter(t))
        elif isinstance(t, type) and dataclasses.is_dataclass(realise(t)):
            base[f.name] = _estimate_samples(t)[0]
        else:
            base[f.name] = _typed_sample(t)
            inner = [a for a in typing.get_args(t) if a is not type(None)]
            if base[f.name] is None and inner:  # the optional field given, too
                enums[f.name] = [_typed_sample(inner[0])]
    out = [c(**base)]
    for name, values in enums.items():
        out += [c(**{**base, name: v}) for v in values]
    return out


def test_every_estimate_fact_has_a_sentence() -> None:
    """Each note and reason the estimate stage can return is in its union and has wording."""
    from logmem.estimate import notes as en
    from logmem.estimate import reasons as er
    from logmem.report.estimate.words import note_text, reason_text

    for module, union, words in ((en, en.Note, note_text), (er, er.Reason, reason_text)):
        facts = {
            c
            for c in vars(module).values()
            if isinstance(c, type)
            and dataclasses.is_dataclass(realise(c))
            and c.__module__ == module.__name__
        }
        members = set(typing.get_args(union))
        # Spread / AttnSpread are parts of reasons, worded inside them.
        assert facts - members <= {er.Spread, er.AttnSpread}, facts - members
        for c in members:
            for fact in _estimate_samples(c):
                assert words(fact).strip(), fact  # type: ignore[operator]


def _typed_sample(t: object) -> object:
    """A value of a resolved field type: optionals None, tuples empty, numbers small."""
    if type(None) in typing.get_args(t):
        return None
    if typing.get_origin(t) is tuple:
        args = typing.get_args(t)
        return () if ... in args else tuple(_typed_sample(a) for a in args)
    samples: dict[object, object] = {bool: True, int: 2, float: 0.5, str: "x"}
    return samples[t]
