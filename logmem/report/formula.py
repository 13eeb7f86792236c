"""SGLang's KV rule as reports write it out with a launch's numbers (one place, so every
sentence that quotes the rule spells it the same way; the rule itself is
logmem.sglang.rules.kv_budget_bytes)."""

from __future__ import annotations

from logmem.units import format_gib


def kv_rule_text(
    after_bytes: int | None, pre_bytes: int | None, mfs: str, rest_bytes: int | None
) -> str:
    """'A - P x (1 - mfs) = rest GiB', readings in GiB with two decimals; `mfs` as the caller
    writes it (with SGLang's own factor, e.g. '0.88 x 0.95')."""
    return (
        f"{format_gib(after_bytes)} - {format_gib(pre_bytes)} x (1 - {mfs}) = "
        f"{format_gib(rest_bytes)} GiB"
    )
