"""Inference of routing, activation and quantization from real Hugging Face configs.

Expected values are written from the model cards / configs and vLLM's rules
(reference §1.3, §1.5), not produced by the code under test.
"""

from __future__ import annotations

import json

import pytest

from moe_oracle.core.errors import ConfigError
from moe_oracle.inputs.checkpoint import read_checkpoint
from moe_oracle.inputs.hf import from_hf_config, load_hf_config, routing_method_type
from moe_oracle.inputs.models import resolve_model_path

# model -> (experts, top_k, hidden, intermediate, activation, routing, quant scheme, quant_method)
EXPECTED = {
    "deepseek-r1": (256, 8, 7168, 2048, "silu", "deepseek_v3", "fp8_block", "fp8"),
    "kimi-k2-instruct": (384, 8, 7168, 2048, "silu", "deepseek_v3", "fp8_block", "fp8"),
    "qwen3-30b-a3b": (128, 8, 2048, 768, "silu", "renormalize_naive", "unquantized", None),
    "qwen3-30b-a3b-fp8": (128, 8, 2048, 768, "silu", "renormalize_naive", "fp8_block", "fp8"),
    "qwen3-235b-a22b": (128, 8, 4096, 1536, "silu", "renormalize_naive", "unquantized", None),
    "gpt-oss-20b": (32, 4, 2880, 2880, "swigluoai", "renormalize_naive", "mxfp4_w16", "mxfp4"),
    "gpt-oss-120b": (128, 4, 2880, 2880, "swigluoai", "renormalize_naive", "mxfp4_w16", "mxfp4"),
    "llama-4-scout-17b-16e-instruct": (16, 1, 5120, 8192, "silu", "llama4", "unquantized", None),
    "llama-4-maverick-17b-128e-instruct-fp8": (128, 1, 5120, 8192, "silu", "llama4", "fp8_channel_token", "compressed-tensors"),
    "minimax-m2": (256, 8, 3072, 1536, "silu", "minimax2", "fp8_block", "fp8"),
    "mixtral-8x7b-instruct-v0.1": (8, 2, 4096, 14336, "silu", "renormalize_naive", "unquantized", None),
    "nvidia-nemotron-3-nano-30b-a3b-bf16": (128, 6, 2688, 1856, "relu2_no_mul", "deepseek_v3", "unquantized", None),
}


@pytest.mark.parametrize("model", sorted(EXPECTED))
def test_real_model_configs(model):
    path = resolve_model_path(model)
    ck = from_hf_config(load_hf_config(path), file=str(path))
    k = ck.kwargs
    experts, top_k, hidden, inter, act, routing, scheme, method = EXPECTED[model]
    got = (k["num_experts"], k["top_k"], k["hidden_size"], k["intermediate_size"], k["activation"].value, k["routing_method"].value, k["quant"].name, k.get("quant_method"))
    assert got == (experts, top_k, hidden, inter, act, routing, scheme, method)
    fields = {p.field for p in ck.provenance}
    assert {"num_experts", "routing_method", "activation", "quant"} <= fields
    assert all(p.evidence for p in ck.provenance if p.field in ("routing_method", "quant"))


def test_gpt_oss_swiglu_parameters_stay_unset_as_vllm_leaves_them_and_bias():
    # vLLM 0.29.0-0.34.0 gpt_oss.py passes no swiglu_* to FusedMoE: its FusedMoEConfig holds None
    # although config.json has swiglu_limit 7.0 (the MXFP4 method applies 1.702 / 7.0 itself).
    cfg = load_hf_config(resolve_model_path("gpt-oss-20b"))
    k = from_hf_config(cfg).kwargs
    assert (k.get("swiglu_alpha"), k.get("swiglu_limit"), k["has_bias"]) == (None, None, True)
    assert any("swiglu_limit = 7.0 not passed to FusedMoE" in n for n in read_checkpoint(cfg).notes)


def test_deepseek_grouped_topk_parameters_are_recorded_with_evidence():
    ck = from_hf_config(load_hf_config(resolve_model_path("deepseek-r1")))
    assert (ck.kwargs["num_expert_group"], ck.kwargs["topk_group"], ck.kwargs["routed_scaling_factor"], ck.kwargs["has_correction_bias"]) == (8, 4, 2.5, True)
    routing = next(p for p in ck.provenance if p.field == "routing_method")
    assert "noaux_tc" in routing.evidence and "n_group=8" in routing.evidence


def test_nemotron_nvfp4_pairs_the_bf16_config_with_its_hf_quant_config():
    cfg = load_hf_config(resolve_model_path("nvidia-nemotron-3-nano-30b-a3b-bf16"))
    qcfg = load_hf_config(resolve_model_path("nvidia-nemotron-3-nano-30b-a3b-nvfp4.hf_quant_config"))
    ck = from_hf_config(cfg, quant_cfg=qcfg)
    assert ck.kwargs["quant"].name == "nvfp4" and ck.kwargs["quant_method"] == "modelopt"


def test_minimax_without_torch_dtype_defaults_with_a_recorded_source():
    ck = from_hf_config(load_hf_config(resolve_model_path("minimax-m2")))
    dtype = next(p for p in ck.provenance if p.field == "in_dtype")
    assert dtype.source.value == "default" and "assumed bfloat16" in dtype.evidence


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("softmax", False, None, False), "default"),
        (("softmax", True, None, False), "renormalize_naive"),
        (("sigmoid", False, None, False), "sigmoid"),
        (("sigmoid", True, None, False), "sigmoid_renorm"),
        (("sigmoid", True, 8, True), "deepseek_v3"),
        (("sigmoid", True, 0, True), "minimax2"),
        (("sigmoid", False, 8, True), "unspecified"),
        (("softmax", True, 8, True), "unspecified"),
        (("sqrtsoftplus", True, None, True), "deepseek_v4"),
        (("sqrtsoftplus", False, None, True), "unspecified"),
    ],
)
def test_routing_method_type_table(args, expected):
    # vLLM 0.33.0 P/config.py get_routing_method_type: no routed_scaling_factor argument any more.
    assert routing_method_type(*args).value == expected


