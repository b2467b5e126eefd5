"""Model families vLLM hard-codes and a new user met read wrongly (issue 20).

Configs are the published Hugging Face config.json values (GLM-4.5: zai-org/GLM-4.5; Phi-3.5-MoE:
microsoft/Phi-3.5-MoE-instruct); the expected values come from the vLLM 0.33.0 model classes named
per test.
"""

from __future__ import annotations

import pytest

from moe_oracle.inputs.checkpoint import read_checkpoint

GLM45 = {
    "architectures": ["Glm4MoeForCausalLM"], "model_type": "glm4_moe", "hidden_size": 5120, "intermediate_size": 12288,
    "moe_intermediate_size": 1536, "n_routed_experts": 160, "n_shared_experts": 1, "num_experts_per_tok": 8, "n_group": 1,
    "topk_group": 1, "first_k_dense_replace": 3, "norm_topk_prob": True, "routed_scaling_factor": 2.5, "num_hidden_layers": 92,
    "num_nextn_predict_layers": 1, "hidden_act": "silu", "torch_dtype": "bfloat16",
}

PHI35 = {
    "architectures": ["PhiMoEForCausalLM"], "model_type": "phimoe", "hidden_size": 4096, "intermediate_size": 6400,
    "num_hidden_layers": 32, "num_local_experts": 16, "num_experts_per_tok": 2, "hidden_act": "silu", "torch_dtype": "bfloat16",
    "router_jitter_noise": 0.01, "input_jitter_noise": 0.01,
}


def test_glm45_routes_like_deepseek_v3():
    # glm4_moe.py Glm4MoE: scoring_func="sigmoid", e_score_correction_bias, use_grouped_topk=True,
    # num_expert_group=n_group; get_routing_method_type -> DeepSeekV3 (was: softmax, renormalize_naive)
    ck = read_checkpoint(GLM45, release="0.33.0")
    layer = ck.representative()
    k = layer.kwargs
    assert ck.family.name == "glm4_moe"
    assert (k["routing_method"].value, k["has_correction_bias"], k["num_expert_group"], k["topk_group"]) == ("deepseek_v3", True, 1, 1)
    assert k["router_logits_dtype"].value == "float32" and k["routed_scaling_factor"] == 2.5


def test_glm45_layout_first_k_dense_then_moe_and_its_mtp_layer():
    ck = read_checkpoint({**GLM45, "moe_layer_freq": 2}, release="0.33.0")
    kinds = [l.spec.kind for l in ck.layers if l.spec.role == "target"]
    # layer_idx >= first_k_dense_replace; moe_layer_freq is not read by Glm4MoeDecoderLayer
    assert kinds[:3] == ["dense"] * 3 and kinds[3:] == ["moe"] * 89
    drafts = [l for l in ck.layers if l.spec.role == "draft"]
    assert [(d.spec.index, d.spec.kind, d.spec.experts) for d in drafts] == [(92, "moe", "model.layers.92.mlp.experts")]
    assert ck.layers[3].spec.shared == "model.layers.3.mlp.shared_experts"


def test_glm45_ignores_topk_method_and_use_grouped_topk():
    k = read_checkpoint({**GLM45, "topk_method": "greedy", "use_grouped_topk": False}, release="0.33.0").representative().kwargs
    assert k["routing_method"].value == "deepseek_v3" and k["num_expert_group"] == 1


def test_phi35_moe_routes_with_its_own_function():
    # phimoe.py PhiMoE: custom_routing_function=phimoe_routing_function, renormalize=False ->
    # CustomRoutingRouter.routing_method_type = Custom (was: default softmax top-k)
    ck = read_checkpoint(PHI35, release="0.33.0")
    layer = ck.representative()
    assert ck.family.name == "phimoe"
    assert layer.kwargs["routing_method"].value == "custom"
    assert layer.spec.experts == "model.layers.0.block_sparse_moe.experts"
    assert layer.kwargs["intermediate_size"] == 6400
    assert all(l.spec.kind == "moe" for l in ck.layers) and len(ck.layers) == 32


