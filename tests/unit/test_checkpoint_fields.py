"""Field aliases across model families, family rules vLLM hard-codes, layer layouts.

Each alias test uses a config that spells the field only that way; the expected values come
from the vLLM 0.33.0 model classes and transformers 5.20.2 config classes named per test.
"""

from __future__ import annotations

import pytest

from moe_oracle.inputs.checkpoint import read_checkpoint
from moe_oracle.core.errors import ConfigError
from moe_oracle.inputs.hf import from_hf_config

BASE = {"num_hidden_layers": 4, "hidden_size": 256, "moe_intermediate_size": 128, "num_local_experts": 16, "num_experts_per_tok": 2}


def fields(**cfg):
    return from_hf_config({**BASE, **cfg}).kwargs


def routing(**cfg):
    return fields(**cfg)["routing_method"].value


@pytest.mark.parametrize("key", ["scoring_func", "moe_router_activation_func", "moe_router_activation", "router_score_function", "router_scoring_func"])
def test_scoring_aliases(key):
    assert routing(**{key: "sigmoid", "norm_topk_prob": True}) == "sigmoid_renorm"
    assert routing(**{key: "softmax", "norm_topk_prob": True}) == "renormalize_naive"


def test_topk_method_noaux_tc_means_a_correction_bias_and_grouped_routing():
    k = fields(scoring_func="sigmoid", norm_topk_prob=True, topk_method="noaux_tc", n_group=8, topk_group=4)
    assert (k["routing_method"].value, k["has_correction_bias"], k["num_expert_group"], k["topk_group"]) == ("deepseek_v3", True, 8, 4)


def test_use_grouped_topk_false_drops_the_groups():
    k = fields(scoring_func="sigmoid", norm_topk_prob=True, topk_method="noaux_tc", n_group=8, topk_group=4, use_grouped_topk=False)
    assert k["routing_method"].value == "minimax2" and "num_expert_group" not in k


def test_num_expert_group_alias_and_moe_renormalize():
    k = fields(moe_router_activation_func="sigmoid", moe_renormalize=True, use_grouped_topk=True, num_expert_group=1, topk_group=1, use_routing_bias=True)
    assert (k["routing_method"].value, k["num_expert_group"]) == ("deepseek_v3", 1)


def test_sigmoid_bias_without_groups_is_minimax2_whatever_the_scale():
    # vLLM 0.33.0 get_routing_method_type dropped routed_scaling_factor (MiniMax-M3: 2.0)
    assert routing(scoring_func="sigmoid", norm_topk_prob=True, use_routing_bias=True, routed_scaling_factor=2.0) == "minimax2"


@pytest.mark.parametrize("key", ["routed_scaling_factor", "router_scaling_factor", "moe_router_scaling_factor", "route_scale"])
def test_scaling_aliases(key):
    assert fields(**{key: 2.5})["routed_scaling_factor"] == 2.5


@pytest.mark.parametrize("key", ["n_routed_experts", "num_experts", "num_local_experts", "moe_num_experts"])
def test_expert_count_aliases(key):
    base = {k: v for k, v in BASE.items() if k != "num_local_experts"}
    assert from_hf_config({**base, key: 64}).kwargs["num_experts"] == 64


@pytest.mark.parametrize("key", ["num_experts_per_tok", "num_experts_per_token", "top_k_experts"])
def test_top_k_aliases(key):
    base = {k: v for k, v in BASE.items() if k != "num_experts_per_tok"}
    assert from_hf_config({**base, key: 6}).kwargs["top_k"] == 6


def test_generation_top_k_is_not_experts_per_token():
    base = {k: v for k, v in BASE.items() if k != "num_experts_per_tok"}
    assert from_hf_config({**base, "top_k": 50, "num_experts_per_token": 16, "num_local_experts": 896}).kwargs["top_k"] == 16
    with pytest.raises(ConfigError) as info:
        from_hf_config({**base, "top_k": 50})
    assert "experts per token" in info.value.issues[0].message


