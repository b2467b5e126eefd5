"""Front ends that need no quantization method: the family selector itself, and unquantized layers."""

from __future__ import annotations

import importlib
import inspect
from typing import Any

from ..cases import Deployment
from . import NotDriven

P = "vllm.model_executor.layers.fused_moe"

# Family -> (oracle module, selector function), vLLM 0.29-0.33 P/oracle/*.py.
_SELECTORS: dict[str, tuple[str, str]] = {
    "unquantized": ("unquantized", "select_unquantized_moe_backend"),
    "fp8": ("fp8", "select_fp8_moe_backend"),
    "mxfp8": ("mxfp8", "select_mxfp8_moe_backend"),
    "nvfp4": ("nvfp4", "select_nvfp4_moe_backend"),
    "mxfp4": ("mxfp4", "select_mxfp4_moe_backend"),
    "int8": ("int8", "select_int8_moe_backend"),
    "w4a8_fp8": ("w4a8", "select_w4a8_moe_backend"),
    "w4a8_int8": ("w4a8_int8", "select_w4a8_int8_moe_backend"),
}


def direct(side: Any, dep: Deployment, moe: Any) -> tuple[Any, Any]:
    """Call the family's ``select_*_moe_backend`` with the deployment's quant keys."""
    if dep.family not in _SELECTORS:
        raise NotDriven(f"the {dep.family} selector needs its quantization front end")
    mod_name, fn_name = _SELECTORS[dep.family]
    fn = getattr(importlib.import_module(f"{P}.oracle.{mod_name}"), fn_name)
    params = inspect.signature(fn).parameters
    kwargs: dict[str, Any] = {}
    if "weight_key" in params:
        kwargs["weight_key"] = side.quant_key(dep.weight_key)
    if "activation_key" in params:
        kwargs["activation_key"] = side.quant_key(dep.activation_key)
    first = next(iter(params))
    return fn(**{first: moe}, **kwargs)


def unquantized(side: Any, dep: Deployment, moe: Any) -> tuple[Any, Any]:
    """``UnquantizedFusedMoEMethod(moe)`` (P/unquantized_fused_moe_method.py)."""
    cls = importlib.import_module(f"{P}.unquantized_fused_moe_method").UnquantizedFusedMoEMethod
    method = cls(moe)
    side.load(dep, moe, method)
    return method.unquantized_backend, method.experts_cls
