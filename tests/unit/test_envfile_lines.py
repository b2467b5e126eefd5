"""Environment-file lines: a bare package name in a pip freeze is refused (pip freeze never writes
one; a truncated file's last line is), and ``nvidia-smi -L`` GPU lines compare without their UUIDs."""

from __future__ import annotations

from pathlib import Path

import pytest

from moe_oracle.core.errors import ConfigError
from moe_oracle.inputs.envfile import parse_environment_text
from tests.cli_capture import cli
from tests.unit.test_envfile import COLLECT_ENV


def test_a_bare_name_in_a_freeze_is_refused_naming_file_line_and_text() -> None:
    with pytest.raises(ConfigError) as exc:
        parse_environment_text("flashinfer-python==0.7.2\nvll", "bare.txt", known=("vllm", "flashinfer-python"))
    issue = exc.value.issues[0]
    assert (issue.file, issue.path, issue.value) == ("bare.txt", "line 2", "vll")
    text = issue.format()
    assert "NAME==VERSION" in text and "NAME @ URL" in text and "did you mean 'vllm'" in text


def test_no_did_you_mean_when_nothing_is_close() -> None:
    with pytest.raises(ConfigError) as exc:
        parse_environment_text("torch==2.10.0\nzzzzqqq\n", "f.txt", known=("vllm",))
    assert "did you mean" not in exc.value.issues[0].format()


def test_the_cli_refuses_a_truncated_freeze_with_exit_2(tmp_path: Path) -> None:
    path = tmp_path / "bare.txt"
    path.write_text("flashinfer-python==0.7.2\nvll")
    code, out, err = cli("explain", "--model", "qwen3-30b-a3b-fp8", "--gpu", "H200", "--tp", "2", "--environment", str(path))
    assert code == 2 and out == "" and "line 2" in err and "'vll'" in err and "did you mean 'vllm'" in err


@pytest.mark.parametrize("line", ["vllm==0.33.0", "vllm @ file:///wheels/vllm-0.33.0-cp38-abi3-linux_x86_64.whl", "-e git+https://github.com/vllm-project/vllm@abc#egg=vllm"])
def test_the_freeze_forms_still_read(line: str) -> None:
    assert "vllm" in {p.name for p in parse_environment_text(f"torch==2.10.0\n{line}\n", "f.txt").packages}


def test_gpu_lines_with_uuids_are_one_gpu() -> None:
    text = COLLECT_ENV.replace("GPU 0: NVIDIA H200\nGPU 1: NVIDIA H200\n", "GPU 0: NVIDIA H200 (UUID: GPU-0d3c5f2a-1b2c-4d5e-8f90-123456789abc)\nGPU 1: NVIDIA H200 (UUID: GPU-9f8e7d6c-5b4a-4321-8765-fedcba987654)\n")
    assert text != COLLECT_ENV
    doc = parse_environment_text(text, "collect.txt")
    assert doc.gpus == ("NVIDIA H200", "NVIDIA H200") and not any("different GPUs" in n for n in doc.notes)


def test_one_gpu_with_a_uuid_on_the_keys_line() -> None:
    text = COLLECT_ENV.replace("GPU models and configuration :\nGPU 0: NVIDIA H200\nGPU 1: NVIDIA H200\n", "GPU models and configuration : GPU 0: NVIDIA B200 (UUID: GPU-0d3c5f2a-1b2c-4d5e-8f90-123456789abc)\n")
    assert parse_environment_text(text, "collect.txt").gpus == ("NVIDIA B200",)
