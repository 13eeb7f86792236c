"""The verdict every report prints first: the outcome, the failure with its fixes, later errors.

Typed (facts.Verdict); logmem.report.verdict words it.
"""

from __future__ import annotations

import logmem.analysis.failures.facts as fx
from logmem.analysis.failures.outcome import outcome
from logmem.analysis.failures.records import message_of, read_errors
from logmem.analysis.findings_order import set_aside, shared_label_ranks, unreliable_source
from logmem.analysis.weights_loaded import weights_not_loaded
from logmem.model.records import Launch
from logmem.parse.lazy import lazy


def verdict(launch: Launch) -> fx.Verdict:
    """The outcome of the launch, with what the verdict needs to say about its ranks."""
    oc = outcome(launch)
    first = read_errors(oc.runtime_errors[:1]) if oc.runtime_errors else ()
    nodes = launch.args.get("nnodes")
    e = first[0] if first else None
    text = message_of(e.record, e.source) if e is not None else ""
    return fx.Verdict(
        oc,
        len(launch.ranks),
        _world(launch),
        e,
        nodes if isinstance(nodes, int) else None,
        tuple(r.label for r in launch.ranks),
        bool(_PEER_LOST.search(text)),
        weights_not_loaded(launch),
        set_aside(launch),
        unreliable_source(launch),
        shared_label_ranks(launch),
    )


# NCCL's wording when a collective's peer exited or the network failed (ncclRemoteError,
# ProcessGroupNCCL.cpp; NCCL 2.x): the failing rank only reports what happened elsewhere.
_PEER_LOST = lazy(
    r"remote process exited or there was a network error|ncclRemoteError|"
    r"Connection closed by remote peer"
)


def _world(launch: Launch) -> int | None:
    tp, pp = launch.args.get("tp_size"), launch.args.get("pp_size")
    if not isinstance(tp, int):
        return None
    return tp * (pp if isinstance(pp, int) and pp > 0 else 1)
