"""A launch's heading in every report: which start-up, and which model."""

from __future__ import annotations

from logmem.model.records import Launch


def launch_title(L: Launch, n_launches: int) -> str:
    """ "Launch[ N]: <model_path>"; without a server_args dump, the architecture Load weight end
    printed (said to stand in for the path), else that the log names no model."""
    title = f"Launch {L.index}" if n_launches > 1 else "Launch"
    model = L.args.get("model_path")
    if isinstance(model, str):
        return f"{title}: {model}"
    arch = next(
        (
            e.model_type
            for r in L.ranks
            if r.target is not None and (e := r.target.weights_end) is not None and e.model_type
        ),
        None,
    )
    return (
        f"{title}: {arch} (model path not in the log)"
        if arch
        else f"{title} (model not named in the log)"
    )
