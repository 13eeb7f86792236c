"""Public Python API: read logs, pick launches, analyze, diff, fit, what-if, plot and expected sizes.

This is what the command line runs: each command in logmem/cli parses its options, calls one
function here and hands the result to a reporter, so the CLI and a notebook get the same
checks, errors and figures. Every function that takes a launch accepts an :class:`Analysis`
(from :func:`read_log`) or a path spec: a file, ``"-"`` for stdin, or the comma-separated
per-rank files of one launch (``"tp0.log,tp1.log"``). diff, fit and whatif return a
:class:`Comparison` that renders itself (text, Markdown, JSON, HTML) and shows as Markdown
in a notebook.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Union

from logmem.compare.load import LaunchRef, pick_launch, split_spec
from logmem.errors import NoStartupError, SelectionError
from logmem.frozen import frozen
from logmem.model.analysis import Analysis
from logmem.model.build import build_groups
from logmem.model.cap import capped
from logmem.parse import events as ev
from logmem.parse.match import iter_segment_events
from logmem.parse.patterns import KEYWORD_BYTES, ONCE_BYTES
from logmem.parse.read import ReadStats, read_segments

# `with byte_limit(n): read_log(...)` reads at most n bytes of each input (--max-bytes).
from logmem.parse.read import byte_limit as byte_limit
from logmem.parse.sizes import small_inputs
from logmem.parse.unmatched import UnmatchedCounter, UnmatchedSink
from logmem.parse.unmatched import UnmatchedSpool as UnmatchedSpool  # for `logmem lines`
from logmem.parse.unmatched import ends_in_cut_figure as ends_in_cut_figure  # `logmem lines`

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from logmem.analysis.communication import Plan as CommPlan
    from logmem.compare.diff import Diff
    from logmem.compare.slope import Fit
    from logmem.compare.whatif import WhatIf
    from logmem.estimate import Estimate
    from logmem.model.records import Launch

# An Analysis, or a path spec of one input ("a.log", "-", "tp0.log,tp1.log").
Source = Union[Analysis, str, "os.PathLike[str]"]


class PlotNote(UserWarning):
    """Something a plot leaves out that the user should know (the CLI prints it on stderr)."""


def collect_events(
    paths: Sequence[str],
    stats: list[ReadStats] | None = None,
    unmatched: UnmatchedSink | None = None,
) -> list[ev.Event]:
    """Every recognised event of the files, in order; memory lines no pattern matches go
    to `unmatched` (an UnmatchedSpool lists them all)."""
    return list(iter_events(paths, stats, unmatched))


def iter_events(
    paths: Sequence[str],
    stats: list[ReadStats] | None = None,
    unmatched: UnmatchedSink | None = None,
) -> Iterator[ev.Event]:
    """collect_events one event at a time, as the reader reaches it (``logmem lines``
    writes each as it comes, so a 1 GiB log never has all its events in memory)."""
    small = small_inputs(paths)  # read with the pure-Python matcher (logmem.parse.sizes)
    segments = read_segments(
        paths, KEYWORD_BYTES, stats, ONCE_BYTES, continuations=True, small=small
    )
    return iter_segment_events(segments, unmatched, small=small)


def reader_summary() -> str:
    """Which matcher and zstd support this run's reader uses (``logmem --version``)."""
    from logmem.parse.match import reader_summary as summary

    return summary()


def read_log(*paths: str, require_startup: bool = True) -> Analysis:
    """Read SGLang logs (paths, or "-" for stdin) into an :class:`Analysis`.

    Several paths are one launch split across files (one per rank or node, or rotated
    parts); files whose server_args, model or clocks say they are different launches are
    read as separate launches (``Analysis.apart`` says why); a file with two start-ups gives
    two launches. Raises NoStartupError when nothing SGLang printed about start-up is found,
    InputError when a file cannot be read.
    """
    from logmem.analysis.failures.outcome import outcome

    stats: list[ReadStats] = []
    unmatched = UnmatchedCounter()
    # An input's launches past the first and last hundred are kept as briefs (model.cap).
    events = capped(iter_events(paths, stats, unmatched), lambda L: outcome(L).status)
    launches, groups = build_groups(events)
    if require_startup and not any(L.ranks or L.server_args for L in launches):
        raise NoStartupError(list(paths))
    briefs = tuple(b for L in launches for b in L.briefs)
    return Analysis(
        tuple(paths), launches, unmatched.summary(), tuple(stats), inputs=groups, summarised=briefs
    )


