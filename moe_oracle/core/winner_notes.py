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
      (vLLM 0.29.0-0.34.0 quantization/utils/marlin_utils_fp8.py: "Weight-only FP8 compression
      will be used leveraging the Marlin kernel" on GPUs without native FP8);
    * a DeepEP all2all on a ROCm device: DeepEP is NVIDIA's (NVSHMEM); vLLM's CUDA-like
      communicator creates its manager on ROCm only where a ``deep_ep`` build imports, and AMD's
      own all2all backends are MORI's (``mori`` from vLLM 0.34.0, ``mori_low_latency``, ``mori_high_throughput``).
    """
    if backend is None:
        return ()
    out = []
    weight, act = config.quant.weight or "", config.quant.activation or ""
    if backend == "marlin" and weight.startswith("fp8") and act.startswith("fp8"):
        out.append(f"marlin runs this FP8 checkpoint weight-only (W8A16): activations stay {config.in_dtype.value}, the FP8 activation scales are not used (vLLM marlin_utils_fp8.py: no native FP8 on this GPU)")
    a2a = config.parallel.all2all_backend.value
    if config.device.platform is Platform.ROCM and a2a.startswith("deepep"):
        out.append(f"--all2all {a2a} on a ROCm device: DeepEP is NVIDIA's (NVSHMEM) and runs only where a ROCm build of deep_ep imports; AMD's all2all backends are MoRI's: mori (vLLM 0.34.0+), mori_low_latency / mori_high_throughput")
    return tuple(out)
