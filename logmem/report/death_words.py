"""The sentence for a child process that died after start-up without a Python traceback."""

from __future__ import annotations

from collections.abc import Sequence

from logmem.analysis.failures.deaths import Death
from logmem.analysis.weights_loaded import WeightsNotLoaded
from logmem.report.safe_text import short

# What each signal usually means for an SGLang process (why a reader should look where).
_SIGNAL_HINT = {
    "SIGABRT": "an abort in native code (a failed assertion, or the CUDA / ROCm runtime giving up)",
    "SIGSEGV": "a crash in native code (a kernel, a driver or an extension)",
    "SIGBUS": "a bad memory access in native code (often shared memory: /dev/shm too small)",
    "SIGKILL": "killed from outside: the kernel's OOM killer when host memory runs out "
    "(dmesg says), or a kill -9",
    "SIGILL": "an instruction this CPU or GPU does not support (a build for another arch)",
    "SIGFPE": "an arithmetic fault in native code",
}


def death_text(d: Death, not_loaded: Sequence[WeightsNotLoaded] = ()) -> str:
    """'After start-up, scheduler_0 died (line 172: exit code -6, SIGABRT) ...'; with the
    weights the checkpoint did not fill, when it died computing on their output."""
    e = d.event
    code = f"exit code {e.exit_code}" + (f", {d.signal}" if d.signal else "")
    out = f"After start-up, {e.process} died (line {e.source.line_no}: {code})"
    f0 = d.died_in
    if f0 is not None:
        name = f0.path.replace("\\", "/").rsplit("/", 1)[-1]
        out += (
            f" in SGLang's {name} line {f0.line}, in {f0.func} (faulthandler's dump of the "
            f"dying process, line {f0.source.line_no}; no exception was raised)"
        )
    else:
        out += " with no Python traceback"
    lines: dict[str, list[int]] = {}
    for f in d.fatal:  # each rank's process prints the same lines: one mention, every line
        lines.setdefault(short(f.text, 100), []).append(f.source.line_no)
    if lines:
        said = " and ".join(
            f"'{t}' ({'line' if len(n) == 1 else 'lines'} {', '.join(map(str, n))})"
            for t, n in lines.items()
        )
        out += f"; before it the log prints {said}"
    hint = _SIGNAL_HINT.get(d.signal or "")
    out += f". {d.signal} is {hint}" if hint else ""
    out += ". A runtime failure, not a start-up one"
    out += "." if d.oom_logged else "; the log shows no out-of-memory error."
    if f0 is not None and not_loaded and _computes_on_outputs(f0.path):
        w = not_loaded[0]
        out += (
            f" It died sampling from the model's output, which the {w.listed.names:,} weights "
            f"the checkpoint did not fill (line {w.line}) leave undefined: NaN or inf logits "
            "can abort sampling, so they are the likely cause; fix those weights first."
        )
    return out


def _computes_on_outputs(path: str) -> bool:
    """A frame in the sampler or the logits processor: code that consumes the model's output."""
    p = path.replace("\\", "/")
    return p.endswith(("/layers/sampler.py", "/layers/logits_processor.py"))
