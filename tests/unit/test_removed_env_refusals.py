"""From vLLM 0.34.0 a removed variable, and VLLM_USE_V2_MODEL_RUNNER other than 1, are refused at
start (0.34.0 vllm/platforms/interface.py ``Platform.validate_environ``, vllm/envs.py
``removed_environment_variables``); before 0.34.0 they are read or ignored, never refused."""

from __future__ import annotations

import pytest

from moe_oracle.core.errors import ConfigError
from moe_oracle.core.loading import load_catalog
from moe_oracle.inputs.declared import declare_environment


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


def _messages(exc: ConfigError) -> str:
    return "\n".join(i.format() for i in exc.issues)


def test_marlin_input_dtype_is_refused_from_0_34_with_the_releases_message(catalog):
    with pytest.raises(ConfigError) as err:
        declare_environment(catalog, packages=["vllm==0.34.0"], env=["VLLM_MARLIN_INPUT_DTYPE=fp8"])
    text = _messages(err.value)
    assert "--env VLLM_MARLIN_INPUT_DTYPE" in text
    assert "VLLM_MARLIN_INPUT_DTYPE has been removed. Marlin no longer supports 8-bit activations." in text
    assert "vLLM 0.34.0" in text


def test_marlin_input_dtype_is_accepted_before_0_34(catalog):
    declared = declare_environment(catalog, packages=["vllm==0.33.0"], env=["VLLM_MARLIN_INPUT_DTYPE=fp8"])
    assert "VLLM_MARLIN_INPUT_DTYPE" not in dict(declared.environment.env)  # not read by selection
    assert any("VLLM_MARLIN_INPUT_DTYPE" in n and "not by MoE kernel selection" in n for n in declared.notes)


@pytest.mark.parametrize("value", ["0", "true", ""])
def test_v2_model_runner_other_than_1_is_refused_from_0_34(catalog, value):
    with pytest.raises(ConfigError) as err:
        declare_environment(catalog, packages=["vllm==0.34.0"], env=[f"VLLM_USE_V2_MODEL_RUNNER={value}"])
    assert f"VLLM_USE_V2_MODEL_RUNNER={value} is no longer supported: Model Runner V1 has been removed." in _messages(err.value)


def test_v2_model_runner_1_only_warns_from_0_34_and_is_accepted_before(catalog):
    declared = declare_environment(catalog, packages=["vllm==0.34.0"], env=["VLLM_USE_V2_MODEL_RUNNER=1"])
    assert [n for n in declared.notes if "VLLM_USE_V2_MODEL_RUNNER" in n] == [
        "VLLM_USE_V2_MODEL_RUNNER=1: vLLM 0.34.0 accepts this value only with a warning at start and does not read it otherwise (Platform.validate_environ)"
    ]
    declare_environment(catalog, packages=["vllm==0.33.0"], env=["VLLM_USE_V2_MODEL_RUNNER=0"])


def test_a_removed_variable_in_an_environment_file_or_serve_line_names_its_origin(catalog, tmp_path):
    f = tmp_path / "env.txt"
    f.write_text("vllm==0.34.0\n")
    with pytest.raises(ConfigError) as err:
        declare_environment(catalog, env_file=str(f), serve_env=[("VLLM_MARLIN_INPUT_DTYPE", "int8")])
    assert "--serve VLLM_MARLIN_INPUT_DTYPE" in _messages(err.value)


def test_a_config_file_environment_is_checked_too(tmp_path, capsys):
    from moe_oracle.cli import main

    cfg = tmp_path / "d.yaml"
    model = "model: {num_experts: 8, top_k: 2, hidden_size: 4096, intermediate_size: 14336, quant: unquantized}\ndevice: {gpu: H200}\n"
    cfg.write_text(model + "environment: {packages: {vllm: '0.34.0'}, env: {VLLM_MARLIN_INPUT_DTYPE: fp8}}\n")
    assert main(["select", "--config", str(cfg)]) == 2
    assert "$.environment.env.VLLM_MARLIN_INPUT_DTYPE: vLLM 0.34.0 refuses it at start" in capsys.readouterr().err
    cfg.write_text(model + "environment: {packages: {vllm: '0.33.0'}, env: {VLLM_MARLIN_INPUT_DTYPE: fp8}}\n")
    assert main(["select", "--config", str(cfg)]) == 0
