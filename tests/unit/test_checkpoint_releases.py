"""The checkpoint reader answers for the release the answer is for, not for vLLM 0.33.0 alone.

Each case states what one modelled release does with a checkpoint and what another does
instead; the version ranges are moe_oracle/checkpoint/releases.py ``FACTS``, held to every
release's source by tests/differential/test_release_sources.py. On the parent commit every
release was read as 0.33.0 (the refusals said "vLLM 0.33.0", 0.29.0's answers were refused or
keyed as 0.33.0 keys them).
"""

from __future__ import annotations

import json

import pytest
from packaging.specifiers import SpecifierSet

from moe_oracle.inputs.checkpoint import read_checkpoint
from moe_oracle.inputs.checkpoint.aliases import routing_method_type
from moe_oracle.inputs.checkpoint.releases import FACTS, ReaderRelease
from moe_oracle.cli import main
from moe_oracle.core.errors import ConfigError
from moe_oracle.verify.run import RELEASES
from moe_oracle.core.versions import EngineRelease, Known

BASE = {"num_hidden_layers": 2, "hidden_size": 256, "moe_intermediate_size": 128, "num_local_experts": 16, "num_experts_per_tok": 2}
W_INT4_G128 = {"type": "int", "num_bits": 4, "strategy": "group", "group_size": 128, "symmetric": True, "dynamic": False}
MX_W = {"dtype": "fp4", "qscheme": "per_group", "group_size": 32, "scale_format": "e8m0", "is_dynamic": False}


def layer(q, release, **cfg):
    """The first MoE layer of BASE (+ ``cfg``) under quantization_config ``q``, read for ``release``."""
    return read_checkpoint({**BASE, **cfg, "quantization_config": q}, release=release).layers[0]


def refusal(q, release, **cfg):
    with pytest.raises(ConfigError) as info:
        read_checkpoint({**BASE, **cfg, "quantization_config": q}, release=release)
    return info.value.issues[0]


def ct(weights, inputs=None, fmt="pack-quantized", **extra):
    return {"quant_method": "compressed-tensors", "format": fmt, "config_groups": {"group_0": {"targets": ["Linear"], "weights": weights, "input_activations": inputs}}, **extra}


def gptq(**kw):
    return {"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": False, "sym": True, **kw}


def quark(weight, inputs):
    return {"quant_method": "quark", "export": {"kv_cache_group": [], "pack_method": "reorder"}, "exclude": [],
            "global_quant_config": {"weight": weight, "input_tensors": inputs, "output_tensors": None, "bias": None}, "layer_quant_config": {}, "layer_type_quant_config": {}}


def unmodelled(version, stand_in):
    return EngineRelease("vllm", "vLLM", version, Known.DECLARED, "", False, stand_in)


# ------------------------------------------------------------------ activation ordering


@pytest.mark.parametrize("order", ["group", "dynamic"])
def test_ct_group_or_dynamic_actorder_runs_on_0_29_and_is_refused_from_0_30_naming_the_release(order):
    q = ct({**W_INT4_G128, "actorder": order})
    got = layer(q, "0.29.0")
    assert (got.quant.label, got.kwargs["act_order"], got.kwargs["weight_group_size"]) == ("int4_w16", order, 128)
    for release in ("0.30.0", "0.31.0", "0.32.0", "0.33.0"):
        issue = refusal(q, release)
        assert issue.path == "$.quantization_config.config_groups.group_0.weights.actorder"
        assert f"vLLM {release} refuses" in issue.message and issue.value == order


def test_ct_actorder_refusal_reads_every_config_group_not_only_the_experts_group():
    q = ct(W_INT4_G128)
    q["config_groups"]["attn"] = {"targets": ["re:.*self_attn.*"], "weights": {**W_INT4_G128, "actorder": "group"}, "input_activations": None}
    assert layer(q, "0.29.0").quant.label == "int4_w16"
    assert "vLLM 0.30.0 refuses" in refusal(q, "0.30.0").message


def test_ct_static_or_absent_actorder_is_carried_as_act_order():
    assert layer(ct({**W_INT4_G128, "actorder": "static"}), "0.33.0").kwargs["act_order"] == "static"
    assert layer(ct(W_INT4_G128), "0.33.0").kwargs["act_order"] == "none"


