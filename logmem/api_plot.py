"""How ``logmem.plot`` and ``logmem.plot_svg`` (logmem.api) get their figure: the source read
or the comparison taken, the launch and ranks picked, the figure laid out (report.figures.plots) and
the notes on inputs read in part written along its foot. Kept apart from logmem.api, whose
functions it calls when it runs (imported then, so neither module imports the other on load).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from logmem.model.analysis import Analysis

if TYPE_CHECKING:
    from logmem.api import Comparison, Source
    from logmem.report.figures.scene import Scene


def plot_scene(
    source: Source | Comparison | Sequence[Source],
    kind: str,
    rank: str | Sequence[str] | None,
    launch: int | None,
) -> Scene:
    """The layout of one figure (report.figures.scene), with the notes on inputs read in part."""
    from logmem.api import Comparison, fit, read_log
    from logmem.report.figures import plots
    from logmem.report.input_notes import launch_refs, note_scene, ref_notes, stop_sentences

    if kind not in plots.KINDS:
        raise ValueError(f"unknown plot kind {kind!r}; one of {', '.join(plots.KINDS)}")
    if isinstance(source, Comparison):
        if kind != "fit":
            raise ValueError(f"a {source.kind} plots as kind='fit', not {kind!r}")
        scene = plots.scene("fit", plots.fit_data(source.to_json()))
        return note_scene(scene, ref_notes(launch_refs(source.model)))
    if kind == "fit":
        if isinstance(source, (Analysis, str, os.PathLike)) or len(source) < 2:
            raise ValueError(
                "kind='fit' plots logmem.diff(...) or logmem.fit(...), or a list of two or more "
                "sources (one launch each), not one input"
            )
        return plot_scene(fit(*source, launch=launch), "fit", None, None)
    if isinstance(source, (Analysis, str, os.PathLike)):
        analysis = source if isinstance(source, Analysis) else read_log(os.fspath(source))
    elif all(isinstance(s, (str, os.PathLike)) for s in source):
        analysis = read_log(*(os.fspath(s) for s in source))  # type: ignore[arg-type]
    else:
        raise ValueError(
            f"kind={kind!r} plots one launch: an Analysis, a path, or paths of one launch"
        )
    scene = plots.scene(kind, _plot_data(analysis, kind, rank, launch))
    return note_scene(scene, stop_sentences(analysis.stats))


def _plot_data(
    analysis: Analysis, kind: str, rank: str | Sequence[str] | None, launch: int | None
) -> Any:
    """The data of a waterfall, buckets or ranks plot: the one plot selection."""
    from logmem.api import PlotNote, select
    from logmem.report.figures.plot_select import plot_data

    wanted = [rank] if isinstance(rank, str) else list(rank or ())
    analysis = select(analysis, launch, wanted)
    if len(analysis.launches) > 1:
        warnings.warn(
            PlotNote(
                f"The input holds {len(analysis.launches)} launches; plotting launch 0 "
                "(--launch N picks another)."
            ),
            stacklevel=4,
        )
    return plot_data(analysis, kind, wanted)
