"""What a winner's one line does not say and the operator should know.

The engine attaches these to every Decision, so the Python API, ``explain`` and ``select`` carry
the same notes.
"""

from __future__ import annotations

from .config import MoEConfig
from .vocab import Platform

__all__ = ["winner_notes"]


def winner_notes(backend: str | None, config: MoEConfig) -> tuple[str, ...]:
    """Notes for the selected ``backend`` (``None``: nothing selected) under ``config``:

    * Marlin running an FP8 scheme runs it weight-only (W8A16): activations stay in 16 bits
      (vLLM 0.29.0-0.34.0 quantization/utils/marlin_utils_fp8.py
      ``prepare_fp8_moe_layer_for_marlin``). vLLM warns there that the GPU "does not have native
      support for FP8" whatever the GPU, also where Marlin was requested or outranked the FP8
      kernels; the note says what is true of the device: native FP8 is SM 8.9 and later
      (vLLM 0.29.0-0.34.0 vllm/platforms/cuda.py ``CudaPlatform.supports_fp8``:
      ``has_device_capability(89)``), and nothing is said where the capability is unknown;
    * a DeepEP all2all on a ROCm device: DeepEP is NVIDIA's (NVSHMEM); vLLM's CUDA-like
      communicator creates its manager on ROCm only where a ``deep_ep`` build imports, and AMD's
      own all2all backends are MORI's (``mori`` from vLLM 0.34.0, ``mori_low_latency``, ``mori_high_throughput``).
    """
    if backend is None:
        return ()
    out = []
    weight, act = config.quant.weight or "", config.quant.activation or ""
    if backend == "marlin" and weight.startswith("fp8") and act.startswith("fp8"):
        out.append(_marlin_fp8_note(config))
    a2a = config.parallel.all2all_backend.value
    if config.device.platform is Platform.ROCM and a2a.startswith("deepep"):
        out.append(f"--all2all {a2a} on a ROCm device: DeepEP is NVIDIA's (NVSHMEM) and runs only where a ROCm build of deep_ep imports; AMD's all2all backends are MoRI's: mori (vLLM 0.34.0+), mori_low_latency / mori_high_throughput")
    return tuple(out)


_NATIVE_FP8_SM = 89  # vLLM 0.29.0-0.34.0 vllm/platforms/cuda.py CudaPlatform.supports_fp8


def _marlin_fp8_note(config: MoEConfig) -> str:
    """Marlin on an FP8 checkpoint: how it was chosen, what it does, and whether the device has
    native FP8 (vLLM's own warning says it has not, on every device)."""
    how = f"requested with --moe-backend {config.moe_backend}" if config.moe_backend != "auto" else "selected by the priority order"
    device = config.device
    cap = device.capability if device.platform is Platform.CUDA else None
    if cap is None:
        why = ""
    elif cap >= _NATIVE_FP8_SM:
        why = f"; this GPU (SM {cap}) has native FP8, which Marlin does not use: vLLM's warning that the GPU lacks native FP8 is not true of it"
    else:
        why = f"; this GPU (SM {cap}) has no native FP8 (vLLM's CudaPlatform.supports_fp8 needs SM 8.9+)"
    return (f"marlin ({how}) runs this FP8 checkpoint weight-only (W8A16): activations stay {config.in_dtype.value}, "
            f"the FP8 activation scales are not used (vLLM marlin_utils_fp8.py){why}")
