"""Environment files an operator already has: pip freeze, pip list (JSON and columns), uv pip list,
vllm collect-env; package declarations (issue 9, "Inputs people have").

Every test here fails on the parent of the issue-9 commit: ``--environment`` did not exist,
``NAME @ URL`` and bare names were refused by ``parse_package_spec`` (it required ``==``), and
an unread package name was an error.
"""

from __future__ import annotations

import json

import pytest

from moe_oracle.cli import main
from moe_oracle.inputs.envfile import parse_environment_text, read_environment_file
from moe_oracle.core.packages import parse_requirement
from moe_oracle.core.environment import ABSENT, Environment
from moe_oracle.core.errors import ConfigError
from moe_oracle.core._resources import examples_dir

FREEZE = examples_dir().parent / "environments" / "vllm-0.33.0-cuda13.freeze.txt"

COLLECT_ENV = """\
Collecting environment information...
==============================
        System Info
==============================
OS                           : Ubuntu 24.04.3 LTS (x86_64)

==============================
       PyTorch Info
==============================
PyTorch version              : 2.14.0+cu130

==============================
       CUDA / GPU Info
==============================
Is CUDA available            : True
CUDA runtime version         : 13.0.88
GPU models and configuration :
GPU 0: NVIDIA H200
GPU 1: NVIDIA H200

Nvidia driver version        : 580.95.05

==============================
Versions of relevant libraries
==============================
[pip3] flashinfer-python==0.7.2.post1
[pip3] numpy==2.4.6
[pip3] nvidia-cublas==13.1.0.3
[pip3] torch==2.14.0+cu130
[pip3] triton==3.7.0
[conda] Could not collect

==============================
         vLLM Info
==============================
ROCM Version                 : Could not collect
vLLM Version                 : 0.33.0
vLLM Build Flags:
  CUDA Archs: Not Set; ROCm: Disabled

==============================
     Environment Variables
==============================
VLLM_USE_DEEP_GEMM=0
VLLM_USE_FLASHINFER_MOE_FP8=1
NCCL_CUMEM_ENABLE=0
CUDA_HOME=/usr/local/cuda
"""


def test_requirement_lines_parse_with_packaging():
    assert parse_requirement("torch==2.14.0+cu130").version == "2.14.0+cu130"
    assert parse_requirement("Flashinfer_Python==0.7.2.post1").name == "flashinfer-python"
    ref = parse_requirement("deep_gemm @ git+https://github.com/deepseek-ai/DeepGEMM.git@594953a")
    assert (ref.name, ref.version, ref.reference) == ("deep-gemm", None, "git+https://github.com/deepseek-ai/DeepGEMM.git@594953a")
    assert parse_requirement("-e git+https://github.com/x/y.git@abc#egg=triton_kernels").name == "triton-kernels"
    assert parse_requirement("deep-ep").version is None
    for bad in ("torch>=2.9", "torch==2.9,<3", "torch==", "==1.0"):
        with pytest.raises(ConfigError):
            parse_requirement(bad)


def test_pip_freeze_is_complete_and_keeps_local_versions():
    doc = read_environment_file(FREEZE)
    assert doc.format == "pip freeze" and doc.complete
    versions = {p.name: p.version for p in doc.packages}
    assert versions["torch"] == "2.14.0+cu130" and versions["vllm"] == "0.33.0" and versions["deep-gemm"] is None


def test_pip_list_json_and_columns():
    data = json.dumps([{"name": "vllm", "version": "0.33.0"}, {"name": "deep_gemm", "version": "2.1.1+594953a", "editable_project_location": "/src/DeepGEMM"}])
    doc = parse_environment_text(data)
    assert doc.format == "pip list --format=json" and {p.name: p.version for p in doc.packages} == {"vllm": "0.33.0", "deep-gemm": "2.1.1+594953a"}
    columns = "Package            Version\n------------------ ------------\nflashinfer-python  0.7.2.post1\ntorch              2.14.0+cu130 \nvllm               0.33.0       /opt/vllm\n"
    doc = parse_environment_text(columns)
    assert doc.format == "pip list" and {p.name for p in doc.packages} == {"flashinfer-python", "torch", "vllm"}


def test_collect_env_gives_packages_gpu_and_variables_and_is_not_complete():
    doc = parse_environment_text(COLLECT_ENV, "collect.txt")
    assert doc.format == "vllm collect-env" and not doc.complete
    assert {p.name: p.version for p in doc.packages}["vllm"] == "0.33.0"
    assert doc.gpus == ("NVIDIA H200", "NVIDIA H200")
    assert ("VLLM_USE_DEEP_GEMM", "0") in doc.env and ("CUDA_HOME", "/usr/local/cuda") in doc.env


