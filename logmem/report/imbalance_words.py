"""The sentence of the rank-imbalance finding (logmem.analysis.imbalance): who has the most and
the least free memory before loading, what the gap costs every rank's KV pool, and where it
opens (distributed init, or before SGLang started; a split by TP-rank parity)."""

from __future__ import annotations

import logmem.analysis.findings as fd
from logmem.report.finding_base import finding_text
from logmem.report.finding_base import g as _g


@finding_text.register
def _(f: fd.Imbalance) -> str:
    names = [f.binding_rank or "one rank", *f.tied_ranks]
    others = (
        ", ".join(f.tied_ranks) if len(f.tied_ranks) <= 2 else f"{len(f.tied_ranks)} other ranks"
    )
    least = names[0] if len(names) == 1 else f"{names[0]} and {others}"
    text = (
        f"Ranks differ by {_g(f.gap_bytes)} GiB of free memory before loading"
        + (f" ({f.richest_rank} the most, {least} the least)" if f.richest_rank else "")
        + "; SGLang sizes every rank's KV pool from the least"
    )
    if f.kv_tokens:
        at = (
            f": {_g(f.loss_bytes or 0)} GiB at SGLang's sizing cell of {f.sizing_cell:,.0f} bytes "
            "per token"
            if f.sizing_cell
            else f", at {f.shared_price:,.0f} bytes per token with the other pools' share"
            if f.shared_price
            else ""
        )
        text += (
            f": each pool is about {f.kv_tokens:,} tokens smaller than if every rank had "
            f"{f.richest_rank or 'the most'}'s (mem_fraction_static x the gap{at})"
        )
        if f.tied_ranks:
            has = "has" if len(f.tied_ranks) == 1 else "have"
            text += (
                f"; freeing memory on {f.binding_rank} alone gains nothing: "
                f"{others} {has} as little"
            )
    if f.init_usage_range is not None and f.before_init_gap_bytes is not None:
        lo, hi = f.init_usage_range
        before, gap = f.before_init_gap_bytes, f.gap_bytes
        init = f"distributed init (its mem usage is {_g(lo)} to {_g(hi)} GiB across ranks)"
        if before * 5 <= gap:
            text += f". The gap opens in {init}, not before SGLang started"
            if f.parity is not None:
                text += f", and follows TP-rank parity: {_parity(f.parity)}"
        elif before * 5 >= gap * 4 and f.parity is not None:
            text += (
                f". It is there at the first reading ({_g(before)} GiB apart before distributed "
                f"init) and follows TP-rank parity: {_parity(f.parity)}; a split that falls on "
                "every other device points at the devices or their runtime (e.g. one of each "
                "pair holding more), not at other processes on some of them"
            )
        elif before * 5 >= gap * 4:
            text += (
                f". It is there at the first reading ({_g(before)} GiB apart before distributed "
                "init): other processes on some GPUs, or GPUs of different sizes"
            )
        elif f.parity is not None:
            text += (
                f". {_g(before)} GiB of it is there at the first reading and the rest opens in "
                f"{init}; it follows TP-rank parity: {_parity(f.parity)}, which points at the "
                "devices or their runtime rather than at other processes"
            )
        else:
            text += (
                f". {_g(before)} GiB of it is there at the first reading (other processes, or "
                f"GPUs of different sizes); the rest opens in {init}"
            )
    elif f.parity is not None:
        text += f". It follows TP-rank parity: {_parity(f.parity)}"
    return text + "."


def _band(lo_hi: tuple[int, int]) -> str:
    lo, hi = lo_hi
    return f"{_g(lo)} GiB" if _g(lo) == _g(hi) else f"{_g(lo)}-{_g(hi)} GiB"


def _parity(p: fd.ParitySplit) -> str:
    return f"every even TP rank has {_band(p.even)} free, every odd one {_band(p.odd)}"
