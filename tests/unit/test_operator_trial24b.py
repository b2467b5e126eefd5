"""The findings a new user's trial of the README left open (issue 24, session 6; the list:
/work/notes/user24_findings.md, "Findings left"). Each test failed before the change that covers it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from moe_oracle import ConfigError, Device, MoEConfig, Oracle, ParallelConfig, select
from tests.cli_capture import cli

QWEN = ("--model", "qwen3-30b-a3b", "--gpu", "H200")


# ------------------------------------------------------------------ --all2all ''


@pytest.mark.parametrize("command", ["select", "plan"])
def test_empty_all2all_is_refused_naming_the_flag_and_the_backends(command: str) -> None:
    """`--all2all ''` was read as "not given" and answered with the default all2all."""
    code, out, err = cli(command, *QWEN, "--all2all", "")
    assert code == 2 and not out
    assert err.startswith("moe-oracle: error: bad --all2all ") and "(got '')" in err
    assert "deepep_low_latency" in err and "allgather_reducescatter" in err


# ------------------------------------------------------------------ --sm 9


def test_sm_below_ten_says_how_a_capability_is_written() -> None:
    code, _, err = cli("select", "--model", "qwen3-30b-a3b", "--platform", "cuda", "--sm", "9")
    assert code == 2 and "bad --sm" in err
    assert "(got 9)" in err and "major*10+minor" in err and "90 for SM 9.0" in err


# ------------------------------------------------------------------ the Python API names its own fields


@pytest.mark.parametrize(("build", "api_name", "flag", "argv"), [
    (lambda: Device("cuda", capability=999), "Device.capability", "--sm", ("--model", "qwen3-30b-a3b", "--platform", "cuda", "--sm", "999")),
    (lambda: Device("cuda", capability=9), "Device.capability", "--sm", ("--model", "qwen3-30b-a3b", "--platform", "cuda", "--sm", "9")),
    (lambda: ParallelConfig(tp_size=0), "ParallelConfig.tp_size", "--tp", (*QWEN, "--tp", "0")),
    (lambda: ParallelConfig(dp_size=0), "ParallelConfig.dp_size", "--dp", (*QWEN, "--dp", "0")),
])
def test_api_errors_name_the_api_field_and_the_cli_its_flag(build, api_name: str, flag: str, argv: tuple[str, ...]) -> None:
    """`Device("cuda", capability=999)` was headed "bad --sm": a flag the caller never typed."""
    with pytest.raises(ConfigError) as info:
        build()
    assert str(info.value).startswith(f"bad {api_name} ") and "--" not in info.value.title()
    assert info.value.to_dict()["message"] == f"bad {api_name}"
    code, _, err = cli("select", *argv)
    assert code == 2 and err.startswith(f"moe-oracle: error: bad {flag} ")
    code, out, _ = cli("select", *argv, "--json")
    assert code == 2 and json.loads(out)["message"] == f"bad {flag}"


def test_a_config_files_device_error_still_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "layer.yaml"
    path.write_text("model: {num_experts: 64, top_k: 8, hidden_size: 2048, intermediate_size: 768}\ndevice: {platform: cuda, capability: 9}\n")
    code, _, err = cli("select", "--config", str(path))
    assert code == 2 and err.startswith(f"moe-oracle: error: bad {path} ") and "90 for SM 9.0" in err


@pytest.mark.parametrize("call", [lambda: Oracle.default().select({"num_experts": 8}), lambda: Oracle.default().explain({"num_experts": 8}), lambda: select({"num_experts": 8})])
def test_select_given_a_dict_says_it_takes_a_moe_config(call) -> None:
    """Was `TypeError: unhashable type: 'dict'` (Oracle) or an AttributeError deep in the engine."""
    with pytest.raises(TypeError) as info:
        call()
    text = str(info.value)
    assert "takes a MoEConfig, not dict" in text and "MoEConfig(num_experts=" in text and "from_hf_config" in text


def test_select_still_takes_a_moe_config() -> None:
    config = MoEConfig(num_experts=64, top_k=8, hidden_size=2048, intermediate_size=768, device=Device("cuda", capability=90))
    assert select(config, strict=False).config == config


# ------------------------------------------------------------------ a --config file's counts are bounded


_DEVICE = "device: {gpu: H200}\n"


@pytest.mark.parametrize(("field", "value", "maximum"), [
    ("num_experts", 10**12, 16384),
    ("num_experts", 16385, 16384),
    ("top_k", 1025, 1024),
    ("hidden_size", 2**18 + 1, 2**18),
    ("intermediate_size", 2**30, 2**18),
    ("num_expert_group", 16385, 16384),
    ("topk_group", 10**9, 16384),
])
def test_config_file_counts_are_held_to_the_model_config_bounds(tmp_path: Path, field: str, value: int, maximum: int) -> None:
    """`model: {num_experts: 10**12}` answered exit 0 while config.json is refused at 16,384."""
    model = {"num_experts": 64, "top_k": 8, "hidden_size": 2048, "intermediate_size": 768, field: value}
    path = tmp_path / "layer.yaml"
    path.write_text("model: " + json.dumps(model) + "\n" + _DEVICE)
    code, out, err = cli("select", "--config", str(path), "--json")
    assert code == 2
    (issue,) = json.loads(out)["issues"]
    assert issue["path"] == f"$.model.{field}" and issue["value"] == value and issue["allowed"]["maximum"] == maximum
    assert f"to {maximum} (" in issue["message"] and "released" in issue["message"]
    code, _, err = cli("select", "--config", str(path))
    assert code == 2 and f"$.model.{field}" in err and f"(got {value})" in err


def test_config_file_counts_at_the_bound_are_answered(tmp_path: Path) -> None:
    path = tmp_path / "layer.yaml"
    path.write_text("model: {num_experts: 16384, top_k: 1024, hidden_size: 262144, intermediate_size: 262144}\n" + _DEVICE)
    assert cli("select", "--config", str(path))[0] in (0, 1)


def test_config_file_bounds_are_the_schema_and_the_model_config_bounds() -> None:
    """One bound per count, whichever door it comes through: the schema's maxima are
    CONFIG_FILE_BOUNDS, each the bound of the config.json key the field is read from."""
    from moe_oracle.core.tables import load_schemas
    from moe_oracle.inputs.bounds import CONFIG_FILE_BOUNDS, COUNT_BOUNDS

    schema = load_schemas().for_kind("moe_config").schema
    props = schema["$defs"]["model_explicit"]["properties"]
    assert {k: props[k]["maximum"] for k in CONFIG_FILE_BOUNDS} == {k: b.maximum for k, b in CONFIG_FILE_BOUNDS.items()}
    read_from = {"num_experts": "n_routed_experts", "top_k": "num_experts_per_tok", "hidden_size": "hidden_size", "intermediate_size": "moe_intermediate_size", "num_expert_group": "n_group", "topk_group": "topk_group"}
    assert {k: COUNT_BOUNDS[read_from[k]] for k in CONFIG_FILE_BOUNDS} == dict(CONFIG_FILE_BOUNDS)


# ------------------------------------------------------------------ --config YAML that YAML reads otherwise


def _env_file(tmp_path: Path, environment: str) -> Path:
    path = tmp_path / "layer.yaml"
    path.write_text("model: {num_experts: 64, top_k: 8, hidden_size: 2048, intermediate_size: 768}\n" + _DEVICE + "environment:\n" + environment)
    return path


@pytest.mark.parametrize(("line", "path", "hint"), [
    ("  env: {VLLM_USE_DEEP_GEMM: yes}\n", "$.environment.env.VLLM_USE_DEEP_GEMM", 'VLLM_USE_DEEP_GEMM: "1"'),
    ("  env: {VLLM_USE_DEEP_GEMM: off}\n", "$.environment.env.VLLM_USE_DEEP_GEMM", 'VLLM_USE_DEEP_GEMM: "0"'),
    ("  env: {VLLM_MOE_DP_CHUNK_SIZE: 256}\n", "$.environment.env.VLLM_MOE_DP_CHUNK_SIZE", 'VLLM_MOE_DP_CHUNK_SIZE: "256"'),
    ("  packages: {vllm: 0.33}\n", "$.environment.packages.vllm", 'vllm: "0.33"'),
])
def test_unquoted_yaml_scalars_get_a_quoting_hint(tmp_path: Path, line: str, path: str, hint: str) -> None:
    """Was jsonschema's "True is not of type 'string'"."""
    code, _, err = cli("select", "--config", str(_env_file(tmp_path, line)))
    assert code == 2 and path in err and "must be a string" in err and "quote it" in err and hint in err
    assert "is not of type" not in err


