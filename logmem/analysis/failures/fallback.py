"""The Transformers fallback ("Using Transformers backend."): whether a launch ran on it, and the
fix that gives the model SGLang's own, sharded implementation (logmem.analysis.failures.fixes).
"""

from __future__ import annotations

import logmem.analysis.failures.facts as fx
from logmem.model.records import Launch
from logmem.parse import events as ev


def transformers_fallback(launch: Launch) -> bool:
    return any(
        isinstance(e, ev.ModelBackend) and e.backend == "transformers" for e in launch.all_events()
    )


def native_fix(launch: Launch) -> fx.Fix:
    """With model_impl 'auto' SGLang falls back only for an architecture this build does not
    implement, so --model-impl sglang would fail here: the fix is a version that implements it.
    The flag is the fix only when model_impl itself chose Transformers."""
    auto = launch.args.get("model_impl") in (None, "auto")
    path = launch.args.get("model_path")
    native = fx.NativeImpl(architecture(launch), auto, path if isinstance(path, str) else None)
    if auto:
        return fx.Fix(native_version_flag(native.architecture), None, native)
    return fx.Fix("--model-impl", "sglang", native)


def architecture(launch: Launch) -> str | None:
    """The architecture as the log names it: a rank's Load weight end type= (the model path
    names a checkpoint, not an architecture); None when no rank printed one."""
    for r in launch.ranks:
        we = r.target.weights_end if r.target else None
        if we is not None and we.model_type:
            return we.model_type
    return None


def native_version_flag(architecture: str | None) -> str:
    """The action a Transformers fallback under model_impl 'auto' calls for."""
    named = architecture or "this model's architecture"
    return f"an SGLang version that implements {named}"
