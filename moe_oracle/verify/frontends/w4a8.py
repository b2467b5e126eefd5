"""W4A8 front ends: compressed-tensors int4 weights with 8-bit activations (vLLM 0.29.0-0.33.0).

* ``ct_w4a8_fp8``: group-quantized int4 weights with dynamic per-token FP8 activations
  (``CompressedTensorsW4A8Fp8MoEMethod``: symmetric, group size 128; 0.29.0/0.30.0 route it only
  on exactly SM 9.0, ``_is_fp8_w4a8_sm90``).
* ``ct_w4a8_int8``: group or channel int4 weights with dynamic per-token int8 activations
  (``CompressedTensorsW4A8Int8MoEMethod``, CPU; the group size must divide the hidden size and the
  partition).
"""

from __future__ import annotations

from typing import Any

from ..cases import Deployment
from .ct import ct_method

__all__ = ["ct_w4a8_fp8", "ct_w4a8_int8"]

_GROUP = {"int4_w4a8_static_channel": -1, "int4_w4a8_static_group128": 128, "int4_w4a8_static_group64": 64, "int4_w4a8_static_group32": 32}


def _group(dep: Deployment, default: int) -> int:
    return dep.weight_group_size if dep.weight_group_size is not None else default


def _weights(group: int, symmetric: bool, act_order: str | None) -> dict[str, Any]:
    w: dict[str, Any] = {"num_bits": 4, "type": "int", "symmetric": symmetric, "strategy": "channel" if group == -1 else "group",
                         "group_size": None if group == -1 else group, "dynamic": False}
    if act_order not in (None, "none"):
        w["actorder"] = act_order
    return w


def ct_w4a8_fp8(side: Any, dep: Deployment, moe: Any) -> tuple[Any, Any]:
    """compressed-tensors W4A8-FP8 (``pack-quantized`` int4, float8 per-token dynamic inputs)."""
    weights = _weights(_group(dep, 128), not bool(dep.zero_point), dep.act_order)
    inputs = {"num_bits": 8, "type": "float", "symmetric": True, "strategy": "token", "dynamic": True}
    return ct_method(side, dep, moe, weights, inputs, "pack-quantized")


def ct_w4a8_int8(side: Any, dep: Deployment, moe: Any) -> tuple[Any, Any]:
    """compressed-tensors W4A8-INT8 (int4 weights, int8 per-token dynamic inputs)."""
    weights = _weights(_group(dep, _GROUP.get(dep.weight_key or "", 128)), not bool(dep.zero_point), dep.act_order)
    inputs = {"num_bits": 8, "type": "int", "symmetric": True, "strategy": "token", "dynamic": True}
    return ct_method(side, dep, moe, weights, inputs, "pack-quantized")
