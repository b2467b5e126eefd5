"""``--hf-overrides`` that gives a text-only checkpoint a text config (breakit22 finding 2).

vLLM's ``ModelConfig._apply_dict_overrides`` merges a dict only into an existing nested config;
on Qwen3-30B-A3B (no sub-config) ``{"text_config": {...}}`` becomes a plain attribute, which
transformers' ``get_text_config`` returns and vLLM's ``get_hf_text_config`` refuses (checked with
vLLM 0.34.0's own functions and transformers 5.20.2). It was answered as a 64-expert layer. A
multimodal checkpoint's text config is still merged into."""

from __future__ import annotations

import json

import pytest

from moe_oracle.cli import main

QWEN3 = "vllm serve Qwen/Qwen3-30B-A3B --hf-overrides '{\"text_config\": {\"num_experts\": 64}}'"


@pytest.mark.parametrize("command", ["select", "explain", "plan"])
def test_a_text_config_on_a_text_only_checkpoint_is_refused(capsys, command):
    rc = main([command, "--gpu", "H200", "--serve", QWEN3, "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 2
    (issue,) = out["issues"]
    assert issue["path"] == "--serve --hf-overrides text_config" and "get_hf_text_config" in issue["message"]


def test_a_top_level_override_and_a_multimodal_text_config_are_applied(capsys):
    assert main(["explain", "--gpu", "H200", "--serve", "vllm serve Qwen/Qwen3-30B-A3B --hf-overrides '{\"num_experts\": 64}'", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["inputs"]["num_experts"]["value"] == 64
    line = "vllm serve meta-llama/Llama-4-Scout-17B-16E-Instruct -tp 8 --hf-overrides '{\"text_config\": {\"num_local_experts\": 32}}'"
    assert main(["explain", "--gpu", "H200", "--serve", line, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["inputs"]["num_experts"]["value"] == 32
