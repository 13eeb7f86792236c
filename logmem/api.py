"""Public Python API over analyses: diff, fit and what-if of whole Analyses, and plots.

logmem.compare.core compares launches (with a LaunchRef saying which input each came from);
these functions take what ``logmem.read_log`` returns, pick the launch, and wrap the
result in a :class:`Comparison` that renders itself (text, Markdown, JSON, HTML) and
shows as Markdown in a notebook. Nothing here is imported by the CLI.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from logmem.errors import NoStartupError, SelectionError
from logmem.model.analysis import Analysis
from logmem.model.launch import build_launches
from logmem.parse import events as ev
from logmem.parse.match import iter_segment_events
from logmem.parse.patterns import KEYWORD_BYTES
from logmem.parse.read import ReadStats, read_segments
from logmem.parse.unmatched import UnmatchedCounter, UnmatchedSink

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from logmem.compare.core import LaunchRef
    from logmem.model.launch import Launch


def collect_events(
    paths: Sequence[str],
    stats: list[ReadStats] | None = None,
    unmatched: UnmatchedSink | None = None,
) -> list[ev.Event]:
    return list(iter_segment_events(read_segments(paths, KEYWORD_BYTES, stats), unmatched))


def read_log(*paths: str, require_startup: bool = True) -> Analysis:
    """Read SGLang logs (paths, or "-" for stdin) into an :class:`Analysis`.

    Several paths are one launch split across files (one per rank, or rotated parts);
    a file with two start-ups gives two launches. Raises NoStartupError when nothing
    SGLang printed about start-up is found, InputError when a file cannot be read.
    """
    stats: list[ReadStats] = []
    unmatched = UnmatchedCounter()
    events = collect_events(paths, stats, unmatched)
    launches = build_launches(events)
    if require_startup and not any(L.ranks or L.server_args for L in launches):
        raise NoStartupError(list(paths))
    return Analysis(tuple(paths), launches, unmatched.summary(), tuple(stats))


def select(analysis: Analysis, launch: int | None = None, ranks: Sequence[str] = ()) -> Analysis:
    """Keep one launch and/or some ranks; unknown names are an error that lists what exists."""
    from dataclasses import replace

    launches = analysis.launches
    if launch is not None:
        if not 0 <= launch < len(launches):
            raise SelectionError(
                f"--launch {launch}: the input holds {len(launches)} launch(es), numbered 0 to {len(launches) - 1}"
            )
        launches = (launches[launch],)
    if ranks:
        known = {r.label for L in launches for r in L.ranks}
        missing = [r for r in ranks if r not in known]
        if missing:
            shown = ", ".join(repr(k) for k in sorted(known)) or "none"
            raise SelectionError(f"--rank {missing[0]!r} is not in the log; ranks seen: {shown}")
        launches = tuple(
            replace(L, ranks=tuple(r for r in L.ranks if r.label in ranks)) for L in launches
        )
    return replace(analysis, launches=launches)


@dataclass(frozen=True)
class Comparison:
    """A diff, fit or what-if: ``model`` is logmem.compare.core's Diff, Fit or WhatIf."""

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
    from logmem.compare.core import LaunchRef

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


def diff(
    a: Analysis,
    b: Analysis,
    *,
    launch: int | None = None,
    launch_b: int | None = None,
    allow: Sequence[str] = (),
    slope: bool = True,
) -> Comparison:
    """What changed from ``a`` to ``b`` (as ``logmem diff A B``). It always compares; the
    slope is left out (and the reason given) when other memory-relevant settings differ
    too, unless ``allow`` names them; ``slope=False`` skips it."""
    from logmem.compare.core import diff as compare

    la, ra = _pick(a, launch, "A")
    lb, rb = _pick(b, launch if launch_b is None else launch_b, "B")
    return Comparison("diff", compare(la, ra, lb, rb, tuple(allow), slope=slope))


def fit(*analyses: Analysis, launch: int | None = None, allow: Sequence[str] = ()) -> Comparison:
    """Graph memory per row by least squares over two or more launches (as ``logmem fit``)."""
    from logmem.compare.core import fit as fit_launches

    picked = [_pick(x, launch, str(i + 1)) for i, x in enumerate(analyses)]
    return Comparison(
        "fit", fit_launches([L for L, _ in picked], [r for _, r in picked], tuple(allow))
    )


def whatif(
    a: Analysis,
    *,
    launch: int | None = None,
    mem_fraction_static: float | None = None,
    cuda_graph_max_bs: int | None = None,
    mib_per_row: float | None = None,
    static_mib_per_row: float | None = None,
    activation_reserve_gib: float = 0.0,
    context_length: int | None = None,
) -> Comparison:
    """SGLang's KV rule replayed at other settings (as ``logmem whatif``)."""
    from logmem.compare.core import GraphSlope
    from logmem.compare.core import whatif as predict
    from logmem.units import gib_to_bytes

    L, ref = _pick(a, launch, "LOG")
    slope = None
    if mib_per_row is not None:
        slope = GraphSlope(mib_per_row, static_mib_per_row, f"given: mib_per_row={mib_per_row:g}")
    model = predict(
        L,
        ref,
        mem_fraction_static,
        cuda_graph_max_bs,
        slope,
        gib_to_bytes(activation_reserve_gib),
        context_length,
    )
    return Comparison("whatif", model)


def plot(
    source: Analysis | Comparison,
    kind: str = "waterfall",
    *,
    rank: str | Sequence[str] | None = None,
    launch: int = 0,
) -> Figure:
    """One figure as a matplotlib Figure (object API; no pyplot state).

    ``kind``: "waterfall" (the named ranks, default the one that printed capture bars),
    "buckets", "ranks" for an Analysis; "fit" for a diff or fit Comparison.
    """
    from logmem.analysis.attribution import build_ledger
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