def test_packages_as_a_list_says_the_mapping_form(tmp_path: Path) -> None:
    """Was "['vllm==0.33.0'] is not of type 'object'"."""
    code, _, err = cli("select", "--config", str(_env_file(tmp_path, "  packages: [vllm==0.33.0, torch==2.9.0]\n")))
    assert code == 2 and "$.environment.packages" in err and "mapping of package name to installed version" in err
    assert 'packages: {vllm: "0.33.0", torch: "2.9.0"}' in err and "vllm==0.33.0" in err and "is not of type" not in err
    code, _, err = cli("select", "--config", str(_env_file(tmp_path, "  packages: [1, 2]\n")))
    assert code == 2 and "mapping of package name" in err and 'packages: {vllm: "0.33.0"' in err


def test_quoted_values_are_read(tmp_path: Path) -> None:
    code, out, err = cli("select", "--config", str(_env_file(tmp_path, '  packages: {vllm: "0.33.0"}\n  env: {VLLM_USE_DEEP_GEMM: "1"}\n')))
    assert code in (0, 1), err


# ------------------------------------------------------------------ launcher prefixes in a serve line


@pytest.mark.parametrize(("line", "launcher", "given"), [
    ("sudo vllm serve deepseek-r1 -tp 8", "`sudo`", "--serve 'vllm serve deepseek-r1 -tp 8'"),
    ("sudo -E vllm serve deepseek-r1", "`sudo -E`", "--serve 'vllm serve deepseek-r1'"),
    ("nohup vllm serve deepseek-r1 -tp 8", "`nohup`", "--serve 'vllm serve deepseek-r1 -tp 8'"),
    ("uv run vllm serve deepseek-r1", "`uv run`", "--serve 'vllm serve deepseek-r1'"),
    ("CUDA_VISIBLE_DEVICES=0 sudo vllm serve deepseek-r1", "`sudo`", "--serve 'CUDA_VISIBLE_DEVICES=0 vllm serve deepseek-r1'"),
    ("sudo python3 -m vllm.entrypoints.openai.api_server --model deepseek-r1", "`sudo`", "--serve 'python3 -m vllm.entrypoints.openai.api_server --model deepseek-r1'"),
    ("docker run --gpus all -p 8000:8000 vllm/vllm-openai --model deepseek-r1 -tp 8", "a docker command line", "--serve 'vllm serve deepseek-r1 -tp 8'"),
    ("docker run --runtime nvidia --gpus all --ipc=host vllm/vllm-openai:latest deepseek-r1", "a docker command line", "--serve 'vllm serve deepseek-r1'"),
    ("podman run --device nvidia.com/gpu=all docker.io/vllm/vllm-openai:v0.33.0 --model=deepseek-r1 -ep", "a podman command line", "--serve 'vllm serve deepseek-r1 -ep'"),
])
def test_launcher_prefixes_give_the_vllm_command(line: str, launcher: str, given: str) -> None:
    """Were "would refuse these extra words (got 'vllm serve deepseek-r1')" and "does not know --gpus"."""
    code, out, err = cli("select", "--gpu", "B200", "--serve", line)
    assert code == 2 and not out and err.startswith("moe-oracle: error: bad --serve ")
    assert launcher in err and given in err and "extra words" not in err and "--gpus" not in err.split("(got")[0]
    suggested = given.split("--serve ", 1)[1].strip("'")
    if "CUDA_VISIBLE_DEVICES" not in suggested:
        assert cli("select", "--gpu", "B200", "--serve", suggested)[0] == 0


def test_a_container_line_without_a_vllm_image_asks_for_the_command() -> None:
    code, _, err = cli("select", "--gpu", "B200", "--serve", "docker run --gpus all myorg/server:1 --model deepseek-r1")
    assert code == 2 and "a docker command line is not read" in err and "vllm serve MODEL [flags]" in err


@pytest.mark.parametrize("line", ["python -m vllm.entrypoints.openai.api_server --model deepseek-r1 -tp 8", "python3 -m vllm.entrypoints.openai.api_server --model deepseek-r1"])
def test_the_api_server_module_is_read_as_vllm_runs_it(line: str) -> None:
    """vLLM 0.29.0-0.34.0 still run it (0.34.0 warns it is deprecated): taken, not refused."""
    code, out, err = cli("select", "--gpu", "B200", "--serve", line)
    assert code == 0 and out and "launches vLLM" not in err