def test_a_dense_model_is_a_clear_error():
    with pytest.raises(ConfigError) as info:
        from_hf_config({"model_type": "llama", "hidden_size": 4096, "intermediate_size": 11008}, file="llama.json")
    issue = info.value.issues[0]
    assert issue.file == "llama.json" and "no MoE layer" in issue.message


def test_malformed_and_non_object_json(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"num_experts": 8,,}')
    with pytest.raises(ConfigError) as info:
        load_hf_config(bad)
    assert info.value.issues[0].keyword == "json" and "line 1" in info.value.issues[0].path
    arr = tmp_path / "arr.json"
    arr.write_text(json.dumps([1, 2]))
    with pytest.raises(ConfigError):
        load_hf_config(arr)
    binary = tmp_path / "bin.json"
    binary.write_bytes(b"\xff\xfe{}")
    with pytest.raises(ConfigError) as info:
        load_hf_config(binary)
    assert info.value.issues[0].keyword == "encoding"


def test_unknown_activation_and_quant_method_name_the_field():
    base = {"num_local_experts": 8, "num_experts_per_tok": 2, "hidden_size": 64, "intermediate_size": 128}
    with pytest.raises(ConfigError) as info:
        from_hf_config({**base, "hidden_act": "swishh"})
    assert info.value.issues[0].path == "$.hidden_act" and info.value.issues[0].suggestion() == "swish"
    with pytest.raises(ConfigError) as info:
        from_hf_config({**base, "quantization_config": {"quant_method": "fp88"}})
    assert info.value.issues[0].path == "$.quantization_config.quant_method" and info.value.issues[0].suggestion() == "fp8"


def test_fp8_exclusions_match_as_vllm_matches_them():
    """Fp8Config matches modules_to_not_convert exactly (is_layer_skipped, exact mode): a glob is
    not expanded, and an entry naming a shared expert does not unquantize the routed experts."""
    base = {"num_local_experts": 8, "num_experts_per_tok": 2, "hidden_size": 64, "intermediate_size": 128}
    glob = from_hf_config({**base, "quantization_config": {"quant_method": "fp8", "activation_scheme": "dynamic", "modules_to_not_convert": ["model.layers.*.mlp.experts"]}})
    assert glob.kwargs["quant"].name == "fp8_tensor_dynamic"
    shared = from_hf_config({**base, "quantization_config": {"quant_method": "fp8", "activation_scheme": "dynamic", "modules_to_not_convert": ["model.layers.0.mlp.shared_experts"]}})
    assert shared.kwargs["quant"].name == "fp8_tensor_dynamic"
    exact = from_hf_config({**base, "quantization_config": {"quant_method": "fp8", "activation_scheme": "dynamic", "modules_to_not_convert": ["model.layers.0.mlp.experts.3.w1"]}})
    assert exact.kwargs["quant"].name == "unquantized"
    assert "model.layers.0.mlp.experts.3.w1" in next(p.evidence for p in exact.provenance if p.field == "quant")


def test_from_hf_config_reads_quant_cfg_as_the_hf_quant_config_flag_reads_its_file() -> None:
    """``from_hf_config(cfg, quant_cfg=config.json)`` took a whole model config as the quantization
    document: one carrying ``quantization_config`` (an FP8 checkpoint's) and one carrying none
    both answered "unquantized", silently. It now reads ``quant_cfg`` with the function
    ``--hf-quant-config`` uses (``inputs/models.quant_document``): the model config's
    ``quantization_config``, with a note, or a refusal naming the parameter."""
    bf16 = load_hf_config(resolve_model_path("qwen3-30b-a3b"))
    fp8 = load_hf_config(resolve_model_path("qwen3-30b-a3b-fp8"))
    whole = from_hf_config(bf16, quant_cfg=fp8)
    own = from_hf_config(bf16, quant_cfg=fp8["quantization_config"])
    assert whole.kwargs["quant"] == own.kwargs["quant"] == from_hf_config(fp8).kwargs["quant"] and whole.kwargs["quant"].weight is not None
    assert "quant_cfg is a model config: its quantization_config is the document read" in whole.notes
    with pytest.raises(ConfigError) as info:
        from_hf_config(fp8, quant_cfg=bf16, quant_file="ck/config.json")
    issue = info.value.issues[0]
    assert info.value.title() == "bad quant_cfg" and issue.path == "quant_cfg" and issue.value == "ck/config.json"
    assert "is a model config (architectures/model_type) with no quantization document" in issue.message and "a model config goes in cfg" in issue.message
    with pytest.raises(ConfigError, match="bad quant_cfg"):
        from_hf_config(bf16, quant_cfg=json.dumps(fp8["quantization_config"]))  # a JSON string, not the parsed document


def test_the_api_and_the_flag_share_the_quant_document_reader() -> None:
    import inspect

    import moe_oracle.inputs.hf as hf
    from moe_oracle.inputs.models import quant_document

    assert hf.quant_document is quant_document and "quant_document(" in inspect.getsource(hf.from_hf_config)
