"""FP8 (e4m3fn) quantization of expert weights and activations, in plain torch.

Weights ``[num_experts, N, K]`` (``N`` output rows, ``K`` reduction dim) are
quantized with one float32 scale per:

* ``per_tensor`` (``fp8_static_tensor``): expert -> scale ``[E]``;
* ``per_channel`` (``fp8_static_channel``): output row -> scale ``[E, N]``;
* ``block_128x128`` (``fp8_static_block128``): 128x128 tile -> scale ``[E, ceil(N/128), ceil(K/128)]``.

Activations ``[T, H]`` (simulated: quantize, then dequantize in float32) with:

* ``per_tensor`` static (``fp8_static_tensor``; the scale is given) or dynamic
  (``fp8_dynamic_tensor``): scale ``[1]``;
* ``per_token`` (``fp8_dynamic_token``): scale ``[T, 1]``;
* ``group_128`` (``fp8_dynamic_group128``): scale ``[T, ceil(H/128)]``.

Dynamic scales are ``amax / 448`` (448 = largest finite e4m3fn), floored at
``1e-12`` so all-zero rows do not divide by zero. ``dequantize(q, s) = q.float() * s``
broadcast over the block.

Source: vLLM main 00f7f258 ``Q/utils/quant_utils.py`` (QuantKey group shapes),
reference catalog §1.3 and §0 (FP8-T-S ... FP8-Blk).
"""

from __future__ import annotations

import torch

from ..core.quant import QUANT_KEYS, Granularity
from .errors import UnsupportedConfigError

__all__ = [
    "FP8_DTYPE",
    "FP8_MAX",
    "WEIGHT_KEYS",
    "ACTIVATION_KEYS",
    "dequantize_activation",
    "dequantize_weight",
    "fake_quantize_activation",
    "quantize_activation",
    "quantize_weight",
]

FP8_DTYPE = torch.float8_e4m3fn
FP8_MAX = 448.0
_BLOCK = 128
_EPS = 1e-12

WEIGHT_KEYS = frozenset({"fp8_static_tensor", "fp8_static_channel", "fp8_static_block128"})
"""Weight quant keys implemented here."""
ACTIVATION_KEYS = frozenset({"fp8_static_tensor", "fp8_dynamic_tensor", "fp8_dynamic_token", "fp8_dynamic_group128"})
"""Activation quant keys implemented here."""


def _cast(x: torch.Tensor) -> torch.Tensor:
    return x.clamp(-FP8_MAX, FP8_MAX).to(FP8_DTYPE)


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _expand_blocks(scale: torch.Tensor, rows: int, cols: int, row_block: int, col_block: int) -> torch.Tensor:
    """Broadcast a per-block scale ``[..., R, C]`` to ``[..., rows, cols]``."""
    out = scale.repeat_interleave(row_block, dim=-2) if row_block > 1 else scale
    out = out.repeat_interleave(col_block, dim=-1) if col_block > 1 else out
    return out[..., :rows, :cols]


def _weight_granularity(key: str) -> Granularity:
    if key not in WEIGHT_KEYS:
        raise UnsupportedConfigError("fp8 weights", "quant.weight", key, sorted(WEIGHT_KEYS))
    return QUANT_KEYS[key].granularity


def quantize_weight(w: torch.Tensor, key: str) -> tuple[torch.Tensor, torch.Tensor]:
    """Quantize ``w`` ``[E, N, K]`` to e4m3fn with the scale layout of ``key``.

    Returns:
        ``(w_fp8 [E, N, K], scale)``, scale float32 shaped as in the module docstring.

    Raises:
        UnsupportedConfigError: ``key`` is not a weight key implemented here.
    """
    gran = _weight_granularity(key)
    wf = w.float()
    experts, n, k = wf.shape
    if gran is Granularity.PER_TENSOR:
        scale = (wf.abs().amax(dim=(1, 2)) / FP8_MAX).clamp(min=_EPS)
        return _cast(wf / scale.view(experts, 1, 1)), scale
    if gran is Granularity.PER_CHANNEL:
        scale = (wf.abs().amax(dim=2) / FP8_MAX).clamp(min=_EPS)
        return _cast(wf / scale.unsqueeze(-1)), scale
    nb, kb = _ceil_div(n, _BLOCK), _ceil_div(k, _BLOCK)
    padded = torch.zeros(experts, nb * _BLOCK, kb * _BLOCK, dtype=torch.float32, device=wf.device)
    padded[:, :n, :k] = wf
    tiles = padded.view(experts, nb, _BLOCK, kb, _BLOCK)
    scale = (tiles.abs().amax(dim=(2, 4)) / FP8_MAX).clamp(min=_EPS)  # [E, nb, kb]
    return _cast(wf / _expand_blocks(scale, n, k, _BLOCK, _BLOCK)), scale


