"""NVFP4 front ends: the quantization methods of vLLM 0.29.0-0.33.0 that select an NVFP4 MoE kernel.

* ``modelopt_nvfp4``: ``ModelOptNvFp4FusedMoE(ModelOptNvFp4Config(...), moe)`` (Q/modelopt.py).
  ``quant_algo`` NVFP4 for W4A4 checkpoints, W4A16_NVFP4 for weight-only ones; per-token
  activations are the ``quantization_config.moe.activation = nvfp4_per_token`` override
  (``QuantizationConfigArgs``, vLLM 0.32.0+), after which the method requires FlashInfer TRT-LLM.
* ``ct_nvfp4``: ``CompressedTensorsW4A4Nvfp4MoEMethod(moe, use_a16=...)``
  (Q/compressed_tensors/compressed_tensors_moe/compressed_tensors_moe_w4a4_nvfp4.py), whose
  ``supports_eplb`` holds only for its ``_EPLB_SUPPORTED_NVFP4_BACKENDS``. Compressed-tensors has
  no per-token NVFP4 scheme.
* ``online_nvfp4``: ``Nvfp4OnlineMoEMethod(moe=moe)`` (Q/online/nvfp4.py), the
  ``--quantization nvfp4_per_token`` online method: it refuses devices outside the SM100 family
  before selecting, and its activation key is the release's: ``kNvfp4Dynamic`` in 0.29.0-0.30.0,
  ``kNvfp4DynamicToken`` from 0.31.0 (the key is new there).

Each constructs the method as the release's layer does, then the layer's EPLB gate and
``create_weights`` run (:meth:`VllmSide.load`). A (weight, activation) pair a method cannot
take raises :class:`NotDriven`.
"""

from __future__ import annotations

import importlib
import inspect
import types
from typing import Any

from ..cases import Deployment
from . import NotDriven

Q = "vllm.model_executor.layers.quantization"

_W4A4 = "nvfp4_dynamic"
_PER_TOKEN = "nvfp4_dynamic_token"


def _weights(dep: Deployment) -> None:
    if dep.weight_key != "nvfp4_static":
        raise NotDriven(f"NVFP4 front ends take nvfp4_static weights, not {dep.weight_key}")


def online_kwargs(cls: type, moe: Any) -> dict[str, Any]:
    """Constructor arguments of an online MoE method: ``moe=`` from vLLM 0.30.0, the layer (which
    carries ``moe_config``) in 0.29.0."""
    params = inspect.signature(cls.__init__).parameters
    return {"moe": moe} if "moe" in params else {"layer": types.SimpleNamespace(moe_config=moe)}


def _finish(side: Any, dep: Deployment, moe: Any, method: Any) -> tuple[Any, Any]:
    side.load(dep, moe, method)
    return method.nvfp4_backend, method.experts_cls


def modelopt_nvfp4(side: Any, dep: Deployment, moe: Any) -> tuple[Any, Any]:
    """``ModelOptNvFp4FusedMoE`` for a ModelOpt NVFP4 (or W4A16_NVFP4) checkpoint."""
    _weights(dep)
    mod = importlib.import_module(f"{Q}.modelopt")
    kwargs: dict[str, Any] = {
        "quant_method": "W4A16_NVFP4" if dep.activation_key is None else "NVFP4",
        "is_checkpoint_nvfp4_serialized": True,
        "kv_cache_quant_algo": None,
        "exclude_modules": [],
        "group_size": 16,
    }
    if dep.activation_key == _PER_TOKEN:
        if "quantization_args" not in inspect.signature(mod.ModelOptNvFp4Config).parameters:
            raise NotDriven(f"vLLM {side.sim.release} ModelOpt NVFP4 has no MoE activation override (per-token NVFP4 is 0.32.0+)")
        qcfg = importlib.import_module("vllm.config.quantization")
        kwargs["quantization_args"] = qcfg.QuantizationConfigArgs(moe=qcfg.QuantSpec(activation=side.quant_key(_PER_TOKEN)))
    elif dep.activation_key not in (None, _W4A4):
        raise NotDriven(f"ModelOpt NVFP4 has no activation key {dep.activation_key}")
    config = mod.ModelOptNvFp4Config(**kwargs)
    return _finish(side, dep, moe, mod.ModelOptNvFp4FusedMoE(config, moe))


def ct_nvfp4(side: Any, dep: Deployment, moe: Any) -> tuple[Any, Any]:
    """``CompressedTensorsW4A4Nvfp4MoEMethod`` for an NVFP4 (or NVFP4A16) compressed-tensors checkpoint."""
    _weights(dep)
    if dep.activation_key not in (None, _W4A4):
        raise NotDriven(f"compressed-tensors has no NVFP4 MoE scheme with activation key {dep.activation_key}")
    mod = importlib.import_module(f"{Q}.compressed_tensors.compressed_tensors_moe.compressed_tensors_moe_w4a4_nvfp4")
    cls = mod.CompressedTensorsW4A4Nvfp4MoEMethod
    kwargs = {"use_a16": dep.activation_key is None} if "use_a16" in inspect.signature(cls).parameters else {}
    if dep.activation_key is None and not kwargs:
        raise NotDriven(f"vLLM {side.sim.release} compressed-tensors NVFP4 MoE has no A16 variant")
    return _finish(side, dep, moe, cls(moe, **kwargs))


def _online_activation_key(side: Any, cls: type) -> str:
    """The activation key (our name) the release's online method selects with."""
    key = getattr(cls, "activation_quant_key", None)  # declared from vLLM 0.32.0
    if key is not None:
        return next(name for name in (_W4A4, _PER_TOKEN) if _defined(side, name) and side.quant_key(name) == key)
    return _PER_TOKEN if "kNvfp4DynamicToken" in inspect.getsource(cls.__init__) else _W4A4


def _defined(side: Any, name: str) -> bool:
    try:
        side.quant_key(name)
    except KeyError:
        return False
    return True


def online_nvfp4(side: Any, dep: Deployment, moe: Any) -> tuple[Any, Any]:
    """``Nvfp4OnlineMoEMethod``: ``--quantization nvfp4_per_token`` on an unquantized checkpoint."""
    _weights(dep)
    cls = importlib.import_module(f"{Q}.online.nvfp4").Nvfp4OnlineMoEMethod
    own = _online_activation_key(side, cls)
    if dep.activation_key != own:
        raise NotDriven(f"vLLM {side.sim.release} online NVFP4 selects with activation key {own}, not {dep.activation_key}")
    return _finish(side, dep, moe, cls(**online_kwargs(cls, moe)))
