"""The verdict's caveat for a launch that came up with free memory at the 0.00 floor before or
during graph capture (logmem.analysis.exhausted), and its fix: a lower --mem-fraction-static
priced by SGLang's KV rule (the projection logmem whatif uses) and, where the pool already caps
the requests below the context, --context-length at the pool's size."""

from __future__ import annotations

from logmem.analysis.exhausted import Exhausted, FloorPlace, FloorPlatform
from logmem.analysis.failures.budget import fmt_mfs
from logmem.report.causes import on_gpu
from logmem.report.finding_base import finding_text
from logmem.report.finding_base import g as _g


def _where(f: Exhausted) -> str:
    on = f"on {on_gpu(f.rank)}"
    capture = f"capture {f.graph}" if f.graph else "graph capture"
    if f.place is FloorPlace.POOLS:
        return (
            f"the KV and other pools took all free memory {on} (0.00 GiB at line {f.line}, "
            f"Memory pool end), before {capture}"
        )
    if f.place is FloorPlace.BEFORE_CAPTURE:
        return (
            f"free memory {on} read 0.00 GiB at line {f.line}, after the pools and before {capture}"
        )
    return f"free memory {on} ran out during {capture} (0.00 GiB at line {f.line})"


def _platform(f: Exhausted) -> str:
    s = f.sign
    if s is None:
        return (
            " The reading cannot go below 0.00 GiB, so the shortfall is unknown: what was "
            f"allocated after line {f.line} is not seen."
        )
    if s.platform is FloorPlatform.UNIFIED:
        return (
            f" nvidia-smi gave no memory total (line {s.line}), as on a unified-memory device, "
            "where free memory is the system's available RAM: the system had none left, so "
            "requests can run out of memory under load; by how much is unknown."
        )
    shown = (
        f"WSL ({s.evidence} at line {s.line}: a Windows drive as WSL mounts it)"
        if s.platform is FloorPlatform.WSL
        else f"Docker Desktop (line {s.line})"
    )
    return (
        f" The log shows {shown}: there the Windows driver spills GPU allocations into shared "
        "system memory, which is how start-up could still finish. That memory is much slower, and "
        "requests can still run out of memory under load; by how much is unknown."
    )


def caveat_text(f: Exhausted) -> str:
    """The verdict's caveat: what ran out, where, and what the log shows of the platform."""
    text = (
        f"But {_where(f)}: the graphs, the attention workspaces and the activations were "
        "allocated with none left."
    )
    if f.place is FloorPlace.CAPTURE:
        text = (
            f"But {_where(f)}: the rest of the capture and the activations were allocated with "
            "none left."
        )
    return text + _platform(f)


def fix_lines(f: Exhausted) -> list[str]:
    """The fixes, each with the price the log gives."""
    out: list[str] = []
    m = f.mfs
    if m is not None:
        low = (
            f"; below {fmt_mfs(m.empty_below)} the KV pool is empty"
            if m.empty_below is not None
            else ""
        )
        out.append(
            f"Fix: lower --mem-fraction-static below {fmt_mfs(m.mfs)}: each 0.01 gives "
            f"{_g(m.step_bytes)} GiB (P {_g(m.pre_load_bytes)} GiB x 0.01; {m.step_tokens:,} KV "
            "tokens) back to the graphs, workspaces and activations. How much they need is "
            f"unknown (nothing allocated after line {f.line} shows in the readings), so lower it "
            "until free memory after capture reads above 0.00 GiB (logmem whatif "
            f"--mem-fraction-static X gives the pool at X{low})."
        )
    t = f.table
    if t is not None:
        lead = "And/or pass" if out else "Fix: pass"
        out.append(
            f"{lead} --context-length {t.kv_tokens:,}: the KV pool already caps a request at "
            f"{t.kv_tokens - 1:,} tokens, and the request-to-token table ({t.max_running_requests:,} "
            f"requests) shrinks from {_g(t.table_bytes)} to {_g(t.table_at_bytes)} GiB, "
            "memory the graphs and activations then have."
        )
    return out


@finding_text.register
def _(f: Exhausted) -> str:
    return " ".join([caveat_text(f), *fix_lines(f)])