def test_collect_env_with_one_gpu_prints_it_on_the_keys_line():
    """vLLM 0.33.0 collect_env.py: a one-line ``nvidia-smi -L`` stays on the key's line."""
    one = COLLECT_ENV.replace("GPU models and configuration :\nGPU 0: NVIDIA H200\nGPU 1: NVIDIA H200\n", "GPU models and configuration : GPU 0: NVIDIA B200\n")
    assert one != COLLECT_ENV
    assert parse_environment_text(one, "collect.txt").gpus == ("NVIDIA B200",)


def test_a_line_that_does_not_parse_names_the_file_and_line(tmp_path):
    path = tmp_path / "freeze.txt"
    path.write_text("vllm==0.33.0\nthis is not a requirement\n")
    with pytest.raises(ConfigError) as info:
        read_environment_file(path)
    issue = info.value.issues[0]
    assert (issue.file, issue.path) == (str(path), "line 2") and str(info.value).startswith("bad --environment")


def test_declared_direct_reference_is_installed_at_an_unknown_version():
    env = Environment(packages=(("vllm", "0.33.0"),), complete=True, unversioned=frozenset({"deep_gemm"}))
    assert env.package("deep-gemm") is None and env.package("flashinfer-python") is ABSENT


def test_cli_reads_a_pip_freeze_and_notes_what_it_ignores(capsys):
    code = main(["explain", "--model", "qwen3-30b-a3b-fp8", "--gpu", "H200", "--environment", str(FREEZE), "--json"])
    record = json.loads(capsys.readouterr().out)
    assert code == 0
    env = record["environment"]
    assert env["complete"] and env["packages"]["flashinfer-python"] == "0.7.2.post1" and env["unversioned"] == ["deep-gemm"]
    assert "numpy" not in env["packages"]  # read by no table: counted in a note, not kept
    assert any("pip freeze" in n and "others do not affect selection" in n for n in record["notes"])
    assert any("deep-gemm is installed from git+" in n for n in record["notes"])


def test_cli_takes_the_device_and_variables_from_collect_env(tmp_path, capsys):
    path = tmp_path / "collect.txt"
    path.write_text(COLLECT_ENV)
    code = main(["explain", "--model", "qwen3-30b-a3b-fp8", "--environment", str(path), "--json"])
    record = json.loads(capsys.readouterr().out)
    assert code == 0 and record["inputs"]["device_capability"]["value"] == 90
    assert record["environment"]["env"] == {"VLLM_USE_DEEP_GEMM": "0"}
    notes = " | ".join(record["notes"])
    assert "VLLM_USE_FLASHINFER_MOE_FP8 has no effect" in notes and "--moe-backend flashinfer_trtllm" in notes
    assert "2 other environment variables do not affect MoE kernel selection" in notes


@pytest.mark.parametrize("spec", ["triton==3.7.0", "numpy==2.4.6", "flashinfer-cubin==0.7.2.post1", "nvidia-cublas-cu12==12.9.1.4", "deep_gemm @ git+https://github.com/deepseek-ai/DeepGEMM", "torch==2.14.0+cu130"])
def test_any_package_may_be_declared(spec, capsys):
    code = main(["select", "--model", "qwen3-30b-a3b", "--gpu", "H200", "--package", spec])
    assert code == 0, capsys.readouterr().err


def test_probe_says_which_interpreter_and_site_packages_it_read(capsys):
    import sys

    code = main(["explain", "--model", "qwen3-30b-a3b", "--gpu", "H200", "--probe", "--json"])
    notes = json.loads(capsys.readouterr().out)["environment"]["notes"]
    assert code == 0 and notes[0].startswith(f"probed packages of {sys.executable}") and "site-packages:" in notes[0]


def test_probe_and_environment_file_exclude_each_other(capsys):
    assert main(["select", "--model", "qwen3-30b-a3b", "--gpu", "H200", "--probe", "--environment", str(FREEZE)]) == 2
    assert capsys.readouterr().err.startswith("moe-oracle: error: bad --probe")


_LAYER = "model: {num_experts: 64, top_k: 4, hidden_size: 1024, intermediate_size: 512, activation: silu, quant: fp8_block, quant_method: fp8}\ndevice: {gpu: H200}\n"