def read_spec(spec: Source) -> Analysis:
    """A path spec ("a.log", "-", "tp0.log,tp1.log") read into an Analysis (one read of
    stdin, which every function given the Analysis can then share); an Analysis as it is."""
    return spec if isinstance(spec, Analysis) else read_log(*split_spec(os.fspath(spec)))


def select(analysis: Analysis, launch: int | None = None, ranks: Sequence[str] = ()) -> Analysis:
    """Keep one launch and/or show some ranks (``Analysis.shown_ranks``: the verdict, minima
    and findings stay the whole launch's); unknown names are an error listing what exists."""
    launches = analysis.launches
    analysis = replace(analysis, read_launches=analysis.all_launches)  # for Analysis.ledger
    if launch is not None:
        launches = (pick_launch(analysis, launch, "the input")[1],)
    if ranks:
        known = {r.label for L in launches for r in L.ranks}
        missing = [r for r in ranks if r not in known]
        if missing:
            shown = ", ".join(repr(k) for k in sorted(known)) or "none"
            raise SelectionError(f"--rank {missing[0]!r} is not in the log; ranks seen: {shown}")
        return replace(analysis, launches=launches, shown_ranks=tuple(dict.fromkeys(ranks)))
    return replace(analysis, launches=launches)


def read_environment(
    env: Sequence[str] = (), env_file: str | os.PathLike[str] | None = None
) -> tuple[tuple[str, str, str], ...]:
    """``--env KEY=VALUE`` strings and an ``--env-file`` (KEY=VALUE lines, ``#`` comments and
    ``export`` allowed) as (key, value, origin), the file first so that --env wins. Raises
    EnvError for a malformed entry, InputError for an unreadable file."""
    from logmem.analysis.comm_inputs import read_environment as read

    return read(env, env_file)


def communication_table(
    log: Source | None = None,
    *,
    launch: int | None = None,
    model_config: str | os.PathLike[str] | Mapping[str, Any] | None = None,
    env: Sequence[tuple[str, str, str]] = (),
    **settings: Any,
) -> CommPlan:
    """``logmem estimate``'s Communication table: the groups x mechanisms cells per rank of a
    deployment, from ``settings`` (server_args names: tp_size, dp_size, ep_size, pp_size,
    enable_dp_attention, moe_a2a_backend, deepep_mode, disaggregation_mode ...; None means
    not given), ``env`` (as :func:`read_environment` returns it) and, for DeepEP's size, a
    config.json. With ``log``, the launch's server_args, echoed environment and lines are the
    starting point, exactly as ``logmem analyze`` derives them."""
    from logmem.analysis.comm_join import deployment_plan

    L = _launch_of(log, launch, "LOG")[0] if log is not None else None
    return deployment_plan(L, model_config, env, settings)


def analyze(
    *paths: str,
    launch: int | None = None,
    ranks: Sequence[str] = (),
    model_config: str | None = None,
    env: Sequence[tuple[str, str, str]] = (),
) -> Analysis:
    """``logmem analyze``: read the logs, keep the chosen launch and ranks, and attach a
    model's config.json (a file or the folder holding it) for expected sizes and the user's
    environment (:func:`read_environment`) for the communication table."""
    analysis = select(read_log(*paths), launch, ranks)
    if env:
        analysis = replace(analysis, env=tuple(env))
    if model_config is None:
        return analysis
    from logmem.errors import LogmemError
    from logmem.estimate import EstimateError, load_model_config

    try:
        return replace(analysis, model_config=load_model_config(model_config))
    except EstimateError as e:
        raise LogmemError(str(e)) from None


