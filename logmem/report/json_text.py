"""The JSON reports' text: ``json.dumps(obj, indent=2)`` of strict JSON, written faster.

The standard library encodes at C speed only without ``indent``; with it, every value passes
through a chain of Python generators (``json.encoder._make_iterencode``), which was a third
of ``analyze -f json`` on a 4,096-rank launch. :func:`dumps` writes the same bytes with one
recursive function that appends to a list, and uses the C string encoder for every string.

It is byte-for-byte ``json.dumps(obj, indent=2, default=str, allow_nan=False)`` of ``obj``
made strict JSON as the reports have always done first (tests/test_json_text.py compares the
two on generated documents):

* NaN and the infinities, which strict JSON lacks and a log can print (server_args, hostile
  input), become the strings "nan", "inf" and "-inf";
* every key becomes ``str(key)`` (keys of one text merge, as in a dict); tuples are lists;
* any other object becomes ``str(obj)``, a string (``default=str``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from json.encoder import encode_basestring_ascii  # the C encoder where CPython has it
from typing import Any

_INDENT = "  "


def dumps(obj: Any) -> str:
    """``obj`` as indented strict JSON (no trailing newline), as the module docstring says."""
    out: list[str] = []
    _write(obj, "\n", out.append)
    return "".join(out)


def _scalar(o: Any) -> str | None:
    """A scalar's JSON, None for a container. isinstance in json.encoder's order: str
    subclasses are strings, bool before int, int and float subclasses are numbers written
    with the base type's repr; any other object is ``str(obj)`` (``default=str``)."""
    t = type(o)  # the exact types first: nearly every value is one of them
    if t is str:
        return encode_basestring_ascii(o)
    if t is dict or t is list or t is tuple:
        return None
    if t is int:
        return int.__repr__(o)
    if isinstance(o, str):
        return encode_basestring_ascii(o)
    if o is None:
        return "null"
    if o is True:
        return "true"
    if o is False:
        return "false"
    if isinstance(o, int):
        return int.__repr__(o)
    if isinstance(o, float):
        return float.__repr__(o) if math.isfinite(o) else encode_basestring_ascii(str(o))
    if isinstance(o, (dict, list, tuple)):
        return None
    return encode_basestring_ascii(str(o))


def _write(o: Any, nl: str, put: Callable[[str], None]) -> None:
    """Append ``o``'s JSON; ``nl`` is the newline and indentation of ``o``'s own line. A key,
    its separator and a scalar value go out as one string: a 4,096-rank report is about three
    million values, and one list entry each is what the document costs in memory until joined."""
    text = _scalar(o)
    if text is not None:
        put(text)
    elif not o:
        put("{}" if isinstance(o, dict) else "[]")
    elif isinstance(o, dict):
        if not all(type(k) is str for k in o):
            # Keys that are not strings become str(key) first, as strict JSON made them: two
            # keys of one text ("None" and None) are then one, at the first's place with the
            # last's value.
            o = {str(k): v for k, v in o.items()}
        inner = nl + _INDENT
        sep = "{" + inner
        for k, v in o.items():
            head = sep + encode_basestring_ascii(str(k)) + ": "
            text = _scalar(v)
            if text is not None:
                put(head + text)
            else:
                put(head)
                _write(v, inner, put)
            sep = "," + inner
        put(nl + "}")
    else:
        inner = nl + _INDENT
        sep = "[" + inner
        for v in o:
            text = _scalar(v)
            if text is not None:
                put(sep + text)
            else:
                put(sep)
                _write(v, inner, put)
            sep = "," + inner
        put(nl + "]")
