"""Public Python API over analyses: diff, fit and what-if of whole Analyses, and plots.

logmem.fit compares launches (with a LaunchRef saying which input each came from);
these functions take what ``logmem.read_log`` returns, pick the launch, and wrap the
result in a :class:`Comparison` that renders itself (text, Markdown, JSON, HTML) and
shows as Markdown in a notebook. Nothing here is imported by the CLI.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from logmem.errors import SelectionError

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from logmem.analysis import Analysis
    from logmem.fit import LaunchRef
    from logmem.ledger import Launch


@dataclass(frozen=True)
class Comparison:
    """A diff, fit or what-if: ``model`` is logmem.fit's Diff, Fit or WhatIf."""

    kind: str  # "diff" | "fit" | "whatif"
    model: Any

    def to_json(self) -> dict[str, Any]:
        """The versioned view model (schema logmem.diff/1, logmem.fit/1, logmem.whatif/1)."""
        from logmem.report.compare import to_json

        out: dict[str, Any] = to_json(self.model)
        return out

    def render(self, fmt: str = "text") -> str:
        """text, markdown, json or html."""
        if fmt == "html":
            from logmem.report.html import render_compare_html

            return render_compare_html(self.to_json(), self.kind)
        from logmem.report.compare import render

        out: str = render(self.model, fmt)
        return out

    def __str__(self) -> str:
        return self.render("text")

    def _repr_markdown_(self) -> str:  # Jupyter shows this
        return self.render("markdown")


def _pick(a: Analysis, launch: int | None, label: str) -> tuple[Launch, LaunchRef]:
    from logmem.fit import LaunchRef

    n = len(a.launches)
    if launch is None:
        if n != 1:
            raise SelectionError(f"{label} holds {n} launches; pass launch=N (0 to {n - 1})")
        launch = 0
    if not 0 <= launch < n:
        raise SelectionError(
            f"launch={launch}: {label} holds {n} launch(es), numbered 0 to {n - 1}"
        )
    return a.launches[launch], LaunchRef(label, a.paths, launch)


def diff(a: Analysis, b: Analysis, *, launch: int | None = None, launch_b: int | None = None,
         allow: Sequence[str] = (), slope: bool = True) -> Comparison:  # fmt: skip
    """What changed from ``a`` to ``b`` (as ``logmem diff A B``). It always compares; the
    slope is left out (and the reason given) when other memory-relevant settings differ
    too, unless ``allow`` names them; ``slope=False`` skips it."""
    from logmem.fit import diff as compare

    la, ra = _pick(a, launch, "A")
    lb, rb = _pick(b, launch if launch_b is None else launch_b, "B")
    return Comparison("diff", compare(la, ra, lb, rb, tuple(allow), slope=slope))


def fit(*analyses: Analysis, launch: int | None = None, allow: Sequence[str] = ()) -> Comparison:
    """Graph memory per row by least squares over two or more launches (as ``logmem fit``)."""
    from logmem.fit import fit as fit_launches

    picked = [_pick(x, launch, str(i + 1)) for i, x in enumerate(analyses)]
    return Comparison(
        "fit", fit_launches([L for L, _ in picked], [r for _, r in picked], tuple(allow))
    )


def whatif(a: Analysis, *, launch: int | None = None, mem_fraction_static: float | None = None,
           cuda_graph_max_bs: int | None = None, mib_per_row: float | None = None,
           static_mib_per_row: float | None = None, activation_reserve_gib: float = 0.0,
           context_length: int | None = None) -> Comparison:  # fmt: skip
    """SGLang's KV rule replayed at other settings (as ``logmem whatif``)."""
    from logmem.fit import GraphSlope
    from logmem.fit import whatif as predict
    from logmem.units import gib_to_bytes

    L, ref = _pick(a, launch, "LOG")
    slope = None
    if mib_per_row is not None:
        slope = GraphSlope(mib_per_row, static_mib_per_row, f"given: mib_per_row={mib_per_row:g}")
    model = predict(L, ref, mem_fraction_static, cuda_graph_max_bs, slope,
                    gib_to_bytes(activation_reserve_gib), context_length)  # fmt: skip
    return Comparison("whatif", model)


def plot(source: Analysis | Comparison, kind: str = "waterfall", *, rank: str | Sequence[str] | None = None,
         launch: int = 0) -> Figure:  # fmt: skip
    """One figure as a matplotlib Figure (object API; no pyplot state).

    ``kind``: "waterfall" (the named ranks, default the one that printed capture bars),
    "buckets", "ranks" for an Analysis; "fit" for a diff or fit Comparison.
    """
    from logmem.attribution import build_ledger
    from logmem.report import plots
    from logmem.report.model import main_rank

    if isinstance(source, Comparison):
        if kind != "fit":
            raise ValueError(f"a {source.kind} plots as kind='fit', not {kind!r}")
        return plots.draw("fit", plots.fit_data(source.to_json()))
    if kind == "fit":
        raise ValueError("kind='fit' plots logmem.diff(...) or logmem.fit(...), not an Analysis")
    if not 0 <= launch < len(source.launches):
        raise SelectionError(
            f"launch={launch}: the analysis holds {len(source.launches)} launch(es)"
        )
    L = source.launches[launch]
    led = build_ledger(L)
    if kind == "ranks":
        return plots.draw("ranks", plots.ranks_data(led))
    if rank is None:
        main = main_rank(L)
        wanted = [main.label] if main is not None else []
    else:
        wanted = [rank] if isinstance(rank, str) else list(rank)
    chosen = [r for r in led.ranks if r.rank in wanted]
    missing = [w for w in wanted if led.rank(w) is None]
    if missing:
        raise SelectionError(
            f"rank {missing[0]!r} is not in the launch; ranks: {', '.join(r.rank for r in led.ranks)}"
        )
    if kind == "waterfall":
        return plots.draw("waterfall", [plots.waterfall_data(r) for r in chosen])
    if kind == "buckets":
        return plots.draw("buckets", [f for r in chosen for f in plots.buckets_data(r)])
    raise ValueError(f"unknown plot kind {kind!r}; one of {', '.join(plots.KINDS)}")
