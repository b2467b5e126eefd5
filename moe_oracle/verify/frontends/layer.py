"""What every checkpoint-config front end shares: a MoE layer stand-in and the method's answer.

vLLM picks a MoE quantization method with ``QuantizationConfig.get_quant_method(layer, prefix)``;
the config classes test ``isinstance(layer, RoutedExperts)`` and read ``layer.moe_config`` and the
checkpoint projection names, nothing else, before the method's constructor selects. The stand-in
is a real ``RoutedExperts`` instance (so ``isinstance`` holds) whose ``__init__`` never ran: only
those attributes exist, so a release that starts reading another one fails loudly here.
"""

from __future__ import annotations

import importlib
from typing import Any

P = "vllm.model_executor.layers.fused_moe"
PREFIX = "model.layers.0.mlp.experts"
"""The layer name the front ends pass (compressed-tensors targets match it)."""


def routed_experts_layer(moe: Any) -> Any:
    """A ``RoutedExperts`` of the release carrying only ``moe_config`` and the checkpoint names."""
    cls = importlib.import_module(P).RoutedExperts
    layer = cls.__new__(cls)
    # nn.Module.__setattr__ needs an initialized module; the instance dict is read directly.
    vars(layer).update(
        moe_config=moe,
        ckpt_gate_proj_name="gate_proj",
        ckpt_down_proj_name="down_proj",
        ckpt_up_proj_name="up_proj",
    )
    return layer


# Methods that run their own fused kernel instead of a modular experts class (vLLM 0.29.0
# Q/compressed_tensors/compressed_tensors_moe/compressed_tensors_moe_wna16_rdna3.py apply()).
_SELF_RUNNING = frozenset({"CompressedTensorsWNA16RDNA3MoEMethod"})

_BACKEND_ATTRS = ("wna16_backend", "wna16_moe_backend", "int8_backend", "w4a8_backend", "backend", "fp8_backend", "unquantized_backend")


def method_answer(side: Any, dep: Any, moe: Any, method: Any) -> tuple[Any, Any]:
    """(backend enum, experts class) of a constructed MoE quantization method, after the layer's
    EPLB gate and ``create_weights`` ran (:meth:`VllmSide.load`: their refusals are vLLM's).

    A method that runs its own kernel without a modular experts class (vLLM 0.29.0's
    ``CompressedTensorsWNA16RDNA3MoEMethod``) answers with a stand-in class named after the
    method, in the standard activation format: that method is what serves the layer.

    Raises:
        NotImplementedError: EPLB requested and the method does not support it (as vLLM does).
        RuntimeError: the method exposes no backend attribute (a release the harness does not know).
        Exception: whatever ``create_weights`` raises.
    """
    side.load(dep, moe, method)
    backend = next((getattr(method, a) for a in _BACKEND_ATTRS if hasattr(method, a)), None)
    if type(method).__name__ in _SELF_RUNNING:
        fmt = importlib.import_module(f"{P}.modular_kernel").FusedMoEActivationFormat.Standard
        return backend, type(type(method).__name__, (), {"activation_format": staticmethod(lambda: fmt)})
    if backend is None and not hasattr(method, "experts_cls"):
        raise RuntimeError(f"{type(method).__name__} exposes no backend or experts class")
    return backend, method.experts_cls
