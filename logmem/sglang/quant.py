"""Which quantization methods give SGLang's fused MoE layers a quantised method.

A method whose config returns no quant method for ``FusedMoE`` leaves the experts to
``UnquantizedFusedMoEMethod``: they are allocated in the model's dtype, under that method's
parameter names, and a quantised checkpoint's expert tensors (``qweight``, ``scales``, ``qzeros``)
have no parameter to load into, so SGLang lists the experts as "not initialized from
checkpoints" (corpus 006: gemma-4-26B AWQ with quantization='awq').
"""

from __future__ import annotations

from collections.abc import Iterable

UNQUANTIZED_MOE_PARAMS = ("w13_weight", "w2_weight")
"""FusedMoE's parameters under UnquantizedFusedMoEMethod (quantization/unquant.py,
``create_weights``, sglang 0.5.8-0.5.9, 2026); a quantised method registers w13_qweight,
w13_scales ... instead (awq.py AWQMoEMethod, moe_wna16.py)."""

MOE_UNCOVERED = {"awq": "moe_wna16"}
"""Methods whose config gives FusedMoE no method off Ascend, with the one that loads such
experts: ``AWQConfig.get_quant_method`` returns None for FusedMoE (awq.py, sglang 0.5.8-0.5.9,
2026), ``MoeWNA16Config`` gives AWQ and GPTQ experts MoeWNA16Method (moe_wna16.py)."""


def experts_unquantized(kinds: Iterable[str], quantization: str | None) -> bool:
    """Uninitialised weights that are a quantised launch's experts under their unquantised
    names (UNQUANTIZED_MOE_PARAMS): the method gave the MoE layers none (unquant.py, sglang
    0.5.8-0.5.9, 2026)."""
    names = list(kinds)
    if not quantization or not names:
        return False
    return all(".experts." in k and k.rsplit(".", 1)[-1] in UNQUANTIZED_MOE_PARAMS for k in names)


def moe_method_for(quantization: str | None) -> str | None:
    """The method that loads the experts MOE_UNCOVERED's ``quantization`` leaves unquantised
    (moe_wna16.py, sglang 0.5.8-0.5.9, 2026); None for any other."""
    return MOE_UNCOVERED.get(quantization or "")