def _nvidia_v4():
    import json
    from pathlib import Path

    return json.loads((Path(__file__).parents[2] / "examples/models/nvidia-deepseek-v4-flash-nvfp4.json").read_text())


def test_nvidia_deepseek_v4_nvfp4_keeps_the_ignored_mtp_experts_mxfp4():
    # vllm/models/deepseek_v41/quant_config.py (the CUDA/ROCm class from 0.30.0): from_config keeps
    # `ignore`; 0.32.0+ _is_nvfp4_expert_layer matches mtp.0.ffn.experts against 'mtp.*'
    ck = read_checkpoint(_nvidia_v4(), release="0.33.0")
    by_role = {(l.spec.role, l.quant.scheme.name) for l in ck.moe_layers()}
    assert by_role == {("target", "nvfp4"), ("draft", "mxfp4_mxfp8")}
    draft = [l for l in ck.moe_layers() if l.spec.role == "draft"][0]
    assert "'mtp.*'" in draft.quant.evidence and draft.kwargs["quant_method"] == "mxfp4"


def test_before_0_32_the_ignore_list_is_not_read_and_mtp_is_nvfp4():
    ck = read_checkpoint(_nvidia_v4(), release="0.31.0")
    assert {l.quant.scheme.name for l in ck.moe_layers()} == {"nvfp4"}
    assert any("'ignore' list is not read" in n for n in ck.notes)


V41_FLASH = {
    "architectures": ["DeepseekV41ForCausalLM"], "model_type": "deepseek_v41",
    "text_config": {"hidden_size": 4096, "moe_intermediate_size": 2048, "n_routed_experts": 384, "num_experts_per_tok": 6, "num_hidden_layers": 43,
                    "num_hash_layers": 3, "n_shared_experts": 1, "scoring_func": "sqrtsoftplus", "norm_topk_prob": True, "routed_scaling_factor": 1.5,
                    "swiglu_limit": 10.0, "num_nextn_predict_layers": 1, "dspark_n_routed_experts": 128, "dspark_num_experts_per_tok": 3,
                    "torch_dtype": "bfloat16"},
}


def test_deepseek_v41_has_no_hash_layers_and_its_dspark_draft_uses_its_own_experts():
    # vllm/models/deepseek_v41/nvidia/model.py DeepseekV4MoE: num_hash_layers=0; layers with
    # index >= num_hidden_layers take dspark_n_routed_experts / dspark_num_experts_per_tok
    ck = read_checkpoint(V41_FLASH, release="0.33.0")
    target = [l for l in ck.layers if l.spec.role == "target"]
    draft = [l for l in ck.layers if l.spec.role == "draft"]
    assert ck.family.name == "deepseek_v41"
    assert {l.spec.kind for l in target} == {"moe"} and len(target) == 43
    assert all(not l.kwargs.get("has_hash_routing") for l in target)
    assert (target[0].kwargs["num_experts"], target[0].kwargs["top_k"]) == (384, 6)
    assert [(d.spec.index, d.spec.experts, d.kwargs["num_experts"], d.kwargs["top_k"]) for d in draft] == [(43, "mtp.0.ffn.experts", 128, 3)]
    assert any("num_hash_layers is not read" in n for n in ck.notes)


def test_deepseek_v41_builds_three_dspark_layers_without_a_count():
    # nvidia/dspark.py: n_mtp_layers or num_nextn_predict_layers or 3
    cfg = {**V41_FLASH, "text_config": {k: v for k, v in V41_FLASH["text_config"].items() if k != "num_nextn_predict_layers"}}
    assert [l.spec.name for l in read_checkpoint(cfg, release="0.33.0").layers if l.spec.role == "draft"] == ["mtp.0", "mtp.1", "mtp.2"]


def _minimax_m2():
    import json
    from pathlib import Path

    return json.loads((Path(__file__).parents[2] / "examples/models/minimax-m2.json").read_text())


