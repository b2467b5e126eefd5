"""A ``--config`` file's device is refused exactly where the ``--platform/--sm/--arch`` flags are.

On the parent commit a file with ``device: {platform: cuda, capability: 95}`` answered Triton
(exit 0) while ``--platform cuda --sm 95`` refused the value ("the answer would be a guess"), and
``device: {platform: rocm, arch: gfx9999}`` answered too; both doors now call
:func:`moe_oracle.inputs.hardware.check_known_device`. A Device check's own issue (a capability
off CUDA) was charged to ``$.device.device.capability``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from moe_oracle.core.fields import CUDA_CAPABILITIES
from moe_oracle.inputs.hardware import GPU_ARCHES
from tests.cli_capture import cli

MODEL = Path(__file__).resolve().parents[2] / "examples" / "models" / "qwen3-30b-a3b.json"


def _config(tmp_path: Path, device: str) -> str:
    path = tmp_path / "moe.yaml"
    path.write_text(f"model: {{hf_config: {MODEL}}}\ndevice: {device}\n")
    return str(path)


@pytest.mark.parametrize(
    ("device", "flags", "field", "flag", "got", "allowed"),
    [
        pytest.param("{platform: cuda, capability: 95}", ["--platform", "cuda", "--sm", "95"], "$.device.capability", "--sm", "(got 95)", [str(c) for c in CUDA_CAPABILITIES], id="sm95"),
        pytest.param("{platform: rocm, arch: gfx9999}", ["--platform", "rocm", "--arch", "gfx9999"], "$.device.arch", "--arch", "(got 'gfx9999')", list(GPU_ARCHES["rocm"]), id="gfx9999"),
        pytest.param("{platform: xpu, arch: xe9}", ["--platform", "xpu", "--arch", "xe9"], "$.device.arch", "--arch", "(got 'xe9')", list(GPU_ARCHES["xpu"]), id="xe9"),
    ],
)
def test_the_file_refuses_what_the_flags_refuse(tmp_path, device, flags, field, flag, got, allowed):
    path = _config(tmp_path, device)
    code, out, err = cli("select", "--config", path)
    assert code == 2 and not out
    assert f"bad {path}" in err and f"{path}: {field}: " in err and got in err and "would be a guess" in err
    assert all(a in err for a in allowed)
    flag_code, _, flag_err = cli("select", "--model", "qwen3-30b-a3b", *flags)
    assert flag_code == 2 and f"bad {flag}" in flag_err
    # The same message, only the field named in each door's words.
    assert err.split(f"{field}: ", 1)[1] == flag_err.split(f"{flag}: ", 1)[1]


def test_a_known_device_in_the_file_still_answers(tmp_path):
    code, out, _ = cli("select", "--config", _config(tmp_path, "{platform: cuda, capability: 90}"))
    assert code == 0 and out.startswith("triton")


def test_a_device_check_names_the_files_field_once(tmp_path):
    path = _config(tmp_path, "{platform: rocm, capability: 90}")
    code, _, err = cli("select", "--config", path)
    assert code == 2 and f"{path}: $.device.capability: a CUDA compute capability is only meaningful on platform cuda" in err


@pytest.mark.parametrize("device", ["{name: H200}", "{}", "{capability: 90}"])
def test_a_device_without_gpu_or_platform_names_both_keys(tmp_path, device):
    """``device: {name: H200}`` was refused as "'platform' is a required property; allowed:
    platform", which never mentions the ``gpu:`` key a catalog name goes in."""
    path = _config(tmp_path, device)
    code, out, err = cli("select", "--config", path)
    assert code == 2 and not out
    assert f"{path}: $.device: needs one of these keys; allowed: gpu, platform" in err and "'platform' is a required property" not in err


def test_a_gpu_name_with_platform_keys_beside_it_is_still_refused(tmp_path):
    code, _, err = cli("select", "--config", _config(tmp_path, "{gpu: H200, platform: cuda}"))
    assert code == 2 and "$.device.platform" in err
