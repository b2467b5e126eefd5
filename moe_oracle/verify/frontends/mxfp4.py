"""MXFP4 front ends: the quantization methods vLLM builds for an MXFP4 MoE layer.

* ``mxfp4``: a checkpoint with ``quant_method: mxfp4``. vLLM resolves it exactly as here: the
  release's own ``GptOssMxfp4Config.override_quantization_method`` claims it for
  ``model_type: gpt_oss`` (``GptOssMxfp4MoEMethod`` -> ``select_mxfp4_moe_backend``); any other
  model keeps ``Mxfp4Config`` (``Mxfp4MoEMethod`` -> the Kimi-K3 SiTU AITER path from 0.32.0, else
  ``select_deepseek_v4_mxfp4_moe_backend``). vLLM 0.29.0-0.33.0 ``Q/mxfp4.py``.
* ``compressed_tensors_mxfp4``: ``CompressedTensorsW4A4Mxfp4MoEMethod`` (MXFP4 weights, bf16 or MXFP4
  activations), which picks CUTLASS / XPU / Marlin itself and calls the generic selector only for a b12x
  (or, from 0.32.0, FlashInfer MoE-EP) request.
* ``quark_mxfp4``: Quark ``QuarkOCP_MX_MoEMethod`` for MXFP4 weights with no, static FP8 or MXFP4
  activations (its constructor takes config dicts in 0.29.0 and quant keys from 0.30.0).

The ``direct`` front end (``generic.direct``) calls ``select_mxfp4_moe_backend`` with the
deployment's activation key.
"""

from __future__ import annotations

import importlib
import inspect
import types
from typing import Any

from ..cases import Deployment
from . import NotDriven

Q = "vllm.model_executor.layers.quantization"


def _result(side: Any, dep: Deployment, moe: Any, method: Any) -> tuple[Any, Any]:
    # The layer pads (the method's maybe_roundup_sizes), then applies the EPLB gate; these
    # methods' create_weights check nothing the tier compares, so it is not run.
    side.round_up(moe, method)
    side.check_eplb(dep, method)
    return method.mxfp4_backend, method.experts_cls


def mxfp4_method(side: Any, dep: Deployment, moe: Any) -> tuple[Any, Any]:
    """The MoE method of a ``quant_method: mxfp4`` checkpoint, resolved as the release resolves it.

    Raises:
        NotDriven: the deployment has no model type (vLLM always has one, and the choice depends on it).
    """
    if dep.model_type is None:
        raise NotDriven("quant_method mxfp4 resolves by model_type; the deployment has none")
    mod = importlib.import_module(f"{Q}.mxfp4")
    hf_config = types.SimpleNamespace(model_type=dep.model_type)
    override = mod.GptOssMxfp4Config.override_quantization_method
    params = inspect.signature(override).parameters
    if "hf_config" not in params:
        raise NotDriven(f"GptOssMxfp4Config.override_quantization_method of vLLM {side.sim.release} takes no hf_config")
    name = override({"quant_method": "mxfp4"}, None, hf_config=hf_config)
    config_cls = mod.GptOssMxfp4Config if name == "gpt_oss_mxfp4" else mod.Mxfp4Config
    config = config_cls()
    return _result(side, dep, moe, config._make_moe_method(moe))


def compressed_tensors_mxfp4(side: Any, dep: Deployment, moe: Any) -> tuple[Any, Any]:
    """``CompressedTensorsW4A4Mxfp4MoEMethod(moe)`` for an MXFP4 (weight-only or W4A4) checkpoint.

    Raises:
        NotDriven: an activation key that compressed-tensors routes to another method.
    """
    if dep.activation_key not in (None, "mxfp4_dynamic"):
        raise NotDriven(f"compressed-tensors MXFP4 with {dep.activation_key} activations is another method")
    mod = importlib.import_module(f"{Q}.compressed_tensors.compressed_tensors_moe.compressed_tensors_moe_w4a4_mxfp4")
    return _result(side, dep, moe, mod.CompressedTensorsW4A4Mxfp4MoEMethod(moe))


_QUARK_INPUTS: dict[str | None, dict[str, Any] | None] = {
    None: None,
    "fp8_static_tensor": {"dtype": "fp8_e4m3", "is_dynamic": False, "qscheme": "per_tensor"},
    "mxfp4_dynamic": {"dtype": "fp4", "is_dynamic": True, "qscheme": "per_group", "group_size": 32},
}


def quark_mxfp4(side: Any, dep: Deployment, moe: Any) -> tuple[Any, Any]:
    """Quark ``QuarkOCP_MX_MoEMethod`` for MXFP4 weights (per-group FP4, group 32).

    Raises:
        NotDriven: an activation key Quark OCP-MX MoE does not produce.
    """
    if dep.activation_key not in _QUARK_INPUTS:
        raise NotDriven(f"Quark OCP-MX MoE has no {dep.activation_key} activations")
    cls = importlib.import_module(f"{Q}.quark.quark_moe").QuarkOCP_MX_MoEMethod
    params = list(inspect.signature(cls.__init__).parameters)
    if "weight_config" in params:  # vLLM 0.29.0: Quark config dicts
        weight = {"dtype": "fp4", "qscheme": "per_group", "group_size": 32, "is_dynamic": False}
        method = cls(weight, _QUARK_INPUTS[dep.activation_key], moe)
    else:  # vLLM 0.30.0+: quant keys
        method = cls(moe, side.quant_key("mxfp4_static"), side.quant_key(dep.activation_key))
    return _result(side, dep, moe, method)
