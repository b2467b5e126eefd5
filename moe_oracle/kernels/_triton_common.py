"""Shared pieces of our Triton kernels: the interpreter switch, activation codes and the jit math.

:mod:`moe_oracle.kernels._triton_moe` describes the kernels as a whole (layout of one call,
numerics). This module holds what every kernel module uses: whether Triton runs under its CPU
interpreter (:data:`INTERPRET`), the activation codes the kernels switch on, the float32
activation math and the rounding casts to bf16 and e4m3 (which emulate round-to-nearest-even on
the float32 bits under the interpreter, whose own conversions truncate or drop a carry; compiled
kernels use the hardware conversions).
"""

from __future__ import annotations

import functools
import os

import torch
import triton
import triton.language as tl

from ..core.vocab import Activation

__all__ = ["FP8_MAX", "INTERPRET", "SUPPORTED_ACTIVATIONS", "available", "weight_descriptor"]

try:  # Triton >= 3.4: host-side tensor descriptors (TMA on SM 90+)
    from triton.tools.tensor_descriptor import TensorDescriptor
except ImportError:  # pragma: no cover - older Triton
    TensorDescriptor = None

try:  # Triton >= 3.4
    INTERPRET = bool(triton.knobs.runtime.interpret)
except AttributeError:  # pragma: no cover - older Triton
    INTERPRET = os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")
"""This module's kernels were built for Triton's CPU interpreter (``TRITON_INTERPRET=1`` at import)."""

FP8_MAX = 448.0
_EPS = 1e-12
_GROUP = 128

_ACT_CODES = {
    Activation.SILU: (0, True, False),
    Activation.GELU: (1, True, False),
    Activation.GELU_TANH: (2, True, False),
    Activation.RELU2: (3, True, False),
    Activation.SWIGLUOAI: (4, True, True),
    Activation.SWIGLUOAI_UNINTERLEAVE: (4, True, False),
    Activation.SILU_NO_MUL: (0, False, False),
    Activation.GELU_NO_MUL: (1, False, False),
    Activation.GELU_TANH_NO_MUL: (2, False, False),
    Activation.RELU2_NO_MUL: (3, False, False),
}
"""Activation -> (code of the Triton math, gated, gate/up interleaved)."""

SUPPORTED_ACTIVATIONS = frozenset(_ACT_CODES)


def available(device: torch.device) -> bool:
    """The adapters use these kernels on ``device``: CUDA, compiled (not under the interpreter).

    The CPU tests run the interpreted kernels by handing them to the adapters explicitly.
    """
    return device.type == "cuda" and not INTERPRET


def _pow2(n: int) -> int:
    return triton.next_power_of_2(max(int(n), 1))


@functools.lru_cache(maxsize=8)
def _tma_device(device: torch.device) -> bool:
    return INTERPRET or (device.type == "cuda" and torch.cuda.get_device_capability(device)[0] >= 9)


def weight_descriptor(w: torch.Tensor, block_rows: int, block_k: int):  # noqa: ANN201 - TensorDescriptor | None
    """A tensor descriptor (TMA on SM 90+) over the weights ``w [E, N_w, K]`` seen as ``[E * N_w, K]``,
    boxes of ``[block_rows, block_k]``; ``None`` where TMA cannot serve them (Triton without host
    descriptors, a device before SM 90, weights not contiguous or not 16-byte aligned), and the
    GEMMs then load the weights through pointers.

    A box that runs past the last row or past ``K`` is zero-filled; one that runs past an expert's
    rows reads the next expert's, which only feed output columns the GEMMs do not store.
    """
    if TensorDescriptor is None or not _tma_device(w.device) or not w.is_contiguous():
        return None
    if w.data_ptr() % 16 or (w.shape[-1] * w.element_size()) % 16:
        return None
    return TensorDescriptor.from_tensor(w.view(-1, w.shape[-1]), [block_rows, block_k])


# ----------------------------------------------------------------------------- shared math


@triton.jit
def _unary(x, ACT: tl.constexpr):
    if ACT == 0:  # silu
        y = x / (1.0 + tl.exp(-x))
    elif ACT == 1:  # gelu (erf)
        y = 0.5 * x * (1.0 + tl.erf(x * 0.7071067811865476))
    elif ACT == 2:  # gelu, tanh approximation; tanh(z) = 2 * sigmoid(2z) - 1
        z = 0.7978845608028654 * (x + 0.044715 * x * x * x)
        y = 0.5 * x * (2.0 / (1.0 + tl.exp(-2.0 * z)))
    else:  # relu2
        r = tl.maximum(x, 0.0)
        y = r * r
    return y


@triton.jit
def _gated(g, u, alpha, limit, ACT: tl.constexpr):
    if ACT == 4:  # swigluoai: (clamp(up) + 1) * g * sigmoid(alpha * g), g = min(gate, limit)
        g = tl.minimum(g, limit)
        u = tl.minimum(tl.maximum(u, -limit), limit)
        y = (u + 1.0) * (g / (1.0 + tl.exp(-alpha * g)))
    else:
        y = _unary(g, ACT) * u
    return y


@triton.jit
def _to_fp8(x, EMULATE: tl.constexpr):
    x = tl.minimum(tl.maximum(x, -448.0), 448.0)
    if EMULATE:
        # Round to the e4m3 grid in float32 (nearest even): spacing 2^(e-3) for |x| in [2^e, 2^(e+1)),
        # 2^-9 below 2^-6 (subnormals). 1.5 * 2^23 rounds |x / spacing| < 2^22 to an integer.
        bits = x.to(tl.int32, bitcast=True)
        e = tl.maximum((bits >> 23) & 0xFF, 121)
        spacing = ((e - 3) << 23).to(tl.float32, bitcast=True)
        x = ((x / spacing + 12582912.0) - 12582912.0) * spacing
    return x.to(tl.float8e4nv)


@triton.jit
def _to_bf16(x, EMULATE: tl.constexpr):
    if EMULATE:  # the interpreter truncates float32 -> bf16; round to nearest even on the bits first
        bits = x.to(tl.int32, bitcast=True)
        bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & -65536
        x = bits.to(tl.float32, bitcast=True)
    return x.to(tl.bfloat16)
