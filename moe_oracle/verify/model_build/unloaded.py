"""Stand-in 15 of :mod:`.standins`: the parameter names a quant method gives its layer only once
weights are loaded (worker side: reads vLLM objects).

This tier never loads weights, so ``process_weights_after_loading`` never runs. Some quant methods
build their ``FusedMoEQuantConfig`` from names that only that step creates: vLLM 0.29.0-0.34.0
compressed-tensors NVFP4 (``Q/compressed_tensors/compressed_tensors_moe/
compressed_tensors_moe_w4a4_nvfp4.py``) registers ``w13_weight_global_scale`` in
``create_weights`` and ``process_weights_after_loading`` replaces it by ``w13_weight_scale_2``
(``1 / global``), which ``get_fused_moe_quant_config`` reads. To ask vLLM's
``maybe_make_prepare_finalize`` for such a layer, the loaded name is bound to the created
parameter (a meta tensor: the prepare/finalize choice reads the quant config's dtypes and block
shapes, never the scale values). Only the pairs in :data:`LOADED_NAMES` are bound, each only when
the layer lacks it; :func:`self_check` fails when a release stops making the rename.

The same step reshapes per-tensor FP8 scales (:data:`RESHAPING_METHODS`): vLLM 0.29.0-0.34.0
``Q/fp8.py`` ``Fp8MoEMethod.create_weights`` (and ``Q/quark/quark_moe.py``
``QuarkW8A8Fp8MoEMethod``'s, per-tensor) registers ``w13_weight_scale`` as one scale per expert
and shard (``[E, 2]``: w1 and w3) and, with static activations, one input scale per expert
(``[E]``); ``process_weights_after_loading`` keeps the larger of the two weight scales per expert
(``process_fp8_weight_tensor_strategy_moe``: ``max(dim=1)``) and one input scale for the layer
(``process_fp8_input_tensor_strategy_moe``: ``max()``). ``get_fused_moe_quant_config`` of such a
layer multiplies them for the FlashInfer CUTLASS alphas, which fails on the unprocessed shapes
(``[E, 2] * [E]``); the retry gives the parameters the processed shapes (meta tensors, reduced the
same way), and only where that call failed.
"""

from __future__ import annotations

import importlib
import inspect
import re
from typing import Any, Callable

__all__ = ["LOADED_NAMES", "RENAMING_METHODS", "RESHAPING_METHODS", "quant_config_with_loaded_names", "self_check"]

LOADED_NAMES: dict[str, str] = {
    "w13_weight_scale_2": "w13_weight_global_scale",
    "w2_weight_scale_2": "w2_weight_global_scale",
    "w13_input_scale": "w13_input_global_scale",
    "w2_input_scale": "w2_input_global_scale",
}
"""Name ``get_fused_moe_quant_config`` reads -> the parameter ``create_weights`` registered."""

RENAMING_METHODS: tuple[tuple[str, str], ...] = (
    ("vllm.model_executor.layers.quantization.compressed_tensors.compressed_tensors_moe.compressed_tensors_moe_w4a4_nvfp4", "CompressedTensorsW4A4Nvfp4MoEMethod"),
)
"""(module, class) of the quant methods whose rename this stands in for (checked by :func:`self_check`)."""

RESHAPING_METHODS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("vllm.model_executor.layers.quantization.fp8", "Fp8MoEMethod", ("process_fp8_weight_tensor_strategy_moe(", "process_fp8_input_tensor_strategy_moe(")),
    ("vllm.model_executor.layers.quantization.quark.quark_moe", "QuarkW8A8Fp8MoEMethod", ("w13_weight_scale.max(dim=1)", "w13_input_scale.max()")),
)
"""(module, class, calls its ``process_weights_after_loading`` makes) of the quant methods whose
per-tensor FP8 reshaping this stands in for (checked by :func:`self_check`)."""

_MISSING = re.compile(r"has no attribute '(\w+)'")
_BROADCAST = "Attempting to broadcast a dimension"


