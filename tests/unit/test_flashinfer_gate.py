"""vLLM's FlashInfer availability gate (vllm/utils/flashinfer.py has_flashinfer), as tables.

Every FlashInfer MoE probe calls has_flashinfer() first, and it is false when neither
flashinfer-cubin (FlashInfer's precompiled kernels) nor VLLM_HAS_FLASHINFER_CUBIN says the kernels
are there, unless the JIT toolchain is found: in vLLM 0.29.0-0.31.0 ``nvcc`` on PATH, from 0.32.0
the nvcc FlashInfer's JIT runs (CUDA_HOME, CUDA_PATH, PATH or /usr/local/cuda) and ``ninja`` on
PATH. gpt-oss-20b on a B200 selects FlashInfer TRT-LLM where FlashInfer is available, the Triton
MXFP4 kernel where it is not.
"""

from __future__ import annotations

import pytest

from moe_oracle.core.config import MoEConfig
from moe_oracle.core.environment import HOST_TOOLS, Environment, probe_tools
from moe_oracle.core.errors import ConfigError
from moe_oracle.core.oracle import Oracle, default_catalog
from moe_oracle.explain.whynot import why_not
from moe_oracle.inputs.declared import declare_environment
from moe_oracle.inputs.envfile import parse_environment_text
from moe_oracle.inputs.hardware import lookup_hardware
from moe_oracle.inputs.hf import from_hf_config, load_hf_config
from moe_oracle.inputs.models import resolve_model_path

GATE = ("constraint.flashinfer_toolchain.nvcc_on_path", "constraint.flashinfer_toolchain.nvcc", "constraint.flashinfer_toolchain.ninja")


@pytest.fixture(scope="module")
def gpt_oss_b200() -> MoEConfig:
    ck = from_hf_config(load_hf_config(resolve_model_path("gpt-oss-20b")))
    return MoEConfig(device=lookup_hardware("B200").device, provenance=ck.provenance, **ck.kwargs)


def env(release: str, *, cubin: bool | None, tools: dict[str, bool] | None = None, variables: dict[str, str] | None = None) -> Environment:
    packages = [("vllm", release), ("flashinfer-python", "0.7.2.post1" if release == "0.33.0" else "0.7.0.post1")]
    if cubin:
        packages.append(("flashinfer-cubin", packages[1][1]))
    absent = frozenset({"flashinfer-cubin"}) if cubin is False else frozenset()
    return Environment(tuple(packages), absent, False, tuple((variables or {}).items()), tools=tuple((tools or {}).items()))


def backend(config: MoEConfig, environment: Environment) -> str:
    decision = Oracle.default().select(config, environment)
    return decision.rows[decision.winner].entry.backend


NO_TOOLS = {"nvcc": False, "jit_nvcc": False, "ninja": False}


@pytest.mark.parametrize("release", ["0.31.0", "0.33.0"])
def test_with_flashinfer_cubin_flashinfer_needs_no_toolchain(gpt_oss_b200, release):
    assert backend(gpt_oss_b200, env(release, cubin=True, tools=NO_TOOLS)) == "flashinfer_trtllm"


@pytest.mark.parametrize("release", ["0.31.0", "0.33.0"])
def test_without_flashinfer_cubin_and_without_a_toolchain_flashinfer_is_off(gpt_oss_b200, release):
    decision = Oracle.default().explain(gpt_oss_b200, env(release, cubin=False, tools=NO_TOOLS))
    assert decision.rows[decision.winner].entry.backend == "triton"
    trtllm = next(c for c in decision.candidates if c.kernel == "flashinfer_trtllm_mxfp4_monolithic")
    gate = [f for f in trtllm.failures if f.rule in GATE]
    assert gate and {f.code.value for f in gate} == {"package_missing"}
    # 0.29.0-0.31.0 read nvcc on PATH only; 0.32.0+ the JIT's nvcc and ninja.
    assert {f.field for f in gate} == ({"tools.nvcc"} if release == "0.31.0" else {"tools.jit_nvcc", "tools.ninja"})


@pytest.mark.parametrize("release, expected", [("0.31.0", "flashinfer_trtllm"), ("0.33.0", "triton")])
def test_nvcc_without_ninja_is_enough_before_0_32_only(gpt_oss_b200, release, expected):
    assert backend(gpt_oss_b200, env(release, cubin=False, tools={"nvcc": True, "jit_nvcc": True, "ninja": False})) == expected


@pytest.mark.parametrize("release, expected", [("0.31.0", "triton"), ("0.33.0", "flashinfer_trtllm")])
def test_a_toolkit_off_path_is_found_from_0_32_only(gpt_oss_b200, release, expected):
    # nvcc under /usr/local/cuda (or $CUDA_HOME) but not on PATH, ninja on PATH.
    assert backend(gpt_oss_b200, env(release, cubin=False, tools={"nvcc": False, "jit_nvcc": True, "ninja": True})) == expected


