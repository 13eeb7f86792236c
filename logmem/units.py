"""Units: SGLang's printed "GB" (really GiB) and friends <-> int bytes; the only place units are decided."""

from __future__ import annotations

from logmem.frozen import frozen

GIB = 1 << 30
MIB = 1 << 20
KIB = 1 << 10

_UNIT_BYTES = {
    "B": 1,
    "KiB": KIB,
    "MiB": MIB,
    "GiB": GIB,
    "TiB": GIB * 1024,
    # SGLang's "GB"/"MB" come from `bytes / (1 << 30)` / `(1 << 20)`: binary units.
    "GB": GIB,
    "MB": MIB,
    "KB": KIB,
}


@frozen
class Mem:
    """A memory figure as printed (``gib``, two decimals) and its value in bytes."""

    gib: float
    bytes: int

    @classmethod
    def parse(cls, number: str, unit: str = "GB") -> Mem:
        """Parse a printed number and unit ("GB" means GiB in SGLang logs)."""
        value = float(number)
        n_bytes = round(value * _UNIT_BYTES[unit])
        return cls(
            gib=round(n_bytes / GIB, 6) if unit not in ("GB", "GiB") else value, bytes=n_bytes
        )

    @classmethod
    def from_bytes(cls, n_bytes: int) -> Mem:
        return cls(gib=round(n_bytes / GIB, 6), bytes=n_bytes)


def gib(n_bytes: int | None, ndigits: int = 2) -> float | None:
    """Bytes -> GiB rounded to the printed precision; None stays None."""
    if n_bytes is None:
        return None
    value = round(n_bytes / GIB, ndigits)
    return 0.0 if value == 0 else value  # no "-0.0" in reports


def gib_to_bytes(value: float) -> int:
    return round(value * GIB)


def format_gib(n_bytes: int | None, signed: bool = False, unknown: str = "?") -> str:
    """Render bytes as GiB with two decimals, the way SGLang prints readings."""
    if n_bytes is None:
        return unknown
    value = gib(n_bytes)
    assert value is not None
    return f"{value:+.2f}" if signed else f"{value:.2f}"
