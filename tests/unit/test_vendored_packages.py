"""Modules vLLM's own wheel carries (core/packages.VENDORED) and distributions named otherwise
than their module (PROVIDERS: humming-kernels installs humming).

breakit23 findings 1-3: a ``pip freeze`` of a plain ``pip install vllm==0.34.0`` lists no deep-gemm
and no triton-kernels, and was read as both absent (every unlisted package is), while vLLM's
``has_deep_gemm`` / ``has_triton_kernels`` (vllm/utils/import_utils.py) fall back to the copies its
CUDA wheel carries under ``vllm/third_party``: DeepSeek-R1 with VLLM_USE_DEEP_GEMM=1 was a dead end
("install deep-gemm"), gpt-oss-120b on an H100 got FlashInfer CUTLASS instead of the Triton kernel
vLLM ranks first. A freeze listing humming-kernels (a hard requirement of vllm's wheel) was read
as Humming absent. The wheels' contents are checked against each release in
tests/differential/test_release_sources.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from moe_oracle.core.environment import ABSENT, Environment
from tests.cli_capture import cli

FREEZE = "vllm==0.34.0\nflashinfer-python==0.7.3\ntorch==2.10.0\n"


def _freeze(tmp_path: Path, text: str = FREEZE) -> str:
    path = tmp_path / "freeze.txt"
    path.write_text(text, encoding="utf-8")
    return str(path)


def _selected(*argv: str) -> tuple[int, dict]:
    code, out, err = cli("select", *argv, "--json")
    return code, json.loads(out)


def test_deep_gemm_is_the_copy_vllm_carries(tmp_path):
    freeze = _freeze(tmp_path)
    code, out = _selected("--model", "deepseek-r1", "--gpu", "H200", "--tp", "8", "--environment", freeze, "--env", "VLLM_USE_DEEP_GEMM=1")
    assert code == 0 and out["selected"]["kernel"] == "deep_gemm"
    # Declared absent (the copy removed): the dead end it was before.
    code, out = _selected("--model", "deepseek-r1", "--gpu", "H200", "--tp", "8", "--environment", freeze, "--env", "VLLM_USE_DEEP_GEMM=1", "--without", "deep-gemm")
    assert code == 1 and out["selected"] is None


def test_triton_kernels_is_the_copy_vllm_carries(tmp_path):
    code, out = _selected("--model", "gpt-oss-120b", "--gpu", "H100", "--tp", "4", "--environment", _freeze(tmp_path))
    assert code == 0 and out["selected"]["kernel"] == "triton_oai_mxfp4_monolithic"


def test_humming_kernels_installs_humming(tmp_path):
    freeze = _freeze(tmp_path, FREEZE + "humming-kernels==0.1.19\n")
    code, out = _selected("--model", "deepseek-v4-flash", "--gpu", "H200", "--tp", "8", "--environment", freeze)
    assert code == 0 and out["selected"]["kernel"] == "humming_indexed"
    code, out = _selected("--model", "deepseek-v4-flash", "--gpu", "H200", "--tp", "8", "--environment", _freeze(tmp_path))
    assert code == 0 and out["selected"]["kernel"] != "humming_indexed"


def test_the_note_says_which_packages_are_the_copies(tmp_path):
    freeze = _freeze(tmp_path)
    code, out, _ = cli("explain", "--model", "gpt-oss-120b", "--gpu", "H100", "--tp", "4", "--environment", freeze)
    assert code == 0
    assert "every unlisted package is absent but the modules vLLM's own wheel carries (next note)" in out
    assert f"--environment {freeze}: deep-gemm, triton-kernels not listed, yet installed: vLLM imports the copy its wheel carries" in out


@pytest.mark.parametrize(("vllm", "expected"), [
    ("0.34.0", "0.34.0"), ("0.29.0", "0.29.0"), ("0.33.0+cu129", "0.33.0+cu129"),
    ("0.34.0+rocm700", None), ("0.34.0+cpu", None), ("0.35.0", None),  # another build, or a wheel not read: unknown
    ("0.10.0", ABSENT),  # before the first wheel read to carry it
])
def test_the_installed_vllm_decides(vllm, expected):
    assert Environment({"vllm": vllm}, complete=True).package("deep-gemm") == expected


def test_an_installed_package_and_a_declared_absence_come_first():
    assert Environment({"vllm": "0.34.0", "deep-gemm": "2.9.0"}, complete=True).package("deep-gemm") == "2.9.0"
    assert Environment({"vllm": "0.34.0"}, {"deep-gemm"}, True).package("deep-gemm") is ABSENT
    assert Environment({}, complete=True).package("deep-gemm") is ABSENT  # no vllm, no copy
    assert Environment({"vllm": "0.34.0"}).package("deep-ep") is None  # not carried: unknown as before