def test_quant_method_mxfp8_loads_as_modelopt_mxfp8_with_ignored_layers_as_exclusions():
    # Q/__init__.py: "mxfp8" -> ModelOptMxFp8Config; its from_config rewrites a MiniMax-style
    # document into ModelOpt MXFP8 with ignored_layers as exclude_modules (was: refused)
    cfg = {k: v for k, v in _minimax_m2().items() if k != "quantization_config"}
    cfg["quantization_config"] = {"quant_method": "mxfp8", "ignored_layers": ["lm_head", "model.layers.1.block_sparse_moe.experts"]}
    ck = read_checkpoint(cfg, release="0.33.0")
    assert ck.quant.method == "modelopt_mxfp8"
    assert ck.layers[0].quant.scheme.name == "mxfp8" and ck.layers[0].kwargs["quant_method"] == "modelopt"
    assert ck.layers[1].quant.scheme.name == "unquantized" and ck.layers[1].quant.excluded_by == "model.layers.1.block_sparse_moe.experts"


def test_glm45_refuses_an_activation_other_than_silu():
    # glm4_moe.py Glm4MoE.__init__: ValueError("Unsupported activation: ... Only silu is supported for now.")
    import pytest

    from moe_oracle.core.errors import ConfigError

    with pytest.raises(ConfigError) as info:
        read_checkpoint({**GLM45, "hidden_act": "gelu"}, release="0.33.0")
    assert info.value.issues[0].path == "$.hidden_act" and info.value.issues[0].allowed == ["silu"]


def test_the_v41_plan_names_the_dspark_speculative_method(tmp_path, capsys):
    # vllm/models/deepseek_v41/nvidia/dspark.py: the V4.1 draft is the DSpark model (method dspark)
    import json

    from moe_oracle.cli import main

    path = tmp_path / "config.json"
    path.write_text(json.dumps(V41_FLASH))
    assert main(["plan", "--model", str(path), "--gpu", "B200", "--tp", "8"]) == 0
    assert "--speculative-config method=dspark" in capsys.readouterr().out


def _glm5():
    import json
    from pathlib import Path

    return json.loads((Path(__file__).parents[2] / "examples/models/glm-5.json").read_text())


def test_glm5_mtp_draft_router_logits_take_the_model_dtype():
    # deepseek_v2.py _get_moe_router_dtype: float32 for model_type glm_moe_dsa; the MTP draft's
    # config is renamed deepseek_mtp (vllm/config/speculative.py hf_config_override), so its gate
    # keeps GateLinear's default out_dtype (None: the model dtype) unless moe_router_dtype says float32.
    layers = read_checkpoint(_glm5(), release="0.33.0").moe_layers()
    target = {l.kwargs["router_logits_dtype"].value for l in layers if l.spec.role == "target"}
    draft = {l.kwargs["router_logits_dtype"].value for l in layers if l.spec.role == "draft"}
    assert (target, draft) == ({"float32"}, {"bfloat16"})
    forced = read_checkpoint({**_glm5(), "moe_router_dtype": "float32"}, release="0.33.0").moe_layers()
    assert {l.kwargs["router_logits_dtype"].value for l in forced if l.spec.role == "draft"} == {"float32"}


def test_glm45_mtp_draft_keeps_float32_router_logits():
    # glm4_moe.py Glm4MoE passes router_logits_dtype=torch.float32 whatever the model type.
    layers = read_checkpoint(GLM45, release="0.33.0").moe_layers()
    assert {l.kwargs["router_logits_dtype"].value for l in layers if l.spec.role == "draft"} == {"float32"}


def _minimax_m3():
    import json
    from pathlib import Path

    return json.loads((Path(__file__).parents[2] / "examples/models/minimax-m3.json").read_text())


def test_minimax_m3_on_rocm_routes_minimax2_before_0_31():
    # vLLM 0.29.0-0.33.0 minimax_m3/amd/model.py MiniMaxM3MoE passes apply_routed_scale_to_output
    # (AITER fused shared experts off), so the router gets routed_scaling_factor 1.0 and 0.29-0.30
    # get_routing_method_type answers MiniMax2; the CUDA class hands the router 2.0: Unspecified.
    def routing(release, platform):
        return read_checkpoint(_minimax_m3(), release=release, platform=platform).moe_layers()[0].kwargs["routing_method"].value

    assert [routing("0.30.0", p) for p in ("cuda", "rocm", None)] == ["unspecified", "minimax2", "unspecified"]
    assert routing("0.29.0", "rocm") == "minimax2"
    assert {routing("0.33.0", p) for p in ("cuda", "rocm")} == {"minimax2"}
    assert any("VLLM_ROCM_USE_AITER_FUSION_SHARED_EXPERTS" in n for n in read_checkpoint(_minimax_m3(), release="0.30.0", platform="rocm").notes)


