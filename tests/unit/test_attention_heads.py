"""A tensor-parallel size that does not divide the model's attention heads is refused at start
(vLLM 0.29.0-0.34.0 vllm/config/model.py ``ModelConfig.verify_with_parallel_config``), before any
layer is built, and no why-not fix moves a deployment there (breakit22 finding 3: ``--tp 3`` on
DeepSeek-R1, 128 heads, was answered, and its dead end offered ``--ep`` as a fix)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from moe_oracle.cli import main
from moe_oracle.core.oracle import default_catalog
from moe_oracle.inputs.attention_heads import attention_heads_refusal, engine_attention_heads
from moe_oracle.inputs.admissible import start_refusal
from moe_oracle.inputs.deployment import build_deployment
from moe_oracle.inputs.operator_inputs import OperatorInputs


def _error(capsys, *argv: str) -> tuple[int, dict]:
    rc = main([*argv, "--json"])
    return rc, json.loads(capsys.readouterr().out)


@pytest.mark.parametrize(("command", "flags", "path", "heads"), [
    ("select", ("--model", "deepseek-r1", "--gpu", "H200", "--tp", "3", "--ep"), "--tp", 128),
    ("explain", ("--serve", "vllm serve Qwen/Qwen3-30B-A3B -tp 3", "--gpu", "H200"), "--serve --tensor-parallel-size", 32),
    ("why-not", ("--backend", "triton", "--model", "deepseek-r1", "--gpu", "H200", "--tp", "6"), "--tp", 128),
    ("plan", ("--model", "deepseek-r1", "--gpu", "H200", "--tp", "6"), "--tp", 128),
])
def test_a_size_that_does_not_divide_the_heads_is_refused(capsys, command, flags, path, heads):
    rc, out = _error(capsys, command, *flags)
    assert rc == 2
    (issue,) = out["issues"]
    assert issue["path"] == path and issue["keyword"] == "engine_refuses"
    assert f"Total number of attention heads ({heads}) must be divisible by tensor parallel size" in issue["message"]
    assert issue["allowed"] == [d for d in range(1, heads + 1) if heads % d == 0]


def test_a_size_that_divides_them_is_answered(capsys):
    assert main(["select", "--model", "deepseek-r1", "--gpu", "H200", "--tp", "8"]) == 0


def test_the_heads_are_read_where_vllm_reads_them():
    # The text config of a multimodal checkpoint (Llama 4: 40 heads), and DBRX's n_heads (DbrxConfig.attribute_map).
    assert engine_attention_heads({"text_config": {"num_attention_heads": 40}, "vision_config": {"num_attention_heads": 16}}) == 40
    assert engine_attention_heads({"model_type": "dbrx", "n_heads": 48}) == 48
    assert engine_attention_heads({"num_attention_heads": "32"}) == 0  # not an int: nothing checked
    assert attention_heads_refusal(0, 3, "--tp", "vLLM 0.34.0") is None


def test_why_not_never_moves_to_a_size_the_heads_refuse():
    catalog = default_catalog()
    dep = build_deployment(OperatorInputs(model="llama-4-scout-17b-16e-instruct", gpu="H200", tp=8), catalog)
    assert dep.attention_heads == 40
    refusal = start_refusal(dep, catalog)
    par = dep.config.parallel
    assert refusal(dep.config, dep.environment) is None
    assert refusal(dep.config.with_changes(parallel__tp_size=16), dep.environment) is not None
    assert refusal(replace(dep.config, parallel=replace(par, tp_size=4)), dep.environment) is None


def test_the_text_config_is_found_where_vllm_builds_it_from():
    # DeepSeek-VL2 builds its text_config from language_config; vLLM remaps InternVL chat's llm_config
    # to text_config (breakit22b finding 1: both were read at the top level, no heads, no experts).
    assert engine_attention_heads({"language_config": {"num_attention_heads": 20}, "vision_config": {"num_attention_heads": 16}}) == 20
    assert engine_attention_heads({"llm_config": {"num_attention_heads": 32}}) == 32
    from moe_oracle.inputs.ep_refusal import engine_num_experts

    assert engine_num_experts({"language_config": {"n_routed_experts": 64}}) == 64
    assert engine_num_experts({"llm_config": {"num_experts": 128}}) == 128
