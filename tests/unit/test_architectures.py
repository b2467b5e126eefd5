"""Every MoE architecture vLLM registers is a known family or listed as unmodelled with the reason,
and the one-layer answers (select, explain) say when the model has other kinds of MoE layer."""

from __future__ import annotations

import json

from moe_oracle.cli import main
from moe_oracle.inputs.checkpoint import read_checkpoint
from moe_oracle.inputs.checkpoint.architectures import VLLM_MOE_ARCHITECTURES, unmodelled_architectures
from moe_oracle.inputs.checkpoint.families import FAMILIES

# baidu/ERNIE-4.5-21B-A3B-PT config fields (moe_num_experts, moe_k: generic aliases)
ERNIE = {"architectures": ["Ernie4_5_MoeForCausalLM"], "model_type": "ernie4_5_moe", "hidden_size": 2560, "intermediate_size": 12288,
         "moe_intermediate_size": 1536, "moe_num_experts": 64, "moe_k": 6, "num_hidden_layers": 28, "moe_layer_start_index": 1}


def test_olmoe_and_qwen2_moe_are_known_families():
    # olmoe.py OlmoeMoE: renormalize=False whatever norm_topk_prob says; qwen2_moe.py: gated shared expert
    olmoe = read_checkpoint({"architectures": ["OlmoeForCausalLM"], "model_type": "olmoe", "hidden_size": 2048, "intermediate_size": 1024,
                             "num_experts": 64, "num_experts_per_tok": 8, "num_hidden_layers": 16, "norm_topk_prob": True}, release="0.33.0")
    assert olmoe.family.name == "olmoe" and olmoe.representative().kwargs["routing_method"].value == "default"
    qwen2 = read_checkpoint({"architectures": ["Qwen2MoeForCausalLM"], "model_type": "qwen2_moe", "hidden_size": 2048, "moe_intermediate_size": 1408,
                             "num_experts": 60, "num_experts_per_tok": 4, "num_hidden_layers": 24, "shared_expert_intermediate_size": 5632}, release="0.33.0")
    layer = qwen2.representative()
    assert qwen2.family.name == "qwen2_moe" and layer.spec.shared == "model.layers.0.mlp.shared_expert" and layer.kwargs["routing_method"].value == "default"


def test_a_reason_for_staying_unmapped_goes_with_no_family_only():
    from moe_oracle.inputs.checkpoint.architectures import Arch
    import pytest

    with pytest.raises(ValueError, match="reason for staying unmapped"):
        Arch("afmoe", ">=0.29.0", "afmoe", unmapped="remote code")
    assert all(a.family is None for a in VLLM_MOE_ARCHITECTURES.values() if a.unmapped)


def test_every_mapped_family_exists_and_every_family_has_an_architecture():
    names = {f.name for f in FAMILIES}
    mapped = {a.family for a in VLLM_MOE_ARCHITECTURES.values() if a.family is not None}
    assert mapped <= names and names <= mapped, (mapped - names, names - mapped)


# deepseek-moe-16b-shaped fields under generic names; DeepseekForCausalLM stays unmapped (remote-code config class)
DEEPSEEK_V1 = {"architectures": ["DeepseekForCausalLM"], "model_type": "deepseek", "hidden_size": 2048, "intermediate_size": 10944,
               "moe_intermediate_size": 1408, "n_routed_experts": 64, "num_experts_per_tok": 6, "num_hidden_layers": 28, "first_k_dense_replace": 1}

# arcee-ai Trinity-shaped AFMoE fields (vLLM afmoe.py reads score_func, route_norm, route_scale, num_dense_layers)
AFMOE = {"architectures": ["AfmoeForCausalLM"], "model_type": "afmoe", "hidden_size": 2048, "intermediate_size": 6144, "moe_intermediate_size": 1024,
         "num_experts": 128, "num_experts_per_tok": 8, "num_shared_experts": 1, "num_hidden_layers": 32, "num_dense_layers": 2, "n_group": 1, "topk_group": 1,
         "score_func": "sigmoid", "route_norm": True, "route_scale": 2.826}


def test_afmoe_reads_its_own_keys_and_renormalizes_only_under_sigmoid():
    ck = read_checkpoint(AFMOE, release="0.33.0")
    assert ck.family.name == "afmoe" and [layer.spec.kind for layer in ck.layers[:3]] == ["dense", "dense", "moe"]
    kw = ck.representative().kwargs
    assert kw["routing_method"].value == "deepseek_v3" and kw["routed_scaling_factor"] == 2.826 and kw["router_logits_dtype"].value == "float32"
    # afmoe.py: renormalize=route_norm if score_func == "sigmoid" else False
    soft = read_checkpoint({**AFMOE, "score_func": "softmax"}, release="0.33.0").representative()
    assert soft.kwargs["routing_method"].value == "unspecified"  # softmax with the always-built expert_bias
    assert any("renormalizes only with scoring sigmoid" in p.evidence for p in soft.provenance if p.field == "routing_method")


