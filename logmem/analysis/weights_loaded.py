"""Weights the checkpoint did not fill: SGLang's "Some weights are not initialized from
checkpoints" line, per model (a finding, and a caveat on the verdict).

The parameters it lists were allocated and left as allocated: the server runs with them
uninitialised. Only what the log prints is kept: the names' count and kinds, the layers they
span, and beside them the weights' mem usage and the quantization the log names. The parameter
count a size comparison would need is not in the log, so no expected size is derived here.
"""

from __future__ import annotations

from typing import ClassVar

from logmem.analysis.findings_kinds import FindingKind
from logmem.frozen import frozen
from logmem.model.records import Launch, Rank
from logmem.parse import events as ev
from logmem.sglang.quant import experts_unquantized, moe_method_for


@frozen
class WeightsNotLoaded:
    kind: ClassVar[FindingKind] = FindingKind.WEIGHTS_NOT_LOADED
    rank: str  # the rank whose line is quoted: the main rank when it printed one
    role: str  # "target" | "draft"
    listed: ev.WeightsUninitialized  # that rank's line (its counts; the names are not kept)
    other_ranks: tuple[tuple[str, int], ...]  # (rank, line) of the other ranks that printed it
    ranks_total: int  # ranks of the launch
    model_type: str | None  # that rank's Load weight end type=; None: not printed
    usage_bytes: int | None  # that rank's Load weight end mem usage; None: not printed
    weights_line: int | None
    quant: tuple[tuple[str, str], ...]  # Load weight end's quant=, bits=, ... as printed
    quantization: str | None  # server_args' quantization; None: not set or not dumped
    # Every listed name is an expert under its unquantised name in a quantised launch: the
    # method gave the MoE layers none (sglang.quant), so they are allocated in the model dtype.
    unquantized_experts: bool = False
    moe_method: str | None = None  # the method that would load those experts (sglang.quant)

    @property
    def line(self) -> int:
        return self.listed.source.line_no

    @property
    def all_experts(self) -> bool:
        """Every listed name is an MoE expert weight."""
        return self.listed.names > 0 and self.listed.experts == self.listed.names


def weights_not_loaded(L: Launch) -> tuple[WeightsNotLoaded, ...]:
    """One record per model role some rank printed the line for (the target first)."""
    out: list[WeightsNotLoaded] = []
    for role in ("target", "draft"):
        printed = [(r, m) for r in L.ranks for m in r.models if m.role == role and m.uninitialized]
        if not printed:
            continue
        main = L.main_rank
        r, m = next(((r, m) for r, m in printed if main is not None and r is main), printed[0])
        assert m.uninitialized is not None
        we = m.weights_end
        q = L.args.get("quantization")
        method = q if isinstance(q, str) and q else None
        if method is None and we is not None:
            method = dict(we.details).get("quant")
        u = m.uninitialized
        unquantized = u.other_kinds == 0 and experts_unquantized((k for k, _ in u.kinds), method)
        out.append(
            WeightsNotLoaded(
                r.label,
                role,
                m.uninitialized,
                tuple(_line_of(x, role) for x, _ in printed if x is not r),
                len(L.ranks),
                we.model_type if we is not None else None,
                we.usage.bytes if we is not None and we.usage is not None else None,
                we.source.line_no if we is not None else None,
                tuple((k, v) for k, v in we.details if k != "dtype") if we is not None else (),
                q if isinstance(q, str) and q else None,
                unquantized,
                moe_method_for(method) if unquantized else None,
            )
        )
    return tuple(out)


def _line_of(r: Rank, role: str) -> tuple[str, int]:
    m = next(m for m in r.models if m.role == role and m.uninitialized)
    assert m.uninitialized is not None
    return r.label, m.uninitialized.source.line_no
