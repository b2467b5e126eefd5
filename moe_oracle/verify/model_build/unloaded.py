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
"""

from __future__ import annotations

import importlib
import inspect
import re
from typing import Any, Callable

__all__ = ["LOADED_NAMES", "RENAMING_METHODS", "quant_config_with_loaded_names", "self_check"]

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

_MISSING = re.compile(r"has no attribute '(\w+)'")


def quant_config_with_loaded_names(method: Any, layer: Any) -> tuple[Any, list[str]]:
    """``method.get_fused_moe_quant_config(layer)``; where it fails on a name of
    :data:`LOADED_NAMES` the layer lacks while it has the created parameter, that name is bound to
    it and the call retried. Returns the quant config and the names bound.

    Raises:
        Exception: whatever the method raises for any other reason (the caller records it).
    """
    bound: list[str] = []
    for _ in range(len(LOADED_NAMES) + 1):
        try:
            return method.get_fused_moe_quant_config(layer), bound
        except AttributeError as exc:
            m = _MISSING.search(str(exc))
            name = m.group(1) if m else None
            created = LOADED_NAMES.get(name or "")
            if name in bound or created is None or not hasattr(layer, created):
                raise
            setattr(layer, name, getattr(layer, created))
            bound.append(name)
    raise AssertionError("unreachable: every retry binds a new name")


def self_check(getsource: Callable[[Any], str] = inspect.getsource) -> list[str]:
    """What moved: a renaming method gone, or its ``process_weights_after_loading`` no longer
    replacing a name of :data:`LOADED_NAMES`, or its ``create_weights`` no longer registering the
    created name."""
    problems = []
    for module, cls_name in RENAMING_METHODS:
        try:
            cls = getattr(importlib.import_module(module), cls_name)
        except (ImportError, AttributeError):
            problems.append(f"{module}.{cls_name} is gone (standins 15)")
            continue
        created = getsource(cls.create_weights)
        loaded = getsource(cls.process_weights_after_loading)
        for name, origin in LOADED_NAMES.items():
            if f'"{origin}"' not in created:
                problems.append(f"{cls_name}.create_weights no longer registers {origin} (standins 15)")
            if f'"{name}"' not in loaded and f"layer.{name} =" not in loaded:
                problems.append(f"{cls_name}.process_weights_after_loading no longer makes {name} (standins 15)")
    return problems
