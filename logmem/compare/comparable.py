"""Whether two launches can be set side by side: the same model, GPU, TP size and wording era.

One rule for the three commands that put launches together: ``diff`` opens with the
differences as headlines, ``fit`` refuses a slope across different models (a slope mixes their
graph sizes) and ``whatif --slope-from`` says first where a slope from other launches came
from, refusing one from another model. The facts are read from the log only:

- model: the architecture the main rank's ``Load weight end`` line names (type=...), and the
  last component of server_args' model_path (the same weights under two folders compare equal);
- GPU: the free memory before loading (P, the main rank's ``Load weight begin`` avail mem),
  apart far beyond what other processes move it by (GPU_FREE_APART_FRACTION);
- TP: server_args' tp_size, else the number of TP rank tags;
- era: the wording of the memory lines (logmem.sglang.eras).
"""

from __future__ import annotations

from enum import Enum

from logmem.frozen import frozen
from logmem.model.records import Launch
from logmem.sglang.eras import MARKER_NAMES, Marker, era_markers, era_of, wording_differs

# Two launches on one GPU model print P within a few percent (other processes, a driver
# version); a fifth apart is another GPU size (or a GPU shared with something large).
GPU_FREE_APART_FRACTION = 0.2


class Aspect(Enum):
    MODEL = "model"
    GPU = "gpu"
    TP = "tp"
    ERA = "era"


@frozen
class Identity:
    """What a launch is, as far as comparing it with another goes (None: the log lacks it)."""

    model_path: str | None
    model_type: str | None  # Load weight end's type=... (main rank, target model)
    model_line: int | None  # that line
    tp_size: int | None
    tp_from_tags: bool  # tp_size counted from the rank tags (no server_args)
    free_before_load_bytes: int | None  # P, the main rank's Load weight begin avail mem
    free_line: int | None
    era: str | None  # the wording era's name (E2, E7, ...)


@frozen
class Mismatch:
    """An aspect in which launch B (or the target of a what-if) differs from launch A."""

    aspect: Aspect
    a: Identity
    b: Identity


def identity(launch: Launch) -> Identity:
    main = launch.main_rank
    target = main.target if main is not None else None
    we = target.weights_end if target is not None else None
    wb = target.weights_begin if target is not None else None
    path = launch.args.get("model_path") if launch.server_args is not None else None
    tp = launch.args.get("tp_size") if launch.server_args is not None else None
    from_tags = False
    if not isinstance(tp, int) or isinstance(tp, bool):
        tags = {r.tag("TP") for r in launch.ranks if r.tag("TP") is not None}
        tp, from_tags = (len(tags), True) if tags else (None, False)
    era = era_of(era_markers(launch))
    return Identity(
        path if isinstance(path, str) and path else None,
        we.model_type if we is not None else None,
        we.source.line_no if we is not None else None,
        tp,
        from_tags,
        wb.avail.bytes if wb is not None else None,
        wb.source.line_no if wb is not None else None,
        era.name if era is not None else None,
    )


def _model_name(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[-1].lower()


def models_differ(a: Identity, b: Identity) -> bool:
    """The architectures differ (both printed), or the model folders' names do."""
    if a.model_type is not None and b.model_type is not None and a.model_type != b.model_type:
        return True
    pa, pb = a.model_path, b.model_path
    return pa is not None and pb is not None and _model_name(pa) != _model_name(pb)


def gpus_differ(a: Identity, b: Identity) -> bool:
    """P apart by more than GPU_FREE_APART_FRACTION of the larger (both printed)."""
    fa, fb = a.free_before_load_bytes, b.free_before_load_bytes
    if fa is None or fb is None or max(fa, fb) <= 0:
        return False
    return abs(fa - fb) > GPU_FREE_APART_FRACTION * max(fa, fb)


def eras_differ(a: Launch, b: Launch) -> bool:
    """Some memory line both launches print is worded differently (logmem.sglang.eras)."""
    ma, mb = era_markers(a), era_markers(b)
    return wording_differs(tuple(Marker(n, (ma.get(n, "-"), mb.get(n, "-"))) for n in MARKER_NAMES))


def mismatches(a: Launch, b: Launch) -> tuple[Mismatch, ...]:
    """Every aspect in which B differs from A, model first."""
    ia, ib = identity(a), identity(b)
    out: list[Mismatch] = []
    if models_differ(ia, ib):
        out.append(Mismatch(Aspect.MODEL, ia, ib))
    if gpus_differ(ia, ib):
        out.append(Mismatch(Aspect.GPU, ia, ib))
    if ia.tp_size is not None and ib.tp_size is not None and ia.tp_size != ib.tp_size:
        out.append(Mismatch(Aspect.TP, ia, ib))
    if eras_differ(a, b):
        out.append(Mismatch(Aspect.ERA, ia, ib))
    return tuple(out)