def expected_sizes(
    model_config: str | os.PathLike[str] | Mapping[str, Any],
    log: Source | None = None,
    *,
    launch: int | None = None,
    **settings: Any,
) -> Estimate:
    """``logmem estimate``: what one rank should hold by a model's config.json (a file, the
    folder holding it, or the parsed dict): weights per rank, KV bytes per token, buffers.

    With ``log`` (an Analysis or a path spec), the deployment is that launch's: parallel sizes
    and dtypes from its server_args, request slots and context length from its summary.
    ``settings`` override them: ``tp``, ``dp``, ``ep``, ``pp``, ``dp_attention`` and the
    keywords of :func:`logmem.estimate.estimate` (None means not given). Raises EstimateError
    (``.setting`` names the size at fault) for sizes SGLang would refuse."""
    from logmem.estimate import EstimateError, estimate, load_model_config
    from logmem.estimate.config import deployment_settings

    config = (
        dict(model_config) if isinstance(model_config, Mapping) else load_model_config(model_config)
    )
    from logmem.estimate.crosscheck import model_differs

    L = _launch_of(log, launch, "LOG")[0] if log is not None else None
    kwargs = deployment_settings(L, settings)
    if L is not None and (other := model_differs(L, config)) is not None:
        kwargs["other_model"] = other
    try:
        return estimate(config, **kwargs)
    except EstimateError as e:
        given = settings.get(e.setting) is not None if e.setting else False
        if L is None or given or e.setting not in ("tp", "dp", "ep", "pp"):
            raise
        where = ", ".join(L.paths) or "the log"
        raise EstimateError(
            f"{e} ({e.setting}_size is from {where}'s server_args)", e.setting
        ) from None


@frozen
class Comparison:
    """A diff, fit or what-if: ``model`` is logmem.compare's Diff, Fit or WhatIf."""

    kind: str  # "diff" | "fit" | "whatif"
    model: Diff | Fit | WhatIf

    def to_json(self) -> dict[str, Any]:
        """The versioned JSON document (schema logmem.diff/1, logmem.fit/1, logmem.whatif/1)."""
        from logmem.report.compare.jsonout import to_json

        return to_json(self.model)

    def render(self, fmt: str = "text") -> str:
        """text, markdown, json or html."""
        from logmem.report.compare.render import render

        return render(self.model, fmt)

    def __str__(self) -> str:
        return self.render("text")

    def _repr_markdown_(self) -> str:  # Jupyter shows this
        return self.render("markdown")


def _launch_of(
    source: Source, launch: int | None, label: str, param: str = "launch"
) -> tuple[Launch, LaunchRef]:
    """One launch of a source, and which it is: the one launch selection every command uses."""
    if isinstance(source, Analysis):
        analysis, who = source, label
    else:
        spec = os.fspath(source)
        analysis, who = read_log(*split_spec(spec)), f"{label} ({spec})"
    index, L = pick_launch(analysis, launch, who, param)
    stopped = tuple(s for s in analysis.stats if s.stopped and (s.path in L.paths or not L.paths))
    return L, LaunchRef(label, tuple(analysis.paths), index, stopped)


def _one_stdin(sources: Sequence[Source], what: str) -> None:
    if sum(1 for s in sources if isinstance(s, str) and s == "-") > 1:
        raise SelectionError(f"only one {what} can be '-' (stdin)")


def diff(
    a: Source,
    b: Source,
    *,
    launch: int | None = None,
    launch_b: int | None = None,
    allow: Sequence[str] = (),
    slope: bool = True,
) -> Comparison:
    """What changed from ``a`` to ``b`` (``logmem diff A B``). It always compares; the
    slope is left out (and the reason given) when other memory-relevant settings differ
    too, unless ``allow`` names them; ``slope=False`` skips it. ``launch`` picks the
    start-up of both inputs, ``launch_b`` another one for ``b``."""
    from logmem.compare.diff import diff_launches

    _one_stdin((a, b), "of A and B")
    la, ra = _launch_of(a, launch, "A")
    if launch_b is None:
        lb, rb = _launch_of(b, launch, "B")
    else:
        lb, rb = _launch_of(b, launch_b, "B", "launch_b")
    return Comparison("diff", diff_launches(la, ra, lb, rb, tuple(allow), slope=slope))


def fit(*sources: Source, launch: int | None = None, allow: Sequence[str] = ()) -> Comparison:
    """Graph memory per row by least squares over two or more launches (``logmem fit``)."""
    from logmem.compare.slope import fit_launches
    from logmem.errors import FitError
    from logmem.report.compare.notes import slope_in_words

    if len(sources) < 2:
        raise FitError("fit needs at least two launches")
    _one_stdin(sources, "LOG")
    picked = [_launch_of(x, launch, str(i + 1)) for i, x in enumerate(sources)]
    with slope_in_words():
        return Comparison(
            "fit", fit_launches([L for L, _ in picked], [r for _, r in picked], tuple(allow))
        )


