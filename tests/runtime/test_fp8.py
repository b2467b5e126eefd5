"""FP8 (e4m3fn) quantization of weights and activations: scale layouts and round-trip error.

Error bound used: e4m3fn keeps 3 mantissa bits, so rounding a normal value moves it by at most
2**-4 of itself; below the smallest normal (2**-6) the spacing is 2**-9 (absolute, in units of the
scale). Hence |dequant(quant(w)) - w| <= 2**-4 * |w| + 2**-9 * scale.
"""

from __future__ import annotations

import pytest
import torch

from moe_oracle.runtime import fp8
from moe_oracle.runtime.errors import UnsupportedConfigError


def _bound_ok(w: torch.Tensor, deq: torch.Tensor, scale_full: torch.Tensor) -> bool:
    return bool(((deq - w).abs() <= 2.0**-4 * w.abs() + 2.0**-9 * scale_full + 1e-12).all())


def test_per_tensor_weight_scale_is_amax_over_448():
    w = torch.randn(3, 16, 32)
    w[1, 2, 3] = 4.48 + w[1].abs().max()  # expert 1's amax is known
    q, s = fp8.quantize_weight(w, "fp8_static_tensor")
    assert q.dtype == torch.float8_e4m3fn and s.shape == (3,)
    assert torch.allclose(s[1], w[1, 2, 3] / 448.0)
    deq = fp8.dequantize_weight(q, s, "fp8_static_tensor")
    assert _bound_ok(w, deq, s.view(3, 1, 1).expand_as(w))


def test_per_channel_weight_scale_per_output_row():
    w = torch.randn(2, 8, 64)
    q, s = fp8.quantize_weight(w, "fp8_static_channel")
    assert s.shape == (2, 8)
    assert torch.allclose(s, w.abs().amax(dim=2) / 448.0)
    assert _bound_ok(w, fp8.dequantize_weight(q, s, "fp8_static_channel"), s.unsqueeze(-1).expand_as(w))


def test_block_weight_scales_index_128x128_tiles():
    # Tile (i, j) of a 256x256 expert holds the constant 2i + j + 1: its scale is (2i + j + 1) / 448 and
    # every element quantizes to exactly 448, so dequantization is exact.
    w = torch.zeros(1, 256, 256)
    for i in range(2):
        for j in range(2):
            w[0, i * 128 : (i + 1) * 128, j * 128 : (j + 1) * 128] = 2 * i + j + 1
    q, s = fp8.quantize_weight(w, "fp8_static_block128")
    assert s.shape == (1, 2, 2)
    assert torch.allclose(s[0], torch.tensor([[1.0, 2.0], [3.0, 4.0]]) / 448.0)
    assert torch.equal(fp8.dequantize_weight(q, s, "fp8_static_block128"), w)


def test_block_weight_scales_cover_partial_tiles():
    w = torch.randn(2, 130, 200)
    q, s = fp8.quantize_weight(w, "fp8_static_block128")
    assert s.shape == (2, 2, 2)  # ceil(130/128), ceil(200/128)
    assert torch.allclose(s[1, 1, 1], w[1, 128:, 128:].abs().max() / 448.0)
    full = s.repeat_interleave(128, 1).repeat_interleave(128, 2)[:, :130, :200]
    assert _bound_ok(w, fp8.dequantize_weight(q, s, "fp8_static_block128"), full)


def test_one_expert_dequantizes_with_its_own_scale():
    w = torch.randn(3, 130, 140)
    q, s = fp8.quantize_weight(w, "fp8_static_block128")
    assert torch.equal(fp8.dequantize_weight(q[2], s[2], "fp8_static_block128"), fp8.dequantize_weight(q, s, "fp8_static_block128")[2])


@pytest.mark.parametrize(
    "key, scale_shape",
    [("fp8_dynamic_tensor", (1,)), ("fp8_dynamic_token", (5, 1)), ("fp8_dynamic_group128", (5, 3))],
)
def test_activation_scale_layouts(key, scale_shape):
    x = torch.randn(5, 300)
    q, s = fp8.quantize_activation(x, key)
    assert q.shape == x.shape and s.shape == scale_shape
    deq = fp8.dequantize_activation(q, s)
    full = s.expand(5, 300) if s.shape[-1] == 1 else s.repeat_interleave(128, 1)[:, :300]
    assert _bound_ok(x, deq, full.expand_as(x))


def test_group128_scale_is_group_amax():
    x = torch.randn(2, 256)
    x[1, 130] = 9.0
    _, s = fp8.quantize_activation(x, "fp8_dynamic_group128")
    assert torch.isclose(s[1, 1], torch.tensor(9.0 / 448.0))
    assert torch.isclose(s[0, 0], x[0, :128].abs().max() / 448.0)


def test_static_activation_key_needs_its_scale():
    with pytest.raises(ValueError, match="static"):
        fp8.quantize_activation(torch.randn(2, 8), "fp8_static_tensor")
    q, s = fp8.quantize_activation(torch.full((2, 8), 1000.0), "fp8_static_tensor", torch.tensor([1.0]))
    assert torch.equal(q.float(), torch.full((2, 8), 448.0))  # saturates at the largest finite e4m3fn


@pytest.mark.parametrize("key", ["mxfp8_static", "nvfp4_static", "int8_static_channel"])
def test_other_weight_keys_are_refused(key):
    with pytest.raises(UnsupportedConfigError):
        fp8.quantize_weight(torch.randn(1, 4, 4), key)
