"""Words for what a capture OOM's lower-mfs fix covers (fx.CaptureRest) and for another launch
of the same input that came up (capture_rest.PeerUp)."""

from __future__ import annotations

import logmem.analysis.failures.facts as fx
from logmem.analysis.failures.budget import fmt_mfs
from logmem.analysis.failures.capture_rest import PeerUp
from logmem.units import GIB


def _g(n: float | None) -> str:
    return "?" if n is None else f"{n / GIB:.2f}"


def _buckets(n: int) -> str:
    return f"{n} bucket{'s' if n != 1 else ''}"


def rest_text(e: fx.LowerMfs) -> str:
    """The clause after 'stays outside the KV pool for the capture': what the need holds and
    what it leaves out."""
    rest = e.rest
    if rest is None:
        return ""
    after = f"after {rest.unit} {rest.failed}"
    serving = "; activations once serving are not in it"
    if rest.remaining == 0:
        return f" ({rest.unit} {rest.failed} was the last bucket{serving})"
    if rest.rest_bytes is not None and rest.remaining is not None:
        short = e.need_bytes - rest.rest_bytes
        return (
            f"; the {_g(e.need_bytes)} GiB is the {_g(short)} GiB shortfall plus "
            f"{_g(rest.rest_bytes)} GiB for the {_buckets(rest.remaining)} still to capture {after} "
            f"({rest.remaining} x {_g(rest.per_bucket_bytes)} GiB, the mean of the "
            f"{_buckets(rest.measured)} after the largest that the bars measured; one shared graph "
            f"pool assumed){serving}"
        )
    left = (
        f"the {_buckets(rest.remaining)} still to capture {after}"
        if rest.remaining is not None
        else f"the buckets still to capture {after} (the list is not printed)"
    )
    return (
        f"; that is the minimum for this one allocation, not a working value: {left} are not "
        "priced by the readings (no bucket after the largest is measured), nor are activations "
        "once serving"
    )


def peer_text(p: PeerUp) -> str:
    """Launch N of this input came up at another mem_fraction_static: cite its value and readings."""
    free = (
        f" with {_g(p.free_after_bytes)} GiB free after its capture (line {p.free_line})"
        if p.free_after_bytes is not None
        else ""
    )
    head = (
        f"Launch {p.index} of this input, with the same server_args but --mem-fraction-static "
        f"{fmt_mfs(p.mfs)}, came up{free}: a value shown to work."
    )
    if p.rest_bytes is None or p.rest_lines is None:
        return head
    a, b = p.rest_lines
    tail = (
        f" Its {_buckets(p.remaining)} after {p.unit} {p.failed} took {_g(p.rest_bytes)} GiB "
        f"(lines {a}-{b}, the bar before the next bucket to the capture's end)"
    )
    if p.covers is None or p.covers.value is None:
        return head + tail + "."
    return (
        head + tail + f": covering the shortfall and them takes at least --mem-fraction-static "
        f"{p.covers.value} here, with nothing left for activations once serving."
    )
