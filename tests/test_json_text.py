"""report.json_text.dumps writes what json.dumps(strict(v), indent=2) writes, byte for byte."""

from __future__ import annotations

import enum
import json
import math
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from logmem.report.json_text import dumps


class _Kind(str, enum.Enum):
    A = "a"


class _Level(enum.IntEnum):
    LOW = 1


class _Opaque:
    def __str__(self) -> str:
        return "opaque <&>"


def strict(v: Any) -> Any:
    """What the reports applied before json.dumps: non-finite floats as strings, str keys,
    tuples as lists (report/jsonout.py's _finite, which json_text replaced)."""
    if isinstance(v, float) and not math.isfinite(v):
        return str(v)
    if isinstance(v, dict):
        return {str(k): strict(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [strict(x) for x in v]
    return v


def _reference(v: Any) -> str:
    return json.dumps(strict(v), indent=2, sort_keys=False, default=str, allow_nan=False)


_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),  # any code point: surrogates, controls, non-ASCII
    st.sampled_from([_Kind.A, _Level.LOW, _Opaque()]),
)
_keys = st.one_of(
    st.text(max_size=8), st.integers(-5, 5), st.booleans(), st.none(), st.floats(width=16)
)
_documents = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=4).map(tuple),
        st.dictionaries(_keys, inner, max_size=4),
    ),
    max_leaves=40,
)


@settings(max_examples=400, deadline=None)
@given(_documents)
def test_dumps_is_the_standard_librarys_indented_strict_json(doc: Any) -> None:
    assert dumps(doc) == _reference(doc)


def test_what_strict_json_cannot_hold_becomes_a_string() -> None:
    doc = {"a": math.nan, "b": [math.inf, -math.inf], 3: (1, 2.5), None: {}, "e": []}
    text = dumps(doc)
    assert json.loads(text) == {
        "a": "nan",
        "b": ["inf", "-inf"],
        "3": [1, 2.5],
        "None": {},
        "e": [],
    }
    assert text == _reference(doc)


def test_keys_of_one_text_merge_as_strict_json_made_them() -> None:
    """{'None': 1, None: 2} was written with two "None" keys; strict JSON (str keys) has one."""
    doc = {"None": 1, None: 2, 3: "x", "3": "y"}
    assert dumps(doc) == _reference(doc) == '{\n  "None": 2,\n  "3": "y"\n}'
