"""Words of the fixes for errors that are not memory (logmem.analysis.failures.code_fixes): the
component the traceback names, and an environment switch that selects the raising code."""

from __future__ import annotations

import logmem.analysis.failures.facts as fx
from logmem.report.fix_base import effect_text

_COMPONENT = {
    "attention": "the attention code",
    "kernel": "a compiled kernel",
    "model": "the model's own code",
}


@effect_text.register
def _(e: fx.ChangeComponent) -> str:
    where = f"{e.path.rsplit('/', 1)[-1] if e.path else '?'} line {e.line}, in {e.func}"
    during = f" during the {e.graph} graph capture" if e.graph else ""
    recur = (
        f"; an eager forward runs the same code, so {'--disable-cuda-graph' if e.graph else 'skipping graphs'} "
        "would not get a server up"
        if e.graph
        else ""
    )
    if e.where == "attention" and e.nsa is not None:
        # Hedged: the line shows the model's NSA backends were set up, not that this build
        # runs them on this device.
        n = e.nsa
        passed = f", but {e.in_use} was passed" if e.in_use else ""
        change = (
            f"line {n.source.line_no} set this model's NSA backends for its {n.kv} KV cache "
            f"(prefill={n.prefill}, decode={n.decode}){passed}: try --attention-backend nsa, or "
            "drop --attention-backend (whether this build runs nsa on this device the log does "
            "not show); else the SGLang version whose model code matches this backend"
        )
    elif e.where == "attention":
        use = f" than the one in use ({e.in_use})" if e.in_use else ""
        change = (
            f"try another attention backend{use}, or the SGLang version whose model code "
            "matches this backend"
        )
    elif e.where == "kernel":
        change = (
            f"install the {e.component} build that matches this SGLang version (or another "
            "backend that does not use it)"
        )
    else:
        change = "a SGLang version whose model code works with these settings"
    return f"the error is raised in {_COMPONENT[e.where]} ({where}){during}{recur}: {change}"


@effect_text.register
def _(e: fx.EnvSwitchOff) -> str:
    g = e.gate
    where = f"{e.path.rsplit('/', 1)[-1] if e.path else '?'} line {e.line}"
    during = f" during the {e.graph} graph capture" if e.graph else ""
    dense = (
        "; with the attention backend passed, this DSA model's sparse indexer is skipped, so the "
        "server would run dense attention"
        if e.dense_attention
        else ""
    )
    return (
        f"a workaround: {g.func} ({where}){during} is {g.path}, which SGLang takes only when "
        f"{g.var} is on ({g.source}, where it is off by default; this build's line numbers may "
        f"differ from those releases), so the launch's environment or its image probably set "
        f"it; unset it, or set it to {g.off}, and {g.default_path} runs{dense}"
    )