def test_gptq_desc_act_runs_on_0_29_and_is_refused_from_0_30():
    got = layer(gptq(desc_act=True), "0.29.0")
    assert (got.quant.label, got.kwargs["act_order"], got.kwargs["quant_method"]) == ("int4_w16", "group", "gptq")
    issue = refusal(gptq(desc_act=True), "0.30.0")
    assert issue.path == "$.quantization_config.desc_act" and "vLLM 0.30.0 refuses" in issue.message and "0.33.0" not in issue.message
    assert layer(gptq(desc_act=True, group_size=-1), "0.33.0").kwargs["act_order"] == "none"  # a no-op per channel
    assert layer(gptq(), "0.33.0").kwargs["act_order"] == "none"


def test_gptq_desc_act_through_a_dynamic_rule():
    q = gptq(dynamic={r"+:model\.layers\.0\..*": {"desc_act": True}})
    assert [lay.kwargs["act_order"] for lay in read_checkpoint({**BASE, "quantization_config": q}, release="0.29.0").layers] == ["group", "none"]
    assert refusal(q, "0.31.0").path == "$.quantization_config.dynamic.+:model\\.layers\\.0\\..*"


def test_moe_wna16_over_gptq_validates_desc_act_from_0_30():
    ck = read_checkpoint({**BASE, "quantization_config": gptq(desc_act=True)}, user_quantization="moe_wna16", release="0.29.0")
    assert (ck.layers[0].kwargs["quant_method"], ck.layers[0].kwargs["act_order"]) == ("moe_wna16", "group")
    with pytest.raises(ConfigError) as info:
        read_checkpoint({**BASE, "quantization_config": gptq(desc_act=True)}, user_quantization="moe_wna16", release="0.32.0")
    assert "vLLM 0.32.0 refuses" in info.value.issues[0].message


def test_an_unmodelled_release_is_answered_and_named_by_its_stand_in():
    issue = refusal(ct({**W_INT4_G128, "actorder": "group"}), unmodelled("0.34.0", "0.33.0"))
    assert "vLLM 0.33.0 (standing in for 0.34.0) refuses" in issue.message
    assert layer(ct({**W_INT4_G128, "actorder": "group"}), unmodelled("0.28.0", "0.29.0")).kwargs["act_order"] == "group"


# ------------------------------------------------------------------ ModelOpt


def test_modelopt_flat_exclude_modules_is_read_from_0_33_only():
    q = {"quant_method": "modelopt", "quant_algo": "NVFP4", "exclude_modules": ["model.layers.0.mlp.experts*"]}
    assert layer(q, "0.33.0").quant.label == "bf16"
    kept = layer(q, "0.32.0").quant
    assert kept.label == "nvfp4" and any("vLLM 0.32.0 reads only 'ignore'" in n for n in kept.notes)


def test_legacy_modelopt_mixed_precision_is_normalized_from_0_33_only():
    legacy = {"producer": {"name": "modelopt"}, "quantization": {"quant_algo": "MIXED_PRECISION", "exclude_modules": [],
                                                                 "quantized_layers": {"model.layers.0.mlp.experts": {"quant_algo": "NVFP4", "group_size": 16}}}}
    assert read_checkpoint(BASE, override=legacy, release="0.33.0").layers[0].quant.label == "nvfp4"
    with pytest.raises(ConfigError) as info:
        read_checkpoint(BASE, override=legacy, release="0.32.0")
    assert "vLLM 0.32.0 refuses" in info.value.issues[0].message and "Unknown ModelOpt quant algo" in info.value.issues[0].message


def mixed(**layers):
    return {"quant_method": "modelopt", "quant_algo": "MIXED_PRECISION", "quantized_layers": {f"model.layers.{i}.mlp.experts": v for i, v in layers.items()}}


def test_modelopt_mixed_block_fp8_experts_get_fp8_from_0_30_and_no_moe_method_before():
    q = {"quant_method": "modelopt", "quant_algo": "MIXED_PRECISION", "quantized_layers": {"model.layers.0.mlp.experts": {"quant_algo": "FP8_PB_WO", "group_size": 128}}}
    assert layer(q, "0.30.0").quant.label == "fp8_block"
    old = layer(q, "0.29.0").quant
    assert old.label == "bf16" and "vLLM 0.29.0 builds no MoE method" in old.evidence


def test_modelopt_mixed_b12x_codec_experts_are_not_modelled_from_0_32():
    codec = {"quant_algo": "Q8_0", "group_size": 32, "block_payload_bytes": 34, "packing": "ggml"}
    q = {"quant_method": "modelopt", "quant_algo": "MIXED_PRECISION", "quantized_layers": {"model.layers.0.mlp.experts": codec}}
    assert layer(q, "0.31.0").quant.label == "bf16"
    issue = refusal(q, "0.32.0")
    assert issue.message.startswith("not modelled for vLLM 0.32.0") and "ModelOptBlockQuantMoEMethod" in issue.message


