"""Cross-check: measured ledger figures against what the model's config.json says they should be.

Checks and findings are typed facts with their numbers; logmem/report/estimate/words.py
names and words them."""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum
from typing import Any

import logmem.estimate.notes as nf
from logmem.analysis.attribution import LaunchLedger
from logmem.estimate import Estimate, EstimateError, estimate
from logmem.estimate.config import settings_for_launch, text_config
from logmem.frozen import frozen
from logmem.model.records import Launch
from logmem.sglang.rules import DIFFERENCE_RESOLUTION_BYTES as ROUNDING_BYTES


class Checked(Enum):
    """What a Check compares; PER_TOKEN figures are bytes per token, the others bytes."""

    WEIGHTS = "weights"
    KV_PER_TOKEN = "kv_per_token"
    STATIC_VS_LOGITS = "static_vs_logits"  # a decode graph's static buffers


@frozen
class Check:
    what: Checked
    measured_bytes: int | None  # for per-token figures: bytes per token
    expected_bytes: int | None
    tolerance_bytes: int  # what print rounding alone can explain
    graph: str | None = None  # the graph whose static buffers STATIC_VS_LOGITS reads
    # The measured figure as print rounding gives it (bytes per token): it agrees only inside.
    measured_range: tuple[int, int] | None = None

    @property
    def differs(self) -> bool:
        if self.measured_bytes is None or self.expected_bytes is None:
            return False
        if self.measured_range is not None:
            lo, hi = self.measured_range
            return not lo <= self.expected_bytes <= hi
        if self.what is Checked.STATIC_VS_LOGITS:
            # The logits buffer is one of the static buffers: only fewer bytes than it differ.
            return self.expected_bytes - self.measured_bytes > self.tolerance_bytes
        gap = abs(self.measured_bytes - self.expected_bytes)
        return gap > self.tolerance_bytes and gap > 0.05 * max(abs(self.expected_bytes), 1)


# config.json names another architecture than the log loaded (a note of the estimate too).
ModelDiffers = nf.ModelDiffers


@frozen
class WeightsDiffer:
    """Weights after load differ from the config's prediction (gap = measured - expected),
    with what the launch's server_args say of the causes that could explain it."""

    measured_bytes: int
    expected_bytes: int
    gap_bytes: int
    cpu_offload_gb: float | None = None  # as server_args printed it; None: not printed
    quantization: str | None = None  # server_args quantization (None: from the checkpoint)
    quantization_printed: bool = False  # server_args holds the key (so None is a fact)
    tied_bound_bytes: int | None = None  # most tying could save: the lm_head on this rank


class KVWidth(Enum):
    """What a KV cell ratio of measured to expected points at."""

    TWICE = "twice"  # about 2x: a 16-bit cache where 8 bits were assumed
    HALF = "half"  # about 0.5x: an 8-bit cache
    MORE = "more"  # above 1 otherwise: layers or scales the config does not show
    LESS = "less"  # below 1 otherwise: fewer layers with KV, or a narrower element


@frozen
class KVDiffers:
    measured_bytes: int
    expected_bytes: int
    ratio: float
    width: KVWidth


Mismatch = ModelDiffers | WeightsDiffer | KVDiffers


@frozen
class Crosscheck:
    estimate: Estimate
    checks: tuple[Check, ...]
    findings: tuple[Mismatch, ...]


def expected_for(launch: Launch, config: Mapping[str, Any]) -> Estimate:
    """The estimate for the deployment the log describes (parallel sizes and dtypes from
    server_args, request slots and context length from the scheduler summary).

    A config the launch's parallel sizes cannot split (SGLang would not have started) is not
    this launch's model: an EstimateError that says so."""
    settings = settings_for_launch(launch)
    try:
        return estimate(config, **settings)
    except EstimateError as e:
        raise EstimateError(
            f"--model-config does not fit this launch, so it is not the model the log served: {e}",
            e.setting,
        ) from None


