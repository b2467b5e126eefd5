"""compressed-tensors checkpoints: the release's own ``CompressedTensorsConfig`` picks the MoE method.

A front end describes the checkpoint's ``quantization_config`` (one config group whose weights and
input activations are compressed-tensors ``QuantizationArgs`` fields); this module builds it with
``CompressedTensorsConfig.from_config`` and asks ``get_quant_method(layer, prefix)``, exactly as
vLLM's model loader does for a MoE layer (Q/compressed_tensors/compressed_tensors.py ->
``CompressedTensorsMoEMethod.get_moe_method``). The method's constructor then builds the quant keys
and calls the family's selector. Whatever that code raises is vLLM refusing the checkpoint.

The ROCm branch of ``get_moe_method`` reads the current ``VllmConfig``'s ``kernel_config.moe_backend``
and ``lora_config``; both are set from the deployment for the call and restored after it.
"""

from __future__ import annotations

import contextlib
import importlib
import types
from typing import Any, Iterator, Mapping

from ..cases import Deployment
from .layer import PREFIX, method_answer, routed_experts_layer

Q = "vllm.model_executor.layers.quantization"

__all__ = ["ct_method", "ct_config"]


def ct_config(weights: Mapping[str, Any], input_activations: Mapping[str, Any] | None, fmt: str) -> dict[str, Any]:
    """A ``quantization_config`` with one config group targeting the MoE experts by name."""
    return {
        "quant_method": "compressed-tensors",
        "format": fmt,
        "quantization_status": "compressed",
        "ignore": [],
        "config_groups": {
            "group_0": {
                "targets": ["re:.*mlp\\.experts.*"],
                "weights": dict(weights),
                "input_activations": dict(input_activations) if input_activations is not None else None,
            }
        },
    }


@contextlib.contextmanager
def _kernel_settings(dep: Deployment) -> Iterator[None]:
    from vllm.config import get_current_vllm_config

    cfg = get_current_vllm_config()
    saved = (getattr(cfg.kernel_config, "moe_backend", None), cfg.lora_config)
    try:
        object.__setattr__(cfg.kernel_config, "moe_backend", dep.moe_backend)
        object.__setattr__(cfg, "lora_config", types.SimpleNamespace() if dep.lora else None)
        yield
    finally:
        object.__setattr__(cfg.kernel_config, "moe_backend", saved[0])
        object.__setattr__(cfg, "lora_config", saved[1])


def ct_method(side: Any, dep: Deployment, moe: Any, weights: Mapping[str, Any], input_activations: Mapping[str, Any] | None, fmt: str) -> tuple[Any, Any]:
    """The MoE method vLLM builds for this compressed-tensors checkpoint, and what it selected."""
    ct = importlib.import_module(f"{Q}.compressed_tensors.compressed_tensors")
    config = ct.CompressedTensorsConfig.from_config(ct_config(weights, input_activations, fmt))
    with _kernel_settings(dep):
        method = config.get_quant_method(routed_experts_layer(moe), PREFIX)
    return method_answer(side, dep, moe, method)