# ------------------------------------------------------------------ compressed-tensors


def test_ct_mxfp4_with_fp8_activations_is_w4a8_from_0_32_and_unkeyed_before():
    w = {"type": "float", "num_bits": 4, "strategy": "group", "group_size": 32, "symmetric": True, "dynamic": False}
    a = {"type": "float", "num_bits": 8, "strategy": "token", "dynamic": True, "symmetric": True}
    q = ct(w, a, fmt="mxfp4-pack-quantized")
    assert layer(q, "0.32.0").kwargs["quant"].activation == "fp8_dynamic_token"
    old = layer(q, "0.31.0")
    assert old.quant.label == "mxfp4_w16" and "vLLM 0.31.0 has no W4A8 MXFP4 method" in old.quant.evidence


def test_ct_matches_the_checkpoint_projection_names_from_0_32():
    # Mixtral's experts are w1/w3/w2 in the checkpoint; 0.29.0-0.31.0 look for gate_proj/up_proj/down_proj.
    q = ct(W_INT4_G128, ignore=["re:.*block_sparse_moe\\.experts\\.0\\.w[123]$"])
    cfg = {"model_type": "mixtral"}
    assert layer(q, "0.32.0", **cfg).quant.label == "bf16"
    assert layer(q, "0.31.0", **cfg).quant.label == "int4_w16"


# ------------------------------------------------------------------ Quark


def test_quark_w4a16_int4_experts_need_0_31():
    w = {"dtype": "int4", "qscheme": "per_group", "group_size": 128, "symmetric": True, "is_dynamic": False}
    assert layer(quark(w, None), "0.31.0").quant.label == "int4_w16"
    assert "vLLM 0.30.0 refuses Quark W4A16" in refusal(quark(w, None), "0.30.0").message


def test_quark_mxfp8_experts_need_0_33():
    w = {"dtype": "fp8_e4m3", "qscheme": "per_group", "group_size": 32, "scale_format": "e8m0", "is_dynamic": False}
    assert layer(quark(w, None), "0.33.0").quant.label.startswith("mxfp8")
    assert "vLLM 0.32.0 refuses Quark OCP MXFP8 experts" in refusal(quark(w, None), "0.32.0").message


@pytest.mark.parametrize("inputs", [
    {"dtype": "fp8_e4m3", "qscheme": "per_tensor", "is_dynamic": True, "symmetric": True},
    {"dtype": "fp8_e4m3", "qscheme": "per_group", "group_size": 32, "is_dynamic": True, "symmetric": True},
])
@pytest.mark.parametrize("release", RELEASES)
def test_quark_mxfp4_with_dynamic_fp8_inputs_is_refused_by_every_release(inputs, release):
    # QuarkOCP_MX_MoEMethod: "dynamic input scales ... not implemented" / no OCP MX scheme for MXFP8 inputs.
    assert f"vLLM {release} refuses" in refusal(quark(MX_W, inputs), release).message


def test_quark_on_0_29_reads_its_own_get_moe_method():
    block = {"dtype": "fp8_e4m3", "qscheme": "per_block", "block_size": [128, 128], "symmetric": True, "is_dynamic": False}
    group = {"dtype": "fp8_e4m3", "qscheme": "per_group", "group_size": 128, "symmetric": True, "is_dynamic": True}
    assert layer(quark(block, group), "0.30.0").quant.label == "fp8_block"
    assert "vLLM 0.29.0 refuses these FP8 experts" in refusal(quark(block, group), "0.29.0").message
    tensor = {"dtype": "fp8_e4m3", "qscheme": "per_tensor", "symmetric": True, "is_dynamic": False}
    token = {"dtype": "fp8_e4m3", "qscheme": "per_channel", "symmetric": True, "is_dynamic": True}
    assert layer(quark(tensor, token), "0.30.0").kwargs["quant"].activation == "fp8_dynamic_token"
    assert "vLLM 0.29.0 refuses" in refusal(quark(tensor, token), "0.29.0").message
    dyn_tensor = {**tensor, "is_dynamic": True}
    assert layer(quark(tensor, dyn_tensor), "0.29.0").kwargs["quant"].activation == "fp8_dynamic_tensor"
    int8_w = {"dtype": "int8", "qscheme": "per_channel", "symmetric": True, "is_dynamic": False}
    asym = {"dtype": "int8", "qscheme": "per_channel", "symmetric": False, "is_dynamic": True}
    assert layer(quark(int8_w, asym), "0.30.0").kwargs["quant"].activation == "int8_dynamic_token_asym"
    assert layer(quark(int8_w, asym), "0.29.0").kwargs["quant"].activation == "int8_dynamic_token"
    static = {"dtype": "int8", "qscheme": "per_tensor", "symmetric": True, "is_dynamic": False}
    assert refusal(quark(int8_w, static), "0.29.0").message.startswith("not modelled for vLLM 0.29.0")