def test_text_config_nesting_carries_fields_and_quantization():
    cfg = {"model_type": "wrapper_vl", "architectures": ["WrapperForConditionalGeneration"], "text_config": {**BASE, "model_type": "qwen3_moe", "norm_topk_prob": True,
           "quantization_config": {"quant_method": "fp8", "activation_scheme": "dynamic", "weight_block_size": [128, 128]}}}
    ck = from_hf_config(cfg)
    assert (ck.kwargs["num_experts"], ck.kwargs["quant"].name, ck.model_type) == (16, "fp8_block", "qwen3_moe")
    quant = next(p for p in ck.provenance if p.field == "quant")
    assert "text_config.quantization_config" in quant.evidence


@pytest.mark.parametrize(("key", "value"), [("swiglu_limit", 7.0), ("moe_swiglu_limit", 7.0)])
def test_swiglu_limit_aliases(key, value):
    assert fields(**{key: value})["swiglu_limit"] == value


def test_swiglu_alpha_and_beta():
    k = fields(hidden_act="swigluoai", swiglu_alpha=1.702, swiglu_beta=1.0, swiglu_limit=7.0)
    assert (k["activation"].value, k["swiglu_alpha"], k["swiglu_beta"], k["swiglu_limit"]) == ("swigluoai", 1.702, 1.0, 7.0)


@pytest.mark.parametrize(("beta", "linear"), [("activation_situ_beta", "activation_situ_linear_beta"), ("situ_beta", "situ_linear_beta")])
def test_situ_parameters(beta, linear):
    k = fields(hidden_act="situ", **{beta: 4.0, linear: 25.0})
    assert (k["activation"].value, k["situ_beta"], k["situ_linear_beta"]) == ("situ", 4.0, 25.0)


@pytest.mark.parametrize("key", ["routed_expert_hidden_size", "moe_latent_size"])
def test_latent_moe_runs_the_experts_at_the_latent_width(key):
    ck = from_hf_config({**BASE, key: 64})
    assert ck.kwargs["hidden_size"] == 64
    assert "latent" in next(p.evidence for p in ck.provenance if p.field == "hidden_size")


def test_expert_dtype_picks_the_deepseek_v4_expert_method():
    base = {**BASE, "model_type": "deepseek_v4", "n_routed_experts": 16, "quantization_config": {"quant_method": "fp8", "activation_scheme": "dynamic", "weight_block_size": [128, 128]}}
    assert from_hf_config({**base, "expert_dtype": "fp4"}).kwargs["quant"].name == "mxfp4_mxfp8"
    fp8 = from_hf_config({**base, "expert_dtype": "fp8"}).kwargs
    assert (fp8["quant"].name, fp8["weight_block_size"]) == ("fp8_block", (128, 128))
    assert from_hf_config({**base}).kwargs["quant"].name == "mxfp4_mxfp8"  # vLLM assumes fp4 when absent
    with pytest.raises(ConfigError) as info:
        from_hf_config({**base, "expert_dtype": "int4"})
    assert info.value.issues[0].path.endswith("expert_dtype")


def test_approximate_and_substituted_experts_need_a_decomposed_backend():
    assert fields(approximate_experts=True)["require_decomposed"] is True
    assert fields(compression_config={"transform_config": {"expert_substitution": {"layers": [1]}}})["require_decomposed"] is True
    assert "require_decomposed" not in fields()


def test_unknown_model_type_gets_a_note_naming_the_generic_fields():
    ck = read_checkpoint({**BASE, "model_type": "brand_new_moe", "first_k_dense_replace": 1})
    assert any("unknown model_type 'brand_new_moe'" in n and "scoring_func" in n for n in ck.notes)
    assert any("generic field first_k_dense_replace" in n for n in ck.notes)
    assert [layer.spec.kind for layer in ck.layers] == ["dense", "moe", "moe", "moe"]


# ------------------------------------------------------------------ family rules vLLM hard-codes


def test_mixtral_renormalizes_whatever_the_config_says():
    assert routing(model_type="mixtral") == "renormalize_naive"


def test_nemotron_h_scores_with_sigmoid_and_a_bias_and_runs_non_gated_experts():
    k = fields(model_type="nemotron_h", hybrid_override_pattern="MEME", mlp_hidden_act="relu2", n_group=1, topk_group=1, norm_topk_prob=True)
    assert (k["routing_method"].value, k["activation"].value, k["router_logits_dtype"].value) == ("deepseek_v3", "relu2_no_mul", "float32")


