"""FP8 front ends (vLLM Q/fp8.py ``Fp8MoEMethod``; the block refinement and padding under TP run in its constructor)."""

from __future__ import annotations

import importlib
import types
from typing import Any

from ..cases import Deployment

Q = "vllm.model_executor.layers.quantization"


def fp8_method(side: Any, dep: Deployment, moe: Any) -> tuple[Any, Any]:
    """``Fp8MoEMethod(Fp8Config(...), layer)`` for a serialized FP8 checkpoint.

    Static activations when the deployment's activation key is static per-tensor; the
    block shape from ``dep.block`` (``None``: per-tensor weights).
    """
    fp8 = importlib.import_module(f"{Q}.fp8")
    static = dep.activation_key == "fp8_static_tensor"
    config = fp8.Fp8Config(
        is_checkpoint_fp8_serialized=True,
        activation_scheme="static" if static else "dynamic",
        weight_block_size=list(dep.block) if dep.block is not None else None,
    )
    layer = types.SimpleNamespace(moe_config=moe, moe=moe)
    method = fp8.Fp8MoEMethod(config, layer)
    side.check_eplb(dep, method)
    return method.fp8_backend, method.experts_cls
