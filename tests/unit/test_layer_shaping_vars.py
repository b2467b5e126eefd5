"""A variable vLLM reads that changes the MoE layer itself, which moe-oracle does not model, says
so instead of "not read by MoE kernel selection: ignored" (breakit23 finding 4:
VLLM_ROCM_USE_AITER_FUSION_SHARED_EXPERTS=1 fuses DeepSeek's shared expert into the routed layer on
ROCm with AITER, 33 experts per EP rank of 8, which the plan gave as 32 with the variable "ignored")."""

from __future__ import annotations

import pytest

from moe_oracle.core.envvars import LAYER_SHAPING_VARS
from tests.cli_capture import cli

ARGS = ("plan", "--model", "deepseek-r1", "--gpu", "MI300X", "--tp", "8", "--ep", "--package", "vllm==0.34.0", "--env", "VLLM_ROCM_USE_AITER=1")


@pytest.mark.parametrize("value", ["1", "true", "TRUE"])
def test_set_it_is_named_as_not_modelled(value):
    code, out, err = cli(*ARGS, "--env", f"VLLM_ROCM_USE_AITER_FUSION_SHARED_EXPERTS={value}")
    assert code == 0, err
    assert f"VLLM_ROCM_USE_AITER_FUSION_SHARED_EXPERTS={value!r}: {LAYER_SHAPING_VARS['VLLM_ROCM_USE_AITER_FUSION_SHARED_EXPERTS']}" in out + err
    assert "not modelled" in LAYER_SHAPING_VARS["VLLM_ROCM_USE_AITER_FUSION_SHARED_EXPERTS"]


@pytest.mark.parametrize("value", ["0", "false", "yes"])  # vllm/envs.py: only 1 or true (any case) turn it on
def test_off_it_changes_nothing(value):
    code, out, err = cli(*ARGS, "--env", f"VLLM_ROCM_USE_AITER_FUSION_SHARED_EXPERTS={value}")
    assert code == 0, err
    assert "VLLM_ROCM_USE_AITER_FUSION_SHARED_EXPERTS is read by vLLM 0.34.0 but not by MoE kernel selection: ignored" in out + err
