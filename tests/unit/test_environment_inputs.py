"""Bad input to the Environment record and its doors: wrong shapes, empty names, non-string values,
one package declared at two versions. Each is refused with an error naming the field and value."""

from __future__ import annotations

import json

import pytest

from moe_oracle.cli import main
from moe_oracle.core.environment import Environment
from moe_oracle.inputs.envfile import parse_environment_text
from moe_oracle.core.errors import ConfigError


# --- shapes of the constructor's fields ---------------------------------------------------------


@pytest.mark.parametrize("field", ["absent", "unversioned", "notes"])
def test_a_bare_string_for_a_collection_field_is_refused_naming_the_field(field):
    with pytest.raises(ConfigError) as info:
        Environment(**{field: "flashinfer-python"})
    issue = info.value.issues[0]
    assert issue.path == field and "not one string" in issue.message and "flashinfer-python" in str(info.value)


@pytest.mark.parametrize("field", ["packages", "env"])
def test_a_bare_string_for_a_pairs_field_is_refused_naming_the_field(field):
    with pytest.raises(ConfigError) as info:
        Environment(**{field: "vllm==0.33.0"})
    assert info.value.issues[0].path == field and "not one string" in info.value.issues[0].message


def test_packages_and_env_may_be_mappings():
    env = Environment(packages={"Flashinfer_Python": "0.7.2", "vllm": "0.33.0"}, env={"VLLM_USE_DEEP_GEMM": "0"})
    assert env.packages == (("flashinfer-python", "0.7.2"), ("vllm", "0.33.0"))
    assert env.env == (("VLLM_USE_DEEP_GEMM", "0"),) and env.package("flashinfer-python") == "0.7.2"
    assert env == Environment(packages=(("vllm", "0.33.0"), ("flashinfer-python", "0.7.2")), env=(("VLLM_USE_DEEP_GEMM", "0"),))


@pytest.mark.parametrize("bad", [[("vllm",)], ["vllm"], [("vllm", "0.33.0", "x")], 5])
def test_packages_that_are_not_pairs_are_refused_naming_the_shape(bad):
    with pytest.raises(ConfigError) as info:
        Environment(packages=bad)
    issue = info.value.issues[0]
    assert issue.path == "packages" and ("pair" in issue.message or "mapping" in issue.message)


def test_a_version_that_is_not_a_string_is_refused_naming_the_package():
    with pytest.raises(ConfigError) as info:
        Environment(packages={"vllm": 0.33})
    assert info.value.issues[0].path == "--package vllm" and "strings" in info.value.issues[0].message


# --- declared: env values and names --------------------------------------------------------------


def test_a_variable_value_that_is_not_a_string_is_refused_naming_the_variable():
    with pytest.raises(ConfigError) as info:
        Environment.declared(env={"VLLM_USE_DEEP_GEMM": 1})
    issue = info.value.issues[0]
    assert issue.path == "env VLLM_USE_DEEP_GEMM" and "strings" in issue.message and "'1'" in issue.message


@pytest.mark.parametrize("name", ["", "  "])
def test_an_empty_variable_name_is_refused(name):
    with pytest.raises(ConfigError) as info:
        Environment.declared(env={name: "1"})
    assert info.value.issues[0].path == "env" and "non-empty" in info.value.issues[0].message