# ------------------------------------------------------------------ DeepSeek-V4 and V4.1


DSV4 = {"model_type": "deepseek_v4", "n_routed_experts": 16, "num_hash_layers": 0, "expert_dtype": "fp8"}


def test_deepseek_v41_exists_from_0_30():
    cfg = {**BASE, **DSV4, "model_type": "deepseek_v41"}
    assert read_checkpoint(cfg, release="0.30.0").family.name == "deepseek_v4"
    with pytest.raises(ConfigError) as info:
        read_checkpoint(cfg, release="0.29.0")
    assert info.value.issues[0].path == "$.model_type" and "vLLM 0.29.0 has no DeepSeek-V4.1 model" in info.value.issues[0].message


def test_deepseek_v4_claims_a_quark_mxfp4_checkpoint_before_0_31():
    q = quark(MX_W, None)
    old = read_checkpoint({**BASE, **DSV4, "quantization_config": q}, release="0.30.0")
    assert (old.quant.method, old.layers[0].quant.label, old.layers[0].kwargs["weight_block_size"]) == ("deepseek_v4_fp8", "fp8_block", (128, 128))
    new = read_checkpoint({**BASE, **DSV4, "quantization_config": q}, release="0.31.0")
    assert (new.quant.method, new.layers[0].quant.label) == ("quark", "mxfp4_w16")


def test_deepseek_v4_fp4_experts_get_the_mxfp8_activation_key_from_0_33():
    cfg = {**BASE, **DSV4, "expert_dtype": "fp4", "quantization_config": {"quant_method": "fp8", "activation_scheme": "dynamic", "weight_block_size": [128, 128]}}
    assert read_checkpoint(cfg, release="0.33.0").layers[0].quant.label == "mxfp4_mxfp8"
    assert read_checkpoint(cfg, release="0.32.0").layers[0].quant.label == "mxfp4_w16"


# ------------------------------------------------------------------ routing and layout


def test_sigmoid_bias_routing_without_groups_is_minimax2_at_any_scale_from_0_31():
    cfg = {**BASE, "model_type": "minimax_m3", "intermediate_size": 128, "scoring_func": "sigmoid", "use_routing_bias": True, "routed_scaling_factor": 2.0, "moe_layer_freq": 1}
    assert read_checkpoint(cfg, release="0.31.0").layers[0].kwargs["routing_method"].value == "minimax2"
    assert read_checkpoint(cfg, release="0.30.0").layers[0].kwargs["routing_method"].value == "unspecified"
    # MiniMax-M2's class passes its router no scale: the default 1.0 keeps MiniMax2 on 0.30.0.
    m2 = {**BASE, "model_type": "minimax_m2", "scoring_func": "sigmoid", "use_routing_bias": True, "routed_scaling_factor": 2.0}
    assert read_checkpoint(m2, release="0.30.0").layers[0].kwargs["routing_method"].value == "minimax2"
    assert routing_method_type("sigmoid", True, None, True, routed_scaling_factor=2.0, release="0.29.0").value == "unspecified"
    assert routing_method_type("sigmoid", True, None, True, routed_scaling_factor=2.0).value == "minimax2"


def test_gemma4_moe_block_switch_before_0_32():
    cfg = {**BASE, "model_type": "gemma4_text", "num_experts": 16, "top_k_experts": 2}
    assert read_checkpoint(cfg, release="0.32.0").layers[0].spec.kind == "moe"
    with pytest.raises(ConfigError):  # 0.31.0 builds no MoE block without enable_moe_block
        read_checkpoint(cfg, release="0.31.0")
    assert read_checkpoint({**cfg, "enable_moe_block": True}, release="0.31.0").layers[0].spec.kind == "moe"


