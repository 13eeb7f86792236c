"""SGLang code paths that an environment switch turns on: when a traceback's innermost frame is
one of them, the launch's environment set that switch, and turning it off is the first fix.

Each entry was read in SGLang's source for the versions it names; a function missing here is
simply not known to be gated (no claim is made about it).
"""

from __future__ import annotations

from logmem.frozen import frozen


@frozen
class EnvGate:
    """A function of SGLang's that runs only when an environment variable is on."""

    func: str  # the function a traceback frame names
    var: str  # the environment variable that turns it on
    off: str  # the value that turns it off (SGLang's default)
    path: str  # what the switch selects, in words
    default_path: str  # what runs with the switch off
    source: str  # SGLang versions and file read


ENV_GATES: tuple[EnvGate, ...] = (
    # On HIP, _dispatch_mla_subtype takes MLA_FUSED_ROPE for decode batches when the switch is
    # on; the triton, fa3, trtllm_mla and ascend handlers call it, nsa and aiter never do.
    EnvGate(
        "forward_absorb_fused_mla_rope_prepare",
        "SGLANG_ROCM_FUSED_DECODE_MLA",
        "0",
        "ROCm's fused MLA + RoPE decode",
        "the default MLA decode",
        "sglang 0.5.8-0.5.9, deepseek_v2.py",
    ),
)
"""Functions gated by an environment switch (deepseek_v2.py ``rocm_fused_decode_mla``,
``_dispatch_mla_subtype`` in attention_backend_handler.py, sglang 0.5.8-0.5.9, 2026)."""


def env_gate(func: str | None) -> EnvGate | None:
    """The switch that turns on the function a frame names, if it is one of ENV_GATES
    (attention_backend_handler.py, sglang 0.5.8-0.5.9, 2026)."""
    if func is None:
        return None
    return next((g for g in ENV_GATES if g.func == func), None)
