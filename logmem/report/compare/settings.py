"""The settings block of diff and fit: server_args values as a table cell shows them, the keys
one launch does not print, and the keys ignored as settings (split from layout.py)."""

from __future__ import annotations

import json
from typing import Any

from logmem.compare.args import key_list
from logmem.report.compare.out import Out
from logmem.report.compare.view import ArgsView


def arg_value(v: Any) -> str:
    if isinstance(v, list) and len(v) > 6 and all(isinstance(x, int) for x in v):
        return (
            f"[{v[0]}, {v[1]}, ..., {v[-1]}] ({len(v)})"  # a bs list: its ends and length tell it
        )
    text = json.dumps(v) if not isinstance(v, str) else repr(v)
    return text if len(text) <= 36 else text[:33] + "..."


def _flat(v: Any, pre: str = "") -> dict[str, Any]:
    if not isinstance(v, dict):
        return {pre: v}
    out: dict[str, Any] = {}
    for k, x in v.items():
        out.update(_flat(x, f"{pre}.{k}" if pre else str(k)))
    return out


def arg_values(values: tuple[Any, ...]) -> list[str]:
    """Each launch's value of one key; dicts (cuda_graph_config) by the first sub-key that
    differs, so a shared prefix does not hide the difference."""
    if len(values) < 2 or not all(isinstance(v, dict) for v in values):
        return [arg_value(v) for v in values]
    flats = [_flat(v) for v in values]
    keys = list(dict.fromkeys(k for f in flats for k in f))
    differ = [k for k in keys if len({json.dumps(f.get(k), sort_keys=True) for f in flats}) > 1]
    if not differ:
        return [arg_value(v) for v in values]
    more = ", ..." if len(differ) > 1 else ""
    return [f"{differ[0]} {arg_value(f.get(differ[0]))}{more}" for f in flats]


def relevant_only_in(args: ArgsView) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The keys only some launches print, less those that cannot change GPU memory (they go on
    the "Ignored" line instead: never offered as a cause)."""
    out = []
    for lab, keys in args.only_in:
        mine = tuple(k for k in keys if k not in args.ignored_one_sided)
        if mine:
            out.append((lab, mine))
    return tuple(out)


def only_in_text(args: ArgsView) -> str:
    """'Only in A: x, y; only in B: z.' for keys one launch does not print (another version)."""
    parts = [
        f"only in {'launch ' if lab.isdigit() else ''}{lab} ({len(keys)}): {key_list(keys)}"
        for lab, keys in relevant_only_in(args)
    ]
    if not parts:
        return ""
    text = "; ".join(parts)
    if args.elided:
        who = " and ".join(f"launch {x}" if x.isdigit() else x for x in args.elided)
        why = (
            f"{who}'s server_args line is elided by its author ('...'): a key it leaves out is "
            "unknown there, not SGLang's default."
        )
    else:
        why = "A key one launch does not print means another SGLang version, or a trimmed server_args line."
    return f"{text[0].upper()}{text[1:]}. {why}"


def arg_tag(key: str, args: ArgsView) -> str:
    if key in args.set_aside:
        return "KV pool only (Notes)"
    return "varied" if key in args.varied else ("allowed" if key in args.allowed else "")


def diff_args(args: ArgsView, o: Out) -> None:
    """diff's settings table (under its heading) and the lines about keys beside it."""
    if args.changed:
        rows = [[r.key, *arg_values(r.values[:2]), arg_tag(r.key, args)] for r in args.changed]
        o.table(["server_args key", "A", "B", "note"], rows, left=4)
    elif args.missing:
        o.para(f"Cannot tell: no server_args line in {' and '.join(args.missing)}.")
    elif relevant_only_in(args):
        o.para("None among the keys both launches print.")
    else:
        o.para("None.")
    if relevant_only_in(args):
        o.para(only_in_text(args))
    ignored_text(args, o)


def ignored_text(args: ArgsView, o: Out) -> None:
    """The keys that cannot change GPU memory (rules.memory_neutral_arg), on one line: those
    with other values, then those only one launch prints."""
    parts = [f"{r.key} {arg_value(r.values[0])} -> {arg_value(r.values[1])}" for r in args.ignored]
    for lab, keys in args.only_in:
        mine = [k for k in keys if k in args.ignored_one_sided]
        if mine:
            who = f"launch {lab}" if lab.isdigit() else lab
            parts.append(f"only {who} prints {key_list(mine)}")
    if parts:
        o.para(
            "Ignored (names, paths, seeds: not memory settings; the model is compared "
            f"by its weights line): {'; '.join(parts)}."
        )
