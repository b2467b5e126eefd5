"""The model-build tier's harness pieces that need no vLLM: the layer reader on stand-in objects,
our side's translation of the plan into vLLM's vocabulary."""

from __future__ import annotations

from types import SimpleNamespace

from moe_oracle.verify.model_build.corpus import DEPLOYMENTS, cases
from moe_oracle.verify.model_build.driver import corpus_dirs
from moe_oracle.verify.model_build.ours import our_layers
from moe_oracle.verify.model_build.reader import _hash_routed


def test_hash_routing_is_read_from_the_config_where_it_has_the_field():
    # vLLM 0.31.0+ FusedMoEConfig.has_hash_routing (P/layer.py: hash_indices_table is not None)
    table_router = SimpleNamespace(_hash_indices_table=object())
    assert _hash_routed(SimpleNamespace(has_hash_routing=False), table_router) is False
    assert _hash_routed(SimpleNamespace(has_hash_routing=True), None) is True


def test_before_0_31_the_routers_hash_table_answers():
    # vLLM 0.29.0-0.30.0: no such field; DeepseekV4MoE hands hash_indices_table to FusedTopKBiasRouter
    no_field = SimpleNamespace()
    assert _hash_routed(no_field, SimpleNamespace(_hash_indices_table=object())) is True
    assert _hash_routed(no_field, SimpleNamespace(_hash_indices_table=None)) is False
    assert _hash_routed(no_field, None) is False


def _case(model: str, deployment: str) -> dict:
    return next(c.to_dict() for c in cases(corpus_dirs(), DEPLOYMENTS) if c.model == model and c.deployment["name"] == deployment)


def test_our_backend_is_compared_as_vllms_enum_member():
    # The MXFP4 backend enum names the activation variant (vLLM 0.33.0 P/oracle/mxfp4.py
    # Mxfp4MoeBackend); a batched Marlin under DeepEP LL is BATCHED_MARLIN.
    h200 = our_layers(_case("gpt-oss-20b", "H200-tp8"), "0.33.0")
    ll = our_layers(_case("gpt-oss-20b", "H100-tp2-dp4-ep-deepep_ll"), "0.33.0")
    assert {L["backend"] for L in h200["layers"]} == {"FLASHINFER_CUTLASS_MXFP4_BF16"}
    assert {L["backend"] for L in ll["layers"]} == {"BATCHED_MARLIN"}


def test_a_refined_fp8_block_is_compared_as_vllms_unnamed_key():
    layers = our_layers(_case("qwen3-30b-a3b-fp8", "H200-tp8"), "0.33.0")["layers"]
    assert {L["weight_key"] for L in layers} == {"float8_e4m3fn/static/(32, 32)"}


def test_a_refusal_by_vllm_is_compared_with_our_plan():
    from moe_oracle.verify.model_build.driver import _REFUSAL, _refusal_verdict

    selection = "target: NotImplementedError: No MXFP4 MoE backend supports the deployment configuration."
    assert _REFUSAL.search(selection)
    refused = {"status": "ok", "error": None, "layers": [{"role": "target", "experts_class": None}]}
    picked = {"status": "ok", "error": None, "layers": [{"role": "target", "experts_class": "MarlinExperts"}]}
    assert _refusal_verdict(selection, refused) == "agree"
    assert _refusal_verdict(selection, picked).startswith("ours selects MarlinExperts")
    start = "config: ValidationError: Value error, Number of experts in the model must be greater than 0 when expert parallelism is enabled."
    assert _REFUSAL.search(start)
    # Our plan's refusal, as our_layers records it (the last 400 characters of the exit-2 message).
    ours = {"status": "error", "error": ("exit 2: bad --ep: vLLM 0.33.0 refuses expert parallelism ... and finds none (\"Number of experts in the model must be greater than 0 when expert parallelism is enabled\")")[-400:], "layers": []}
    assert _refusal_verdict(start, ours) == "agree"
    assert _refusal_verdict(start, picked).startswith("ours does not refuse at start")
    # A create_weights refusal: every backend is refused, so our plan must select none for the role.
    groups = ("target: ValueError: CompressedTensors WNA16 MoE with static group scales requires the MoE intermediate size per "
              "tensor-parallel partition (96) to be divisible by group_size (128).")
    assert _REFUSAL.search(groups)
    assert _refusal_verdict(groups, refused) == "agree"
    assert _refusal_verdict(groups, picked).startswith("ours selects MarlinExperts")
    assert _REFUSAL.search("target: ValueError: No MXFP8 MoE backends available.")  # P/oracle/mxfp8.py's wording
    # compressed-tensors experts whose projections fall in different scheme groups: refused at start.
    mixed = "target: ValueError: All MoE projections need to have same quantization scheme but found multiple"
    assert _REFUSAL.search(mixed)
    ours_mixed = {"status": "error", "error": "exit 2: bad glm-5.json: $.quantization_config.config_groups: All MoE projections need to have same quantization scheme but found multiple (compressed-tensors get_moe_method)", "layers": []}
    assert _refusal_verdict(mixed, ours_mixed) == "agree"
    assert _refusal_verdict(mixed, picked).startswith("ours does not refuse at start")
    assert not _REFUSAL.search("target: ValueError: some other construction error")


def test_mxfp8_layers_hand_the_selector_no_activation_key():
    # vLLM 0.29.0-0.34.0 select_mxfp8_moe_backend(config) takes no keys; the weight key is the one
    # the reader implies (mxfp8_static), the activation key none, whatever the scheme quantizes.
    layers = our_layers(_case("minimax-m3-mxfp8-synthetic", "MI300X-tp8"), "0.34.0")["layers"]
    assert layers and {(L["weight_key"], L["activation_key"]) for L in layers} == {("mxfp8_static", None)}
    fp8 = our_layers(_case("qwen3-30b-a3b-fp8", "H200-tp8"), "0.34.0")["layers"]
    assert {L["activation_key"] for L in fp8} == {"fp8_dynamic_group128"}  # a selector that takes one keeps it


def test_a_paired_quant_document_is_read_beside_the_config_as_vllm_reads_it():
    # NVIDIA's DeepSeek-V4 NVFP4 export ships a quantization_config in config.json and an
    # hf_quant_config.json (legacy MIXED_PRECISION): vLLM reads only the former, so 0.32.0 (which
    # refuses MIXED_PRECISION in the legacy layout) builds it; given explicitly, our reader would
    # take the legacy document and refuse.
    case = _case("nvidia-deepseek-v4-flash-nvfp4", "MI300X-tp8")
    assert case["hf_quant_config"]
    mine = our_layers(case, "0.32.0")
    assert mine["status"] == "ok", mine["error"]
    assert "--hf-quant-config" not in mine["plan_argv"]
    assert {L["experts_class"] for L in mine["layers"] if L["role"] == "target"} == {"Nvfp4QuantizationEmulationTritonExperts"}  # as vLLM 0.32.0 builds it


def test_model_start_refusals_are_compared_quoted():
    from moe_oracle.verify.model_build.driver import _REFUSAL, _refusal_verdict

    vllm = "target: NotImplementedError: Beam has not been validated with sequence-parallel MoE (data parallelism with expert parallelism)."
    assert _REFUSAL.search(vllm)
    ours = {"status": "error", "error": "exit 2: bad --ep: vLLM 0.34.0 refuses this model at start: \"Beam has not been validated with sequence-parallel MoE (data parallelism with expert parallelism).\" (...)", "layers": []}
    assert _refusal_verdict(vllm, ours) == "agree"
    assert _refusal_verdict(vllm, {"status": "ok", "error": None, "layers": []}).startswith("ours does not refuse at start")