def test_gemma4_routes_with_its_own_function_and_gelu_tanh():
    k = from_hf_config({"model_type": "gemma4", "text_config": {"model_type": "gemma4_text", "num_hidden_layers": 2, "hidden_size": 256, "num_experts": 8, "top_k_experts": 2, "moe_intermediate_size": 64, "hidden_activation": "gelu_pytorch_tanh"}}).kwargs
    assert (k["routing_method"].value, k["activation"].value, k["top_k"]) == ("custom", "gelu_tanh", 2)


def test_minimax_m3_experts_use_intermediate_size_and_swigluoai_uninterleave():
    k = from_hf_config({"model_type": "minimax_m3_vl", "text_config": {"num_hidden_layers": 4, "hidden_size": 256, "intermediate_size": 96, "dense_intermediate_size": 512, "num_local_experts": 8,
                        "num_experts_per_tok": 2, "hidden_act": "swigluoai", "moe_layer_freq": [0, 1, 1, 1]}}).kwargs
    assert (k["intermediate_size"], k["activation"].value, k["swiglu_beta"], k["routing_method"].value) == (96, "swigluoai_uninterleave", 1.0, "minimax2")


def test_transformers_defaults_fill_absent_deepseek_fields():
    k = from_hf_config({**BASE, "model_type": "deepseek_v3", "n_routed_experts": 16, "scoring_func": "sigmoid", "topk_method": "noaux_tc", "first_k_dense_replace": 0})
    assert (k.kwargs["num_expert_group"], k.kwargs["topk_group"], k.kwargs["routed_scaling_factor"]) == (8, 4, 2.5)
    assert "default" in next(p.evidence for p in k.provenance if p.field == "num_expert_group")


# ------------------------------------------------------------------ layer layouts


def kinds(cfg):
    return [(layer.spec.index, layer.spec.kind, layer.spec.role) for layer in read_checkpoint(cfg).layers]


def test_first_k_dense_replace_and_moe_layer_freq():
    got = kinds({**BASE, "model_type": "deepseek_v3", "n_routed_experts": 16, "num_hidden_layers": 7, "first_k_dense_replace": 2, "moe_layer_freq": 2, "num_nextn_predict_layers": 0})
    assert [k for _, k, _ in got] == ["dense", "dense", "moe", "dense", "moe", "dense", "moe"]


def test_moe_layer_freq_list():
    got = kinds({"model_type": "minimax_m3_vl", "text_config": {**BASE, "intermediate_size": 96, "moe_layer_freq": [0, 1, 0, 1], "num_mtp_modules": 0}})
    assert [k for _, k, _ in got] == ["dense", "moe", "dense", "moe"]


def test_a_short_moe_layer_freq_list_names_the_field():
    with pytest.raises(ConfigError) as info:
        read_checkpoint({"model_type": "minimax_m3_vl", "text_config": {**BASE, "intermediate_size": 96, "moe_layer_freq": [0, 1]}})
    assert info.value.issues[0].path == "$.text_config.moe_layer_freq"


def test_mlp_only_layers_and_decoder_sparse_step():
    got = kinds({**BASE, "model_type": "qwen3_moe", "num_experts": 16, "num_hidden_layers": 6, "mlp_only_layers": [3], "decoder_sparse_step": 2})
    # MoE where (i + 1) % 2 == 0 and i not in [3]
    assert [k for _, k, _ in got] == ["dense", "moe", "dense", "dense", "dense", "moe"]


def test_llama4_interleave():
    got = kinds({**BASE, "model_type": "llama4_text", "num_hidden_layers": 6, "interleave_moe_layer_step": 3})
    assert [k for _, k, _ in got] == ["dense", "dense", "moe", "dense", "dense", "moe"]


def test_deepseek_mtp_layers_follow_the_target_numbering():
    got = kinds({**BASE, "model_type": "deepseek_v3", "n_routed_experts": 16, "first_k_dense_replace": 1, "num_nextn_predict_layers": 2})
    assert got[-2:] == [(4, "moe", "draft"), (5, "moe", "draft")]
    ck = read_checkpoint({**BASE, "model_type": "deepseek_v3", "n_routed_experts": 16, "first_k_dense_replace": 1, "num_nextn_predict_layers": 1})
    assert ck.layers[-1].spec.experts == "model.layers.4.mlp.experts"


