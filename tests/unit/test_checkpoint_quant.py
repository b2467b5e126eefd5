"""Quantization formats and exclusion matching, per routed-experts module, as vLLM 0.33.0 reads them.

Expected schemes are the (weight, activation) keys the named vLLM MoE method hands to its
oracle (Q/ = vllm/model_executor/layers/quantization/).
"""

from __future__ import annotations

import pytest

from moe_oracle.inputs.checkpoint import read_checkpoint
from moe_oracle.inputs.checkpoint import matching as m
from moe_oracle.core.errors import ConfigError
from moe_oracle.inputs.hf import from_hf_config

BASE = {"num_hidden_layers": 2, "hidden_size": 256, "moe_intermediate_size": 128, "num_local_experts": 16, "num_experts_per_tok": 2}
EXPERTS = "model.layers.0.mlp.experts"


def quant(q, **cfg):
    """(scheme name, quant_method, extra) of the first MoE layer under quantization_config ``q``."""
    ck = read_checkpoint({**BASE, **cfg, "quantization_config": q})
    layer = ck.layers[0]
    return layer.quant.label, layer.kwargs.get("quant_method"), layer


def ct(groups, ignore=(), fmt=None):
    q = {"quant_method": "compressed-tensors", "config_groups": groups, "ignore": list(ignore)}
    if fmt:
        q["format"] = fmt
    return q


W_FP8_BLOCK = {"type": "float", "num_bits": 8, "strategy": "block", "block_structure": [128, 128], "symmetric": True, "dynamic": False}
A_FP8_GROUP = {"type": "float", "num_bits": 8, "strategy": "group", "group_size": 128, "dynamic": True, "symmetric": True}
W_INT4_G32 = {"type": "int", "num_bits": 4, "strategy": "group", "group_size": 32, "symmetric": True, "dynamic": False}
NVFP4 = {"type": "float", "num_bits": 4, "strategy": "tensor_group", "group_size": 16, "symmetric": True, "dynamic": False}


# ------------------------------------------------------------------ compressed-tensors


def test_ct_several_groups_the_experts_group_decides():
    groups = {
        "group_0": {"targets": ["re:.*self_attn.*"], "weights": W_FP8_BLOCK, "input_activations": A_FP8_GROUP},
        "group_1": {"targets": ["Linear"], "weights": W_INT4_G32, "input_activations": None},
    }
    name, method, layer = quant(ct(groups, fmt="pack-quantized"))
    assert (name, method, layer.kwargs["weight_group_size"]) == ("int4_g32_w16", "compressed-tensors", 32)
    assert "group_1" in layer.quant.evidence


def test_ct_name_target_wins_over_the_class_target():
    groups = {
        "group_0": {"targets": ["Linear"], "weights": W_INT4_G32, "input_activations": None, "format": "pack-quantized"},
        "group_1": {"targets": ["re:.*mlp\\.experts.*"], "weights": W_FP8_BLOCK, "input_activations": A_FP8_GROUP, "format": "float-quantized"},
    }
    name, _, layer = quant(ct(groups))
    assert (name, layer.kwargs["weight_block_size"]) == ("fp8_block", (128, 128))


def test_ct_projections_with_different_schemes_are_refused():
    groups = {
        "group_0": {"targets": ["re:.*experts.*gate_proj"], "weights": W_INT4_G32, "input_activations": None, "format": "pack-quantized"},
        "group_1": {"targets": ["re:.*experts.*(up|down)_proj"], "weights": W_FP8_BLOCK, "input_activations": A_FP8_GROUP, "format": "float-quantized"},
    }
    with pytest.raises(ConfigError) as info:
        quant(ct(groups))
    assert "same quantization scheme" in info.value.issues[0].message


def test_ct_nvfp4_pack_quantized_with_and_without_activations():
    assert quant(ct({"g": {"targets": ["Linear"], "weights": NVFP4, "input_activations": NVFP4, "format": "nvfp4-pack-quantized"}}))[0] == "nvfp4"
    assert quant(ct({"g": {"targets": ["Linear"], "weights": NVFP4, "input_activations": None, "format": "nvfp4-pack-quantized"}}))[0] == "nvfp4_w16"