def whatif(
    source: Source,
    *,
    launch: int | None = None,
    mem_fraction_static: float | None = None,
    cuda_graph_max_bs: int | None = None,
    mib_per_row: float | None = None,
    static_mib_per_row: float | None = None,
    slope_from: tuple[Source, Source] | None = None,
    allow: Sequence[str] = (),
    activation_reserve_gib: float = 0.0,
    context_length: int | None = None,
    logged_mem_fraction_static: float | None = None,
) -> Comparison:
    """SGLang's KV rule replayed at other settings (``logmem whatif``).

    The graph slope for a new ``cuda_graph_max_bs`` is ``mib_per_row`` (with
    ``static_mib_per_row``) when given, else measured from ``slope_from`` (two launches that
    differ only in max bs; ``allow`` as for diff), else SGLang's heuristic, labelled so.
    ``logged_mem_fraction_static`` stands in for a log that prints no server_args."""
    from logmem.compare.slope import given_slope
    from logmem.compare.whatif import whatif_launch
    from logmem.compare.whatif_graph import measured_slope
    from logmem.errors import FitError
    from logmem.units import gib_to_bytes

    if mib_per_row is not None and slope_from:
        raise SelectionError("give mib_per_row or slope_from, not both")
    if static_mib_per_row is not None and mib_per_row is None:
        raise SelectionError("static_mib_per_row needs mib_per_row")
    if activation_reserve_gib < 0:
        raise FitError("the activation reserve cannot be negative")
    _one_stdin((source, *(slope_from or ())), "input")
    L, ref = _launch_of(source, launch, "LOG")
    slope = None
    if mib_per_row is not None:
        slope = given_slope(mib_per_row, static_mib_per_row)
    elif slope_from:
        la, ra = _launch_of(slope_from[0], None, "--slope-from A")
        lb, rb = _launch_of(slope_from[1], None, "--slope-from B")
        from logmem.report.compare.notes import slope_in_words

        with slope_in_words():
            slope = measured_slope(L, la, ra, lb, rb, tuple(allow))
    model = whatif_launch(
        L,
        ref,
        mem_fraction_static,
        cuda_graph_max_bs,
        slope,
        gib_to_bytes(activation_reserve_gib),
        context_length,
        logged_mem_fraction_static,
    )
    return Comparison("whatif", model)


def plot(
    source: Source | Comparison | Sequence[Source],
    kind: str = "waterfall",
    *,
    rank: str | Sequence[str] | None = None,
    launch: int | None = None,
) -> Figure:
    """One figure as a matplotlib Figure (object API; no pyplot state).

    ``kind``: "waterfall" (the named ranks, default the one that printed capture bars),
    "buckets" (the same ranks' graph buckets), "ranks" for one launch of an Analysis or a
    path spec (several paths in a list or tuple are read together, as one launch's files);
    "fit" for a diff or fit Comparison, or a list of two or more sources fitted as
    ``logmem fit``. With several launches and no ``launch``, launch 0 is drawn and a
    :class:`PlotNote` warning says so. :func:`plot_svg` gives the same figure as SVG text
    without importing matplotlib.
    """
    from logmem.api_plot import plot_scene
    from logmem.report.figures.scene_mpl import scene_figure

    return scene_figure(plot_scene(source, kind, rank, launch))


def plot_svg(
    source: Source | Comparison | Sequence[Source],
    kind: str = "waterfall",
    *,
    rank: str | Sequence[str] | None = None,
    launch: int | None = None,
) -> str:
    """The figure of :func:`plot` as a standalone SVG document (text stays text; no
    plotting library is imported)."""
    from logmem.api_plot import plot_scene
    from logmem.report.figures.svg import scene_svg

    return scene_svg(plot_scene(source, kind, rank, launch))


# PyTorch memory snapshots: logmem.torch_snapshot.api (re-exported here, the one public API).
from logmem.torch_snapshot.api import SnapshotReport as SnapshotReport  # noqa: E402
from logmem.torch_snapshot.api import snapshot as snapshot  # noqa: E402
from logmem.torch_snapshot.api import snapshot_frame as snapshot_frame  # noqa: E402
