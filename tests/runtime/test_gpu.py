"""GPU tests (marker ``gpu``; skipped without CUDA): torch._grouped_mm's CUDA path and the runtime on a GPU.

Tolerances: BF16_REL_TOL (normwise, 6 * 2**-8; helpers.py) for bf16 kernels against the float32
reference computed on the same device; 1e-4 absolute for the float32 reference on CUDA against
CPU (different GEMM algorithms and summation orders; TF32 is off: torch's default for matmul).
Model shapes: examples/models (qwen3-30b-a3b: 128 experts top-8, hidden 2048, intermediate 768;
mixtral-8x7b: 8 top-2, 4096, 14336; gpt-oss-20b dims: 32 top-4, 2880, 2880, swigluoai, no bias).
"""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from helpers import BF16_REL_TOL, inputs, normwise_error, small_spec, with_swapped_gate_up
from moe_oracle import Device, MoEConfig, Oracle
from moe_oracle.kernels.reference import reference_moe
from moe_oracle.kernels.torch_grouped_mm import TorchGroupedMMExperts
from moe_oracle.prepare_finalize.no_dp_ep import NoDPEPModular
from moe_oracle.quant import SCHEMES
from moe_oracle.runtime.kernel import FusedMoEKernel
from moe_oracle.runtime.runner import run_layer
from moe_oracle.runtime.weights import make_random_weights

pytestmark = pytest.mark.gpu

MODEL_SHAPES = [
    pytest.param(dict(num_experts=8, top_k=2, hidden=64, intermediate=32), 33, id="tiny"),
    pytest.param(dict(num_experts=128, top_k=8, hidden=2048, intermediate=768), 256, id="qwen3-30b-a3b"),
    pytest.param(dict(num_experts=8, top_k=2, hidden=4096, intermediate=14336), 64, id="mixtral-8x7b"),
    pytest.param(dict(num_experts=32, top_k=4, hidden=2880, intermediate=2880, activation="swigluoai"), 128, id="gpt-oss-20b-dims"),
]


def _on_cuda(spec, tokens, seed=1):  # noqa: ANN001, ANN202
    w = make_random_weights(spec, seed=seed, device="cuda", generator_device="cuda")
    x, logits = inputs(spec, tokens, seed=2)
    return w, x.cuda(), logits.cuda()


@pytest.mark.parametrize("shape, tokens", MODEL_SHAPES)
def test_grouped_mm_cuda_matches_reference(shape, tokens):
    spec = small_spec(dtype="bfloat16", **shape)
    w, x, logits = _on_cuda(spec, tokens)
    out = FusedMoEKernel(NoDPEPModular(spec), TorchGroupedMMExperts(spec, w))(x, logits)
    assert out.is_cuda and out.dtype == torch.bfloat16
    err = normwise_error(out, reference_moe(x, logits, w, spec))
    print(f"grouped_mm cuda {shape} T={tokens}: normwise error {err:.2e}")
    assert err <= BF16_REL_TOL


def test_grouped_mm_cuda_negative_controls():
    spec = small_spec(dtype="bfloat16", num_experts=32, top_k=4, hidden=1024, intermediate=512)
    w, x, logits = _on_cuda(spec, 128)
    ref = reference_moe(x, logits, w, spec)
    swapped = FusedMoEKernel(NoDPEPModular(spec), TorchGroupedMMExperts(spec, with_swapped_gate_up(w, spec)))(x, logits)
    wrong_spec = replace(spec, routing=replace(spec.routing, method="default"))
    wrong_route = FusedMoEKernel(NoDPEPModular(wrong_spec), TorchGroupedMMExperts(wrong_spec, w))(x, logits)
    assert normwise_error(swapped, ref) > 10 * BF16_REL_TOL
    assert normwise_error(wrong_route, ref) > 10 * BF16_REL_TOL


@pytest.mark.parametrize("scheme", ["unquantized", "fp8_w16", "fp8_block_w16"])
def test_reference_on_cuda_equals_cpu(scheme):
    spec = small_spec(quant=SCHEMES[scheme], hidden=256, intermediate=128)
    w = make_random_weights(spec, seed=3)
    x, logits = inputs(spec, 16)
    cpu = reference_moe(x, logits, w, spec)
    cuda = reference_moe(x.cuda(), logits.cuda(), w.to("cuda"), spec)
    assert torch.allclose(cuda.cpu(), cpu, atol=1e-4)


def test_run_layer_on_cuda_with_the_oracles_choice():
    config = MoEConfig(
        num_experts=128, top_k=8, hidden_size=2048, intermediate_size=768, device=Device("cuda", capability=90),
        routing_method="renormalize_naive", in_dtype="bfloat16", moe_backend="torch_grouped_mm",
    )
    decision = Oracle.default(view="runtime").select(config)
    report = run_layer(config, decision, tokens=512, layers=2, device="cuda", progress=False)
    print(report.describe())
    assert report.kernel == "torch_grouped_mm" and report.device.startswith("cuda")
    assert report.max_rel_error <= BF16_REL_TOL and report.time_ms > 0 and report.tflops > 0