def test_ct_mxfp4_pack_quantized_and_its_fp8_activation_variant():
    mx = {"type": "float", "num_bits": 4, "strategy": "group", "group_size": 32, "symmetric": True, "dynamic": False, "scale_dtype": "torch.uint8"}
    assert quant(ct({"g": {"targets": ["Linear"], "weights": mx, "input_activations": None, "format": "mxfp4-pack-quantized"}}))[0] == "mxfp4_w16"
    tok = {"type": "float", "num_bits": 8, "strategy": "token", "dynamic": True, "symmetric": True}
    _, _, layer = quant(ct({"g": {"targets": ["Linear"], "weights": mx, "input_activations": tok}}))
    assert (layer.quant.scheme.weight, layer.quant.scheme.activation) == ("mxfp4_static", "fp8_dynamic_token")


def test_ct_w8a8_int8():
    w = {"type": "int", "num_bits": 8, "strategy": "channel", "symmetric": True, "dynamic": False}
    a = {"type": "int", "num_bits": 8, "strategy": "token", "symmetric": True, "dynamic": True}
    assert quant(ct({"g": {"targets": ["Linear"], "weights": w, "input_activations": a}}, fmt="int-quantized"))[0] == "int8_channel_token"


def test_ct_w4a8_fp8():
    a = {"type": "float", "num_bits": 8, "strategy": "token", "symmetric": True, "dynamic": True}
    name, _, layer = quant(ct({"g": {"targets": ["Linear"], "weights": {**W_INT4_G32, "group_size": 128}, "input_activations": a}}, fmt="int-quantized"))
    assert (name, layer.kwargs["weight_group_size"]) == ("w4a8_fp8", 128)


def test_ct_fp8_tensor_weights_with_token_activations_fail_as_vllm_asserts():
    w = {"type": "float", "num_bits": 8, "strategy": "tensor", "symmetric": True, "dynamic": False}
    a = {"type": "float", "num_bits": 8, "strategy": "token", "symmetric": True, "dynamic": True}
    with pytest.raises(ConfigError) as info:
        quant(ct({"g": {"targets": ["Linear"], "weights": w, "input_activations": a}}, fmt="float-quantized"))
    assert "strategy" in info.value.issues[0].path


def test_ct_group_activation_ordering_is_refused():
    with pytest.raises(ConfigError) as info:
        quant(ct({"g": {"targets": ["Linear"], "weights": {**W_INT4_G32, "actorder": "group"}, "input_activations": None}}, fmt="pack-quantized"))
    assert info.value.issues[0].path.endswith("weights.actorder")


# ------------------------------------------------------------------ FP8 of any block size


@pytest.mark.parametrize("block", [[128, 128], [64, 64], [32, 32], [128, 64]])
def test_fp8_blocks_of_any_size_are_one_rule_whichever_format_carries_them(block):
    fp8 = quant({"quant_method": "fp8", "activation_scheme": "dynamic", "weight_block_size": block})[2]
    ctq = quant(ct({"g": {"targets": ["Linear"], "weights": {**W_FP8_BLOCK, "block_structure": block}, "input_activations": A_FP8_GROUP}}, fmt="float-quantized"))[2]
    for layer in (fp8, ctq):
        assert (layer.quant.label, layer.kwargs["weight_block_size"]) == ("fp8_block", tuple(block))


def test_modelopt_mixed_block_fp8_takes_its_group_size_as_the_block():
    q = {"quant_method": "modelopt", "quant_algo": "MIXED_PRECISION", "quantized_layers": {"model.layers.0.mlp.experts": {"quant_algo": "FP8_PB_WO", "group_size": 64},
                                                                                          "model.layers.1.mlp.experts": {"quant_algo": "FP8_PB_WO", "group_size": 64}}}
    layer = quant(q)[2]
    assert (layer.quant.label, layer.kwargs["weight_block_size"], layer.kwargs["quant_method"]) == ("fp8_block", (64, 64), "fp8")


