"""The FlashInfer NVLink two-sided prepare/finalize off CUDA (prepare_finalize/others.yaml, CUDA
only): vLLM 0.29.0-0.33.0 build it on CPU and XPU too (their communicators fall back to the
allgather/reduce-scatter manager, whose world size is all the constructor reads) and the layer
fails at its first forward; 0.34.0's constructor asserts FlashInfer's own manager. We refuse the
P/F in every release, deliberately (the reviewed divergence ``divergence.pf.fi_two_sided_on_cpu``
in moe_oracle/verify/divergences.yaml, XPU added after the guided pair search met it on 0.29.0)."""

from __future__ import annotations

import pytest
import yaml

from moe_oracle import MoEConfig, select
from moe_oracle.core.config import ParallelConfig
from moe_oracle.core.environment import Environment
from moe_oracle.inputs.files import parse_quant
from moe_oracle.inputs.hardware import GPU_CATALOG
from moe_oracle.verify import divergences

RULE = "flashinfer_nvlink_two_sided.platform"


def _decide(release: str, gpu: str):
    cfg = MoEConfig(num_experts=64, top_k=4, hidden_size=2048, intermediate_size=768, device=GPU_CATALOG[gpu].device, quant=parse_quant("mxfp8"),
                    parallel=ParallelConfig(dp_size=2, use_ep=True, all2all_backend="flashinfer_nvlink_two_sided"))
    return select(cfg, env=Environment.declared(packages=[f"vllm=={release}"]), strict=False)


def _unchecked(d) -> list[str]:
    return [w.rule for w in d.warnings if w.code == "unchecked"]


@pytest.mark.parametrize("release", ["0.29.0", "0.33.0", "0.34.0"])
def test_xpu_selects_the_experts_and_the_two_sided_prepare_finalize_fails(release):
    d = _decide(release, "ARC_B580")
    assert d.kernel is not None and d.kernel.startswith("xpu")
    assert RULE in _unchecked(d)


@pytest.mark.parametrize("release", ["0.33.0", "0.34.0"])
def test_cuda_builds_the_two_sided_prepare_finalize(release):
    d = _decide(release, "H200")
    assert d.prepare_finalize == "flashinfer_nvlink_two_sided" and RULE not in _unchecked(d)


def test_the_reviewed_divergence_covers_xpu_before_0_34_only():
    with open(divergences.DEFAULT_PATH, encoding="utf-8") as fh:
        entries = {e["id"]: e for e in yaml.safe_load(fh)["divergences"]}
    entry = entries["divergence.pf.fi_two_sided_on_cpu"]
    assert set(entry["when"]["platform"]) == {"cpu", "xpu"} and entry["releases"] == ">=0.29.0,<0.34.0"
    assert entry["rule"] == RULE and entry["ours"]["prepare_finalize"] == "(raises) " + RULE
