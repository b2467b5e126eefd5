"""Expert parallelism on a model whose config vLLM finds no expert count in (DBRX: ffn_config) is
refused at start (moe_oracle/inputs/ep_refusal.py; vLLM 0.29.0-0.34.0 _verify_with_expert_parallelism)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from moe_oracle.cli import main
from moe_oracle.inputs.ep_refusal import engine_num_experts, ep_without_experts

DBRX = Path(__file__).resolve().parents[2] / "examples" / "models" / "registry" / "dbrxforcausallm-synthetic.json"


def test_the_count_is_read_where_vllm_reads_it():
    assert engine_num_experts(json.loads(DBRX.read_text())) == 0  # nested in ffn_config
    assert engine_num_experts({"text_config": {"num_experts": 128}, "num_local_experts": 0}) == 128
    assert engine_num_experts({"thinker_config": {"text_config": {"num_experts": 64}}}) == 64
    assert engine_num_experts({"block_configs": [{"block_type": "moe", "n_routed_experts": 32}, {"block_type": "mamba"}]}) == 32
    assert ep_without_experts({"num_local_experts": 8}, True, "--ep", "vLLM 0.33.0") is None
    assert ep_without_experts({}, False, "--ep", "vLLM 0.33.0") is None


@pytest.mark.parametrize("command", ["select", "plan"])
def test_dbrx_with_expert_parallelism_is_refused(command, capsys):
    assert main([command, "--model", str(DBRX), "--gpu", "H200", "--tp", "8", "--ep"]) == 2
    err = capsys.readouterr().err
    assert "bad --ep" in err and "refuses expert parallelism for this model at start" in err


def test_dbrx_without_expert_parallelism_is_answered(capsys):
    assert main(["select", "--model", str(DBRX), "--gpu", "H200", "--tp", "8"]) == 0


def test_the_serve_line_is_named(capsys):
    assert main(["select", "--serve", f"vllm serve {DBRX} -tp 8 --enable-expert-parallel", "--gpu", "H200"]) == 2
    assert "--serve --enable-expert-parallel" in capsys.readouterr().err
