"""Registry families read from vLLM's model files: Step-3.5 / Step5 (per-layer swiglustep, the
layer layout each release builds), Qwen4-Exp (the Qwen3.5-MoE family), Mellum, and the reason an
unmapped architecture gives instead of the generic note (Arch.unmapped)."""

from __future__ import annotations

import pytest

from moe_oracle.core.errors import ConfigError
from moe_oracle.inputs.checkpoint import read_checkpoint
from moe_oracle.inputs.checkpoint.architectures import UNMODELLED_REASON, VLLM_MOE_ARCHITECTURES

# stepfun-ai/Step-3.5-Flash field names (moe_num_experts, moe_top_k, norm_expert_weight, moe_router_*)
STEP3P5 = {"architectures": ["Step3p5ForCausalLM"], "model_type": "step3p5", "hidden_size": 4096, "intermediate_size": 11264, "num_hidden_layers": 8,
           "moe_num_experts": 288, "moe_top_k": 8, "moe_intermediate_size": 1280, "share_expert_dim": 1280, "norm_expert_weight": True,
           "moe_router_scaling_factor": 3.0, "use_moe_router_bias": True, "need_fp32_gate": True, "swiglu_limits": [0, 0, 0, 0, 0, 0, 7.0, None]}


def _moe(ck):
    return {layer.spec.index: layer for layer in ck.layers if layer.spec.is_moe}


def test_step3p5_layers_get_swiglustep_where_swiglu_limits_is_set():
    ck = read_checkpoint({**STEP3P5, "moe_layers_enum": "1,2,3,4,5,6,7"}, release="0.34.0")
    moe = _moe(ck)
    assert ck.family.name == "step3p5" and sorted(moe) == list(range(1, 8))
    assert {i: layer.kwargs["activation"].value for i, layer in moe.items()} == {1: "silu", 2: "silu", 3: "silu", 4: "silu", 5: "silu", 6: "swiglustep", 7: "silu"}
    kw = moe[1].kwargs
    assert kw["num_experts"] == 288 and kw["top_k"] == 8 and kw["has_correction_bias"] and kw["router_logits_dtype"].value == "float32"
    assert moe[1].spec.shared == "model.layers.1.share_expert" and moe[1].spec.experts == "model.layers.1.moe.experts"


def test_step3p5_layout_and_scoring_default_follow_the_release_config_class():
    # 0.33.0+: transformers Step3p7TextConfig (layers 3.., no moe_router_activation: sigmoid);
    # 0.29.0-0.32.0: vLLM's Step3p5Config (layers 1.., moe_router_activation default softmax)
    new, old = read_checkpoint(STEP3P5, release="0.33.0"), read_checkpoint(STEP3P5, release="0.32.0")
    assert sorted(_moe(new)) == list(range(3, 8)) and sorted(_moe(old)) == list(range(1, 8))
    assert new.representative().kwargs["routing_method"] != old.representative().kwargs["routing_method"]
    typed = read_checkpoint({**STEP3P5, "mlp_layer_types": ["dense", "sparse"] * 4}, release="0.34.0")
    assert sorted(_moe(typed)) == [1, 3, 5, 7]
    assert sorted(_moe(read_checkpoint({**STEP3P5, "mlp_layer_types": ["dense", "sparse"] * 4}, release="0.31.0"))) == list(range(1, 8))  # not read before 0.33.0


def test_step5_reads_moe_layer_list_and_refuses_two_lists_that_disagree():
    cfg = {**STEP3P5, "architectures": ["Step5ForCausalLM"], "model_type": "step5", "moe_layer_list": [2, 4]}
    ck = read_checkpoint(cfg, release="0.34.0")
    assert ck.family.name == "step5" and sorted(_moe(ck)) == [2, 4]
    assert sorted(_moe(read_checkpoint({k: v for k, v in cfg.items() if k != "moe_layer_list"}, release="0.34.0"))) == list(range(1, 8))
    with pytest.raises(ConfigError) as err:
        read_checkpoint({**cfg, "moe_layers_enum": "2,5"}, release="0.34.0")
    assert "moe_layer_list" in str(err.value)


