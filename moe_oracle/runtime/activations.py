"""Reference expert activations in plain torch.

Input is the GEMM1 output ``h`` of shape ``[..., w13_rows]``; gated activations
return ``[..., w13_rows // 2]``, ``*_no_mul`` activations return ``[..., w13_rows]``.
Computation happens in the dtype of ``h`` (the reference passes float32).

Gated layouts:

* ``silu``, ``gelu``, ``gelu_tanh``, ``relu2``, ``swigluoai_uninterleave``: w13 rows are
  ``[gate; up]`` halves, so ``gate = h[..., :I]``, ``up = h[..., I:]``;
* ``swigluoai``: gate and up *interleaved* (gpt-oss): ``gate = h[..., 0::2]``, ``up = h[..., 1::2]``.

Formulas (``I`` = intermediate size):

* ``silu``: ``silu(gate) * up``; ``gelu``: ``gelu_erf(gate) * up``; ``gelu_tanh``: tanh-approximate gelu;
* ``relu2``: ``relu(gate)**2 * up``; ``relu2_no_mul``: ``relu(h)**2``;
* ``swigluoai``: ``gate = min(gate, limit)``, ``up = clamp(up, -limit, limit)``,
  ``out = (up + 1) * gate * sigmoid(alpha * gate)``, gpt-oss defaults ``alpha = 1.702``, ``limit = 7.0``.

Source: vLLM main 00f7f258 ``P/activation.py`` (``MoEActivation``) and the
``SwigluOAIAndMul.forward_native`` formula, which cites HF transformers v4.55.0
``models/gpt_oss/modeling_gpt_oss.py`` L106-110 (verified by search, 2026-11).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ..core.vocab import Activation
from .errors import UnsupportedConfigError

__all__ = ["GPT_OSS_SWIGLU_ALPHA", "GPT_OSS_SWIGLU_LIMIT", "IMPLEMENTED_ACTIVATIONS", "apply_activation", "split_gate_up"]

GPT_OSS_SWIGLU_ALPHA = 1.702
"""gpt-oss SwiGLU sigmoid scale (``alpha``)."""
GPT_OSS_SWIGLU_LIMIT = 7.0
"""gpt-oss SwiGLU clamp (``limit``)."""

IMPLEMENTED_ACTIVATIONS = frozenset(
    {
        Activation.SILU,
        Activation.GELU,
        Activation.GELU_TANH,
        Activation.RELU2,
        Activation.SWIGLUOAI,
        Activation.SWIGLUOAI_UNINTERLEAVE,
        Activation.SILU_NO_MUL,
        Activation.GELU_NO_MUL,
        Activation.GELU_TANH_NO_MUL,
        Activation.RELU2_NO_MUL,
    }
)
"""Activations with defined math here (``situ`` and ``swiglustep`` are not implemented)."""


def split_gate_up(h: torch.Tensor, activation: Activation) -> tuple[torch.Tensor, torch.Tensor]:
    """Gate and up parts of a gated GEMM1 output ``h`` ``[..., 2 * I]`` -> two ``[..., I]`` views.

    Raises:
        ValueError: ``h``'s last dimension is odd.
    """
    if h.shape[-1] % 2:
        raise ValueError(f"gated activation {activation.value} needs an even last dimension, got {h.shape[-1]}")
    if activation is Activation.SWIGLUOAI:
        return h[..., 0::2], h[..., 1::2]
    half = h.shape[-1] // 2
    return h[..., :half], h[..., half:]


def _unary(x: torch.Tensor, kind: str) -> torch.Tensor:
    if kind == "silu":
        return F.silu(x)
    if kind == "gelu":
        return F.gelu(x)
    if kind == "gelu_tanh":
        return F.gelu(x, approximate="tanh")
    if kind == "relu2":
        return torch.square(F.relu(x))
    raise AssertionError(kind)


_UNARY = {
    Activation.SILU: "silu",
    Activation.GELU: "gelu",
    Activation.GELU_TANH: "gelu_tanh",
    Activation.RELU2: "relu2",
    Activation.SILU_NO_MUL: "silu",
    Activation.GELU_NO_MUL: "gelu",
    Activation.GELU_TANH_NO_MUL: "gelu_tanh",
    Activation.RELU2_NO_MUL: "relu2",
}


def apply_activation(
    h: torch.Tensor,
    activation: Activation | str,
    *,
    swiglu_alpha: float | None = None,
    swiglu_limit: float | None = None,
) -> torch.Tensor:
    """Apply ``activation`` to the GEMM1 output.

    Args:
        h: ``[..., w13_rows]`` GEMM1 output, any float dtype.
        activation: the activation.
        swiglu_alpha: SwiGLU-OAI sigmoid scale; ``None`` means 1.702 (gpt-oss).
        swiglu_limit: SwiGLU-OAI clamp; ``None`` means 7.0 (gpt-oss).

    Returns:
        ``[..., w13_rows // 2]`` for gated activations, ``[..., w13_rows]`` otherwise; dtype of ``h``.

    Raises:
        UnsupportedConfigError: ``situ``/``swiglustep`` (no reference math here).

    >>> apply_activation(torch.tensor([[0.0, 2.0]]), "silu")
    tensor([[0.]])
    >>> apply_activation(torch.tensor([[-1.0, 3.0]]), "relu2_no_mul")
    tensor([[0., 9.]])
    """
    act = Activation(activation)
    if act not in IMPLEMENTED_ACTIVATIONS:
        raise UnsupportedConfigError("apply_activation", "activation", act.value, sorted(a.value for a in IMPLEMENTED_ACTIVATIONS))
    if not act.is_gated:
        return _unary(h, _UNARY[act])
    gate, up = split_gate_up(h, act)
    if act in (Activation.SWIGLUOAI, Activation.SWIGLUOAI_UNINTERLEAVE):
        alpha = GPT_OSS_SWIGLU_ALPHA if swiglu_alpha is None else swiglu_alpha
        limit = GPT_OSS_SWIGLU_LIMIT if swiglu_limit is None else swiglu_limit
        gate = gate.clamp(max=limit)
        up = up.clamp(min=-limit, max=limit)
        return (up + 1) * (gate * torch.sigmoid(alpha * gate))
    return _unary(gate, _UNARY[act]) * up
