"""MXFP8 front ends: the quantization methods of vLLM 0.29.0-0.33.0 that select an MXFP8 MoE kernel.

Every one calls ``select_mxfp8_moe_backend(config)``, which asks each experts class about
``(kMxfp8Static, kMxfp8Dynamic)`` whatever the checkpoint says (P/oracle/mxfp8.py): MXFP8 MoE is
W8A8 in every release, so these front ends drive only that scheme.

* ``modelopt_mxfp8``: ``ModelOptMxFp8FusedMoE(ModelOptMxFp8Config(...), moe)`` (Q/modelopt.py); its
  ``create_weights`` refuses a hidden size or per-rank intermediate size that is not a multiple
  of 32, and it does not support EPLB.
* ``ct_mxfp8``: ``CompressedTensorsW8A8Mxfp8MoEMethod(moe)``
  (Q/compressed_tensors/compressed_tensors_moe/compressed_tensors_moe_w8a8_mxfp8.py); no EPLB.
* ``online_mxfp8``: ``Mxfp8OnlineMoEMethod(moe=moe)`` (Q/online/mxfp8.py, ``--quantization
  mxfp8`` on an unquantized checkpoint); EPLB supported.

Each constructs the method as the release's layer does, then the layer's EPLB gate and
``create_weights`` run (:meth:`VllmSide.load`).
"""

from __future__ import annotations

import importlib
from typing import Any

from ..cases import Deployment
from . import NotDriven
from .nvfp4 import online_kwargs

Q = "vllm.model_executor.layers.quantization"


def _scheme(dep: Deployment) -> None:
    if (dep.weight_key, dep.activation_key) != ("mxfp8_static", "mxfp8_dynamic"):
        raise NotDriven(f"MXFP8 MoE methods are W8A8 (mxfp8_static, mxfp8_dynamic), not ({dep.weight_key}, {dep.activation_key})")


def _finish(side: Any, dep: Deployment, moe: Any, method: Any) -> tuple[Any, Any]:
    side.load(dep, moe, method)
    backend = getattr(method, "mxfp8_backend", None) or method.fp8_backend
    return backend, method.experts_cls


def modelopt_mxfp8(side: Any, dep: Deployment, moe: Any) -> tuple[Any, Any]:
    """``ModelOptMxFp8FusedMoE`` for a ModelOpt MXFP8 checkpoint."""
    _scheme(dep)
    mod = importlib.import_module(f"{Q}.modelopt")
    config = mod.ModelOptMxFp8Config(is_checkpoint_mxfp8_serialized=True, kv_cache_quant_algo=None, exclude_modules=[])
    return _finish(side, dep, moe, mod.ModelOptMxFp8FusedMoE(config, moe))


def ct_mxfp8(side: Any, dep: Deployment, moe: Any) -> tuple[Any, Any]:
    """``CompressedTensorsW8A8Mxfp8MoEMethod`` for an MXFP8 compressed-tensors checkpoint."""
    _scheme(dep)
    mod = importlib.import_module(f"{Q}.compressed_tensors.compressed_tensors_moe.compressed_tensors_moe_w8a8_mxfp8")
    return _finish(side, dep, moe, mod.CompressedTensorsW8A8Mxfp8MoEMethod(moe))


def online_mxfp8(side: Any, dep: Deployment, moe: Any) -> tuple[Any, Any]:
    """``Mxfp8OnlineMoEMethod``: ``--quantization mxfp8`` on an unquantized checkpoint."""
    _scheme(dep)
    mod = importlib.import_module(f"{Q}.online.mxfp8")
    cls = mod.Mxfp8OnlineMoEMethod
    return _finish(side, dep, moe, cls(**online_kwargs(cls, moe)))
