"""server_args across launches: which keys differ, which touch memory, which block a slope.

``compare_args`` sorts every key two or more launches print into changed (memory-relevant),
ignored (rules.memory_neutral_arg: names, paths, seeds, logging), one-sided (printed by only some launches: another SGLang version),
varied (the CUDA-graph batch sizes a slope is fitted over) and confounders (anything else
memory-relevant that ``--allow-diff`` does not name).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from logmem.frozen import frozen
from logmem.model.records import Launch
from logmem.sglang import rules

# The varied setting of a slope pair and the lists SGLang derives from it (the dump
# shows values after __post_init__, so a new max bs also rewrites these).
GRAPH_SIZE_ARGS: frozenset[str] = frozenset(
    {
        "cuda_graph_max_bs",
        "cuda_graph_bs",
        "cuda_graph_config",
        "cuda_graph_max_bs_decode",
        "cuda_graph_bs_decode",
        "cuda_graph_max_bs_prefill",
        "cuda_graph_bs_prefill",
        "piecewise_cuda_graph_tokens",
        "piecewise_cuda_graph_max_tokens",
    }
)


# The keys a slope refusal names first, whatever order server_args prints them in: the
# parallel sizes, then what sizes the KV pool and the weights (the others keep their order).
FIRST_CONFOUNDERS: tuple[str, ...] = (
    "tp_size",
    "dp_size",
    "ep_size",
    "pp_size",
    "mem_fraction_static",
    "dtype",
    "kv_cache_dtype",
    "quantization",
)


@frozen
class ArgChange:
    key: str
    values: tuple[Any, ...]  # one per launch; None where the key is absent


@frozen
class ArgsComparison:
    changed: tuple[
        ArgChange, ...
    ]  # memory-relevant keys every launch prints, with differing values
    ignored: tuple[ArgChange, ...]  # the same, keys rules.memory_neutral_arg calls neutral
    varied: tuple[str, ...]  # changed (or one-sided) keys in GRAPH_SIZE_ARGS
    confounders: tuple[str, ...]  # other memory-relevant differences not named by --allow-diff
    allowed: tuple[str, ...]  # differing keys that --allow-diff named
    missing: tuple[str, ...]  # labels of launches without a server_args line
    # Keys some launches do not print at all (another SGLang version): label -> the keys it prints
    # that another launch does not ("only in A" for two), and the same as rows (None where absent).
    only_in: tuple[tuple[str, tuple[str, ...]], ...] = ()
    one_sided: tuple[ArgChange, ...] = ()
    # Differing keys that are not confounders by a rule (compare.mfs_aside: mem_fraction_static
    # where no capture list was cut to the request pool).
    set_aside: tuple[str, ...] = ()
    # One-sided keys that cannot change GPU memory (rules.memory_neutral_arg): never offered
    # as a cause, so the report lists them with the ignored keys, not beside the table.
    ignored_one_sided: tuple[str, ...] = ()
    # Labels of launches whose server_args line its author elided with '...'
    # (ev.ServerArgs.elided): the keys it lacks are unknown there, not another version's.
    elided: tuple[str, ...] = ()


_ABSENT = object()


def compare_args(
    launches: Sequence[Launch], labels: Sequence[str], allow: Sequence[str] = ()
) -> ArgsComparison:
    dumps = [L.args if L.server_args is not None else None for L in launches]
    missing = tuple(lab for lab, d in zip(labels, dumps) if d is None)
    present = [d for d in dumps if d is not None]
    keys: list[str] = []
    for d in present:
        keys.extend(k for k in d if k not in keys)
    changed: list[ArgChange] = []
    ignored: list[ArgChange] = []
    one_sided: list[ArgChange] = []
    for k in keys:
        vals = [d.get(k, _ABSENT) for d in present]
        if all(v == vals[0] for v in vals[1:]):
            continue
        row = ArgChange(k, tuple(None if v is _ABSENT else v for v in vals))
        if any(v is _ABSENT for v in vals):
            one_sided.append(row)
        else:
            (ignored if rules.memory_neutral_arg(k) else changed).append(row)
    present_labels = [lab for lab, d in zip(labels, dumps) if d is not None]
    only_in = tuple(
        (lab, keys_only)
        for i, lab in enumerate(present_labels)
        if (keys_only := tuple(c.key for c in one_sided if c.key in present[i]))
    )
    # A memory-relevant key only some launches print (another SGLang version) also stands in
    # the way of a slope: its value on the others is unknown.
    relevant = [c for c in changed] + [c for c in one_sided if not rules.memory_neutral_arg(c.key)]
    varied = tuple(c.key for c in relevant if c.key in GRAPH_SIZE_ARGS)
    others = [c.key for c in relevant if c.key not in GRAPH_SIZE_ARGS]
    allowed = tuple(k for k in others if k in allow)
    confounders = tuple(k for k in others if k not in allow)
    return ArgsComparison(
        tuple(changed),
        tuple(ignored),
        varied,
        confounders,
        allowed,
        missing,
        only_in,
        tuple(one_sided),
        ignored_one_sided=tuple(c.key for c in one_sided if rules.memory_neutral_arg(c.key)),
        elided=tuple(
            lab for lab, L in zip(labels, launches) if L.server_args and L.server_args.elided
        ),
    )


def _fmt_value(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 40 else text[:37] + "..."


def key_list(keys: Sequence[str], n: int = 12) -> str:
    """'a, b, c' or 'a, b and 38 more': a list of keys that stays short."""
    if len(keys) <= n:
        return ", ".join(keys)
    return f"{', '.join(keys[:n])} and {len(keys) - n} more"


def confounder_parts(cmp: ArgsComparison, limit: int = 8) -> list[str]:
    """The confounding keys, briefly: 'mfs (0.85 vs 0.83)' (FIRST_CONFOUNDERS first), then
    'only in A: ...'."""
    parts = []
    differ = sorted(
        (c for c in cmp.changed if c.key in cmp.confounders),
        key=lambda c: FIRST_CONFOUNDERS.index(c.key) if c.key in FIRST_CONFOUNDERS else 99,
    )
    for c in differ[:limit]:
        vals = " vs ".join(f"{_fmt_value(v)}" for v in c.values)
        parts.append(f"{c.key} ({vals})")
    if len(differ) > limit:
        parts.append(f"{len(differ) - limit} more keys with other values")
    for lab, keys in cmp.only_in:
        mine = [k for k in keys if k in cmp.confounders]
        if mine:
            who = f"launch {lab}" if lab.isdigit() else lab
            parts.append(
                f"{len(mine)} key{'s' if len(mine) > 1 else ''} only {who} prints: {key_list(mine, limit)}"
            )
    return parts


def confounder_message(cmp: ArgsComparison, labels: Sequence[str], mfs_hint: bool = False) -> str:
    """fit's refusal; ``mfs_hint`` (slope.mfs_hint): advise passing --mem-fraction-static."""
    hint = ""
    if mfs_hint:
        hint = (
            "; SGLang derives its default mem_fraction_static from cuda_graph_max_bs, so pass "
            "--mem-fraction-static explicitly to "
            + ("both launches" if len(labels) == 2 else "every launch")
        )
    return (
        f"the launches differ in more than the CUDA-graph batch sizes: {'; '.join(confounder_parts(cmp))}. "
        f"A slope would mix their effects{hint}. Name each with --allow-diff KEY to fit anyway"
    )


def graph_max_bs(args: Mapping[str, Any]) -> int | None:
    """The decode graph's max bs as resolved, under any era's name (rules.decode_max_bs)."""
    return rules.decode_max_bs(args)
