"""Fixes for errors that are not memory: the component a traceback's frames name (attention
code, a compiled kernel, the model's own code), an environment switch that selects the raising
code (logmem.sglang.code_paths), or skipping a capture whose machinery itself raised."""

from __future__ import annotations

import logmem.analysis.failures.facts as fx
from logmem.analysis.failures.place import Place
from logmem.analysis.failures.traces import RaisedIn, Where
from logmem.model.records import Launch
from logmem.parse import events as ev
from logmem.sglang import rules


def not_memory_fixes(launch: Launch, place: Place, raised: RaisedIn) -> list[fx.Fix]:
    """A code, kernel or install error: name the component the frames show. Skipping the
    capture (--disable-cuda-graph) is offered only as a diagnostic when the capture machinery
    itself raised, or when no frame tells (a component's error recurs without graphs)."""
    phase = place.phase or ""
    graph = phase.removeprefix("capture ") if phase.startswith("capture ") else None
    f = raised.frame
    if raised.where in (Where.ATTENTION, Where.KERNEL, Where.MODEL) and f is not None:
        flag, in_use = _component_flag(raised, launch)
        effect = fx.ChangeComponent(
            raised.where.value,
            raised.component,
            f.path,
            f.line,
            f.func,
            graph,
            in_use,
            _nsa_elsewhere(launch) if raised.where is Where.ATTENTION else None,
        )
        out = [fx.Fix(flag, None, effect)]
        gate = rules.env_gate(f.func)
        if gate is not None:
            # The function runs only with the switch on (in the releases read): turning it off
            # is a workaround after the component fix, since the backend passed may be the cause
            # (003: triton for a DSA model, whose indexer triton skips).
            dense = effect.nsa is not None and effect.in_use is not None
            out.append(
                fx.Fix(gate.var, gate.off, fx.EnvSwitchOff(gate, f.path, f.line, graph, dense))
            )
        return out
    if graph is None:
        return []
    machinery = raised.where is Where.CAPTURE
    return [fx.Fix(rules.graph_disable_flag(graph), None, fx.DisableGraph(graph, machinery))]


def _nsa_elsewhere(launch: Launch) -> ev.NSABackends | None:
    """The launcher's NSA-backends line, when the attention backend passed is not nsa."""
    nsa = next((e for e in launch.events if isinstance(e, ev.NSABackends)), None)
    keys = ("attention_backend", "decode_attention_backend")
    return None if nsa is None or any(launch.args.get(k) == "nsa" for k in keys) else nsa


def _component_flag(raised: RaisedIn, launch: Launch) -> tuple[str, str | None]:
    """What a person changes for the component, and the value server_args shows in use."""
    if raised.where is Where.ATTENTION:
        args = launch.args
        for key in ("decode_attention_backend", "attention_backend"):
            v = args.get(key)
            if isinstance(v, str) and v:
                return "--attention-backend", f"{key}={v!r}"
        return "--attention-backend", None
    if raised.where is Where.KERNEL:
        return f"{raised.component} (kernel build)", None
    return f"models/{raised.component}.py (model code)", None