def _redhat_v4():
    import json
    from pathlib import Path

    return json.loads((Path(__file__).parents[2] / "examples/models/redhatai-deepseek-v4-flash-nvfp4-fp8.json").read_text())


def test_compressed_tensors_matches_the_projection_names_the_platforms_v4_class_hands_its_experts():
    # From vLLM 0.32.0 compressed-tensors matches <experts>.0.<ckpt proj name>. The CUDA
    # DeepseekV4MoE passes ckpt_names ("w1", "w2", "w3"); the amd class passes none, so RoutedExperts
    # keeps gate_proj/up_proj/down_proj and RedHat's target 're:.*ffn.*(gate|up|down)_proj$' matches.
    def label(release, platform):
        return read_checkpoint(_redhat_v4(), release=release, platform=platform).moe_layers()[0].quant.label

    assert label("0.33.0", "rocm") == "nvfp4" and label("0.33.0", "cuda") == "bf16"
    assert label("0.31.0", "cuda") == "nvfp4"  # before 0.32.0: gate_proj/up_proj/down_proj for every model


def _shipped(name: str) -> dict:
    import json
    from pathlib import Path

    return json.loads((Path(__file__).parents[2] / "examples" / "models" / f"{name}.json").read_text())


def test_deepseek_refuses_an_activation_other_than_silu_at_every_moe_layer():
    # deepseek_v2.py DeepseekV2MoE.__init__ (vLLM 0.29.0-0.34.0): ValueError("Unsupported activation: ...
    # Only silu is supported for now.") in every MoE layer (was: the experts read as gelu, triton selected)
    import pytest

    from moe_oracle.core.errors import ConfigError

    with pytest.raises(ConfigError) as info:
        read_checkpoint({**_shipped("deepseek-r1"), "hidden_act": "gelu"}, release="0.34.0")
    issue = info.value.issues[0]
    assert (issue.path, issue.value, issue.allowed) == ("$.hidden_act", "gelu", ["silu"]) and "Unsupported activation" in issue.message


def test_the_cli_refuses_deepseek_r1_with_gelu(tmp_path, capsys):
    import json

    from moe_oracle.cli import main

    path = tmp_path / "config.json"
    path.write_text(json.dumps({**_shipped("deepseek-r1"), "hidden_act": "gelu"}))
    assert main(["select", "--model", str(path), "--gpu", "B200", "--tp", "8"]) == 2
    assert "$.hidden_act" in capsys.readouterr().err


_SILU_EXPERTS = [
    # (example, overrides): every MoE layer, no dense MLP built, so vLLM starts and runs FusedMoE's
    # default activation (no activation= passed: vLLM 0.29.0-0.34.0 qwen3_moe.py, mixtral.py,
    # minimax_m2.py, qwen3_next.py / qwen3_5.py; FusedMoE activation="silu", P/layer.py)
    ("qwen3-30b-a3b", {}),
    ("mixtral-8x7b-instruct-v0.1", {}),
    ("minimax-m2", {}),
    ("qwen3.5-122b-a10b", {}),
]


@pytest.mark.parametrize(("name", "extra"), _SILU_EXPERTS, ids=[n for n, _ in _SILU_EXPERTS])
def test_the_experts_run_silu_whatever_hidden_act_says(name, extra):
    cfg = _shipped(name)
    text = cfg.get("text_config")
    cfg = {**cfg, "text_config": {**text, "hidden_act": "gelu"}} if text else {**cfg, "hidden_act": "gelu", **extra}
    k = read_checkpoint(cfg, release="0.34.0").representative().kwargs
    assert k["activation"].value == "silu"  # was: gelu


