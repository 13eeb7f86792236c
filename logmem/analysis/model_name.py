"""Which model a launch ran, by the first of the log's lines that name it: server_args'
model_path, the echoed command line's --model-path, a rank's "Found local HF snapshot for X".
Without any of them only the architecture Load weight end printed is known."""

from __future__ import annotations

from enum import Enum

from logmem.frozen import frozen
from logmem.model.records import Launch
from logmem.parse import events as ev


class NamedBy(Enum):
    SERVER_ARGS = "server_args"
    COMMAND = "command line"
    SNAPSHOT = "HF snapshot"


@frozen
class ModelName:
    name: str
    by: NamedBy
    line: int | None  # the line that names it (None: server_args, which has its own)


def model_name(L: Launch) -> ModelName | None:
    """The model's name and the line that gives it; None when no line names the model."""
    path = L.args.get("model_path")
    if isinstance(path, str) and path:
        if L.args_from == "server_args":
            return ModelName(path, NamedBy.SERVER_ARGS, None)
        cmd = L.command  # the flags read off the echoed command (model.command)
        return ModelName(path, NamedBy.COMMAND, cmd.source.line_no if cmd is not None else None)
    snap = next((e for e in L.all_events() if isinstance(e, ev.ModelSnapshot)), None)
    if snap is not None:
        return ModelName(snap.name, NamedBy.SNAPSHOT, snap.source.line_no)
    return None


def architecture(L: Launch) -> str | None:
    """The model type the target's Load weight end printed on some rank."""
    return next(
        (
            e.model_type
            for r in L.ranks
            if r.target is not None and (e := r.target.weights_end) is not None and e.model_type
        ),
        None,
    )
