"""Off CUDA and ROCm, an FP8 layer that no kernel of the platform takes is refused at load.

vLLM 0.29.0-0.34.0 P/oracle/fp8.py select_fp8_moe_backend returns Fp8MoeBackend.NONE with no
experts class there, and every in-tree FP8 method then converts its weights for that backend in
process_weights_after_loading, where convert_to_fp8_moe_kernel_format raises ValueError("Unsupported
FP8 MoE backend: NONE"). The tables answered "platform_moe" (the platform runs MoE itself), which
holds only for an out-of-tree platform (TPU through tpu_inference). Found by this session's break-it
pass on `--quantization fp8_per_tensor` on a CPU; the differential tier now runs the release's
conversion for NONE (10-12 disagreements per release without the rule). These tests fail on the
code before the rule.
"""

from __future__ import annotations

import json

import pytest

from moe_oracle.cli import main

RULE = "constraint.fp8_no_backend_at_load"


def _select(capsys, *args):
    rc = main(["select", *args, "--json"])
    return rc, json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("release", ["0.29.0", "0.34.0"])
@pytest.mark.parametrize("method", ["fp8_per_tensor", "fp8_per_channel"])
def test_online_fp8_on_a_cpu_without_a_cpu_kernel_is_refused_at_load(capsys, release, method):
    rc, out = _select(capsys, "--gpu", "CPU_X86_64", "--package", f"vllm=={release}", "--serve", f"vllm serve Qwen/Qwen3-30B-A3B --quantization {method}")
    assert rc == 1 and out["selected"] is None
    refusal = out["blocking"][0]
    assert refusal["rules"] == [RULE] and refusal["raised_at"] == "construction"


def test_a_cpu_kernel_that_takes_the_layer_still_runs_it(capsys):
    rc, out = _select(capsys, "--gpu", "CPU_X86_64", "--model", "qwen3-30b-a3b-fp8")
    assert rc == 0 and out["selected"]["kernel"] == "cpu_fp8"


def test_tpu_keeps_the_platform_answer(capsys):
    """vLLM runs TPU out of its tree: its own methods, not the in-tree conversion."""
    rc, out = _select(capsys, "--platform", "tpu", "--model", "qwen3-30b-a3b-fp8")
    assert rc == 0 and out["selected"]["kernel"] == "platform_moe"