def test_fp8_block_checkpoint_with_static_activations_is_refused_as_vllm_refuses_it():
    with pytest.raises(ConfigError) as info:
        quant({"quant_method": "fp8", "activation_scheme": "static", "weight_block_size": [128, 128]})
    assert info.value.issues[0].path == "$.quantization_config.activation_scheme"
    assert "dynamic activation scheme" in info.value.issues[0].message


def test_scale_fmt_ue8m0_is_a_deep_gemm_side_effect_not_another_key():
    ck = read_checkpoint({**BASE, "quantization_config": {"quant_method": "fp8", "activation_scheme": "dynamic", "weight_block_size": [128, 128], "scale_fmt": "ue8m0"}})
    assert ck.layers[0].quant.label == "fp8_block"
    assert any("VLLM_USE_DEEP_GEMM_E8M0" in n for n in ck.notes)


def test_fp8_store_dtype_mxfp4_builds_the_mxfp4_method():
    assert quant({"quant_method": "fp8", "activation_scheme": "dynamic", "store_dtype": "mxfp4"})[:2] == ("mxfp4_w16", "mxfp4")


# ------------------------------------------------------------------ ModelOpt


@pytest.mark.parametrize(("algo", "scheme"), [("FP8", "fp8_tensor_static"), ("FP8_PER_CHANNEL_PER_TOKEN", "fp8_tensor_static"), ("NVFP4", "nvfp4"), ("W4A16_NVFP4", "nvfp4_w16"), ("MXFP8", "mxfp8")])
def test_modelopt_algorithms(algo, scheme):
    assert quant({"quant_method": "modelopt", "quant_algo": algo})[:2] == (scheme, "modelopt")


def test_modelopt_nvfp4_without_input_activations_runs_as_w4a16():
    q = {"quant_method": "modelopt", "quant_algo": "NVFP4", "config_groups": {"g": {"targets": ["Linear"], "weights": NVFP4, "input_activations": None}}}
    assert quant(q)[0] == "nvfp4_w16"


def test_modelopt_mixed_precision_quantized_layers_per_layer():
    q = {"quant_method": "modelopt", "quant_algo": "MIXED_PRECISION", "quantized_layers": {"model.layers.0.mlp.experts": {"quant_algo": "NVFP4", "group_size": 16}}}
    ck = read_checkpoint({**BASE, "quantization_config": q})
    assert [layer.quant.label for layer in ck.layers] == ["nvfp4", "bf16"]
    assert ck.layers[1].quant.excluded_by == "(not in quantized_layers)"


def test_legacy_hf_quant_config_layout_refuses_algorithms_vllm_does_not_normalize():
    legacy = {"producer": {"name": "modelopt"}, "quantization": {"quant_algo": "W4A16_NVFP4", "exclude_modules": []}}
    with pytest.raises(ConfigError) as info:
        read_checkpoint(BASE, override=legacy)
    assert "Unknown ModelOpt quant algo" in info.value.issues[0].message


@pytest.mark.parametrize("algo, required", [("NVFP4", ("group_size", "kv_cache_quant_algo", "exclude_modules")), ("MXFP8", ("kv_cache_quant_algo", "exclude_modules"))])
def test_legacy_modelopt_document_without_a_required_key_is_refused_as_vllm_refuses_it(algo, required):
    """vLLM 0.29.0-0.34.0 Q/modelopt.py ModelOptNvFp4Config / ModelOptMxFp8Config._from_config:
    each key must be present in the legacy layout (null passes); config.json's layout is not checked.
    (A producer-tagged legacy MXFP8 document is refused earlier, as an unknown legacy algorithm: the
    MXFP8 rule is reached through ``quant_method: modelopt_mxfp8``.)"""
    head = {"producer": {"name": "modelopt"}} if algo == "NVFP4" else {"quant_method": "modelopt_mxfp8"}
    full = {"quant_algo": algo, "group_size": 16 if algo == "NVFP4" else 32, "kv_cache_quant_algo": None, "exclude_modules": []}
    assert read_checkpoint(BASE, override={**head, "quantization": full}).layers[0].quant.label == algo.lower()
    for key in required:
        doc = {**head, "quantization": {k: v for k, v in full.items() if k != key}}
        with pytest.raises(ConfigError) as info:
            read_checkpoint(BASE, override=doc)
        assert f"requires the following fields in hf_quant_config.json: ['{key}']" in info.value.issues[0].message
        assert info.value.issues[0].path.endswith(".quantization")
    flat = {"quant_method": "modelopt", "quant_algo": algo}
    assert read_checkpoint({**BASE, "quantization_config": flat}).layers[0].quant.label == algo.lower()


