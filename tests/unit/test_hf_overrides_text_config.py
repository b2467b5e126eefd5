"""``--hf-overrides`` that gives a text-only checkpoint a text config (breakit22 finding 2).

vLLM's ``ModelConfig._apply_dict_overrides`` merges a dict only into an existing nested config;
on Qwen3-30B-A3B (no sub-config) ``{"text_config": {...}}`` becomes a plain attribute, which
transformers' ``get_text_config`` returns and vLLM's ``get_hf_text_config`` refuses (checked with
vLLM 0.34.0's own functions and transformers 5.20.2). It was answered as a 64-expert layer. A
multimodal checkpoint's text config is still merged into."""

from __future__ import annotations

import json
from pathlib import Path

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


def test_a_text_config_held_under_another_key_is_merged_or_has_no_effect(capsys, tmp_path):
    # DeepSeek-VL2 keeps its text config in language_config (vLLM's DeepseekVLV2Config makes it the
    # text_config the override merges into); Qwen3-Omni reads thinker_config.text_config, never the
    # attribute the override sets (breakit22b finding 2: both were refused).
    cfg = {"architectures": ["DeepseekVLV2ForCausalLM"], "model_type": "deepseek_vl_v2", "vision_config": {"model_type": "vision"}, "language_config": {
        "model_type": "deepseek_v2", "hidden_size": 2560, "intermediate_size": 10944, "moe_intermediate_size": 1408, "n_routed_experts": 64,
        "num_experts_per_tok": 6, "n_shared_experts": 2, "n_group": 8, "topk_group": 3, "topk_method": "greedy", "scoring_func": "softmax",
        "norm_topk_prob": False, "num_attention_heads": 20, "num_hidden_layers": 27, "first_k_dense_replace": 1, "moe_layer_freq": 1,
        "hidden_act": "silu", "torch_dtype": "bfloat16", "kv_lora_rank": 512, "q_lora_rank": None, "qk_nope_head_dim": 128,
        "qk_rope_head_dim": 64, "v_head_dim": 128, "routed_scaling_factor": 1.0, "vocab_size": 102400}}
    (tmp_path / "config.json").write_text(json.dumps(cfg), encoding="utf-8")
    assert main(["select", "--gpu", "H200", "--serve", f"vllm serve {tmp_path} -tp 8"]) == 2  # 20 heads
    capsys.readouterr()
    line = f"vllm serve {tmp_path} -tp 8 --hf-overrides '{{\"text_config\": {{\"num_attention_heads\": 16}}}}'"
    assert main(["explain", "--gpu", "H200", "--serve", line, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["inputs"]["num_experts"]["value"] == 64
    omni = Path(__file__).resolve().parents[2] / "examples" / "models" / "registry" / "qwen3omnimoeforconditionalgeneration-synthetic.json"
    line = f"vllm serve {omni} -tp 2 --hf-overrides '{{\"text_config\": {{\"num_attention_heads\": 16}}}}'"
    assert main(["select", "--gpu", "H200", "--serve", line, "--json"]) == 0
    assert [n for n in json.loads(capsys.readouterr().out)["notes"] if "--hf-overrides text_config has no effect" in n]
