"""A launch's heading in every report: which start-up, and which model."""

from __future__ import annotations

from logmem.analysis.model_name import NamedBy, architecture, model_name
from logmem.model.records import Launch


def launch_title(L: Launch, n_launches: int) -> str:
    """ "Launch[ N]: <model>": server_args' model_path, else the model the command line or a
    rank's HF-snapshot line names (with that line), else the architecture Load weight end
    printed (said to stand in for the name), else that the log names no model."""
    title = f"Launch {L.index}" if n_launches > 1 else "Launch"
    named = model_name(L)
    if named is not None and named.by is NamedBy.SERVER_ARGS:
        return f"{title}: {named.name}"
    if named is not None:
        return f"{title}: {named.name} ({named.by.value}, line {named.line}; no server_args)"
    arch = architecture(L)
    return (
        f"{title}: {arch} (no line names the model)"
        if arch
        else f"{title} (model not named in the log)"
    )
