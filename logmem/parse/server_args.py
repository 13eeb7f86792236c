"""The server_args dump (repr or dict form) read with ast, never eval.

SGLang prints ``server_args=ServerArgs(...)`` (until about Aug 2026) or a dict. Values that
are not literals (enums, torch dtypes) keep their source text; a line cut by a log shipper
or elided by an author still yields its plain key=value pairs.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Mapping
from typing import Any, TypeGuard

import regex

from logmem.parse.lazy import lazy


def _clean_text(value: Any) -> Any:
    """Strings with escaped surrogates ('\\ud800') made whole: pairs joined, lone ones U+FFFD.
    A lone surrogate cannot be encoded, so every report writing it would fail."""
    if isinstance(value, str):
        if not any("\ud800" <= c <= "\udfff" for c in value):
            return value
        return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    if isinstance(value, dict):
        return {_clean_text(k): _clean_text(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_clean_text(v) for v in value)
    return value


def parse_server_args(body: str) -> tuple[dict[str, Any], str, str | None]:
    """Parse the server_args dump with ast (never eval): repr form or dict form."""
    args, form, error = _parse_server_args(body)
    return _clean_text(args), form, error


def _parse_server_args(body: str) -> tuple[dict[str, Any], str, str | None]:
    body = body.strip()
    form = "dict" if body.startswith("{") else "repr"
    try:
        tree = ast.parse(body, mode="eval").body
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        partial = _partial_args(body)
        why = (
            ELIDED_SERVER_ARGS
            if _ELISION.search(body)
            else "the server_args line is cut, elided or malformed"
        )
        n = len(partial)
        return (
            partial,
            form,
            (f"{why}; {n} plain value{'s were' if n != 1 else ' was'} read from it" if n else why),
        )
    try:
        if isinstance(tree, ast.Dict):
            return (
                {
                    str(ast.literal_eval(k)): _literal(v)
                    for k, v in zip(tree.keys, tree.values)
                    if k is not None
                },
                form,
                None,
            )
        if isinstance(tree, ast.Call):
            return _call_kwargs(tree), form, None
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return {}, form, "the server_args line holds values that are not literals"
    return {}, form, "the server_args line is neither ServerArgs(...) nor a dict"


ELIDED_SERVER_ARGS = "the server_args line is elided by its author ('...')"
"""The error of a dump whose author replaced arguments with '...' (017: ServerArgs(model_path=
'Qwen/Qwen3-8B', ...)): the values left out were never in the log."""

# An author's '...' in place of arguments: after '(' or ',' and before ',' or the closing bracket.
_ELISION = lazy(r"[(,{]\s{0,8}\.\.\.\s{0,8}[,)}]", regex.ASCII)

_PAIR = lazy(
    r"(?<![\w.'\"])'?([a-z_][a-z0-9_]{0,60})'?(?:=|: )"
    r"('(?:[^'\\\n]|\\.){0,2000}'|-?[0-9]{1,20}(?:\.[0-9]{1,20})?(?:e-?[0-9]{1,3})?|True|False|None)"
    r"(?=[,)}\s]|$)",
    regex.ASCII,
)


def _partial_args(body: str) -> dict[str, Any]:
    """The plain key=value pairs of a server_args line that ast cannot parse whole (an author's
    '...' elision, a shipper's cut): enough for model_path, tp_size, mem_fraction_static."""
    out: dict[str, Any] = {}
    for m in _PAIR.finditer(body):
        try:
            out.setdefault(m.group(1), ast.literal_eval(m.group(2)))
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            continue
    return out


def _literal(node: ast.expr) -> Any:
    if _is_config_call(node):
        return _call_kwargs(node)
    try:
        return ast.literal_eval(node)
    except ValueError:
        # An enum, a torch.dtype or any other expression: keep its text, never run it.
        return ast.unparse(node)


def _is_config_call(node: ast.expr) -> TypeGuard[ast.Call]:
    """A nested dataclass repr such as CudaGraphConfig(decode=PhaseConfig(...)): a plain
    (dotted) name called with keyword arguments only."""
    if not isinstance(node, ast.Call) or node.args:
        return False
    func = node.func
    while isinstance(func, ast.Attribute):
        func = func.value
    return isinstance(func, ast.Name)


def _call_kwargs(call: ast.Call) -> dict[str, Any]:
    return {kw.arg: _literal(kw.value) for kw in call.keywords if kw.arg is not None}


def arg_number(args: Mapping[str, Any], key: str, lo: float, hi: float) -> float | None:
    """A numeric server_args value in a sane range (logs are untrusted: no bools, inf or 1e999)."""
    v = args.get(key)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    try:
        f = float(v)
    except OverflowError:
        return None
    return f if math.isfinite(f) and lo <= f <= hi else None