def test_ernie_is_read_as_its_model_class_builds_it():
    # vLLM 0.33.0-0.34.0 ernie45_moe.py: MoE from moe_layer_start_index; softmax with an
    # e_score_correction_bias always built (get_routing_method_type: Unspecified), fp32 router logits
    ck = read_checkpoint(ERNIE, release="0.33.0")
    assert ck.family.name == "ernie45_moe" and "Ernie4_5_MoeForCausalLM" not in unmodelled_architectures("0.33.0")
    assert [layer.spec.kind for layer in ck.layers[:2]] == ["dense", "moe"] and len(ck.moe_layers()) == 27
    kw = ck.representative().kwargs
    assert kw["routing_method"].value == "unspecified" and kw["has_correction_bias"] and kw["router_logits_dtype"].value == "float32"


def test_an_unmodelled_registered_architecture_is_said_in_plan_and_select(capsys, tmp_path):
    ck = read_checkpoint(DEEPSEEK_V1, release="0.33.0")
    assert ck.family.name == "generic" and "DeepseekForCausalLM" in unmodelled_architectures("0.33.0")
    assert any("registers DeepseekForCausalLM" in n and "does not model" in n and "trust_remote_code" in n for n in ck.notes)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(DEEPSEEK_V1))
    assert main(["select", "--model", str(path), "--gpu", "H200", "--tp", "1"]) == 0
    assert "moe-oracle does not model" in capsys.readouterr().err


def test_an_architecture_a_release_does_not_register_is_said():
    cfg = {**ERNIE, "architectures": ["K2HorizonForCausalLM"], "model_type": "k2_horizon"}
    assert not VLLM_MOE_ARCHITECTURES["K2HorizonForCausalLM"].registered("0.29.0") and VLLM_MOE_ARCHITECTURES["K2HorizonForCausalLM"].registered("0.33.0")
    assert any("does not register K2HorizonForCausalLM" in n for n in read_checkpoint(cfg, release="0.29.0").notes)


def test_select_says_when_the_layer_it_answers_is_not_the_only_kind(capsys):
    assert main(["select", "--model", "deepseek-v4-flash", "--gpu", "B200", "--tp", "8"]) == 0
    err = capsys.readouterr().err
    assert "3 kinds of MoE layer" in err and "moe-oracle plan" in err
    assert main(["select", "--model", "qwen3-30b-a3b", "--gpu", "H200", "--tp", "1"]) == 0
    assert "kinds of MoE layer" not in capsys.readouterr().err


def test_explain_says_it_too(capsys):
    assert main(["explain", "--model", "deepseek-r1", "--gpu", "H200", "--tp", "8"]) == 0
    assert "2 kinds of MoE layer (3..60 (58) target; mtp.0 draft)" in capsys.readouterr().out  # the MTP layer is built apart
    assert main(["explain", "--model", "nvidia-deepseek-v4-flash-nvfp4", "--gpu", "B200", "--tp", "8"]) == 0
    assert "kinds of MoE layer" in capsys.readouterr().out


def _registry(name: str) -> dict:
    from pathlib import Path

    return json.loads((Path(__file__).resolve().parents[2] / "examples" / "models" / "registry" / f"{name}-synthetic.json").read_text())


def test_bailing_hybrid_is_read_by_its_architecture():
    # model_type bailing_hybrid is both BailingMoeV2_5ForCausalLM (bailing_moe_linear.py: softmax unless
    # score_function, bias only with moe_router_enable_expert_bias) and BailingMoeV3ForCausalLM (sigmoid + bias always)
    v25 = _registry("bailingmoev2_5forcausallm")
    v3 = read_checkpoint({**v25, "architectures": ["BailingMoeV3ForCausalLM"]}, release="0.34.0")
    assert v3.family.name == "bailing_moe_v3" and v3.representative().kwargs["routing_method"].value == "deepseek_v3"
    plain = {k: v for k, v in v25.items() if k not in ("score_function", "moe_router_enable_expert_bias", "router_dtype")}
    ck = read_checkpoint(plain, release="0.34.0")
    kw = ck.representative().kwargs
    assert ck.family.name == "bailing_moe_v25" and kw["routing_method"].value == "renormalize_naive" and "has_correction_bias" not in kw
    assert kw["router_logits_dtype"].value == "float32"
    assert read_checkpoint({**v25, "router_dtype": "bf16"}, release="0.34.0").representative().kwargs["router_logits_dtype"].value == "bfloat16"


def test_hy_v3_sizes_experts_by_expert_hidden_dim_and_axk1_defaults_to_noaux_tc():
    hy = _registry("hyv3forcausallm")
    hy.pop("moe_intermediate_size")
    ck = read_checkpoint({**hy, "expert_hidden_dim": 1024}, release="0.34.0")
    assert ck.family.name == "hy_v3" and ck.representative().kwargs["intermediate_size"] == 1024 and ck.representative().spec.shared.endswith("mlp.shared_mlp")
    axk1 = _registry("axk1forcausallm")
    axk1.pop("topk_method")  # AXK1.py: getattr(config, "topk_method", "noaux_tc") == "noaux_tc" builds the bias
    kw = read_checkpoint({**axk1, "moe_layer_freq": 2}, release="0.34.0")
    assert kw.representative().kwargs["has_correction_bias"] and [layer.spec.kind for layer in kw.layers[:4]] == ["dense", "dense", "moe", "dense"]