def test_qwen3_moe_refuses_gelu_only_where_it_builds_its_dense_mlp():
    # qwen3_moe.py Qwen3MoeMLP.__init__ raises for hidden_act != silu; Qwen3MoeDecoderLayer builds one
    # for the layers in mlp_only_layers, and Qwen3MoeSparseMoeBlock one for a shared expert.
    from moe_oracle.core.errors import ConfigError

    gelu = {**_shipped("qwen3-30b-a3b"), "hidden_act": "gelu"}
    for cfg in ({**gelu, "mlp_only_layers": [0]}, {**gelu, "shared_expert_intermediate_size": 512}):
        with pytest.raises(ConfigError) as info:
            read_checkpoint(cfg, release="0.34.0")
        assert info.value.issues[0].path == "$.hidden_act" and "Unsupported activation" in info.value.issues[0].message


def test_qwen2_moe_refuses_gelu_with_its_default_shared_expert():
    # qwen2_moe.py Qwen2MoeSparseMoeBlock builds Qwen2MoeMLP (silu only) as its shared expert when
    # shared_expert_intermediate_size > 0 (transformers Qwen2MoeConfig default 5632)
    from moe_oracle.core.errors import ConfigError

    cfg = {"architectures": ["Qwen2MoeForCausalLM"], "model_type": "qwen2_moe", "hidden_size": 2048, "intermediate_size": 5632,
           "moe_intermediate_size": 1408, "num_experts": 60, "num_experts_per_tok": 4, "num_hidden_layers": 24, "hidden_act": "gelu"}
    with pytest.raises(ConfigError):
        read_checkpoint(cfg, release="0.34.0")
    k = read_checkpoint({**cfg, "shared_expert_intermediate_size": 0}, release="0.34.0").representative().kwargs
    assert k["activation"].value == "silu"


DSV2_LITE = {"architectures": ["DeepseekV2ForCausalLM"], "model_type": "deepseek_v2", "hidden_size": 2048, "moe_intermediate_size": 1408,
             "n_routed_experts": 64, "n_shared_experts": 2, "num_experts_per_tok": 6, "num_hidden_layers": 27, "first_k_dense_replace": 1,
             "moe_layer_freq": 1, "n_group": 1, "topk_group": 1, "topk_method": "greedy", "scoring_func": "softmax", "norm_topk_prob": False,
             "routed_scaling_factor": 1.0, "hidden_act": "silu"}
"""DeepSeek-V2-Lite's routing keys (deepseek-ai/DeepSeek-V2-Lite config.json as published)."""


@pytest.mark.parametrize("extra, groups", [
    ({}, (1, 1)),
    ({"n_group": 8, "topk_group": 3}, (8, 3)),
    ({"n_group": 8, "topk_group": 3, "use_grouped_topk": False}, (8, 3)),
    ({"model_type": "deepseek_v3", "n_group": 8, "topk_group": 3}, (8, 3)),
    ({"model_type": "glm_moe_dsa", "architectures": ["GlmMoeDsaForCausalLM"], "n_group": 8, "topk_group": 3}, (8, 3)),
], ids=["v2-lite", "greedy-8-groups", "use_grouped_topk-false", "deepseek_v3", "glm_moe_dsa"])
def test_deepseek_v2_moe_keeps_the_groups_under_greedy(extra, groups):
    # vLLM 0.29.0-0.34.0 deepseek_v2.py DeepseekV2MoE: use_grouped_topk=True,
    # num_expert_group=getattr(config, "n_group", 1), topk_group=getattr(config, "topk_group", 1);
    # topk_method is read only for the correction bias. Softmax without a bias routes Default either way.
    k = read_checkpoint({**DSV2_LITE, **extra}, release="0.34.0").representative().kwargs
    assert (k["routing_method"].value, k["num_expert_group"], k["topk_group"]) == ("default", *groups)


