"""The FlashInfer NVLink two-sided prepare/finalize on XPU (prepare_finalize/others.yaml): vLLM
0.29.0-0.33.0 build it from the all2all backend's name (XPU's communicator falls back to the
allgather/reduce-scatter manager, whose world size is all the constructor reads); from 0.34.0
the constructor asserts FlashInfer's own manager and XPU fails at construction. Found by the
guided pair search against vLLM 0.29.0 (issue 25)."""

from __future__ import annotations

import pytest

from moe_oracle import MoEConfig, select
from moe_oracle.core.config import ParallelConfig
from moe_oracle.core.environment import Environment
from moe_oracle.inputs.files import parse_quant
from moe_oracle.inputs.hardware import GPU_CATALOG


def _decide(release: str, gpu: str = "ARC_B580", all2all: str = "flashinfer_nvlink_two_sided"):
    cfg = MoEConfig(num_experts=64, top_k=4, hidden_size=2048, intermediate_size=768, device=GPU_CATALOG[gpu].device, quant=parse_quant("mxfp8"),
                    parallel=ParallelConfig(dp_size=2, use_ep=True, all2all_backend=all2all))
    return select(cfg, env=Environment.declared(packages=[f"vllm=={release}"]), strict=False)


@pytest.mark.parametrize("release", ["0.29.0", "0.33.0"])
def test_xpu_builds_the_two_sided_prepare_finalize_before_0_34(release):
    d = _decide(release)
    assert d.kernel is not None and d.kernel.startswith("xpu")
    assert d.prepare_finalize == "flashinfer_nvlink_two_sided"
    assert not [r for r in _unchecked(d) if r.startswith("flashinfer_nvlink_two_sided.")]


def _unchecked(d) -> list[str]:
    return [w.rule for w in d.warnings if w.code == "unchecked"]


def test_xpu_two_sided_fails_at_construction_from_0_34():
    # vLLM selects the experts, then the P/F constructor raises: the engine's construction warning.
    d = _decide("0.34.0")
    assert d.kernel is not None and d.kernel.startswith("xpu")
    assert "flashinfer_nvlink_two_sided.xpu_manager" in _unchecked(d)


@pytest.mark.parametrize("release", ["0.33.0", "0.34.0"])
def test_cuda_builds_the_two_sided_prepare_finalize(release):
    d = _decide(release, gpu="H200")
    assert d.prepare_finalize == "flashinfer_nvlink_two_sided"
    assert not [r for r in _unchecked(d) if r.startswith("flashinfer_nvlink_two_sided.")]
