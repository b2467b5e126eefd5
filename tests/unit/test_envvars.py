"""Environment variables read exactly as vLLM 0.33.0 vllm/envs.py reads each one (issue 9).

Before issue 9 every bool variable was read as ``1/true/yes/on`` (so ``VLLM_USE_DEEP_GEMM=true``
was "true" although vLLM fails at start, and ``VLLM_ROCM_USE_AITER=yes`` was "true" although
vLLM reads it as false), and a removed variable was refused as unknown.
"""

from __future__ import annotations

import json

import pytest

from moe_oracle.cli import main
from moe_oracle.core.envvars import EnvVarSpec, env_issues, parse_env_value
from moe_oracle.core.errors import ConfigError
from moe_oracle.core.oracle import default_catalog

INT = EnvVarSpec("VLLM_USE_DEEP_GEMM", "bool", True, "", "int")
TRUE_OR_1 = EnvVarSpec("VLLM_ROCM_USE_AITER", "bool", False, "", "true_or_1")


@pytest.mark.parametrize(("raw", "value"), [("1", True), ("0", False), (" 1 ", True), ("+1", True), ("01", True), ("-1", True), ("2", True)])
def test_int_variables_follow_bool_int(raw, value):
    assert parse_env_value(INT, raw) is value


@pytest.mark.parametrize("raw", ["true", "True", "yes", "on", "", "1.0", "0x1"])
def test_int_variables_refuse_what_int_refuses(raw):
    with pytest.raises(ConfigError) as info:
        parse_env_value(INT, raw)
    assert info.value.issues[0].allowed == ["0", "1"]


@pytest.mark.parametrize(("raw", "value"), [("1", True), ("true", True), ("TRUE", True), ("True", True), ("yes", False), ("on", False), (" 1", False), ("0", False), ("", False)])
def test_true_or_1_variables_accept_only_1_and_true(raw, value):
    assert parse_env_value(TRUE_OR_1, raw) is value


def test_shipped_variables_declare_how_vllm_parses_them():
    parse = {v.name: v.parse for v in default_catalog().env_vars}
    # vLLM 0.33.0 vllm/envs.py lines 638 (batch invariant), 1267/1296 (AITER), 1600-1603 (DeepGEMM), 1685 (INT4)
    assert parse["VLLM_USE_DEEP_GEMM"] == parse["VLLM_MOE_USE_DEEP_GEMM"] == parse["VLLM_BATCH_INVARIANT"] == parse["VLLM_USE_FLASHINFER_MOE_INT4"] == "int"
    assert parse["VLLM_ROCM_USE_AITER"] == parse["VLLM_ROCM_USE_AITER_MOE"] == "true_or_1"
    # vLLM 0.29.0-0.34.0 P/experts/fused_humming_moe.py get_humming_moe_gemm_type lowercases the value;
    # 0.34.0 Q/fp8.py compares VLLM_FP8_MOE_REQUANT == "mxfp4" as written (breakit18 finding 1)
    assert parse["VLLM_HUMMING_MOE_GEMM_TYPE"] == parse["VLLM_FP8_MOE_REQUANT_ACT"] == "lower"
    assert parse["VLLM_FP8_MOE_REQUANT"] == "str"


@pytest.mark.parametrize("release", ["0.32.0", "0.33.0", "0.34.0"])  # before 0.32.0 Kimi-K2.5 runs Marlin here for other reasons
@pytest.mark.parametrize(("raw", "winner"), [("INDEXED", "humming_indexed"), ("AUTO", "humming_indexed"), ("Grouped", "humming_grouped"), ("grouped", "humming_grouped")])
def test_humming_gemm_type_is_read_ignoring_case(release, raw, winner, capsys):
    code = main(["select", "--model", "kimi-k2.5", "--gpu", "H200", "--tp", "8", "--package", f"vllm=={release}", "--env", f"VLLM_HUMMING_MOE_GEMM_TYPE={raw}", "--json"])
    record = json.loads(capsys.readouterr().out)
    assert code == 0 and record["selected"]["kernel"] == winner


def test_an_unparseable_int_is_bad_input_exit_2(capsys):
    code = main(["select", "--model", "qwen3-30b-a3b-fp8", "--gpu", "H200", "--env", "VLLM_USE_DEEP_GEMM=true"])
    err = capsys.readouterr().err
    assert code == 2 and "bool(int(...))" in err and err.startswith("moe-oracle: error: bad environment variable")


def test_yes_turns_aiter_off_with_a_note(capsys):
    code = main(["explain", "--model", "qwen3-30b-a3b", "--gpu", "MI300X", "--env", "VLLM_ROCM_USE_AITER=yes", "--json"])
    record = json.loads(capsys.readouterr().out)
    assert code == 0 and record["inputs"]["env.VLLM_ROCM_USE_AITER"]["value"] is False
    assert any("VLLM_ROCM_USE_AITER='yes' is read as false" in n for n in record["notes"])


