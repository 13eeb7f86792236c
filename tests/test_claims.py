"""Claims: statements an engineer reads off each log, checked against logmem's report.

Goldens pin figures; claims pin statements. tests/claims/<log stem>.json holds, for every log in
fixtures/ and ../shared/corpus, facts written from the LOG (never from logmem's output): the
outcome, the failure kind and phase, attributions above a size, printed figures, fixes and
their direction, and statements that would be wrong. A fixture that is a byte-for-byte copy of
a corpus log shares the corpus log's claims file.

A claims file:

    {"log": "<file name>",
     "reading": "what the log shows, in a few sentences",
     "must":     [claim, ...],     # each must hold
     "must_not": [claim, ...]}     # none may hold

A claim is a JSON object with a `why` (the line of the log that makes it true) and one target:

* `"path": "launches[0].ranks[rank=TP0].ledger[cause~KV].gib"`: values in the JSON report
  (`logmem analyze LOG -f json`, docs/json-schema.md; built in-process by the read_log + render
  that the command runs). Steps are separated by dots:
  - `key`: a dict's key; on a list it is taken from every element (fan-out);
  - `[3]`, `[-1]`: an index; `[*]`: every element;
  - `[key=value]`, `[key!=value]`: elements whose key equals (or not) value; non-strings are
    compared as JSON text (`[complete=true]`, `[size=null]`);
  - `[key~regex]`: elements whose key is a string the regex finds (Python `re.search`).
  A null ends its branch when more steps follow; at the end of the path it is a value that
  `"eq": null` matches, but it does not count as a value for existence or `count`. A key no
  dict at that step has is an error (a typo must not make a must_not claim vacuous). Lists at the end are flattened one level, so
  `verdict` yields sentences and `graphs` yields graph objects.
* `"text": "regex"`: searched in the rendered report (`"format"`: `text`, default, or
  `markdown`) with every run of whitespace collapsed to one space (the text report wraps lines).

Tests on the values of a `path` claim:

* per value: `eq`, `ne`, `ge`, `gt`, `le`, `lt`, `approx` (with `tol`, default 0.01 GiB: print
  rounding), `regex`, `contains` (substring), `in` (a list of allowed values). Comparisons with a
  number read a numeric string as its number (a fix's `value` is a string, "0.863") and are false
  for any other value that is not a number. The claim holds when SOME value passes
  every per-value test, or with `"all": true` when there are values and ALL pass.
* on the list of values: `count`, `sum`, `max`, `min`, each an object of per-value tests on that
  number (`"count": {"ge": 2}`; `sum` and `max`/`min` of no numbers fail). These hold together
  with the per-value tests.
* no test at all: the claim holds when the path yields at least one value.

`"xfail": "<why, which issue-12 class>"` marks a claim the log makes true but logmem's report
does not yet: the test is a strict xfail, so it fails as soon as logmem gets it right and the
marker must then be removed. `grep -n xfail tests/claims/*.json` lists them.
"""

from __future__ import annotations

import json
import math
import re
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from conftest import CORPUS, CORPUS_MISSING, FIXTURES, TESTS, corpus_logs, fixture_logs
from logmem.api import read_log
from logmem.report import render

CLAIMS = TESTS / "claims"
VALUE_OPS = {"eq", "ne", "ge", "gt", "le", "lt", "approx", "regex", "contains", "in"}
LIST_OPS = {"count", "sum", "max", "min"}
CLAIM_KEYS = VALUE_OPS | LIST_OPS | {"why", "path", "text", "format", "tol", "all", "xfail"}
FILE_KEYS = {"log", "reading", "must", "must_not"}


class ClaimError(Exception):
    """The claim itself is malformed (bad path, unknown test): a bug in the claims file."""


class ClaimNotMet(AssertionError):
    """The report does not say what the claim says (or says what a must_not forbids)."""


# ---- the claim language ---------------------------------------------------------------------