def test_hf_quant_config_beside_config_json_is_read_only_when_config_json_has_none():
    beside = {"producer": {"name": "modelopt"}, "quantization": {"quant_algo": "NVFP4", "group_size": 16, "kv_cache_quant_algo": None, "exclude_modules": []}}
    assert read_checkpoint(BASE, beside=beside).layers[0].quant.label == "nvfp4"
    fp8 = read_checkpoint({**BASE, "quantization_config": {"quant_method": "fp8", "activation_scheme": "dynamic", "weight_block_size": [128, 128]}}, beside=beside)
    assert fp8.layers[0].quant.label == "fp8_block"
    assert any("is not read" in n for n in fp8.notes)


# ------------------------------------------------------------------ Quark


def quark(weight, inputs, exclude=()):
    return {"quant_method": "quark", "export": {"kv_cache_group": [], "pack_method": "reorder"}, "exclude": list(exclude),
            "global_quant_config": {"weight": weight, "input_tensors": inputs, "output_tensors": None, "bias": None}, "layer_quant_config": {}, "layer_type_quant_config": {}}


MX_W = {"dtype": "fp4", "qscheme": "per_group", "group_size": 32, "scale_format": "e8m0", "is_dynamic": False}


def test_quark_mxfp4_with_bf16_and_mxfp4_activations():
    assert quant(quark(MX_W, None))[:2] == ("mxfp4_w16", "quark")
    assert quant(quark(MX_W, {"dtype": "fp4", "qscheme": "per_group", "group_size": 32, "is_dynamic": True}))[0] == "mxfp4_mxfp4"


def test_quark_fp8_channel_weights_dynamic_token_inputs():
    w = {"dtype": "fp8_e4m3", "qscheme": "per_channel", "is_dynamic": False, "symmetric": True}
    a = {"dtype": "fp8_e4m3", "qscheme": "per_channel", "is_dynamic": True, "symmetric": True}
    assert quant(quark(w, a))[0] == "fp8_channel_token"


@pytest.mark.parametrize(("symmetric", "act"), [(True, "int8_dynamic_token"), (False, "int8_dynamic_token_asym")])
def test_quark_int8_w8a8_symmetric_and_asymmetric_activations(symmetric, act):
    w = {"dtype": "int8", "qscheme": "per_channel", "is_dynamic": False, "symmetric": True}
    a = {"dtype": "int8", "qscheme": "per_channel", "is_dynamic": True, "symmetric": symmetric}
    layer = quant(quark(w, a))[2]
    assert (layer.quant.scheme.weight, layer.quant.scheme.activation) == ("int8_static_channel", act)


def test_quark_e8m0_block_fp8_is_refused_for_moe():
    w = {"dtype": "fp8_e4m3", "qscheme": "per_block", "block_size": [128, 128], "symmetric": True, "is_dynamic": False, "scale_type": "float8_e8m0fnu"}
    a = {"dtype": "fp8_e4m3", "qscheme": "per_group", "group_size": 128, "is_dynamic": True, "symmetric": True}
    with pytest.raises(ConfigError) as info:
        quant(quark(w, a))
    assert "kFp8Static128BlockE8M0Sym" in info.value.issues[0].message


def test_quark_exclude_a_child_ignores_the_whole_moe_layer():
    assert quant(quark(MX_W, None, exclude=["model.layers.0.mlp.experts.3.down_proj"]))[0] == "bf16"


# ------------------------------------------------------------------ GPTQ / AWQ / moe_wna16 / fbgemm / removed


def gptq(**kw):
    return {"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": False, "sym": True, **kw}