def _processed_per_tensor_fp8(method: Any, layer: Any) -> list[str]:
    """Give a per-tensor ``Fp8MoEMethod`` layer's scales the shapes ``process_weights_after_loading``
    leaves (module docstring); the names reshaped (``NAME[max]``), none for any other method."""
    import torch

    cls_name = type(method).__name__
    if cls_name == "Fp8MoEMethod" and not getattr(method, "block_quant", True):
        static = getattr(getattr(method, "quant_config", None), "activation_scheme", None) == "static"
    elif cls_name == "QuarkW8A8Fp8MoEMethod" and getattr(method, "weight_qscheme", None) == "per_tensor":
        static = bool(getattr(method, "static_input_scales", False))
    else:
        return []
    done = []
    name = f"w13_{getattr(method, 'weight_scale_name', 'weight_scale')}"
    scale = getattr(layer, name, None)
    if isinstance(scale, torch.Tensor) and scale.dim() == 2:
        setattr(layer, name, torch.nn.Parameter(scale.max(dim=1).values, requires_grad=False))
        done.append(f"{name}[max]")
    if static:
        for name in ("w13_input_scale", "w2_input_scale"):
            scale = getattr(layer, name, None)
            if isinstance(scale, torch.Tensor) and scale.dim() == 1:
                setattr(layer, name, torch.nn.Parameter(scale.max().to(torch.float32), requires_grad=False))
                done.append(f"{name}[max]")
    return done


def quant_config_with_loaded_names(method: Any, layer: Any) -> tuple[Any, list[str]]:
    """``method.get_fused_moe_quant_config(layer)``; where it fails on a name of
    :data:`LOADED_NAMES` the layer lacks while it has the created parameter, that name is bound to
    it and the call retried. Returns the quant config and the names bound.

    Raises:
        Exception: whatever the method raises for any other reason (the caller records it).
    """
    bound: list[str] = []
    for _ in range(len(LOADED_NAMES) + 2):
        try:
            return method.get_fused_moe_quant_config(layer), bound
        except RuntimeError as exc:
            reshaped = _processed_per_tensor_fp8(method, layer) if _BROADCAST in str(exc) and not any(b.endswith("[max]") for b in bound) else []
            if not reshaped:
                raise
            bound += reshaped
        except AttributeError as exc:
            m = _MISSING.search(str(exc))
            name = m.group(1) if m else None
            created = LOADED_NAMES.get(name or "")
            if name in bound or created is None or not hasattr(layer, created):
                raise
            setattr(layer, name, getattr(layer, created))
            bound.append(name)
    raise AssertionError("unreachable: every retry binds a new name or reshapes once")


def _method_class(module: str, cls_name: str, problems: list[str]) -> Any:
    """The quantization method class ``module.cls_name``, or ``None`` with the problem recorded."""
    try:
        return getattr(importlib.import_module(module), cls_name)
    except (ImportError, AttributeError):
        problems.append(f"{module}.{cls_name} is gone (standins 15)")
        return None


def self_check(getsource: Callable[[Any], str] = inspect.getsource) -> list[str]:
    """What moved: a renaming method gone, or its ``process_weights_after_loading`` no longer
    replacing a name of :data:`LOADED_NAMES`, or its ``create_weights`` no longer registering the
    created name; a reshaping method gone or its ``process_weights_after_loading`` no longer making
    the reducing calls of :data:`RESHAPING_METHODS`."""
    problems = []
    for module, cls_name, calls in RESHAPING_METHODS:
        if (cls := _method_class(module, cls_name, problems)) is None:
            continue
        loaded = getsource(cls.process_weights_after_loading)
        problems += [f"{cls_name}.process_weights_after_loading no longer calls {c[:-1]} (standins 15)" for c in calls if c not in loaded]
    for module, cls_name in RENAMING_METHODS:
        if (cls := _method_class(module, cls_name, problems)) is None:
            continue
        created = getsource(cls.create_weights)
        loaded = getsource(cls.process_weights_after_loading)
        for name, origin in LOADED_NAMES.items():
            if f'"{origin}"' not in created:
                problems.append(f"{cls_name}.create_weights no longer registers {origin} (standins 15)")
            if f'"{name}"' not in loaded and f"layer.{name} =" not in loaded:
                problems.append(f"{cls_name}.process_weights_after_loading no longer makes {name} (standins 15)")
    return problems