def test_qwen3_5_mtp_layers_are_named_as_the_checkpoint_names_them():
    ck = read_checkpoint({"model_type": "qwen3_5_moe", "text_config": {**BASE, "model_type": "qwen3_5_moe_text", "num_experts": 16, "mtp_num_hidden_layers": 1}})
    draft = ck.layers[-1]
    assert (draft.spec.role, draft.spec.index, draft.spec.experts) == ("draft", 4, "mtp.layers.0.mlp.experts")
    assert ck.layers[0].spec.experts == "model.language_model.layers.0.mlp.experts"


def test_nemotron_h_pattern_and_its_mtp_pattern():
    got = kinds({**BASE, "model_type": "nemotron_h", "n_routed_experts": 16, "hybrid_override_pattern": "M-*E", "num_nextn_predict_layers": 1, "mtp_hybrid_override_pattern": "*E"})
    assert got == [(0, "none", "target"), (1, "dense", "target"), (2, "none", "target"), (3, "moe", "target"), (4, "none", "draft"), (5, "moe", "draft")]


def test_hash_layers_from_num_hash_layers_and_from_mlp_layer_types():
    base = {**BASE, "model_type": "deepseek_v4", "n_routed_experts": 16, "num_nextn_predict_layers": 0}
    assert [k for _, k, _ in kinds({**base, "num_hash_layers": 2})] == ["hash_moe", "hash_moe", "moe", "moe"]
    assert [k for _, k, _ in kinds({**base, "mlp_layer_types": ["hash_moe", "moe", "moe", "moe"]})] == ["hash_moe", "moe", "moe", "moe"]
    ck = read_checkpoint({**base, "num_hash_layers": 1, "topk_method": "noaux_tc"})
    hashed, routed = ck.layers[0].kwargs, ck.layers[1].kwargs
    assert hashed["has_hash_routing"] is True and "has_correction_bias" not in hashed
    assert routed.get("has_hash_routing") is None and routed["has_correction_bias"] is True


def test_minimax_m2_mtp_modules_are_dropped_by_vllm():
    ck = read_checkpoint({**BASE, "model_type": "minimax_m2", "num_mtp_modules": 3})
    assert all(layer.spec.role == "target" for layer in ck.layers)
    assert any("drops their weights" in n for n in ck.notes)


def test_language_config_is_the_text_model_of_a_deepseek_vl2_checkpoint():
    # DeepSeek-VL2 / DeepSeek-OCR checkpoints hold the DeepSeek-V2 MoE under language_config
    # (vLLM transformers_utils/configs/deepseek_vl2.py DeepseekVLV2Config: text_config from it).
    language = {"model_type": "deepseek_v2", "architectures": ["DeepseekV2ForCausalLM"], "hidden_size": 1280, "moe_intermediate_size": 896,
                "intermediate_size": 6848, "n_routed_experts": 64, "n_shared_experts": 2, "num_experts_per_tok": 6,
                "first_k_dense_replace": 1, "num_hidden_layers": 12, "num_attention_heads": 10, "vocab_size": 129280,
                "n_group": 1, "topk_group": 1, "topk_method": "greedy"}  # DeepseekV2Config defaults the groups to None: vLLM refuses their absence
    cfg = {"model_type": "deepseek_vl_v2", "architectures": ["DeepseekOCRForCausalLM"], "language_config": language,
           "projector_config": {"n_embed": 1280}, "vision_config": {"width": 1024}}
    ck = from_hf_config(cfg)
    assert (ck.kwargs["num_experts"], ck.kwargs["top_k"], ck.kwargs["hidden_size"], ck.model_type) == (64, 6, 1280, "deepseek_v2")
    experts = next(p for p in ck.provenance if p.field == "num_experts")
    assert "language_config" in experts.evidence
    assert from_hf_config({**cfg, "text_config": {**language, "n_routed_experts": 32}}).kwargs["num_experts"] == 32
