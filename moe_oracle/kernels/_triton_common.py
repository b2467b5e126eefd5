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
from typing import Any

import torch
import triton
import triton.language as tl

from ..core.vocab import Activation

__all__ = ["FP8_MAX", "INTERPRET", "SUPPORTED_ACTIVATIONS", "available", "check_tile", "launch_grid", "weight_descriptor"]

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


def _small_int(value: Any, lo: int, hi: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and lo <= value <= hi


def check_tile(tile: Any) -> None:
    """Raise ``ValueError`` (naming ``Type.field``, the value and what is allowed) unless the tile
    options :class:`GemmTile` and :class:`BlockConfig` share are in range: ``num_warps`` 1-16 (a power
    of two), ``num_stages`` 1-8, ``group_m`` 1-256, ``tma`` / ``ws`` / ``flat`` / ``tma_a`` bools;
    ``split`` 0 (no small last tiles) or a power of two >= 16 below ``block_m``; ``persistent`` 0 (one
    program per tile) or 1 to 8 programs per SM; ``flat`` only with a persistent grid and no small
    last tiles (one loop body); ``tma_a`` only without small last tiles (one descriptor box height)."""
    owner = type(tile).__name__
    block_m, split, persistent = tile.block_m, tile.split, tile.persistent
    if not _small_int(tile.num_warps, 1, 16) or tile.num_warps not in (1, 2, 4, 8, 16):
        raise ValueError(f"{owner}.num_warps: {tile.num_warps!r} is not allowed; one of 1, 2, 4, 8, 16")
    if not _small_int(tile.num_stages, 1, 8):
        raise ValueError(f"{owner}.num_stages: {tile.num_stages!r} is not allowed; 1 to 8")
    if not _small_int(tile.group_m, 1, 256):
        raise ValueError(f"{owner}.group_m: {tile.group_m!r} is not allowed; 1 to 256")
    for field in ("tma", "ws", "flat", "tma_a"):
        if not isinstance(getattr(tile, field), bool):
            raise ValueError(f"{owner}.{field}: {getattr(tile, field)!r} is not allowed; true or false")
    if split != 0 and (not isinstance(split, int) or split < 16 or split & (split - 1) or split >= block_m):
        raise ValueError(f"{owner}.split: {split!r} is not allowed; 0 or a power of two >= 16 below block_m ({block_m})")
    if not _small_int(persistent, 0, 8):
        raise ValueError(f"{owner}.persistent: {persistent!r} is not allowed; 0 (one program per tile) or 1 to 8 programs per SM")
    if tile.flat and (persistent == 0 or split):
        raise ValueError(f"{owner}.flat: True is not allowed with persistent={persistent}, split={split}; it needs persistent >= 1 and split 0")
    if tile.tma_a and split:
        raise ValueError(f"{owner}.tma_a: True is not allowed with split={split}; it needs split 0 (one box height)")


def activation_descriptor(a: torch.Tensor, block_rows: int, block_k: int):  # noqa: ANN201 - TensorDescriptor | None
    """A tensor descriptor over GEMM2's input rows ``a [rows, K]`` (contiguous, in expert order), boxes
    of ``[block_rows, block_k]``, or ``None`` where :func:`weight_descriptor` would give none. A box
    that runs past an expert's rows reads the next expert's (or zeros past the last row): those
    rows' products are never stored, and their activation scales load as 0."""
    return weight_descriptor(a, block_rows, block_k)


@functools.lru_cache(maxsize=8)
def _sm_count(device: torch.device) -> int:
    if device.type != "cuda":
        return 4  # the interpreter: a few programs, each looping over several tiles
    return torch.cuda.get_device_properties(device).multi_processor_count


def launch_grid(device: torch.device, tiles: int, persistent: int) -> int:
    """Programs to launch: one per tile (``persistent`` 0), else ``persistent`` per SM (never more than ``tiles``)."""
    if persistent == 0:
        return tiles
    return max(1, min(tiles, persistent * _sm_count(device)))


# ----------------------------------------------------------------------------- shared tile map


@triton.jit
def _live_tiles(counts_ptr, num_local, BLOCK_M: tl.constexpr, BLOCK_E: tl.constexpr):
    """m-tiles of all experts (each ``ceil(count_e / BLOCK_M)``): the first value of :func:`_tile_map`."""
    er = tl.arange(0, BLOCK_E)
    cnt = tl.load(counts_ptr + er, mask=er < num_local, other=0)
    return tl.sum((cnt + BLOCK_M - 1) // BLOCK_M, axis=0)


@triton.jit
def _grouped_pid(pid, n_out, max_tiles_m, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr):
    """(m-tile, n-tile) of program ``pid``: GROUP_M m-tiles share each n-tile in launch order (L2 reuse of the weight tile)."""
    num_pid_n = tl.cdiv(n_out, BLOCK_N)
    in_group = GROUP_M * num_pid_n
    first_m = (pid // in_group) * GROUP_M
    group_size = tl.minimum(max_tiles_m - first_m, GROUP_M)
    return first_m + (pid % in_group) % group_size, (pid % in_group) // group_size


@triton.jit
def _tile_map(counts_ptr, num_local, pid_m, BLOCK_M: tl.constexpr, BLOCK_E: tl.constexpr):
    """m-tile ``pid_m`` -> (m-tiles in all, expert, first row, rows in the tile).

    Rows are stored unpadded in expert order; expert ``e`` owns ``ceil(count_e / BLOCK_M)`` m-tiles
    (block-size padding in the tile map only), its last one holding ``count_e`` mod ``BLOCK_M`` rows
    (or ``BLOCK_M``). A program whose ``pid_m`` is not below the first value has no rows.
    """
    er = tl.arange(0, BLOCK_E)
    cnt = tl.load(counts_ptr + er, mask=er < num_local, other=0)
    tiles = (cnt + BLOCK_M - 1) // BLOCK_M
    tile_end = tl.cumsum(tiles, 0)
    e = tl.sum((tile_end <= pid_m).to(tl.int32), axis=0)
    sel = er == e
    j = pid_m - tl.sum(tl.where(sel, tile_end - tiles, 0), axis=0)
    first_row = tl.sum(tl.where(sel, tl.cumsum(cnt, 0) - cnt, 0), axis=0) + j * BLOCK_M
    n_rows = tl.minimum(tl.sum(tl.where(sel, cnt, 0), axis=0) - j * BLOCK_M, BLOCK_M)
    return tl.sum(tiles, axis=0), e, first_row, n_rows


@triton.jit
def _tile_rows(tok_ptr, first_row, n_rows, BLOCK_M: tl.constexpr, INDIRECT: tl.constexpr):
    """(output rows, row mask, A rows) of a tile of ``BLOCK_M`` rows from ``first_row``, ``n_rows`` of them real."""
    r = tl.arange(0, BLOCK_M)
    rows = first_row + r
    rmask = r < n_rows
    if INDIRECT:
        arow = tl.load(tok_ptr + rows, mask=rmask, other=0).to(tl.int64)
    else:
        arow = rows.to(tl.int64)
    return rows, rmask, arow


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