def test_every_family_and_model_type_is_defined_once():
    """qwen3_5_moe was defined twice (a merge kept both halves): qwen4_exp read the first record,
    qwen3_5_moe_text the second, and a lookup by family name the first."""
    from collections import Counter

    from moe_oracle.inputs.checkpoint.families import FAMILIES, family_for

    names = Counter(f.name for f in FAMILIES)
    assert [n for n, k in names.items() if k > 1] == []
    types = Counter(mt for f in FAMILIES for mt in f.model_types)
    assert [t for t, k in types.items() if k > 1] == []
    [qwen] = [f for f in FAMILIES if f.name == "qwen3_5_moe"]
    assert all(family_for(mt, None) is qwen for mt in ("qwen3_5_moe_text", "qwen3_5_moe", "qwen3_next", "qwen4_exp_text", "qwen4_exp"))
    assert "interns2_preview.py" in qwen.source and "qwen4_exp" in qwen.source


@pytest.mark.parametrize(
    ("first", "second", "named"),
    [
        pytest.param(("a", ("x",)), ("a", ("y",)), "family 'a' is defined twice (entries 1 and 2 of FAMILIES)", id="name"),
        pytest.param(("a", ("x",)), ("b", ("x",)), "model_type 'x' is listed by two families, 'a' and 'b'", id="model_type"),
    ],
)
def test_a_repeated_family_or_model_type_is_refused_naming_both(first, second, named):
    from moe_oracle.inputs.checkpoint.families import Family, _by_model_type

    with pytest.raises(ValueError) as err:
        _by_model_type((Family(first[0], first[1], "all"), Family(second[0], second[1], "all")))
    assert named in str(err.value)


_DSV2_ROUTING_KEYS = ("norm_topk_prob", "routed_scaling_factor", "first_k_dense_replace", "topk_method", "scoring_func", "moe_layer_freq")


@pytest.mark.parametrize("release", ["0.29.0", "0.34.0"])
def test_deepseek_v2_reads_the_deepseek_v2_config_class_defaults(release):
    """vLLM 0.29.0-0.34.0 registers no config class for deepseek_v2, so transformers 5.20.2
    DeepseekV2Config fills absent keys: norm_topk_prob False, routed_scaling_factor 1.0,
    first_k_dense_replace 0 (deepseek_v2.py: renormalize=config.norm_topk_prob,
    getattr(config, "routed_scaling_factor", 1.0), layer_idx >= config.first_k_dense_replace).
    The parent commit read DeepseekV3Config's (True, 2.5, 3): renormalize_naive routing, layers
    0-2 dense."""
    cfg = {k: v for k, v in DSV2_LITE.items() if k not in _DSV2_ROUTING_KEYS}
    ck = read_checkpoint(cfg, release=release)
    k = ck.representative().kwargs
    assert (k["routing_method"].value, k["routed_scaling_factor"]) == ("default", 1.0)
    assert [layer.spec.kind for layer in ck.layers][:2] == ["moe", "moe"]
    assert any("DeepseekV2Config" in p.evidence for p in ck.representative().provenance if p.field == "routed_scaling_factor")
    # deepseek_v3 and its DeepseekV3Config siblings keep the V3 defaults.
    v3 = read_checkpoint({**cfg, "model_type": "deepseek_v3", "architectures": ["DeepseekV3ForCausalLM"]}, release=release)
    assert (v3.representative().kwargs["routing_method"].value, v3.representative().kwargs["routed_scaling_factor"]) == ("renormalize_naive", 2.5)
    assert [layer.spec.kind for layer in v3.layers][:4] == ["dense", "dense", "dense", "moe"]


@pytest.mark.parametrize("key", ["n_group", "topk_group"])
@pytest.mark.parametrize("null", [False, True], ids=["absent", "null"])
def test_deepseek_v2_without_expert_groups_is_refused(key, null):
    """DeepseekV2Config defaults n_group and topk_group to None; DeepseekV2MoE's
    getattr(config, "n_group", 1) finds the None and create_fused_moe_router raises (vLLM
    0.29.0-0.34.0 router/router_factory.py). The parent commit read DeepseekV3Config's 8 / 4."""
    from moe_oracle.core.errors import ConfigError

    cfg = {k: v for k, v in DSV2_LITE.items() if k != key}
    with pytest.raises(ConfigError) as err:
        read_checkpoint({**cfg, key: None} if null else cfg, release="0.34.0")
    [issue] = err.value.issues
    assert issue.path == f"$.{key}" and "DeepseekV2Config defaults it to None" in issue.message and issue.message.startswith("null" if null else "absent")