@pytest.mark.parametrize("release", ["0.31.0", "0.33.0"])
def test_vllm_has_flashinfer_cubin_stands_for_the_package(gpt_oss_b200, release):
    assert backend(gpt_oss_b200, env(release, cubin=False, tools=NO_TOOLS, variables={"VLLM_HAS_FLASHINFER_CUBIN": "1"})) == "flashinfer_trtllm"
    assert backend(gpt_oss_b200, env(release, cubin=False, tools=NO_TOOLS, variables={"VLLM_HAS_FLASHINFER_CUBIN": "0"})) == "triton"


@pytest.mark.parametrize("release, fields", [("0.31.0", {"tools.nvcc"}), ("0.33.0", {"tools.jit_nvcc", "tools.ninja"})])
def test_an_unknown_toolchain_is_an_assumption_on_the_winner(gpt_oss_b200, release, fields):
    decision = Oracle.default().select(gpt_oss_b200, env(release, cubin=False))
    assert decision.rows[decision.winner].entry.backend == "flashinfer_trtllm"
    assert {a.field for a in decision.assumptions if a.rule in GATE} == fields


def test_the_gate_binds_every_kernel_and_prepare_finalize_that_requires_flashinfer_and_nothing_else():
    catalog = default_catalog().for_version("0.33.0")

    def requires_flashinfer(checks) -> bool:
        return any(c.field == "packages.flashinfer-python" and ("present", True) in c.predicate.spec and not c.condition for c in checks if c.predicate is not None)

    for entry in (*catalog.experts, *catalog.prepare_finalize):
        gated = {c.field for c in entry.checks if c.rule.endswith(GATE[1:])}
        assert gated == ({"tools.jit_nvcc", "tools.ninja"} if requires_flashinfer(entry.checks) else set()), entry.id
    assert any(requires_flashinfer(p.checks) for p in catalog.prepare_finalize)


def test_why_not_suggests_installing_flashinfer_cubin(gpt_oss_b200):
    found = why_not(Oracle.default(), gpt_oss_b200, "flashinfer_trtllm", env("0.33.0", cubin=False, tools=NO_TOOLS))
    assert found.found
    first = found.alternatives[0]
    assert [e.target for e in first.edits] == ["packages.flashinfer-cubin"]
    assert first.edits[0].flag() == "--package flashinfer-cubin"


def test_declared_tools_nvcc_stands_for_the_jit_nvcc_unless_declared():
    catalog = default_catalog()
    assert declare_environment(catalog, tools=["nvcc", "ninja=no"]).environment.tools == (("jit_nvcc", True), ("ninja", False), ("nvcc", True))
    assert declare_environment(catalog, tools=["nvcc=no", "jit_nvcc=yes"]).environment.tools == (("jit_nvcc", True), ("nvcc", False))
    assert declare_environment(catalog).environment.tools == ()


@pytest.mark.parametrize("items, field, allowed", [
    (["nvc"], "--tool", sorted(HOST_TOOLS)),
    (["ninja=maybe"], "--tool ninja", ["yes", "no"]),
])
def test_a_bad_tool_declaration_names_the_field_and_the_allowed_values(items, field, allowed):
    with pytest.raises(ConfigError) as err:
        declare_environment(default_catalog(), tools=items)
    issue = err.value.issues[0]
    assert issue.path == field and issue.allowed == allowed


def test_collect_env_says_whether_nvcc_is_on_path():
    report = "Collecting environment information...\nCUDA runtime version         : {}\nvLLM Version                 : 0.33.0\n"
    assert parse_environment_text(report.format("12.8.93")).tools == (("nvcc", True),)
    assert parse_environment_text(report.format("Could not collect")).tools == (("nvcc", False),)
    assert parse_environment_text(report.format("No CUDA")).tools == ()


def test_probe_looks_the_jit_nvcc_up_where_vllm_does():
    on_path = {"nvcc": "/opt/cuda/bin/nvcc", "/opt/cuda/bin/nvcc": "/opt/cuda/bin/nvcc"}.get
    assert dict(probe_tools(HOST_TOOLS, {}, on_path)) == {"nvcc": True, "jit_nvcc": True, "ninja": False}
    # CUDA_HOME wins over PATH: an nvcc on PATH does not help when CUDA_HOME points elsewhere.
    assert dict(probe_tools(["jit_nvcc"], {"CUDA_HOME": "/elsewhere"}, on_path)) == {"jit_nvcc": False}
    # Nothing on PATH: /usr/local/cuda is the last resort.
    toolkit = {"/usr/local/cuda/bin/nvcc": "/usr/local/cuda/bin/nvcc"}.get
    assert dict(probe_tools(HOST_TOOLS, {}, toolkit)) == {"nvcc": False, "jit_nvcc": True, "ninja": False}


def test_vllm_has_flashinfer_cubin_is_parsed_as_vllm_parses_it(gpt_oss_b200):
    with pytest.raises(ConfigError):
        declare_environment(default_catalog(), packages=["vllm==0.33.0"], env=["VLLM_HAS_FLASHINFER_CUBIN=yes"])