def _steps(path: str) -> list[tuple[str, str]]:
    """Split a path into ("key", name) and ("bracket", content) steps; brackets may nest
    (a regex with a character class)."""
    steps: list[tuple[str, str]] = []
    i = 0
    while i < len(path):
        c = path[i]
        if c == ".":
            i += 1
        elif c == "[":
            depth, j = 0, i
            while j < len(path):
                depth += {"[": 1, "]": -1}.get(path[j], 0)
                if depth == 0:
                    break
                j += 1
            if depth:
                raise ClaimError(f"unclosed [ in {path!r}")
            steps.append(("bracket", path[i + 1 : j]))
            i = j + 1
        else:
            m = re.compile(r"[A-Za-z_][A-Za-z0-9_]*").match(path, i)
            if m is None:
                raise ClaimError(f"bad path {path!r} at {path[i:]!r}")
            steps.append(("key", m.group()))
            i = m.end()
    return steps


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _keep(item: Any, selector: str) -> bool:
    m = re.fullmatch(r"([A-Za-z_][A-Za-z0-9_]*)(!=|=|~)(.*)", selector, re.S)
    if m is None:
        raise ClaimError(f"bad filter [{selector}]")
    key, op, want = m.groups()
    if not isinstance(item, dict) or key not in item:
        return False
    value = item[key]
    if op == "~":
        return isinstance(value, str) and re.search(want, value) is not None
    return (_as_text(value) == want) == (op == "=")


def _elements(node: Any) -> list[Any]:
    return node if isinstance(node, list) else [node]


def _step(nodes: list[Any], kind: str, arg: str) -> list[Any]:
    out: list[Any] = []
    if kind == "key":
        items = [x for n in nodes for x in _elements(n) if x is not None]
        dicts = [x for x in items if isinstance(x, dict)]
        if len(dicts) < len(items):
            raise ClaimError(f"key {arg!r} taken from a value that is not an object")
        if dicts and not any(arg in d for d in dicts):
            raise ClaimError(f"no object here has the key {arg!r} (keys: {sorted(dicts[0])})")
        return [d[arg] for d in dicts if arg in d]
    for node in (n for n in nodes if n is not None):
        if re.fullmatch(r"-?\d+", arg):
            if isinstance(node, list) and -len(node) <= int(arg) < len(node):
                out.append(node[int(arg)])
        elif arg == "*":
            out.extend(_elements(node))
        else:
            out.extend(x for x in _elements(node) if _keep(x, arg))
    return out


def select(doc: Any, path: str) -> list[Any]:
    """The values a path yields in a JSON document (see the module docstring)."""
    nodes: list[Any] = [doc]
    for kind, arg in _steps(path):
        nodes = _step(nodes, kind, arg)
    return [x for n in nodes for x in _elements(n)]


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _as_number(value: Any) -> Any:
    """A numeric string (a fix's value, "0.863") compares as its number."""
    if isinstance(value, str) and re.fullmatch(r"-?\d+(\.\d+)?", value.strip()):
        return float(value)
    return value


def _passes(value: Any, tests: dict[str, Any], tol: float) -> bool:
    for op, want in tests.items():
        if op in ("eq", "ne"):
            if (value == want) != (op == "eq"):
                return False
        elif op in ("ge", "gt", "le", "lt", "approx"):
            number = _as_number(value)
            if not _number(number):
                return False
            ok = {
                "ge": number >= want,
                "gt": number > want,
                "le": number <= want,
                "lt": number < want,
                "approx": abs(number - want) <= tol + 1e-9,
            }[op]
            if not ok:
                return False
        elif op == "regex":
            if not isinstance(value, str) or re.search(want, value) is None:
                return False
        elif op == "contains":
            if not isinstance(value, str) or want not in value:
                return False
        elif op == "in":
            if value not in want:
                return False
        else:
            raise ClaimError(f"unknown test {op!r}")
    return True


def _holds_on(values: list[Any], claim: dict[str, Any]) -> bool:
    tol = float(claim.get("tol", 0.01))
    tests = {k: v for k, v in claim.items() if k in VALUE_OPS}
    present = [v for v in values if v is not None]
    numbers = [v for v in values if _number(v)]
    for op in LIST_OPS & claim.keys():
        if op == "count":
            total: float = len(present)
        elif not numbers:
            return False
        elif op == "sum":
            total = sum(numbers)
        else:
            total = max(numbers) if op == "max" else min(numbers)
        if not _passes(total, claim[op], tol):
            return False
    if not tests:
        return bool(present) or bool(LIST_OPS & claim.keys())
    passing = [_passes(v, tests, tol) for v in values]
    return bool(values) and (all(passing) if claim.get("all") else any(passing))


