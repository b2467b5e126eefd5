"""Stand-ins 5, 5b and 8 of :mod:`.standins`: the model is built on the meta device, and what a
CPU torch lacks of the CUDA runtime is inert while it is built (worker side).

* :func:`cuda_to_meta` (5): a ``TorchFunctionMode`` that turns an explicit CUDA device (or an
  accelerator index) in a tensor factory / ``.to()`` / ``.cuda()`` into ``meta``; 5b: a small
  integer/bool tensor created without a device is made on the CPU with real values.
* :func:`cuda_runtime` (8): CUDA streams and events, the current device and the device
  properties (the simulated GPU's capability, 132 SMs), restored on exit.

Listed, with the reasons, in the one list of :mod:`.standins`.
"""

from __future__ import annotations

import types
from typing import Any

__all__ = ["cuda_runtime", "cuda_to_meta"]


def _is_cuda(device: Any) -> bool:
    import torch

    if isinstance(device, torch.device):
        return device.type == "cuda"
    if isinstance(device, str):
        return device.startswith("cuda")
    # An int is an accelerator index (torch reads ``device=0`` as the current accelerator); vLLM
    # passes ``current_platform.current_device()``, which stand-in 8 answers with 0.
    return isinstance(device, int) and not isinstance(device, bool)


_SMALL_NUMEL = 1 << 20
_INT_FACTORIES = ("full", "zeros", "ones", "empty", "arange", "tensor", "as_tensor")


def _small_integer_tensor(func: Any, args: tuple, kwargs: dict) -> Any:
    """Stand-in 5b: an integer/bool tensor of < 2**20 elements created with no device is made on
    the CPU (with real values), not on meta. Such tensors are vLLM's bookkeeping (expert maps,
    routing tables; 0.31.0 ``ExpertMapManager.get_compressed_map_string`` calls ``torch.where``,
    i.e. ``nonzero``, on the expert map while the layer is built), never weights. Returns
    ``None`` when the rule does not apply (the call then proceeds as usual)."""
    import math

    import torch

    name = getattr(func, "__name__", "")
    if name not in _INT_FACTORIES or getattr(func, "__module__", "") not in ("torch", "torch._C._VariableFunctions", None) and not func.__qualname__.startswith("_VariableFunctionsClass"):
        return None
    dtype = kwargs.get("dtype")
    if name in ("tensor", "as_tensor"):
        if not args or isinstance(args[0], torch.Tensor):
            return None
        try:
            t = func(*args, **{**kwargs, "device": "cpu"})
        except Exception:  # noqa: BLE001 - leave it to the usual path
            return None
        return t if not (t.dtype.is_floating_point or t.dtype.is_complex) and t.numel() < _SMALL_NUMEL else None
    if name == "arange":
        if dtype is None and any(isinstance(a, float) for a in args):
            return None
    elif dtype is None:
        return None
    if dtype is not None and (dtype.is_floating_point or dtype.is_complex):
        return None
    if name != "arange":
        size = args[0] if args and isinstance(args[0], (tuple, list, torch.Size)) else [a for a in args if isinstance(a, int)][: (1 if name == "full" else len(args))]
        if name == "full" and args and isinstance(args[0], int):
            size = [args[0]]
        try:
            numel = math.prod(int(x) for x in size)
        except (TypeError, ValueError):
            return None
        if numel >= _SMALL_NUMEL:
            return None
    try:
        return func(*args, **{**kwargs, "device": "cpu"})
    except Exception:  # noqa: BLE001
        return None


def cuda_to_meta() -> Any:
    """A ``TorchFunctionMode`` instance (stand-in 5): explicit CUDA devices become ``meta``."""
    import torch
    from torch.overrides import TorchFunctionMode

    class CudaToMeta(TorchFunctionMode):
        def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
            kwargs = dict(kwargs or {})
            if _is_cuda(kwargs.get("device")):
                kwargs["device"] = torch.device("meta")
            elif kwargs.get("device") is None:
                small = _small_integer_tensor(func, args, kwargs)
                if small is not None:
                    return small
            name = getattr(func, "__name__", "")
            if name == "cuda" and args and isinstance(args[0], torch.Tensor):
                return args[0].to("meta")
            if name == "to" and len(args) > 1 and _is_cuda(args[1]):
                args = (args[0], torch.device("meta"), *args[2:])
            return func(*args, **kwargs)

    return CudaToMeta()



class _StreamStandIn:
    """An inert CUDA stream / event: methods return ``None``."""

    def __init__(self, *_a: Any, **_k: Any) -> None:
        pass

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return lambda *_a, **_k: None


def cuda_runtime() -> Any:
    """Stand-in 8, as a context manager."""
    import contextlib

    import torch

    @contextlib.contextmanager
    def ctx() -> Any:
        saved = (torch.cuda.Stream, torch.cuda.Event, torch.cuda.current_stream, torch.cuda.current_device)
        saved_empty = torch.accelerator.empty_cache
        saved_props = torch.cuda.get_device_properties
        saved_index = torch.accelerator.current_device_index
        # FlashInfer's attention backend sizes work by the SM count (0.33.0 v1/attention/backends/
        # flashinfer.py get_device_sm_count): the simulated GPU's, as Simulation reports it.
        def props(*_a: Any, **_k: Any) -> Any:
            from vllm.platforms import current_platform

            cap = current_platform.get_device_capability()
            major, minor = (cap.major, cap.minor) if cap is not None else (0, 0)
            return types.SimpleNamespace(multi_processor_count=132, name="simulated", major=major, minor=minor, total_memory=141 << 30, gcnArchName="gfx942", warp_size=32, L2_cache_size=50 << 20)

        torch.cuda.get_device_properties = props  # type: ignore[assignment]
        torch.accelerator.empty_cache = lambda: None  # type: ignore[assignment]
        torch.cuda.Stream, torch.cuda.Event = _StreamStandIn, _StreamStandIn  # type: ignore[misc, assignment]
        torch.cuda.current_stream = lambda *_a, **_k: _StreamStandIn()  # type: ignore[assignment]
        torch.cuda.current_device = lambda: 0  # type: ignore[assignment]
        torch.accelerator.current_device_index = lambda: 0  # type: ignore[assignment]
        try:
            yield
        finally:
            torch.cuda.Stream, torch.cuda.Event, torch.cuda.current_stream, torch.cuda.current_device = saved  # type: ignore[misc, assignment]
            torch.accelerator.empty_cache = saved_empty  # type: ignore[assignment]
            torch.cuda.get_device_properties = saved_props  # type: ignore[assignment]
            torch.accelerator.current_device_index = saved_index  # type: ignore[assignment]

    return ctx()
