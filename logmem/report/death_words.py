"""The sentence for a child process that died after start-up without a Python traceback."""

from __future__ import annotations

from logmem.analysis.failures.deaths import Death
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


def death_text(d: Death) -> str:
    """'After start-up, scheduler_0 died (line 172: exit code -6, SIGABRT) ...'."""
    e = d.event
    code = f"exit code {e.exit_code}" + (f", {d.signal}" if d.signal else "")
    out = f"After start-up, {e.process} died (line {e.source.line_no}: {code}) with no Python traceback"
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
    return out + ("." if d.oom_logged else "; the log shows no out-of-memory error.")
