"""WNA16 front ends: the checkpoint formats whose MoE methods call ``select_wna16_moe_backend``.

Each builds the release's own quantization config from the checkpoint fields the deployment
describes and asks ``get_quant_method`` for the MoE layer (vLLM 0.29.0-0.33.0):

* ``ct_wna16``: compressed-tensors ``pack-quantized`` int weights, no input quantization
  (``CompressedTensorsWNA16MoEMethod``; 0.29.0 ROCm gfx1100 builds its RDNA3 method instead);
* ``gptq``: ``AutoGPTQConfig`` (``AutoGPTQMoEMethod``, or ``MoeWNA16Method`` when Marlin cannot
  serve the layer);
* ``awq``: ``AutoAWQConfig`` (``AutoAWQMoEMethod``, same fallback);
* ``moe_wna16``: ``--quantization moe_wna16`` on a GPTQ checkpoint (``MoeWNA16Method``).

Checkpoint fields: bit width from the weight key (``int4*`` / ``int8*``), ``weight_group_size``
(``-1``: per channel), zero points (``dep.zero_point``, else the key's symmetry) and
``act_order`` (GPTQ ``desc_act`` is ``group``).
"""

from __future__ import annotations

import importlib
from typing import Any

from ..cases import Deployment
from .ct import ct_method
from .layer import PREFIX, method_answer, routed_experts_layer

Q = "vllm.model_executor.layers.quantization"

__all__ = ["awq", "ct_wna16", "gptq", "moe_wna16", "checkpoint_fields"]


def checkpoint_fields(dep: Deployment) -> tuple[int, int, bool, str | None]:
    """(bits, group size, zero points, act order) of the checkpoint ``dep`` describes."""
    key = dep.weight_key or ""
    bits = 4 if key.startswith("int4") else 8
    group = dep.weight_group_size if dep.weight_group_size is not None else (32 if "g32" in key else 128)
    zero_point = dep.zero_point if dep.zero_point is not None else key.endswith("_asym")
    act_order = dep.act_order if dep.act_order not in (None, "none") else None
    return bits, group, zero_point, act_order


def ct_wna16(side: Any, dep: Deployment, moe: Any) -> tuple[Any, Any]:
    """compressed-tensors WNA16: group strategy (channel for group size -1), ``pack-quantized``."""
    bits, group, zero_point, act_order = checkpoint_fields(dep)
    weights: dict[str, Any] = {
        "num_bits": bits,
        "type": "int",
        "symmetric": not zero_point,
        "strategy": "channel" if group == -1 else "group",
        "group_size": None if group == -1 else group,
        "dynamic": False,
    }
    if act_order is not None:
        weights["actorder"] = act_order
    return ct_method(side, dep, moe, weights, None, "pack-quantized")


def _get_method(side: Any, dep: Deployment, moe: Any, config: Any) -> tuple[Any, Any]:
    method = config.get_quant_method(routed_experts_layer(moe), PREFIX)
    return method_answer(side, dep, moe, method)


def _gptq_dict(dep: Deployment) -> dict[str, Any]:
    bits, group, zero_point, act_order = checkpoint_fields(dep)
    return {"quant_method": "gptq", "bits": bits, "group_size": group, "desc_act": act_order == "group", "sym": not zero_point, "lm_head": False, "dynamic": {}}


def gptq(side: Any, dep: Deployment, moe: Any) -> tuple[Any, Any]:
    """``AutoGPTQConfig.from_config`` of a GPTQ ``quantization_config``."""
    cfg = importlib.import_module(f"{Q}.auto_gptq").AutoGPTQConfig.from_config(_gptq_dict(dep))
    return _get_method(side, dep, moe, cfg)


def awq(side: Any, dep: Deployment, moe: Any) -> tuple[Any, Any]:
    """``AutoAWQConfig.from_config`` of an AWQ ``quantization_config`` (``w_bit``, ``q_group_size``, ``zero_point``)."""
    bits, group, zero_point, _ = checkpoint_fields(dep)
    doc = {"quant_method": "awq", "bits": bits, "group_size": group, "zero_point": zero_point, "version": "gemm", "modules_to_not_convert": None}
    cfg = importlib.import_module(f"{Q}.auto_awq").AutoAWQConfig.from_config(doc)
    return _get_method(side, dep, moe, cfg)


def moe_wna16(side: Any, dep: Deployment, moe: Any) -> tuple[Any, Any]:
    """``MoeWNA16Config.from_config`` of a GPTQ ``quantization_config`` (``--quantization moe_wna16``)."""
    cfg = importlib.import_module(f"{Q}.moe_wna16").MoeWNA16Config.from_config(_gptq_dict(dep))
    return _get_method(side, dep, moe, cfg)