def model_differs(launch: Launch, config: Mapping[str, Any]) -> ModelDiffers | None:
    """The config's architecture against the class the log's Load weight end line names
    (``type=Qwen2ForCausalLM``, the target model's); None when they agree or either is
    missing. model_path alone is not compared: one checkpoint lives under many paths."""
    main = launch.main_rank
    we = main.target.weights_end if main is not None and main.target is not None else None
    cfg, _ = text_config(config)
    archs = config.get("architectures") or cfg.get("architectures")
    arch = archs[0] if isinstance(archs, list) and archs and isinstance(archs[0], str) else None
    if we is None or arch is None or not we.model_type or we.model_type == "None":
        return None
    if _norm(arch) == _norm(we.model_type):
        return None
    name = config.get("_name_or_path")
    path = launch.args.get("model_path")
    return ModelDiffers(
        arch,
        name if isinstance(name, str) and name else None,
        we.model_type,
        path if isinstance(path, str) and path else None,
        we.source.line_no,
    )


def _norm(arch: str) -> str:
    return arch.replace("_", "").lower()


def _weights_differ(launch: Launch, est: Estimate, measured: int, expected: int) -> WeightsDiffer:
    args = launch.args
    offload = args.get("cpu_offload_gb")
    quant = args.get("quantization")
    head = next((c for c in est.components if c.name == "lm_head"), None)
    return WeightsDiffer(
        measured,
        expected,
        measured - expected,
        float(offload)
        if isinstance(offload, int | float) and not isinstance(offload, bool)
        else None,
        quant if isinstance(quant, str) and quant else None,
        "quantization" in args,
        head.bytes_per_rank if head is not None else None,
    )


def crosscheck(led: LaunchLedger, config: Mapping[str, Any]) -> Crosscheck:
    L = led.launch
    est = expected_for(L, config)
    main = L.main_rank
    checks: list[Check] = []
    findings: list[Mismatch] = []
    other = model_differs(L, config)
    if other is not None:
        # Every expected figure is another model's: say so, and guess no cause.
        findings.append(other)
    t = main.target if main else None
    measured_w = t.weights_end.usage.bytes if t and t.weights_end and t.weights_end.usage else None
    w = Check(Checked.WEIGHTS, measured_w, est.weights_bytes_per_rank, ROUNDING_BYTES)
    checks.append(w)
    if w.differs and w.measured_bytes is not None and w.expected_bytes is not None and not other:
        findings.append(_weights_differ(L, est, w.measured_bytes, w.expected_bytes))
    sz = led.sizing
    kv_meas = None
    tol = 0
    rng = sz.bytes_per_token_range if sz is not None else None
    if sz is not None:
        kv_meas = sz.likely_bytes_per_token or (
            round(sz.bytes_per_token) if sz.bytes_per_token else None
        )
        if rng:
            lo, hi = rng
            tol = (hi - lo) // 2 + 1
            kv_meas = kv_meas or (lo + hi) // 2
    kv = Check(Checked.KV_PER_TOKEN, kv_meas, est.kv_bytes_per_token_per_rank, tol, None, rng)
    checks.append(kv)
    if kv.differs and kv.measured_bytes and kv.expected_bytes and not other:
        ratio = kv.measured_bytes / kv.expected_bytes
        if abs(ratio - 2) < 0.1:
            width = KVWidth.TWICE
        elif abs(ratio - 0.5) < 0.05:
            width = KVWidth.HALF
        else:
            width = KVWidth.MORE if ratio > 1 else KVWidth.LESS
        findings.append(KVDiffers(kv.measured_bytes, kv.expected_bytes, ratio, width))
    if main is not None and (rl := led.rank(main.label)) is not None:
        for p in rl.phases:
            if p.graph is None:
                continue
            static = p.part("static")
            if (
                static is not None
                and est.logits_buffer_bytes is not None
                and p.graph.name in ("decode", "target decode", "target verify")
            ):
                checks.append(
                    Check(
                        Checked.STATIC_VS_LOGITS,
                        static.bytes,
                        est.logits_buffer_bytes,
                        ROUNDING_BYTES,
                        p.graph.name,
                    )
                )
    return Crosscheck(est, tuple(checks), tuple(findings))