@pytest.mark.parametrize(("var", "replacement"), [("VLLM_USE_FLASHINFER_MOE_FP8", "--moe-backend flashinfer_trtllm"), ("VLLM_FLASHINFER_MOE_BACKEND", "--moe-backend flashinfer_cutlass"), ("VLLM_ALL2ALL_BACKEND", "--all2all-backend")])
def test_removed_variables_are_explained_with_their_replacement(var, replacement, capsys):
    code = main(["explain", "--model", "qwen3-30b-a3b-fp8", "--gpu", "H200", "--env", f"{var}=1", "--json"])
    record = json.loads(capsys.readouterr().out)
    assert code == 0 and var not in record["environment"]["env"]
    assert any(n.startswith(f"--env: {var} has no effect") and replacement in n for n in record["notes"])


def test_variables_selection_does_not_read_are_noted_and_typos_get_a_guess(capsys):
    code = main(["explain", "--model", "qwen3-30b-a3b", "--gpu", "H200", "--env", "VLLM_LOGGING_LEVEL=DEBUG", "--env", "VLLM_USE_DEEPGEMM=0", "--json"])
    notes = json.loads(capsys.readouterr().out)["notes"]
    assert code == 0
    assert any("VLLM_LOGGING_LEVEL is read by vLLM 0.34.0 but not by MoE kernel selection" in n for n in notes)
    assert any("VLLM_USE_DEEPGEMM is not a vLLM 0.34.0 variable" in n and "VLLM_USE_DEEP_GEMM" in n for n in notes)


def test_a_probed_environment_with_a_bad_value_is_bad_input(monkeypatch, capsys):
    monkeypatch.setenv("VLLM_MOE_USE_DEEP_GEMM", "yes")
    assert main(["select", "--model", "qwen3-30b-a3b-fp8", "--gpu", "H200", "--probe"]) == 2
    assert "VLLM_MOE_USE_DEEP_GEMM" in capsys.readouterr().err


def test_env_issues_name_the_config_file():
    issues = env_issues([("VLLM_BATCH_INVARIANT", "true")], default_catalog().env_vars, "$.environment.env", "x.yaml", release="0.33.0")
    assert (issues[0].path, issues[0].file) == ("$.environment.env.VLLM_BATCH_INVARIANT", "x.yaml")


def test_overrides_apply_in_the_engines_order(capsys):
    """vLLM 0.33.0 P/oracle/fp8.py reads the DeepGEMM variables before the AITER ones: with both
    explicitly on, DeepGEMM is forced (and, on ROCm, cannot run). The table listed AITER first."""
    code = main(["explain", "--model", "qwen3-30b-a3b-fp8", "--gpu", "MI300X", "--env", "VLLM_USE_DEEP_GEMM=1", "--env", "VLLM_ROCM_USE_AITER=1", "--json"])
    record = json.loads(capsys.readouterr().out)
    # DEEPGEMM or BATCHED_DEEPGEMM, as the activation format decides (the FP8 request map).
    assert record["requested"] == {"backends": ["deep_gemm", "batched_deep_gemm"], "by": "override.deep_gemm_env"} and code == 1


def test_variable_notes_and_errors_name_the_declared_release(capsys):
    """The release reached declare_environment's notes as a default "0.33.0" whatever
    --package vllm==X said; now the notes, errors and variable names are the declared release's."""
    flags = ["explain", "--model", "qwen3-30b-a3b", "--gpu", "H200", "--package", "vllm==0.31.0"]
    assert main([*flags, "--env", "VLLM_ROCM_USE_AITER=yes", "--env", "VLLM_USE_DEEPGEMM=0", "--json"]) == 0
    notes = json.loads(capsys.readouterr().out)["notes"]
    assert any("VLLM_ROCM_USE_AITER='yes' is read as false: vLLM 0.31.0 turns it on" in n for n in notes)
    assert any("VLLM_USE_DEEPGEMM is not a vLLM 0.31.0 variable" in n for n in notes)
    assert not any("0.33.0" in n for n in notes if "VLLM_" in n)
    assert main([*flags, "--env", "VLLM_USE_DEEP_GEMM=true"]) == 2
    assert "vLLM 0.31.0 reads VLLM_USE_DEEP_GEMM with bool(int(...))" in capsys.readouterr().err


def test_a_variable_removed_after_the_declared_release_is_still_read_by_it(capsys):
    """VLLM_NIXL_EP_MAX_NUM_RANKS is in vllm/envs.py 0.29.0 and gone from 0.30.0: for 0.29.0 it
    is a variable that release reads (not MoE selection), not a removed one."""
    base = ["explain", "--model", "qwen3-30b-a3b", "--gpu", "H200", "--env", "VLLM_NIXL_EP_MAX_NUM_RANKS=8", "--json"]
    assert main([*base, "--package", "vllm==0.29.0"]) == 0
    notes = json.loads(capsys.readouterr().out)["notes"]
    assert "--env: VLLM_NIXL_EP_MAX_NUM_RANKS is read by vLLM 0.29.0 but not by MoE kernel selection: ignored" in notes
    assert main([*base, "--package", "vllm==0.31.0"]) == 0
    notes = json.loads(capsys.readouterr().out)["notes"]
    assert any(n.startswith("--env: VLLM_NIXL_EP_MAX_NUM_RANKS has no effect: the engine stopped reading it in 0.30.0 (vLLM 0.31.0") for n in notes)
