"""An environment override whose condition reads an unknown input fires on a recorded assumption.

vLLM 0.29.0-0.34.0 P/oracle/fp8.py select_fp8_moe_backend forces AITER when VLLM_ROCM_USE_AITER and
VLLM_ROCM_USE_AITER_MOE are explicitly on, except on RDNA with the aiter package
(vllm/_aiter_ops.py is_rdna_aiter_enabled: RDNA4 before 0.34.0, every RDNA GPU from 0.34.0). A ROCm device whose gfx arch is unknown used to drop the
override silently (selected by priority, with fallback); now the override fires and the answer names
the arch it assumes.
"""

from __future__ import annotations

import json

import pytest

from moe_oracle.cli import main

ARGS = ["select", "--model", "qwen3-30b-a3b-fp8", "--platform", "rocm", "--tp", "1", "--env", "VLLM_ROCM_USE_AITER=1", "--json"]


RDNA_0_34 = ["gfx1100", "gfx1101", "gfx1102", "gfx1150", "gfx1151", "gfx1200", "gfx1201"]


@pytest.mark.parametrize("release,rule,rdna", [("0.33.0", "override.aiter_env.fp8.rocm", ["gfx1200", "gfx1201"]),
                                               ("0.34.0", "override.aiter_env.fp8.rocm.v0_34", RDNA_0_34)])
def test_rocm_without_arch_forces_aiter_on_a_recorded_assumption(capsys, release, rule, rdna):
    assert main([*ARGS, "--package", f"vllm=={release}"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["selected_by"] == "requested" and record["requested"]["by"] == rule
    assumed = [a for a in record["assumptions"] if a["rule"] == rule]
    assert [(a["field"], a["assumed"]) for a in assumed] == [("gpu_arch", {"not_in": rdna})]


def test_a_known_arch_needs_no_assumption(capsys):
    assert main([*ARGS, "--arch", "gfx942"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["requested"]["by"] == "override.aiter_env.fp8.rocm.v0_34"
    assert not [a for a in record["assumptions"] if a["rule"].startswith("override.")]


def test_rdna3_with_aiter_falls_back_from_0_34_0(capsys):
    """vLLM 0.34.0 skips AITER on every RDNA GPU with the aiter package (gfx1100 included); 0.33.0
    only on RDNA4, so there the override forces AITER, which gfx1100 cannot run."""
    args = [*ARGS, "--arch", "gfx1100", "--package", "aiter==0.1.14"]
    assert main([*args, "--package", "vllm==0.34.0"]) == 0
    assert json.loads(capsys.readouterr().out)["requested"] is None
    assert main([*args, "--package", "vllm==0.33.0"]) == 1
    assert json.loads(capsys.readouterr().out)["requested"]["by"] == "override.aiter_env.fp8.rocm"