def _squash(text: str) -> str:
    return " ".join(text.split())


def evaluate(claim: dict[str, Any], doc: dict[str, Any], rendered: dict[str, str]) -> bool:
    """Whether the claim's statement is true of the report (before must/must_not)."""
    unknown = set(claim) - CLAIM_KEYS
    if unknown:
        raise ClaimError(f"unknown keys {sorted(unknown)}")
    if ("path" in claim) == ("text" in claim):
        raise ClaimError("a claim has exactly one of path / text")
    if "text" in claim:
        fmt = claim.get("format", "text")
        if fmt not in rendered:
            raise ClaimError(f"format {fmt!r} is not rendered")
        return re.search(claim["text"], rendered[fmt]) is not None
    return _holds_on(select(doc, claim["path"]), claim)


def describe(claim: dict[str, Any], doc: dict[str, Any]) -> str:
    """What the report has where the claim looked, for the failure message."""
    if "text" in claim:
        return f"text /{claim['text']}/"
    values = json.dumps(select(doc, claim["path"]), default=str)
    return f"{claim['path']} -> {values[:400]}"


# ---- the claims files and the logs ----------------------------------------------------------


def _logs() -> dict[str, Path]:
    """Log name -> the file to read: the fixtures copy when there is one (the copies are
    byte-identical), else the corpus log."""
    found: dict[str, Path] = {p.name: p for p in corpus_logs()}
    found.update({p.name: p for p in fixture_logs()})
    return found


LOGS = _logs()
CLAIM_FILES = sorted(CLAIMS.glob("*.json"))


def _load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


@cache
def _report(log: Path) -> tuple[dict[str, Any], dict[str, str]]:
    analysis = read_log(str(log))
    doc: dict[str, Any] = json.loads(render(analysis, "json"))
    rendered = {fmt: _squash(render(analysis, fmt)) for fmt in ("text", "markdown")}
    return doc, rendered


def _claim_params() -> list[Any]:
    params: list[Any] = []
    for path in CLAIM_FILES:
        data = _load(path)
        for side in ("must", "must_not"):
            for n, claim in enumerate(data.get(side, [])):
                marks = []
                if "xfail" in claim:
                    marks.append(
                        pytest.mark.xfail(raises=ClaimNotMet, strict=True, reason=claim["xfail"])
                    )
                params.append(
                    pytest.param(
                        data["log"], side, claim, id=f"{path.stem}:{side}:{n}", marks=marks
                    )
                )
    return params


def test_every_log_has_a_claims_file() -> None:
    stems = {p.stem for p in CLAIM_FILES}
    missing = sorted(name for name in LOGS if Path(name).stem not in stems)
    assert not missing, f"logs without tests/claims/<stem>.json: {missing}"


def test_a_shared_claims_file_covers_identical_logs() -> None:
    """A fixture named like a corpus log shares its claims file: only valid for the same bytes."""
    corpus = {p.name: p for p in corpus_logs()}
    shared = [p for p in fixture_logs() if p.name in corpus]
    if not CORPUS.is_dir():
        pytest.skip(CORPUS_MISSING)
    differ = [p.name for p in shared if p.read_bytes() != corpus[p.name].read_bytes()]
    assert not differ, f"fixtures that differ from the corpus log of the same name: {differ}"


@pytest.mark.parametrize("path", CLAIM_FILES, ids=[p.stem for p in CLAIM_FILES])
def test_claims_file_is_well_formed(path: Path) -> None:
    data = _load(path)
    assert set(data) <= FILE_KEYS, f"unknown keys {sorted(set(data) - FILE_KEYS)}"
    assert data["log"] == f"{path.stem}.log"
    assert isinstance(data.get("reading"), str) and data["reading"]
    assert data.get("must"), "a claims file has must claims"
    for claim in data.get("must", []) + data.get("must_not", []):
        assert set(claim) <= CLAIM_KEYS, f"unknown keys {sorted(set(claim) - CLAIM_KEYS)}"
        assert claim.get("why"), f"claim without a why: {claim}"
        assert ("path" in claim) != ("text" in claim), f"one of path / text: {claim}"
    if data["log"] not in LOGS and not CORPUS.is_dir():
        pytest.skip(CORPUS_MISSING)
    assert data["log"] in LOGS, f"{data['log']} is neither in {FIXTURES} nor in {CORPUS}"


