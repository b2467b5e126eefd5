"""An online ``--quantization`` shorthand, or a ``--quantization-config`` MoE target, on a checkpoint
(breakit22 / requantization research): ``-q fp8_per_block`` on a ModelOpt NVFP4 checkpoint was
answered with the checkpoint's NVFP4 kernel and "no effect", which holds only for 0.29.0 (vLLM
0.30.0-0.31.0 refuse it, 0.32.0 refuses re-quantizing MoE layers, 0.33.0-0.34.0 re-quantize the
experts with the online method: not modelled, refused); a ``--quantization-config`` MoE target was
ignored silently. The deferred ``mxfp8`` shorthand still has no effect there."""

from __future__ import annotations

import json
from pathlib import Path

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
def test_a_quantization_config_moe_target_beside_quantization_is_refused(capsys, config):
    rc, out = _run(capsys, "select", "--gpu", "H200", "--serve", f"vllm serve Qwen/Qwen3-30B-A3B --quantization fp8_per_tensor --quantization-config '{config}'")
    assert rc == 2 and out["issues"][0]["path"].startswith("--serve --quantization-config ")


def test_a_linear_only_quantization_config_is_answered(capsys):
    rc, out = _run(capsys, "select", "--gpu", "H200", "--serve", "vllm serve Qwen/Qwen3-30B-A3B --quantization-config '{\"linear\": \"fp8_per_block\"}'")
    assert rc == 0 and out["selected"]["kernel"] == "triton"


def test_lut_b_moe_is_a_shorthand_from_0_34_only(capsys):
    # Before 0.34.0 resolve_quantization_config gives lut_b_moe no online arguments: the override takes the checkpoint (breakit22b finding 3).
    rc, out = _run(capsys, "select", "--package", "vllm==0.33.0", "--gpu", "B200", "--serve", f"{NVFP4} --quantization lut_b_moe")
    assert rc == 0 and out["selected"]["kernel"].startswith("flashinfer_trtllm_nvfp4")


def test_a_quantization_config_target_without_quantization(capsys):
    # vLLM builds no quantization config for an unquantized checkpoint without --quantization: no effect there
    # (breakit22b finding 4); on a quantized one the target re-quantizes (0.33.0+) or is refused.
    rc, out = _run(capsys, "select", "--gpu", "H200", "--serve", "vllm serve Qwen/Qwen3-30B-A3B -tp 2 --quantization-config '{\"moe\": \"fp8_per_block\"}'")
    assert rc == 0 and out["selected"]["kernel"] == "triton"
    rc, out = _run(capsys, "select", "--package", "vllm==0.31.0", "--gpu", "B200", "--serve", f"{NVFP4} --quantization-config '{{\"moe\": \"fp8_per_block\"}}'")
    assert rc == 2 and "Cannot apply requested online quantization" in out["issues"][0]["message"]


def test_experts_the_checkpoint_leaves_unquantized_are_quantized_online_not_refused_by_the_engine(capsys, tmp_path):
    # A ModelOpt FP8 checkpoint whose experts are excluded: vLLM quantizes them online (breakit22b finding 5).
    cfg = json.loads((Path(__file__).resolve().parents[2] / "examples" / "models" / "qwen3-30b-a3b.json").read_text(encoding="utf-8"))
    (tmp_path / "config.json").write_text(json.dumps(cfg), encoding="utf-8")
    quant = {"producer": {"name": "modelopt", "version": "0.29.0"}, "quantization": {"quant_algo": "FP8", "exclude_modules": ["lm_head", "*mlp.experts*", "*mlp.gate"]}}
    (tmp_path / "hf_quant_config.json").write_text(json.dumps(quant), encoding="utf-8")
    rc, out = _run(capsys, "select", "--package", "vllm==0.30.0", "--gpu", "B200", "--serve", f"vllm serve {tmp_path} -tp 2 --quantization nvfp4_per_token")
    assert rc == 2
    (issue,) = out["issues"]
    assert issue["keyword"] is None and "leaves the routed experts unquantized" in issue["message"]
