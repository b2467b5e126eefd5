"""An environment override whose condition reads an unknown input fires on a recorded assumption.

vLLM 0.29.0-0.33.0 P/oracle/fp8.py select_fp8_moe_backend forces AITER when VLLM_ROCM_USE_AITER and
VLLM_ROCM_USE_AITER_MOE are explicitly on, except on RDNA4 with the aiter package
(vllm/_aiter_ops.py is_rdna_aiter_enabled). A ROCm device whose gfx arch is unknown used to drop the
override silently (selected by priority, with fallback); now the override fires and the answer names
the arch it assumes.
"""

from __future__ import annotations

import json

from moe_oracle.cli import main

ARGS = ["select", "--model", "qwen3-30b-a3b-fp8", "--platform", "rocm", "--tp", "1", "--env", "VLLM_ROCM_USE_AITER=1", "--json"]


def test_rocm_without_arch_forces_aiter_on_a_recorded_assumption(capsys):
    assert main(ARGS) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["selected_by"] == "requested" and record["requested"]["by"] == "override.aiter_env.fp8.rocm"
    assumed = [a for a in record["assumptions"] if a["rule"] == "override.aiter_env.fp8.rocm"]
    assert [(a["field"], a["assumed"]) for a in assumed] == [("gpu_arch", {"not_in": ["gfx1200", "gfx1201"]})]


def test_a_known_arch_needs_no_assumption(capsys):
    assert main([*ARGS, "--arch", "gfx942"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["requested"]["by"] == "override.aiter_env.fp8.rocm"
    assert not [a for a in record["assumptions"] if a["rule"].startswith("override.")]