def dequantize_weight(w: torch.Tensor, scale: torch.Tensor | None, key: str | None) -> torch.Tensor:
    """Float32 weights from ``w`` (``[E, N, K]`` or one expert ``[N, K]``) and its scale.

    ``key`` ``None`` means unquantized: ``w.float()``. For one expert pass that expert's
    scale (``[]``, ``[N]`` or ``[nb, kb]``).

    Raises:
        UnsupportedConfigError: unknown weight key.
        ValueError: a quantized key without a scale.
    """
    if key is None:
        return w.float()
    gran = _weight_granularity(key)
    if scale is None:
        raise ValueError(f"weights quantized with {key} need a scale")
    wf = w.float()
    s = scale.float().to(wf.device)
    if gran is Granularity.PER_TENSOR:
        return wf * s.reshape(s.shape + (1, 1))
    if gran is Granularity.PER_CHANNEL:
        return wf * s.unsqueeze(-1)
    return wf * _expand_blocks(s, wf.shape[-2], wf.shape[-1], _BLOCK, _BLOCK)


def _activation_granularity(key: str) -> Granularity:
    if key not in ACTIVATION_KEYS:
        raise UnsupportedConfigError("fp8 activations", "quant.activation", key, sorted(ACTIVATION_KEYS))
    return QUANT_KEYS[key].granularity


def quantize_activation(x: torch.Tensor, key: str, static_scale: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Quantize activations ``x`` ``[T, H]`` with the scale layout of activation key ``key``.

    Args:
        x: ``[T, H]`` activations, any float dtype.
        key: activation quant key.
        static_scale: the fixed scale (``[1]`` or scalar) for static keys; ignored for dynamic ones.

    Returns:
        ``(x_fp8 [T, H], scale)`` with scale ``[1]``, ``[T, 1]`` or ``[T, ceil(H/128)]`` float32.

    Raises:
        UnsupportedConfigError: key not implemented here.
        ValueError: a static key without ``static_scale``.
    """
    gran = _activation_granularity(key)
    xf = x.float()
    if gran is Granularity.PER_TENSOR:
        if QUANT_KEYS[key].static:
            if static_scale is None:
                raise ValueError(f"activation key {key} is static: pass the calibrated scale (MoEWeights.a13_scale / a2_scale)")
            scale = static_scale.float().reshape(1).to(xf.device)
        else:
            scale = (xf.abs().amax() / FP8_MAX).clamp(min=_EPS).reshape(1)
        return _cast(xf / scale), scale
    if gran is Granularity.PER_TOKEN:
        scale = (xf.abs().amax(dim=-1, keepdim=True) / FP8_MAX).clamp(min=_EPS)
        return _cast(xf / scale), scale
    tokens, hidden = xf.shape
    groups = _ceil_div(hidden, _BLOCK)
    padded = torch.zeros(tokens, groups * _BLOCK, dtype=torch.float32, device=xf.device)
    padded[:, :hidden] = xf
    scale = (padded.view(tokens, groups, _BLOCK).abs().amax(dim=-1) / FP8_MAX).clamp(min=_EPS)
    return _cast(xf / _expand_blocks(scale, tokens, hidden, 1, _BLOCK)), scale


def dequantize_activation(xq: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """Float32 activations from ``xq`` ``[..., H]`` and a scale ``[1]``, ``[..., 1]`` or ``[..., ceil(H/128)]``."""
    xf = xq.float()
    s = scale.float().to(xf.device)
    if s.numel() == 1 or s.shape[-1] == 1:
        return xf * s
    return xf * s.repeat_interleave(_BLOCK, dim=-1)[..., : xf.shape[-1]]


def fake_quantize_activation(x: torch.Tensor, key: str, static_scale: torch.Tensor | None = None) -> torch.Tensor:
    """``dequantize(quantize(x))`` in float32: what a w8a8 kernel sees of ``x``."""
    xq, scale = quantize_activation(x, key, static_scale)
    return dequantize_activation(xq, scale)
