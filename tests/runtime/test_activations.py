"""Reference activations against hand-computed values.

Tolerance: 1e-5 absolute (values of order 1-40 in float32; the hand values carry 6-7
significant digits). Numbers used: sigmoid(ln 3) = 0.75; gelu_erf(1) = 0.5 * (1 + erf(1/sqrt 2))
= 0.8413447; gelu_tanh(1) = 0.5 * (1 + tanh(sqrt(2/pi) * 1.044715)) = 0.8411920.
"""

from __future__ import annotations

import math

import pytest
import torch

from moe_oracle.runtime.activations import apply_activation
from moe_oracle.runtime.errors import UnsupportedConfigError

LN3 = math.log(3.0)
TOL = 1e-5

CASES = [
    # activation, h (GEMM1 output), expected (hand-computed)
    pytest.param("silu", [LN3, 2.0], [0.75 * LN3 * 2.0], id="silu: silu(ln3) * 2 = 1.5 ln3"),
    pytest.param("silu", [0.0, 5.0], [0.0], id="silu: gate 0 -> 0 whatever up"),
    pytest.param("gelu", [1.0, 2.0], [0.8413447 * 2.0], id="gelu: gelu(1) * 2"),
    pytest.param("gelu_tanh", [1.0, 2.0], [0.8411920 * 2.0], id="gelu_tanh: gelu_tanh(1) * 2"),
    pytest.param("relu2", [3.0, 0.5], [4.5], id="relu2 gated: 3^2 * 0.5"),
    pytest.param("relu2", [-1.0, 0.5], [0.0], id="relu2 gated: negative gate -> 0"),
    pytest.param("silu_no_mul", [LN3], [0.75 * LN3], id="silu_no_mul"),
    pytest.param("gelu_no_mul", [1.0], [0.8413447], id="gelu_no_mul"),
    pytest.param("gelu_tanh_no_mul", [1.0], [0.8411920], id="gelu_tanh_no_mul"),
    pytest.param("relu2_no_mul", [-1.0, 3.0], [0.0, 9.0], id="relu2_no_mul"),
]


@pytest.mark.parametrize("activation, h, expected", CASES)
def test_activation_hand_computed(activation, h, expected):
    out = apply_activation(torch.tensor([h]), activation)
    assert out.shape == (1, len(expected))
    assert torch.allclose(out, torch.tensor([expected]), atol=TOL)


def test_gated_layout_is_gate_then_up():
    # [gate; up] halves: swapping them must change the result (silu(2) * ln3 != silu(ln3) * 2).
    a = apply_activation(torch.tensor([[LN3, 2.0]]), "silu")
    b = apply_activation(torch.tensor([[2.0, LN3]]), "silu")
    assert abs(a.item() - b.item()) > 0.1


# SwiGLU-OAI, gpt-oss defaults alpha 1.702, limit 7.0: out = (clamp(up, -7, 7) + 1) * g * sigmoid(1.702 g), g = min(gate, 7)
G = LN3 / 1.702  # sigmoid(1.702 * G) = 0.75
SWIGLU_CASES = [
    # (gate, up, expected)
    (0.0, 5.0, 0.0),  # glu(0) = 0
    (G, 1.0, 2.0 * G * 0.75),  # (1 + 1) * G * 0.75 = 0.9682283
    (10.0, -9.0, -6.0 * 7.0 / (1.0 + math.exp(-1.702 * 7.0))),  # gate clamped to 7, up clamped to -7: (-7 + 1) * 7 * sigmoid(11.914)
]


@pytest.mark.parametrize("gate, up, expected", SWIGLU_CASES)
def test_swigluoai_interleaved_and_uninterleaved(gate, up, expected):
    # Two tokens' worth in one row: (gate, up) and (0, 5).
    interleaved = torch.tensor([[gate, up, 0.0, 5.0]])  # g0 u0 g1 u1 (gpt-oss)
    packed = torch.tensor([[gate, 0.0, up, 5.0]])  # g0 g1 u0 u1
    want = torch.tensor([[expected, 0.0]])
    assert torch.allclose(apply_activation(interleaved, "swigluoai"), want, atol=TOL)
    assert torch.allclose(apply_activation(packed, "swigluoai_uninterleave"), want, atol=TOL)


def test_swigluoai_custom_alpha_and_limit():
    # alpha 1, limit 1: gate 2 -> 1, up 0.5: (0.5 + 1) * 1 * sigmoid(1) = 1.5 * 0.7310586
    out = apply_activation(torch.tensor([[2.0, 0.5]]), "swigluoai", swiglu_alpha=1.0, swiglu_limit=1.0)
    assert torch.allclose(out, torch.tensor([[1.5 * 0.7310586]]), atol=TOL)


def test_swigluoai_lower_gate_is_not_clamped():
    # gate has only an upper clamp: gate -10 stays -10: 1 * -10 * sigmoid(-17.02) ~ -4.1e-7 * 10
    out = apply_activation(torch.tensor([[-10.0, 0.0]]), "swigluoai")
    assert torch.allclose(out, torch.tensor([[-10.0 / (1.0 + math.exp(17.02))]]), atol=1e-9)


@pytest.mark.parametrize("activation", ["situ", "swiglustep"])
def test_activations_without_math_raise(activation):
    with pytest.raises(UnsupportedConfigError) as err:
        apply_activation(torch.zeros(1, 4), activation)
    assert err.value.field == "activation"
