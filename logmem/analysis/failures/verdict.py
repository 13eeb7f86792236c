"""The verdict every report prints first: the outcome, the failure with its fixes, later errors.

Typed (facts.Verdict); logmem.report.verdict words it.
"""

from __future__ import annotations

import logmem.analysis.failures.facts as fx
from logmem.analysis.failures.outcome import outcome
from logmem.analysis.failures.records import read_errors
from logmem.model.records import Launch


def verdict(launch: Launch) -> fx.Verdict:
    """The outcome of the launch, with what the verdict needs to say about its ranks."""
    oc = outcome(launch)
    first = read_errors(oc.runtime_errors[:1]) if oc.runtime_errors else ()
    nodes = launch.args.get("nnodes")
    return fx.Verdict(
        oc,
        len(launch.ranks),
        _world(launch),
        first[0] if first else None,
        nodes if isinstance(nodes, int) else None,
    )


def _world(launch: Launch) -> int | None:
    tp, pp = launch.args.get("tp_size"), launch.args.get("pp_size")
    if not isinstance(tp, int):
        return None
    return tp * (pp if isinstance(pp, int) and pp > 0 else 1)