@pytest.mark.parametrize("log_name, side, claim", _claim_params())
def test_claim(log_name: str, side: str, claim: dict[str, Any]) -> None:
    if log_name not in LOGS:
        if not CORPUS.is_dir():
            pytest.skip(CORPUS_MISSING)
        pytest.fail(f"no log {log_name} in {FIXTURES} or {CORPUS}")
    doc, rendered = _report(LOGS[log_name])
    holds = evaluate(claim, doc, rendered)
    if holds != (side == "must"):
        verb = "does not hold" if side == "must" else "holds but must not"
        raise ClaimNotMet(f"{verb}: {claim['why']}\n  {describe(claim, doc)}")


# ---- the language itself --------------------------------------------------------------------

DOC: dict[str, Any] = {
    "launches": [
        {
            "outcome": "ready",
            "failure": None,
            "fixes": [{"flag": "--mem-fraction-static", "value": "0.83"}, {"value": "x"}],
            "verdict": ["Ready: start-up finished on 2 ranks."],
            "ranks": [
                {
                    "rank": "TP0",
                    "ledger": [{"cause": "weights", "gib": 8.85}, {"cause": "KV pool", "gib": 5.0}],
                },
                {"rank": "TP1", "ledger": [{"cause": "weights", "gib": 8.86}], "extra": [1, 2]},
            ],
        }
    ]
}


@pytest.mark.parametrize(
    "claim, holds",
    [
        ({"path": "launches[0].outcome", "eq": "ready"}, True),
        ({"path": "launches[0].outcome", "eq": "crashed"}, False),
        ({"path": "launches.ranks[rank=TP1].ledger.gib", "approx": 8.85}, True),
        ({"path": "launches.ranks[rank=TP1].ledger.gib", "approx": 8.85, "tol": 0.0}, False),
        ({"path": "launches.ranks.ledger[cause~^KV].gib", "ge": 4.9}, True),
        ({"path": "launches.ranks.ledger.gib", "gt": 6, "all": True}, False),
        ({"path": "launches.ranks.ledger.gib", "sum": {"approx": 22.71}}, True),
        ({"path": "launches.ranks[rank!=TP0]", "count": {"eq": 1}}, True),
        ({"path": "launches.ranks[*]", "count": {"eq": 2}}, True),
        ({"path": "launches.ranks[-1].rank", "eq": "TP1"}, True),
        ({"path": "launches.failure.kind", "eq": "oom"}, False),
        ({"path": "launches.failure"}, False),
        ({"path": "launches.failure", "eq": None}, True),
        ({"path": "launches.failure", "count": {"eq": 0}}, True),
        ({"path": "launches.verdict", "regex": r"on 2 ranks"}, True),
        ({"path": "launches.verdict", "contains": "crashed"}, False),
        ({"path": "launches.ranks.extra", "max": {"eq": 2}}, True),
        ({"path": "launches.ranks.rank", "in": ["TP0", "TP1"], "all": True}, True),
        ({"path": "launches.verdict", "sum": {"ge": 0}}, False),
        ({"text": r"finished on 2 ranks"}, True),
        ({"path": "launches.fixes.value", "lt": 0.85}, True),
        ({"path": "launches.fixes.value", "gt": 0.9}, False),
    ],
)
def test_the_claim_language(claim: dict[str, Any], holds: bool) -> None:
    claim = {"why": "test", **claim}
    assert evaluate(claim, DOC, {"text": DOC["launches"][0]["verdict"][0]}) is holds


@pytest.mark.parametrize(
    "claim",
    [
        {"path": "launches.outcomes", "eq": "ready"},  # a typo is an error, never vacuous
        {"path": "launches[0].outcome[x]"},
        {"path": "launches.outcome", "equals": "ready"},
        {"path": "launches.outcome", "text": "x"},
        {"path": "launches.outcome.x"},
    ],
)
def test_a_malformed_claim_is_an_error(claim: dict[str, Any]) -> None:
    with pytest.raises(ClaimError):
        evaluate({"why": "test", **claim}, DOC, {"text": ""})
