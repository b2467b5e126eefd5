"""Wrappers that build the language model their sub-config names (architectures.SUBCONFIG_WRAPPERS):
the checkpoint reader reads the sub-config (``text_config``, or ``llm_config`` as vLLM renames it)
with the sub-config's own architecture, as vLLM 0.29.0-0.34.0 ``init_vllm_registered_model(
hf_config=config.text_config)`` builds it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from moe_oracle.inputs.checkpoint import read_checkpoint
from moe_oracle.inputs.checkpoint.architectures import SUBCONFIG_WRAPPERS, VLLM_MOE_ARCHITECTURES

ROOT = Path(__file__).resolve().parents[2]


def _model(name: str) -> dict:
    folder = ROOT / "examples" / "models"
    path = folder / f"{name}.json"
    return json.loads((path if path.is_file() else folder / "registry" / f"{name}.json").read_text())


QWEN3_MOE = _model("qwen3-30b-a3b")
# OpenGVLab/InternVL3_5-30B-A3B (model_type internvl_chat, remote config class): the Qwen3-30B-A3B
# language model under llm_config, which vLLM renames to text_config (_CONFIG_ATTRS_MAPPING).
INTERNVL_CHAT = {"architectures": ["InternVLChatModel"], "model_type": "internvl_chat", "downsample_ratio": 0.5, "template": "internvl2_5",
                 "llm_config": QWEN3_MOE, "vision_config": {"architectures": ["InternVisionModel"], "model_type": "intern_vit_6b", "hidden_size": 1024,
                                                            "num_hidden_layers": 24, "intermediate_size": 4096}}


def test_an_internvl_chat_checkpoint_is_read_from_its_llm_config():
    ck = read_checkpoint(INTERNVL_CHAT, release="0.29.0")
    assert ck.family.name == "qwen3_moe" and ck.model_type == "qwen3_moe" and ck.top_model_type == "internvl_chat"
    moe = ck.moe_layers()
    assert len(moe) == 48 and moe[0].spec.experts == "language_model.model.layers.0.mlp.experts"  # internvl.py keeps the checkpoint's names
    kw = moe[0].kwargs
    assert (kw["num_experts"], kw["top_k"], kw["hidden_size"], kw["intermediate_size"]) == (128, 8, 2048, 768)
    assert any("InternVLChatModel builds its language model from $.llm_config" in n and "Qwen3MoeForCausalLM" in n for n in ck.notes)


def test_text_config_wins_over_llm_config():
    # vLLM copies llm_config to text_config only where the config has no text_config
    gpt_oss = {k: v for k, v in _model("gpt-oss-20b").items() if k != "quantization_config"}
    ck = read_checkpoint({**INTERNVL_CHAT, "text_config": gpt_oss}, release="0.34.0")
    assert ck.family.name == "gpt_oss" and len(ck.moe_layers()) == 24


def test_the_family_follows_the_sub_configs_architecture():
    # model_type bailing_hybrid names no family: BailingMoeV2_5 and BailingMoeV3 share it and are told
    # apart by the architecture, here the language model's, not the wrapper's.
    v25 = _model("bailingmoev2_5forcausallm-synthetic")
    inner = {**v25, "architectures": ["BailingMoeV3ForCausalLM"]}
    wrapped = {"architectures": ["LlavaForConditionalGeneration"], "model_type": "llava", "text_config": inner, "vision_config": {"model_type": "clip_vision_model"}}
    ck = read_checkpoint(wrapped, release="0.34.0")
    bare = read_checkpoint(inner, release="0.34.0")
    assert ck.family.name == bare.family.name == "bailing_moe_v3"
    assert ck.representative().kwargs["routing_method"] == bare.representative().kwargs["routing_method"]
    assert ck.architecture == "LlavaForConditionalGeneration"  # the MoEConfig keeps the model's own (vLLM's model_config.architectures)
    assert read_checkpoint({**wrapped, "text_config": {**inner, "architectures": ["BailingMoeV2_5ForCausalLM"]}}, release="0.34.0").family.name == "bailing_moe_v25"


def test_an_unmodelled_language_model_is_said_by_its_own_name():
    inner = {**_model("bailingmoev2forcausallm-synthetic")}
    assert VLLM_MOE_ARCHITECTURES[inner["architectures"][0]].family is None
    ck = read_checkpoint({"architectures": ["Mistral3ForConditionalGeneration"], "model_type": "mistral3", "text_config": inner}, release="0.33.0")
    assert any(f"registers {inner['architectures'][0]}" in n and "does not model" in n for n in ck.notes)
    assert not any("not among the MoE architectures" in n for n in ck.notes)  # vLLM registers the wrapper


def test_a_sub_config_without_architectures_is_read_by_its_model_type():
    inner = {k: v for k, v in QWEN3_MOE.items() if k != "architectures"}
    ck = read_checkpoint({**INTERNVL_CHAT, "llm_config": inner}, release="0.31.0")
    assert ck.family.name == "qwen3_moe"
    assert any("names no architectures" in n and "'qwen3_moe'" in n for n in ck.notes)


def test_a_wrapper_with_a_fixed_language_model_keeps_its_own_family():
    # kimi_vl.py hard-codes architectures=["DeepseekV2ForCausalLM"]: not a sub-config wrapper
    assert "KimiVLForConditionalGeneration" not in SUBCONFIG_WRAPPERS and VLLM_MOE_ARCHITECTURES["KimiVLForConditionalGeneration"].family == "deepseek_v3"
    cfg = _model("kimivlforconditionalgeneration-synthetic")
    assert read_checkpoint(cfg, release="0.34.0").family.name == "deepseek_v3"


@pytest.mark.parametrize("name, family, layers, prefix", [
    ("internvlforconditionalgeneration-qwen3moe-synthetic", "qwen3_moe", 48, "model.language_model.layers.0.mlp.experts"),
    ("internvlforconditionalgeneration-gptoss-synthetic", "gpt_oss", 24, "model.language_model.layers.0.mlp.experts"),
    ("step3vlforconditionalgeneration-synthetic", "step3_text", 56, "model.layers.4.moe.experts"),
])
def test_the_corpus_wrappers_read_as_their_language_model(name, family, layers, prefix):
    ck = read_checkpoint(_model(name), release="0.34.0")
    moe = ck.moe_layers()
    assert (ck.family.name, len(moe), moe[0].spec.experts) == (family, layers, prefix)
    assert not any("assumed" in n and "module names" in n for n in ck.notes)  # the wrapper's checkpoint names are known


def test_explain_names_the_language_model_it_answers_for(capsys, tmp_path):
    from moe_oracle.cli import main

    path = tmp_path / "config.json"
    path.write_text(json.dumps(INTERNVL_CHAT))
    assert main(["explain", "--model", str(path), "--gpu", "H200", "--tp", "8"]) == 0
    assert "InternVLChatModel builds its language model from $.llm_config" in capsys.readouterr().out
