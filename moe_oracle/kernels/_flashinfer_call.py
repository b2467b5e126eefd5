"""Lazy access to FlashInfer for the adapters (FlashInfer stays an optional dependency).

Source: FlashInfer ``flashinfer/fused_moe/core.py`` (``ActivationType``, ``WeightLayout``);
names are resolved at call time so no enum integer is hard-coded here.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

import torch

from ..runtime.errors import AdapterImportError

__all__ = ["activation_type", "flashinfer_fused_moe", "require_cuda_capability", "weight_layout"]


def flashinfer_fused_moe(adapter: str) -> ModuleType:
    """``flashinfer.fused_moe``, or :class:`AdapterImportError` naming ``flashinfer-python``."""
    try:
        return importlib.import_module("flashinfer.fused_moe")
    except ImportError as exc:
        raise AdapterImportError(adapter, ("flashinfer-python",), f"flashinfer is not importable ({exc})") from exc


def _enum_member(module: ModuleType, enum_name: str, member: str) -> Any:
    enum_cls = getattr(module, enum_name, None)
    if enum_cls is None:
        core = importlib.import_module("flashinfer.fused_moe.core")
        enum_cls = getattr(core, enum_name)
    return getattr(enum_cls, member)


def activation_type(module: ModuleType, member: str) -> int:
    """Integer of ``ActivationType.<member>`` (``Swiglu``, ``Geglu``, ``Relu2`` ...)."""
    return int(_enum_member(module, "ActivationType", member))


def weight_layout(module: ModuleType, member: str) -> int:
    """Integer of ``WeightLayout.<member>`` (``MajorK``, ``BlockMajorK``)."""
    return int(_enum_member(module, "WeightLayout", member))


def require_cuda_capability(adapter: str, tensor: torch.Tensor, allowed: frozenset[int]) -> None:
    """Raise ``RuntimeError`` unless ``tensor`` lives on a CUDA device whose SM (major*10+minor) is in ``allowed``."""
    if tensor.device.type != "cuda":
        raise RuntimeError(f"{adapter} runs on CUDA only (SM {sorted(allowed)}); got a {tensor.device.type} tensor")
    major, minor = torch.cuda.get_device_capability(tensor.device)
    sm = major * 10 + minor
    if sm not in allowed:
        raise RuntimeError(f"{adapter} needs SM {sorted(allowed)}, this device is SM {sm}")
