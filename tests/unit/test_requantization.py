"""An online ``--quantization`` shorthand, or a ``--quantization-config`` MoE target, on a checkpoint
(breakit22 / requantization research): ``-q fp8_per_block`` on a ModelOpt NVFP4 checkpoint was
answered with the checkpoint's NVFP4 kernel and "no effect", which holds only for 0.29.0 (vLLM
0.30.0-0.31.0 refuse it, 0.32.0 refuses re-quantizing MoE layers, 0.33.0-0.34.0 re-quantize the
experts with the online method: not modelled, refused); a ``--quantization-config`` MoE target was
ignored silently. The deferred ``mxfp8`` shorthand still has no effect there."""

from __future__ import annotations

import json

import pytest

from moe_oracle.cli import main

NVFP4 = "vllm serve nvidia/Qwen3.5-122B-A10B-NVFP4 -tp 4"


def _run(capsys, *argv: str) -> tuple[int, dict]:
    rc = main([*argv, "--json"])
    return rc, json.loads(capsys.readouterr().out)


@pytest.mark.parametrize(("release", "fragment"), [
    ("0.30.0", "Cannot apply requested online quantization"),
    ("0.32.0", "Requantizing checkpoint-quantized MoE layers is not supported."),
    ("0.34.0", "not modelled: vLLM 0.34.0 re-quantizes the routed experts"),
])
@pytest.mark.parametrize("command", ["select", "plan"])
def test_an_online_moe_shorthand_on_an_nvfp4_checkpoint(capsys, release, fragment, command):
    rc, out = _run(capsys, command, "--package", f"vllm=={release}", "--gpu", "B200", "--serve", f"{NVFP4} --quantization fp8_per_block")
    assert rc == 2
    (issue,) = out["issues"]
    assert issue["path"] == "--serve --quantization" and fragment in issue["message"]


def test_0_29_ignores_it_and_deferred_shorthands_have_no_effect(capsys):
    rc, out = _run(capsys, "select", "--package", "vllm==0.29.0", "--gpu", "B200", "--serve", f"{NVFP4} --quantization fp8_per_block")
    assert rc == 0 and out["selected"]["kernel"].startswith("flashinfer_trtllm_nvfp4")
    rc, out = _run(capsys, "select", "--gpu", "B200", "--serve", f"{NVFP4} --quantization mxfp8")
    assert rc == 0 and out["selected"]["kernel"].startswith("flashinfer_trtllm_nvfp4")


@pytest.mark.parametrize("config", ['{"moe": "fp8_per_block"}', '{"moe": {"weight": "fp8_per_block"}}', '{"targets": {"re:.*experts": "mxfp8"}}'])
def test_a_quantization_config_moe_target_is_refused(capsys, config):
    rc, out = _run(capsys, "select", "--gpu", "H200", "--serve", f"vllm serve Qwen/Qwen3-30B-A3B --quantization-config '{config}'")
    assert rc == 2 and out["issues"][0]["path"].startswith("--serve --quantization-config ")


def test_a_linear_only_quantization_config_is_answered(capsys):
    rc, out = _run(capsys, "select", "--gpu", "H200", "--serve", "vllm serve Qwen/Qwen3-30B-A3B --quantization-config '{\"linear\": \"fp8_per_block\"}'")
    assert rc == 0 and out["selected"]["kernel"] == "triton"