def test_cli_refuses_an_env_flag_without_a_name(capsys):
    assert main(["select", "--model", "qwen3-30b-a3b", "--gpu", "H200", "--env", "=1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("moe-oracle: error: bad --env") and "name is empty" in err and "'=1'" in err


def test_declared_refuses_a_bare_string_for_absent_and_packages():
    with pytest.raises(ConfigError) as info:
        Environment.declared(absent="flashinfer-python")
    assert info.value.issues[0].path == "absent"
    with pytest.raises(ConfigError) as info:
        Environment.declared("vllm==0.33.0")
    assert info.value.issues[0].path == "packages"


# --- one package at two versions ---------------------------------------------------------------


def test_declared_refuses_two_versions_of_one_package():
    with pytest.raises(ConfigError) as info:
        Environment.declared(["vllm==0.10.0", "vllm==0.9.0"])
    issue = info.value.issues[0]
    assert issue.path == "--package vllm" and "'0.10.0'" in issue.message and "'0.9.0'" in issue.message


def test_declared_accepts_the_same_version_twice():
    env = Environment.declared(["vllm==0.33.0", "VLLM==0.33.0", "vllm==0.33"])
    assert env.packages == (("vllm", "0.33.0"),)


def test_declared_refuses_a_pinned_and_an_unknown_version_of_one_package():
    with pytest.raises(ConfigError) as info:
        Environment.declared(["deep_gemm==2.1.0", "deep_gemm @ git+https://github.com/deepseek-ai/DeepGEMM"])
    assert info.value.issues[0].path == "--package deep-gemm" and "unknown version" in info.value.issues[0].message


def test_constructor_refuses_two_versions_of_one_package_and_two_values_of_one_variable():
    with pytest.raises(ConfigError) as info:
        Environment(packages=(("vllm", "0.33.0"), ("VLLM", "0.32.0")))
    assert info.value.issues[0].path == "--package vllm"
    with pytest.raises(ConfigError) as info:
        Environment(env=(("VLLM_USE_DEEP_GEMM", "0"), ("VLLM_USE_DEEP_GEMM", "1")))
    assert info.value.issues[0].path == "env VLLM_USE_DEEP_GEMM"


@pytest.mark.parametrize(("a", "b", "same"), [
    ("0.33.0", "0.33", True), ("0.33.0", "0.33.0.0", True), ("1.0+cu130", "1.0+CU130", True), ("2.1.0", "2.1.0.post1", False),
    ("0.33.0", "0.32.0", False), ("1.0a1", "1.0.0a1", True), ("1.0", "1.0+cu130", False),
])
def test_both_doors_judge_one_package_at_two_versions_alike(a, b, same):
    """Requirement specs (``Environment.declared``, ``unique_specs``) and constructor pairs
    (``Environment(packages=...)``) ask one helper whether two versions are the same."""
    import moe_oracle.core.environment as environment_module
    from moe_oracle.core.packages import same_version

    assert environment_module.same_version is same_version and same_version(a, b) is same
    assert not hasattr(environment_module, "_same")
    outcomes = []
    for build in (lambda: Environment.declared([f"vllm=={a}", f"vllm=={b}"]), lambda: Environment(packages=(("vllm", a), ("vllm", b)))):
        try:
            build()
            outcomes.append(True)
        except ConfigError as exc:
            assert exc.issues[0].path == "--package vllm" and "declared twice with different versions" in exc.issues[0].message
            outcomes.append(False)
    assert outcomes == [same, same]


def test_cli_refuses_two_versions_given_by_package_flags(capsys):
    code = main(["select", "--model", "qwen3-30b-a3b", "--gpu", "H200", "--package", "vllm==0.33.0", "--package", "vllm==0.32.0"])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("moe-oracle: error: bad --package") and "'0.33.0'" in err and "'0.32.0'" in err


def test_a_repeated_env_flag_takes_the_last_value_and_says_so(capsys):
    """Two different values of one --env variable: the last is used, as for a repeated --gpu or
    --tp (cli.common.LastWins), and said on stderr (the later one used to win silently, then the
    pair was refused, which made a why-not fix such as --env VLLM_USE_DEEP_GEMM=1, appended to a
    command that declared =0, fail as printed); the same declaration repeated says nothing."""
    flags = ["select", "--model", "qwen3-30b-a3b-fp8", "--gpu", "H200", "--moe-backend", "deep_gemm"]
    assert main([*flags, "--env", "VLLM_USE_DEEP_GEMM=0", "--env", "VLLM_USE_DEEP_GEMM=1"]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("deep_gemm") and "note: --env VLLM_USE_DEEP_GEMM given more than once: the last ('1') is used, not '0'" in err
    assert main([*flags, "--env", "VLLM_USE_DEEP_GEMM=1", "--env", "VLLM_USE_DEEP_GEMM=0"]) == 1
    capsys.readouterr()
    assert main([*flags, "--env", "VLLM_USE_DEEP_GEMM=1", "--env", "VLLM_USE_DEEP_GEMM=1"]) == 0
    assert "more than once" not in capsys.readouterr().err


def test_an_env_flag_overriding_a_serve_or_file_value_is_noted(tmp_path, capsys):
    """Later sources win (file, then the serve line's NAME=VALUE words, then --env); a value
    replaced by a later source gets a note naming both values (it was replaced silently)."""
    path = tmp_path / "env.txt"
    path.write_text("vllm==0.33.0\n")
    flags = ["explain", "--gpu", "H200", "--environment", str(path), "--json"]
    serve = "VLLM_USE_DEEP_GEMM=0 vllm serve Qwen/Qwen3-30B-A3B-FP8 -tp 2"
    assert main([*flags, "--serve", serve, "--env", "VLLM_USE_DEEP_GEMM=1"]) in (0, 1)  # 1: nothing eligible (the record is printed)
    record = json.loads(capsys.readouterr().out)
    assert dict(record["environment"]["env"])["VLLM_USE_DEEP_GEMM"] == "1"
    assert any(n == "--env: VLLM_USE_DEEP_GEMM='1' overrides VLLM_USE_DEEP_GEMM='0' from --serve" for n in record["notes"]), record["notes"]
    assert main([*flags, "--serve", serve, "--env", "VLLM_USE_DEEP_GEMM=0"]) in (0, 1)  # the same value: nothing to say
    assert not any("overrides" in n for n in json.loads(capsys.readouterr().out)["notes"])


def test_cli_package_flag_still_overrides_the_environment_file(tmp_path, capsys):
    path = tmp_path / "freeze.txt"
    path.write_text("vllm==0.32.0\n")
    code = main(["explain", "--model", "qwen3-30b-a3b", "--gpu", "H200", "--environment", str(path), "--package", "vllm==0.33.0", "--json"])
    assert code == 0 and json.loads(capsys.readouterr().out)["environment"]["packages"]["vllm"] == "0.33.0"


@pytest.mark.parametrize(
    "text, first, second",
    [
        ("vllm==0.33.0\ntorch==2.14.0\nvllm==0.32.0\n", "line 1", "line 3"),
        ("Package Version\n------- -------\nvllm 0.33.0\nvllm 0.32.0\n", "line 3", "line 4"),
        ('[{"name": "vllm", "version": "0.33.0"}, {"name": "vLLM", "version": "0.32.0"}]', "$[0]", "$[1]"),
        ("Versions of relevant libraries\n[pip3] vllm==0.33.0\n[pip3] vllm==0.32.0\n", "line 2", "line 3"),
    ],
    ids=["pip-freeze", "pip-list", "pip-list-json", "collect-env"],
)
def test_an_environment_file_listing_two_versions_of_one_package_is_refused(text, first, second):
    with pytest.raises(ConfigError) as info:
        parse_environment_text(text, "env.txt")
    issue = info.value.issues[0]
    assert issue.file == "env.txt" and issue.path == "--environment vllm"
    assert f"'0.33.0' ({first})" in issue.message and f"'0.32.0' ({second})" in issue.message


def test_an_environment_file_may_repeat_the_same_version():
    doc = parse_environment_text("vllm==0.33.0\nvllm==0.33.0\n", "env.txt")
    assert [(p.name, p.version) for p in doc.packages] == [("vllm", "0.33.0")]


CONFIG = """\
model: {num_experts: 8, top_k: 2, hidden_size: 4096, intermediate_size: 14336, quant: unquantized}
device: {gpu: H200}
"""


def test_a_config_file_environment_with_an_empty_variable_name_names_the_file_and_field(tmp_path, capsys):
    path = tmp_path / "layer.yaml"
    path.write_text(CONFIG + 'environment: {env: {"": "1"}}\n')
    assert main(["select", "--config", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}: $.environment.env: every name must be a non-empty string" in err


def test_a_config_file_repeating_a_key_is_refused_naming_file_key_and_line(tmp_path, capsys):
    path = tmp_path / "layer.yaml"
    path.write_text(CONFIG + "device: {gpu: B200}\n")
    assert main(["select", "--config", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}: $ (line 3, column 1): not valid YAML: found duplicate key 'device' (first at line 2)" in err


def test_a_serve_config_file_repeating_a_key_keeps_the_last_value_as_vllm_does_and_says_so(tmp_path):
    """vLLM reads a serve line's --config with yaml.safe_load (FlexibleArgumentParser.load_config_file,
    vLLM 0.29.0-0.33.0), which keeps a repeated key's last value: vLLM starts, so it is not bad
    input here (moe-oracle's own files refuse a repeated key)."""
    from moe_oracle.inputs.serve import parse_serve

    (tmp_path / "serve.yaml").write_text("tensor-parallel-size: 4\ntensor-parallel-size: 8\n")
    serve = parse_serve("vllm serve m --config serve.yaml", version="0.33.0", base=tmp_path)
    assert serve.tp == 8
    assert any("serve.yaml" in n and "more than once" in n and "tensor-parallel-size" in n for n in serve.notes)


# --- moe_backend read from a config file gets the flag's message ------------------------------


@pytest.mark.parametrize("view", ["engine", "runtime"])
@pytest.mark.parametrize("name", ["trtllm", "flashinfer_trtlm"])
def test_an_unknown_moe_backend_in_a_config_file_gets_the_flags_message(tmp_path, capsys, view, name):
    path = tmp_path / "layer.yaml"
    path.write_text(CONFIG + f"moe_backend: {name}\n")
    assert main(["select", "--config", str(path), "--view", view]) == 2
    from_file = capsys.readouterr().err
    assert main(["select", "--model", "mixtral-8x7b-instruct-v0.1", "--gpu", "H200", "--moe-backend", name, "--view", view]) == 2
    from_flag = capsys.readouterr().err
    file_line = from_file.splitlines()[1].replace(f"{path}: ", "", 1)
    assert file_line == from_flag.splitlines()[1]
    allowed = file_line.split("allowed: ", 1)[1].split(";")[0].split(", ")
    assert allowed.count("auto") == 1
    if view == "engine":
        assert "vLLM 0.34.0 does not accept" in file_line and "cpu" not in allowed  # only what the release accepts
    if name == "flashinfer_trtlm":
        assert file_line.endswith("did you mean 'flashinfer_trtllm'?")


# --- a GPU read from an environment file that something else overrides is noted -----------------

ONE_GPU = "GPU models and configuration : GPU 0: NVIDIA {gpu}\nVersions of relevant libraries\n[pip3] vllm==0.33.0\n"


@pytest.mark.parametrize(("command", "device", "winner"), [
    ("explain", ["--gpu", "H200"], "--gpu H200 wins"),
    ("explain", ["--platform", "cuda", "--sm", "90"], "--platform cuda wins"),
    ("explain", ["--config", "{config}"], "the device of --config {config} wins"),
    ("plan", ["--gpu", "H200"], "--gpu H200 wins"),
], ids=["explain-gpu", "explain-platform", "explain-config", "plan-gpu"])
def test_a_gpu_in_an_environment_file_that_a_flag_overrides_is_noted(tmp_path, capsys, command, device, winner):
    env_file, config = tmp_path / "collect.txt", tmp_path / "layer.yaml"
    env_file.write_text(ONE_GPU.format(gpu="B200"))
    config.write_text(CONFIG)
    device = [a.replace("{config}", str(config)) for a in device]
    layer = [] if "--config" in device else ["--model", "qwen3-30b-a3b"]
    assert main([command, *layer, *device, "--environment", str(env_file), "--json"]) == 0
    notes = json.loads(capsys.readouterr().out)["notes"]
    assert f"--environment {env_file}: its GPU 'NVIDIA B200' is not used: {winner.replace('{config}', str(config))}" in notes


def test_the_same_gpu_in_flag_and_environment_file_needs_no_note(tmp_path, capsys):
    env_file = tmp_path / "collect.txt"
    env_file.write_text(ONE_GPU.format(gpu="H200"))
    assert main(["explain", "--model", "qwen3-30b-a3b", "--gpu", "H200", "--environment", str(env_file), "--json"]) == 0
    assert not any("is not used" in n for n in json.loads(capsys.readouterr().out)["notes"])


NO_GPU = "PyTorch version: 2.10.0\nGPU models and configuration : Could not collect\nvLLM Version: 0.33.0\nVersions of relevant libraries\n[pip3] vllm==0.33.0\n"


@pytest.mark.parametrize("command", ["explain", "plan"])
def test_a_collect_env_report_without_a_gpu_says_so_and_names_the_flag_to_add(tmp_path, capsys, command):
    """Before, the refusal sent the operator back to "--environment with a vllm collect-env report",
    the very report they gave."""
    env_file = tmp_path / "collect.txt"
    env_file.write_text(NO_GPU)
    assert main([command, "--model", "qwen3-30b-a3b", "--environment", str(env_file), "--json"]) == 2
    message = json.loads(capsys.readouterr().out)["issues"][0]["message"]
    assert f"--environment {env_file} names no GPU" in message and "add --gpu NAME" in message
    assert "give --gpu NAME" not in message and "--environment with a vllm collect-env report" not in message