@pytest.mark.parametrize("environment", [
    "environment: {packages: {vllm: '0.29.0'}}",
    "environment: {absent: [deep-gemm]}",
    "environment: {env: {VLLM_USE_DEEP_GEMM: '0'}}",
], ids=["packages", "absent", "env"])
@pytest.mark.parametrize("layer", ["fields", "hf_config"])
def test_probe_and_a_config_files_environment_exclude_each_other(environment, layer, tmp_path, capsys):
    """A config file's environment declares the machine as --environment FILE does: --probe next to
    it is refused as next to that flag (the answer silently used the probed machine)."""
    path = tmp_path / "layer.yaml"
    model = _LAYER if layer == "fields" else "model: {hf_config: qwen3-30b-a3b-fp8}\ndevice: {gpu: H200}\n"
    path.write_text(model + environment + "\n")
    assert main(["explain", "--config", str(path), "--probe", "--json"]) == 2
    (issue,) = json.loads(capsys.readouterr().out)["issues"]
    assert issue["path"] == "--probe" and issue["value"] == str(path) and "$.environment" in issue["message"]


def test_probe_next_to_a_file_that_declares_no_environment_or_asks_to_probe(tmp_path, capsys):
    for environment in ("", "environment: {probe: true}\n", "environment: {packages: {}}\n"):
        path = tmp_path / "layer.yaml"
        path.write_text(_LAYER + environment)
        assert main(["select", "--config", str(path), "--probe"]) == 0, capsys.readouterr().err


def test_run_probes_unasked_and_notes_the_files_environment():
    """``run`` executes here, so it probes without --probe: the file's environment is set aside
    with a note rather than refused."""
    from moe_oracle.core.environment import Environment
    from moe_oracle.inputs.deployment import _probe_over_file
    from moe_oracle.inputs.operator_inputs import OperatorInputs

    note = _probe_over_file(OperatorInputs(config="layer.yaml", probe_implied=True), Environment(packages={"vllm": "0.29.0"}))
    assert "vllm==0.29.0" in note and "not used" in note


def test_pip_freeze_of_an_editable_install_takes_the_name_and_version_from_pips_comment(tmp_path, capsys):
    text = "torch==2.14.0+cu130\n# Editable install with no version control (vllm==0.33.0)\n-e /home/me/vllm\n"
    doc = parse_environment_text(text, "freeze.txt")
    assert {p.name: p.version for p in doc.packages} == {"torch": "2.14.0+cu130", "vllm": "0.33.0"} and doc.notes == ()
    path = tmp_path / "freeze.txt"
    path.write_text(text)
    code = main(["explain", "--model", "deepseek-r1", "--gpu", "H200", "--tp", "8", "--environment", str(path), "--json"])
    record = json.loads(capsys.readouterr().out)
    assert code == 0 and record["environment"]["packages"]["vllm"] == "0.33.0"


def test_a_bare_editable_line_that_names_no_package_is_skipped_with_a_note():
    doc = parse_environment_text("vllm==0.33.0\n-e /home/me/thing\n", "freeze.txt")
    assert [p.name for p in doc.packages] == ["vllm"]
    assert len(doc.notes) == 1 and "line 2" in doc.notes[0] and "skipped" in doc.notes[0] and "names no package" in doc.notes[0]
    # the comment applies only to the line right after it
    doc = parse_environment_text("# Editable install with no version control (vllm==0.33.0)\ntorch==2.14.0\n-e /home/me/vllm\n", "freeze.txt")
    assert [p.name for p in doc.packages] == ["torch"] and "line 3" in doc.notes[0]


def test_a_wheel_url_gives_the_version_in_its_filename_with_a_note(tmp_path, capsys):
    # pip freeze of a wheel installed from a file: the PEP 427 filename states the version.
    spec = parse_requirement("vllm @ file:///wheels/vllm-0.31.0-cp38-abi3-linux_x86_64.whl")
    assert (spec.name, spec.version, spec.version_from) == ("vllm", "0.31.0", "wheel filename")
    assert parse_requirement("deep_gemm @ git+https://github.com/deepseek-ai/DeepGEMM@v2.1.1").version is None  # not a wheel: unknown
    freeze = tmp_path / "freeze.txt"
    freeze.write_text("vllm @ file:///wheels/vllm-0.31.0-cp38-abi3-linux_x86_64.whl\ntorch==2.10.0\n")
    assert main(["explain", "--model", "qwen3-30b-a3b-fp8", "--gpu", "H200", "--environment", str(freeze), "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["engine"]["version"] == "0.31.0" and record["engine"]["known"] == "declared"
    assert any("read from the wheel filename" in n for n in record["notes"])


@pytest.mark.parametrize("text", ["vllm @ file:///wheels/torch-2.10.0-cp39-abi3-linux_x86_64.whl", "vllm @ file:///wheels/vllm-0.31.0.whl"])
def test_a_wheel_url_that_names_another_package_or_no_valid_wheel_is_refused(text):
    with pytest.raises(ConfigError) as info:
        parse_requirement(text)
    assert info.value.issues[0].path == "--package"
