"""vLLM 0.34.0's DeepGEMM nvcc gate (vllm/utils/deep_gemm.py is_deep_gemm_supported), as a table rule.

breakit18 finding 2: 0.34.0 is_deep_gemm_supported() returns False when _deep_gemm_nvcc_path() finds
no nvcc (CUDA_HOME, CUDA_PATH, PATH, /usr/local/cuda), and every DeepGEMM experts class's
_supports_current_device returns it (TritonOrDeepGemmExperts needs both halves). 0.29.0-0.33.0 have no
such lookup. DeepSeek-R1 on a B200 TP8 selected deep_gemm on 0.34.0 with no nvcc at all.
"""

from __future__ import annotations

import types
from pathlib import Path

import pytest

from moe_oracle.core.config import MoEConfig, ParallelConfig
from moe_oracle.core.environment import Environment
from moe_oracle.core.oracle import Oracle, default_catalog
from moe_oracle.inputs.hardware import lookup_hardware
from moe_oracle.inputs.hf import from_hf_config, load_hf_config
from moe_oracle.inputs.models import resolve_model_path
from moe_oracle.verify import sim_standins
from moe_oracle.verify.sim_standins import check_deep_gemm_toolchain

RULE = "constraint.deep_gemm_toolchain.nvcc"


@pytest.fixture(scope="module")
def r1_b200() -> MoEConfig:
    ck = from_hf_config(load_hf_config(resolve_model_path("deepseek-r1")))
    return MoEConfig(device=lookup_hardware("B200").device, parallel=ParallelConfig(tp_size=8), provenance=ck.provenance, **ck.kwargs)


def env(release: str, jit_nvcc: bool | None) -> Environment:
    packages = (("vllm", release), ("deep-gemm", "2.1.0"))
    tools = () if jit_nvcc is None else (("jit_nvcc", jit_nvcc), ("nvcc", jit_nvcc), ("ninja", False))
    return Environment(packages, frozenset({"flashinfer-python", "flashinfer-cubin"}), False, (), tools=tools)


def backend(config: MoEConfig, environment: Environment) -> str:
    decision = Oracle.default().select(config, environment)
    return decision.rows[decision.winner].entry.backend


@pytest.mark.parametrize(("release", "jit_nvcc", "expected"), [
    ("0.34.0", False, "triton"),
    ("0.34.0", True, "deep_gemm"),
    ("0.33.0", False, "deep_gemm"),
    ("0.29.0", False, "deep_gemm"),
])
def test_deep_gemm_needs_the_jit_nvcc_from_0_34_only(r1_b200, release, jit_nvcc, expected):
    assert backend(r1_b200, env(release, jit_nvcc)) == expected


def test_an_unknown_toolchain_is_an_assumption_on_deep_gemm(r1_b200):
    decision = Oracle.default().select(r1_b200, env("0.34.0", None))
    assert decision.rows[decision.winner].entry.backend == "deep_gemm"
    assert any(a.rule == RULE and a.field == "tools.jit_nvcc" for a in decision.assumptions)


def test_the_gate_binds_the_deep_gemm_kernels_and_nothing_else():
    catalog = default_catalog().for_version("0.34.0")
    gated = {e.id for e in (*catalog.experts, *catalog.prepare_finalize) if any(c.rule.endswith(RULE) for c in e.checks)}
    assert gated == {"deep_gemm", "deep_gemm_mxfp8", "deep_gemm_fp4", "deep_gemm_batched"}
    older = default_catalog().for_version("0.33.0")
    assert not any(c.rule.endswith(RULE) for e in older.experts for c in e.checks)


def test_the_harness_stand_in_follows_the_deployments_tools():
    found: set[str] = set()
    nvcc_path = sim_standins.deep_gemm_nvcc_path(lambda: frozenset(found))
    assert nvcc_path() is None
    found.add("jit_nvcc")
    assert nvcc_path() == sim_standins.SIMULATED_JIT_NVCC
    assert sim_standins.unread_nvcc_version(sim_standins.SIMULATED_JIT_NVCC) is None


def _module(release: str, **attrs) -> types.ModuleType:
    path = Path(f"/work/vllm-env/src/{release}/vllm/utils/deep_gemm.py")
    if not path.is_file():
        pytest.skip(f"vLLM {release} sources not unpacked")
    module = types.ModuleType("vllm.utils.deep_gemm")
    module.__file__ = str(path)
    module.is_deep_gemm_supported = lambda: True
    vars(module).update(attrs)
    return module


def test_the_harness_self_check_sees_the_0_34_gate_and_its_stand_ins():
    stood_in = _module("0.34.0", _deep_gemm_nvcc_path=sim_standins.deep_gemm_nvcc_path(frozenset), _nvcc_version=sim_standins.unread_nvcc_version)
    assert check_deep_gemm_toolchain(stood_in) == []
    original = _module("0.34.0", _deep_gemm_nvcc_path=lambda: "/usr/local/cuda/bin/nvcc", _nvcc_version=lambda nvcc: (12, 8))
    assert len(check_deep_gemm_toolchain(original)) == 2
    assert check_deep_gemm_toolchain(_module("0.33.0")) == []