def test_gptq_group_size_is_recorded_for_marlin_alignment():
    name, method, layer = quant(gptq(group_size=64))
    assert (name, method, layer.kwargs["weight_group_size"]) == ("int4_w16", "gptq", 64)
    assert quant(gptq(group_size=32))[0] == "int4_g32_w16"


def test_gptq_act_order_with_groups_is_refused_and_per_channel_act_order_is_a_no_op():
    with pytest.raises(ConfigError) as info:
        quant(gptq(desc_act=True))
    assert info.value.issues[0].path == "$.quantization_config.desc_act"
    assert quant(gptq(desc_act=True, group_size=-1))[2].kwargs["weight_group_size"] == -1


def test_gptq_dynamic_negative_rule_skips_matching_experts():
    ck = read_checkpoint({**BASE, "quantization_config": gptq(dynamic={r"-:model\.layers\.1\..*": {}})})
    assert [layer.quant.label for layer in ck.layers] == ["int4_w16", "bf16"]


def test_awq_zero_points_group_size_and_substring_exclusion():
    name, method, layer = quant({"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True})
    assert (name, method, layer.kwargs["weight_group_size"]) == ("int4_asym_w16", "awq", 128)
    assert quant({"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True, "modules_to_not_convert": ["mlp.experts"]})[0] == "bf16"


def test_moe_wna16_requested_over_a_gptq_checkpoint():
    ck = read_checkpoint({**BASE, "quantization_config": gptq()}, user_quantization="moe_wna16")
    assert (ck.quant.method, ck.layers[0].kwargs["quant_method"], ck.layers[0].quant.label) == ("moe_wna16", "moe_wna16", "int4_w16")


def test_fbgemm_fp8_leaves_the_experts_unquantized():
    ck = read_checkpoint({**BASE, "quantization_config": {"quant_method": "fbgemm_fp8", "modules_to_not_convert": [], "activation_scale_ub": 1200.0}})
    assert ck.layers[0].quant.label == "bf16"
    assert any("deprecated" in n for n in ck.notes)


def test_ptpc_fp8_names_why_it_cannot_be_read():
    with pytest.raises(ConfigError) as info:
        quant({"quant_method": "ptpc_fp8"})
    issue = info.value.issues[0]
    assert "no ptpc_fp8" in issue.message and "fp8_per_channel" in issue.message


def test_an_unread_format_is_named_with_the_formats_we_read():
    with pytest.raises(ConfigError) as info:
        quant({"quant_method": "bitsandbytes"})
    issue = info.value.issues[0]
    assert issue.value == "bitsandbytes" and "compressed-tensors" in issue.allowed and "quark" in issue.allowed


def test_mxfp4_never_skips_routed_experts():
    name, _, layer = quant({"quant_method": "mxfp4", "modules_to_not_convert": ["model.layers.0.mlp.experts"]})
    assert name == "mxfp4_w16" and layer.quant.notes


def test_mxfp4_method_class_follows_the_config_class_the_model_type_picks():
    # vLLM 0.29.0-0.34.0 Q/mxfp4.py: GptOssMxfp4Config (claimed for model_type gpt_oss) builds
    # GptOssMxfp4MoEMethod; Mxfp4Config, for any other model type, Mxfp4MoEMethod.
    _, _, gpt_oss = quant({"quant_method": "mxfp4"}, model_type="gpt_oss")
    _, _, other = quant({"quant_method": "mxfp4"}, model_type="qwen3_moe")
    assert "gpt_oss_mxfp4: GptOssMxfp4MoEMethod" in gpt_oss.quant.evidence
    assert "mxfp4: Mxfp4MoEMethod" in other.quant.evidence and "GptOss" not in other.quant.evidence


# ------------------------------------------------------------------ exclusion matching


def test_exact_names_experts_rule():
    assert m.vllm_is_layer_skipped(EXPERTS, ["model.layers.0.mlp.experts.5.gate_proj"]) == "model.layers.0.mlp.experts.5.gate_proj"
    assert m.vllm_is_layer_skipped(EXPERTS, ["model.layers.0.mlp.shared_experts"]) is None
    assert m.vllm_is_layer_skipped(EXPERTS, ["model.layers.*.mlp.experts"]) is None  # exact mode expands no glob
    assert m.vllm_is_layer_skipped("model.layers.3.mlp.experts", ["model.layers.30.mlp.experts.0.w1"]) is None


def test_modelopt_globs_and_the_path_star_rewrite():
    assert m.modelopt_excluded("mtp.layers.0.mlp.experts", ["mtp*"]) == "mtp*"  # matched as 'mtp' (substring pass)
    assert m.modelopt_excluded("layers.3.ffn.experts", ["*.ffn.shared_experts.*", "*.attn.*"]) is None
    assert m.modelopt_excluded("layers.3.ffn.shared_experts.w2", ["*.ffn.shared_experts.*"]) == "*.ffn.shared_experts.*"
    assert m.modelopt_excluded("language_model.model.layers.2.mlp.experts", ["model.layers.2.mlp"]) == "model.layers.2.mlp"


def test_re_patterns_are_anchored_at_the_start_only():
    assert m.ct_should_ignore("model.layers.0.mlp.experts.0.gate_proj", ["re:.*mlp\\.(gate|up|gate_up|down)_proj.*"]) is None
    assert m.ct_should_ignore("model.layers.0.mlp.experts.0.gate_proj", ["re:mlp.*"]) is None
    assert m.ct_should_ignore("model.layers.0.mlp.experts.0.gate_proj", ["re:.*experts.*"]) == "re:.*experts.*"


def test_ct_targets_name_before_class():
    assert m.ct_find_target("model.layers.0.mlp.experts.0.w1", "RoutedExperts", ["Linear", "RoutedExperts"]) == "RoutedExperts"
    assert m.ct_find_target("model.layers.0.mlp.experts.0.w1", "RoutedExperts", ["re:.*(gate|up|down)_proj$"]) is None


def test_modelopt_quantized_layers_prefix_lookup():
    q = {"quant_method": "modelopt", "quant_algo": "MIXED_PRECISION",
         "quantized_layers": {"model.layers.0.mlp.experts.0.gate_proj": {"quant_algo": "W4A16_NVFP4"}, "model.layers.1.mlp.shared_experts.down_proj": {"quant_algo": "FP8"}}}
    ck = read_checkpoint({**BASE, "quantization_config": q})
    # layer 0: a child key of the experts prefix; layer 1: vLLM's parent-prefix fallback finds the shared expert's entry
    assert [layer.quant.label for layer in ck.layers] == ["nvfp4_w16", "fp8_tensor_static"]


def test_an_exclusion_naming_shared_experts_keeps_the_routed_experts_quantized():
    base = {**BASE, "model_type": "deepseek_v3", "n_routed_experts": 16, "n_shared_experts": 1, "first_k_dense_replace": 0, "num_nextn_predict_layers": 0}
    for q in ({"quant_method": "fp8", "activation_scheme": "dynamic", "weight_block_size": [128, 128], "modules_to_not_convert": ["model.layers.0.mlp.shared_experts"]},
              {"quant_method": "modelopt", "quant_algo": "NVFP4", "ignore": ["*shared_experts*"]},
              ct({"g": {"targets": ["Linear"], "weights": W_INT4_G32, "input_activations": None}}, ignore=["re:.*shared_experts.*"], fmt="pack-quantized")):
        ck = read_checkpoint({**base, "quantization_config": q})
        assert ck.layers[0].quant.scheme.weight is not None, q
    ck = read_checkpoint({**base, "quantization_config": {"quant_method": "modelopt", "quant_algo": "NVFP4", "ignore": ["*shared_experts*"]}})
    assert ck.layers[0].shared_excluded_by == "*shared_experts*"


def test_the_one_layer_door_still_reads_a_config_without_num_hidden_layers():
    k = from_hf_config({"num_local_experts": 8, "num_experts_per_tok": 2, "hidden_size": 64, "intermediate_size": 128}).kwargs
    assert k["num_experts"] == 8
    with pytest.raises(ConfigError):
        read_checkpoint({"num_local_experts": 8, "num_experts_per_tok": 2, "hidden_size": 64, "intermediate_size": 128})
