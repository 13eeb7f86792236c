"""Ranks that start with different free memory: how far apart, where the gap opens, and
what it costs the KV pool (a finding; SGLang sizes every rank from the least, reference 12.2)."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from logmem.analysis.findings_kinds import FindingKind
from logmem.frozen import frozen
from logmem.sglang import rules

if TYPE_CHECKING:
    from logmem.analysis.attribution import LaunchLedger


@frozen
class Imbalance:
    kind: ClassVar[FindingKind] = FindingKind.IMBALANCE
    gap_bytes: int
    binding_rank: str | None
    # What the gap costs: every rank's pool is this many tokens smaller than if all ranks had
    # the most free memory (rules.imbalance_budget_loss_bytes over the budget's price).
    kv_tokens: int | None
    # The budget's bytes per token when other pools share it (SWA, Mamba): what kv_tokens is
    # priced at; None when the full pool's cell alone is the price.
    shared_price: float | None = None
    richest_rank: str | None = None  # the rank with the most free memory before loading
    # Ranks within print rounding of the least: raising one of them alone gains nothing.
    tied_ranks: tuple[str, ...] = ()
    # Distributed init's own spread (Init torch distributed mem usage, min and max over ranks)
    # and the spread of the readings before it: where the gap opens.
    init_usage_range: tuple[int, int] | None = None
    before_init_gap_bytes: int | None = None
    # kv_tokens priced at SGLang's sizing cell (LaunchLedger.imbalance_sizing_cell), with the
    # budget the gap costs (mfs x the gap): the tokens SGLang's sizing would have added.
    sizing_cell: float | None = None
    loss_bytes: int | None = None
    # The gap follows TP-rank parity: every even rank in one band, every odd one in another
    # (parity_split); None when it does not, or fewer than four ranks show it.
    parity: ParitySplit | None = None


@frozen
class ParitySplit:
    """Pre-load free memory that splits by TP-rank parity: (least, most) of each band."""

    even: tuple[int, int]
    odd: tuple[int, int]

    @property
    def lower(self) -> str:
        return "even" if self.even[1] < self.odd[0] else "odd"


def parity_split(readings: list[tuple[int, int]]) -> ParitySplit | None:
    """(TP rank, bytes) pairs whose even and odd ranks form two bands: the space between the
    bands is at least the wider band's span and beyond print rounding (036: 60.77-60.86 against
    61.04-61.09). Needs two ranks of each parity: a pattern of two ranks is no pattern."""
    even = [b for t, b in readings if t % 2 == 0]
    odd = [b for t, b in readings if t % 2 == 1]
    if len(even) < 2 or len(odd) < 2:
        return None
    e, o = (min(even), max(even)), (min(odd), max(odd))
    space = max(o[0] - e[1], e[0] - o[1])
    span = max(e[1] - e[0], o[1] - o[0])
    if space < rules.DIFFERENCE_RESOLUTION_BYTES or space < span:
        return None
    return ParitySplit(e, o)


def imbalance_finding(led: LaunchLedger, notable: int) -> Imbalance | None:
    """The finding when the ranks' pre-load readings differ by more than ``notable``."""
    if led.imbalance_bytes is None or led.imbalance_bytes <= notable:
        return None
    sz = led.sizing
    price = sz.budget_bytes_per_token if sz is not None else None
    shared = (
        price if sz and price and sz.full_cell_bytes and price > sz.full_cell_bytes + 0.5 else None
    )
    used = led.used.ranks  # the ranks in time order
    pre = [(e.avail.bytes, r.label) for r in used if (e := rules.pre_load_reading(r))]
    by_tp = [
        (tp, e.avail.bytes)
        for r in used
        if (e := rules.pre_load_reading(r)) and (tp := r.tag("TP")) is not None
    ]
    least = min(pre)[0]
    tied = tuple(
        label
        for b, label in sorted(pre, key=lambda x: x[1])
        if b - least < rules.PRINT_RESOLUTION_BYTES and label != led.binding_rank
    )
    labels = {r.label for r in used}
    inits = [p for rl in led.ranks if rl.rank in labels and (p := rl.phase("init")) is not None]
    usage = [p.delta_bytes for p in inits]
    before = [p.before_bytes for p in inits]
    return Imbalance(
        led.imbalance_bytes,
        led.binding_rank,
        led.imbalance_tokens or None,
        shared,
        max(pre)[1],
        tied,
        (min(usage), max(usage)) if len(inits) == len(pre) and len(inits) > 1 else None,
        max(before) - min(before) if len(inits) == len(pre) and len(inits) > 1 else None,
        led.imbalance_sizing_cell,
        rules.imbalance_budget_loss_bytes(led.imbalance_bytes, sz.rule_mfs)
        if sz is not None and led.imbalance_sizing_cell
        else None,
        parity_split(by_tp) if len(by_tp) == len(pre) else None,
    )