def test_qwen4_exp_is_read_as_qwen3_5_moe_with_its_mtp_layers():
    text = {"model_type": "qwen4_exp_text", "hidden_size": 2048, "num_hidden_layers": 4, "moe_intermediate_size": 512, "shared_expert_intermediate_size": 512,
            "num_experts": 512, "num_experts_per_tok": 10, "mtp_num_hidden_layers": 1}
    ck = read_checkpoint({"architectures": ["Qwen4ExpForConditionalGeneration"], "model_type": "qwen4_exp", "text_config": text}, release="0.34.0")
    assert ck.family.name == "qwen3_5_moe" and len(ck.moe_layers()) == 5
    assert ck.layers[0].spec.experts == "model.language_model.layers.0.mlp.experts" and ck.layers[-1].spec.experts == "mtp.layers.0.mlp.experts"
    assert not any("does not model" in n for n in ck.notes)


def test_mellum_moe_layers_follow_mlp_layer_types():
    cfg = {"architectures": ["MellumForCausalLM"], "model_type": "mellum", "hidden_size": 2304, "num_hidden_layers": 4, "moe_intermediate_size": 896,
           "num_experts": 64, "num_experts_per_tok": 8, "mlp_layer_types": ["dense", "sparse", "sparse", "dense"]}
    ck = read_checkpoint(cfg, release="0.31.0")
    assert ck.family.name == "mellum" and sorted(_moe(ck)) == [1, 2]


def test_an_unmapped_architecture_says_why_instead_of_the_generic_note():
    cfg = {"architectures": ["PanguUltraMoEForCausalLM"], "model_type": "pangu_ultra_moe", "hidden_size": 7680, "moe_intermediate_size": 2048,
           "num_experts": 256, "num_experts_per_tok": 8, "num_hidden_layers": 4}
    notes = read_checkpoint(cfg, release="0.34.0").notes
    said = [n for n in notes if "registers PanguUltraMoEForCausalLM" in n]
    assert said and "trust_remote_code" in said[0] and UNMODELLED_REASON not in said[0]


def test_a_reason_is_given_only_for_unmapped_architectures():
    assert all(a.family is None for a in VLLM_MOE_ARCHITECTURES.values() if a.unmapped)
    assert VLLM_MOE_ARCHITECTURES["Qwen3_5ForCausalLM"].unmapped and "dense sibling" in VLLM_MOE_ARCHITECTURES["Qwen3_5ForCausalLM"].unmapped


def test_laguna_renormalizes_from_0_31_whatever_norm_topk_prob_says():
    # laguna.py LagunaMoE: renormalize=config.norm_topk_prob in 0.29.0-0.30.0, True from 0.31.0;
    # apply_routed_scale_to_output=True: the router gets 1.0 (so 0.31.0 answers MiniMax2)
    cfg = {"architectures": ["LagunaForCausalLM"], "model_type": "laguna", "hidden_size": 2048, "num_hidden_layers": 4, "moe_intermediate_size": 512,
           "shared_expert_intermediate_size": 512, "num_experts": 256, "num_experts_per_tok": 8, "norm_topk_prob": False, "moe_routed_scaling_factor": 2.5}
    old, new = read_checkpoint(cfg, release="0.30.0"), read_checkpoint(cfg, release="0.31.0")
    assert old.family.name == "laguna" and sorted(_moe(old)) == [1, 2, 3]
    assert old.representative().kwargs["routing_method"].value == "unspecified" and new.representative().kwargs["routing_method"].value == "minimax2"
    assert new.layers[1].spec.shared == "model.layers.1.mlp.shared_expert"


def test_step5_vl_reads_its_text_model_under_the_step3p7_frontend_prefix():
    text = {"model_type": "step5", "hidden_size": 5120, "num_hidden_layers": 4, "moe_num_experts": 16, "moe_top_k": 4, "moe_intermediate_size": 10240}
    ck = read_checkpoint({"architectures": ["Step5ForConditionalGeneration"], "model_type": "step5_vl", "text_config": text}, release="0.34.0")
    assert ck.family.name == "step5" and ck.layers[1].spec.experts == "model.language_model.layers.1.moe.experts"
    assert not any("assumed" in n for n in ck.notes)