def test_expert_substitution_needs_a_decomposed_backend_from_0_33_only():
    cfg = {**BASE, "approximate_experts": {"1": [3]}}
    assert read_checkpoint(cfg, release="0.33.0").layers[0].kwargs["require_decomposed"] is True
    old = read_checkpoint(cfg, release="0.32.0")
    assert "require_decomposed" not in old.layers[0].kwargs
    assert any("vLLM 0.32.0 has no expert substitution" in n for n in old.notes)


def test_a_correction_bias_keeps_its_own_evidence_when_the_scale_is_noted():
    cfg = {**BASE, "model_type": "minimax_m3", "intermediate_size": 128, "scoring_func": "sigmoid", "use_routing_bias": True, "routed_scaling_factor": 2.0, "moe_layer_freq": 1}
    prov = {p.field: p.evidence for p in read_checkpoint(cfg, release="0.30.0").layers[0].provenance}
    assert "use_routing_bias" in prov["has_correction_bias"] and "MiniMax2 only at 1.0" in prov["routing_method"]


# ------------------------------------------------------------------ the facts and the command line


def test_reader_release_words_and_facts():
    assert ReaderRelease.of(None).version == RELEASES[-1]
    assert ReaderRelease.of(unmodelled("0.28.0", "0.29.0")).words == "vLLM 0.29.0 (standing in for 0.28.0)"
    with pytest.raises(ValueError):
        ReaderRelease.of("not-a-version")
    for fact in FACTS.values():  # every range splits the modelled releases (else it is not a version-ranged fact)
        held = {r for r in RELEASES if r in SpecifierSet(fact.engine)}
        assert held and held != set(RELEASES), fact


def test_the_act_order_facts_are_the_constraint_tables_ranges():
    """FACTS' actorder/desc_act refusals (config load) and rules/constraints.yaml's constraints of
    the same refusals (a layer given by hand) state one fact: held equal."""
    from moe_oracle.core._resources import package_dir
    from moe_oracle.core.tables import safe_load

    rules = {r["id"]: r for r in safe_load((package_dir() / "rules" / "constraints.yaml").read_text())["constraints"]}
    assert rules["constraint.ct_act_order"]["engine"]["vllm"] == FACTS["ct_actorder_refused"].engine
    assert rules["constraint.gptq_desc_act"]["engine"]["vllm"] == FACTS["gptq_desc_act_refused"].engine


@pytest.fixture()
def ct_group_dir(tmp_path):
    cfg = {"model_type": "qwen3_moe", "architectures": ["Qwen3MoeForCausalLM"], **BASE, "num_experts": 16, "quantization_config": ct({**W_INT4_G128, "actorder": "group"})}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    return str(tmp_path)


@pytest.mark.parametrize(("release", "code", "fragment"), [
    ("0.29.0", 0, ""),
    ("0.30.0", 2, "vLLM 0.30.0 refuses compressed-tensors group/dynamic activation ordering"),
    ("0.35.0", 2, "vLLM 0.34.0 (standing in for 0.35.0) refuses"),
])
@pytest.mark.parametrize("command", ["select", "plan"])
def test_the_command_line_reads_the_checkpoint_for_the_declared_release(ct_group_dir, release, code, fragment, command, capsys):
    assert main([command, "--model", ct_group_dir, "--gpu", "H200", "--package", f"vllm=={release}"]) == code
    err = capsys.readouterr().err
    assert fragment in err and ("0.33.0 refuses" not in err or release == "0.34.0")


@pytest.mark.parametrize(("file_release", "flag_release", "code", "fragment"), [
    ("0.29.0", None, 0, ""),
    ("0.30.0", None, 2, "vLLM 0.30.0 refuses compressed-tensors group/dynamic activation ordering"),
    ("0.30.0", "0.29.0", 0, ""),  # --package is declared over the file's environment
    (None, "0.29.0", 0, ""),
    (None, None, 2, "vLLM 0.34.0 refuses"),  # the newest modelled release, assumed
])
def test_a_config_files_checkpoint_is_read_for_the_answers_release(ct_group_dir, tmp_path, file_release, flag_release, code, fragment, capsys):
    doc = f"model: {{hf_config: {ct_group_dir}/config.json}}\ndevice: {{gpu: H200}}\n"
    if file_release is not None:
        doc += f"environment: {{packages: {{vllm: '{file_release}'}}}}\n"
    path = tmp_path / "dep.yaml"
    path.write_text(doc)
    assert main(["select", "--config", str(path), *(["--package", f"vllm=={flag_release}"] if flag_release else [])]) == code
    assert fragment in capsys.readouterr().err
