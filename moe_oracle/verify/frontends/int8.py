"""INT8 (W8A8) front ends (vLLM 0.29.0-0.33.0).

* ``ct_w8a8_int8``: compressed-tensors int8 weights with int8 input activations. The config routes
  per-channel or per-tensor weights with dynamic per-token activations to
  ``CompressedTensorsW8A8Int8MoEMethod`` (which requires channel x token), anything else to a
  refusal; the method selects with kInt8StaticChannelSym x kInt8DynamicTokenSym.
* ``experts_int8``: ``--quantization experts_int8`` (``ExpertsInt8Config`` ->
  ``Int8OnlineMoEMethod``: weights quantized per channel at load, dynamic per-token activations).
"""

from __future__ import annotations

import importlib
from typing import Any

from ..cases import Deployment
from .ct import ct_method
from .layer import PREFIX, method_answer, routed_experts_layer

Q = "vllm.model_executor.layers.quantization"

__all__ = ["ct_w8a8_int8", "experts_int8"]

_STRATEGY = {"int8_static_channel": "channel", "int8_static_tensor": "tensor", "int8_dynamic_token": "token", "int8_dynamic_tensor": "tensor",
             "int8_dynamic_token_asym": "token", "int8_dynamic_tensor_asym": "tensor"}


def ct_w8a8_int8(side: Any, dep: Deployment, moe: Any) -> tuple[Any, Any]:
    """compressed-tensors ``int-quantized`` W8A8 with the deployment's weight and activation strategies."""
    weights = {"num_bits": 8, "type": "int", "symmetric": True, "strategy": _STRATEGY[dep.weight_key or ""], "dynamic": False}
    act = dep.activation_key or ""
    inputs = {"num_bits": 8, "type": "int", "symmetric": not act.endswith("_asym"), "strategy": _STRATEGY[act], "dynamic": True}
    return ct_method(side, dep, moe, weights, inputs, "int-quantized")


def experts_int8(side: Any, dep: Deployment, moe: Any) -> tuple[Any, Any]:
    """``ExpertsInt8Config().get_quant_method`` for the MoE layer."""
    cfg = importlib.import_module(f"{Q}.experts_int8").ExpertsInt8Config.from_config({})
    method = cfg.get_quant_method(routed_experts_layer(moe), PREFIX)
    return method_answer(side, dep, moe, method)
