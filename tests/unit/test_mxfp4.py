"""MXFP4: the mechanisms its tables need, and vLLM 0.29.0-0.33.0's MXFP4 selection as the tables encode it.

The release-specific cases are asked the way the differential harness asks them
(:class:`~moe_oracle.verify.ours.OurSide`: exact packages, the release's FlashInfer pin); each
expectation is what that release's own code answers (checked by ``moe-oracle verify``).
"""

from __future__ import annotations

import pytest

from moe_oracle import Device, Environment, MoEConfig
from moe_oracle.core.engine import evaluate
from moe_oracle.core.errors import TableError
from moe_oracle.core.fields import NONE
from moe_oracle.core.normalize import mxfp4_selector
from moe_oracle.verify.cases import Deployment
from moe_oracle.verify.ours import OurSide, config_for, environment_for
from tests.tables_fixture import base_tables, load

B200 = Device("cuda", capability=100)


def cfg(**kw):
    base = dict(num_experts=64, top_k=4, hidden_size=1024, intermediate_size=512, device=B200)
    base.update(kw)
    return MoEConfig(**base)


# ------------------------------------------------------------------ mechanisms (synthetic tables)


def _with(tables, **changes):
    for key, value in changes.items():
        tables[key] = value
    return tables


def test_adjustment_moves_a_backend_directly_after_its_anchor(tmp_path):
    tables = base_tables()
    tables["rules/priority.yaml"]["orders"][0]["backends"] = ["fast", "slow", "optin"]
    tables["rules/priority.yaml"]["adjustments"] = [
        {"id": "adjust.fast_after_slow", "when": {"platform": ["cuda"]}, "move": ["fast"], "to": "after:slow", "kind": "performance", "reason": "test", "reference": "test"},
    ]
    d = evaluate(load(tmp_path, tables), cfg(), Environment())
    assert d.backend_order[:3] == ("slow", "fast", "optin")
    assert [(x.rule, x.backend, x.position) for x in d.demotions] == [("adjust.fast_after_slow", "fast", "after:slow")]


def test_adjustment_before_an_anchor_and_a_missing_anchor_is_a_no_op(tmp_path):
    tables = base_tables()
    tables["rules/priority.yaml"]["adjustments"] = [
        {"id": "adjust.optin_before_slow", "when": {"platform": ["cuda"]}, "move": ["optin"], "to": "before:slow", "kind": "performance", "reason": "test", "reference": "test"},
    ]
    catalog = load(tmp_path, tables)
    assert evaluate(catalog, cfg(), Environment()).backend_order[:3] == ("fast", "optin", "slow")
    # On ROCm the order holds only `slow`: optin is not in it, nothing moves.
    rocm = evaluate(catalog, cfg(device=Device("rocm", arch="gfx942")), Environment())
    assert rocm.demotions == ()


def test_moved_backends_keep_their_relative_order(tmp_path):
    tables = base_tables()
    tables["rules/priority.yaml"]["adjustments"] = [
        # `move` lists optin before fast; in the order fast comes first, and stays first.
        {"id": "adjust.to_back", "when": {"platform": ["cuda"]}, "move": ["optin", "fast"], "to": "back", "kind": "performance", "reason": "test", "reference": "test"},
    ]
    d = evaluate(load(tmp_path, tables), cfg(), Environment())
    order = list(d.backend_order)
    assert order.index("slow") < order.index("fast") < order.index("optin")


@pytest.mark.parametrize("to, message", [("after:fast", "next to itself"), ("before:nosuch", "unknown backend")])
def test_adjustment_anchor_is_checked(tmp_path, to, message):
    tables = base_tables()
    tables["rules/priority.yaml"]["adjustments"] = [
        {"id": "adjust.bad", "when": {"platform": ["cuda"]}, "move": ["fast"], "to": to, "kind": "performance", "reason": "test", "reference": "test"},
    ]
    with pytest.raises(TableError) as info:
        load(tmp_path, tables)
    assert message in str(info.value)


def test_a_backend_name_may_request_variant_backends_after_itself_in_that_order(tmp_path):
    tables = base_tables()
    tables["rules/aliases.yaml"]["backends"]["slow"] = {"backends": ["slow", "fast"]}
    catalog = load(tmp_path, tables)
    d = evaluate(catalog, cfg(moe_backend="slow"), Environment())
    # The name maps slow first: it is tried before fast although the order has fast first.
    assert d.requested == ("slow", "fast") and d.backend_order[:2] == ("slow", "fast")
    assert d.kernel == "slow"


def test_a_backend_name_may_not_request_another_backend_first(tmp_path):
    tables = base_tables()
    tables["rules/aliases.yaml"]["backends"]["slow"] = {"backends": ["fast", "slow"]}
    with pytest.raises(TableError) as info:
        load(tmp_path, tables)
    assert "must select that backend first" in str(info.value)


def _after_selection_tables():
    tables = base_tables()
    tables["rules/shortcuts.yaml"] = {
        "kind": "shortcuts",
        "shortcuts": [
            {"id": "shortcut.first_class", "when": {"routing_method": ["deepseek_v3"]}, "selected": ["fast"], "try": [], "otherwise": "fast_monolithic",
             "label": "as the first class of its backend", "reason": "test", "reference": "test"},
        ],
    }
    return tables


def test_a_shortcut_after_selection_returns_its_kernel_unchecked(tmp_path):
    catalog = load(tmp_path, _after_selection_tables())
    # Too many experts for nothing but... the monolithic kernel fails its routing check on `default`.
    config = cfg(routing_method="deepseek_v3", num_experts=64, router_logits_dtype="float16")
    checked = evaluate(catalog, config, Environment(), policy="safe")
    assert checked.kernel == "fast"  # the monolithic sibling fails the router-logits dtype
    d = evaluate(catalog, config, Environment())
    assert d.kernel == "fast_monolithic" and d.shortcut == "shortcut.first_class"
    assert any(w.code == "unchecked" and w.safe_alternative == "fast" for w in d.warnings)
    assert any("checked fast" in n for n in d.notes)
    # Another winner is left alone.
    assert evaluate(catalog, cfg(routing_method="deepseek_v3", device=Device("cuda", capability=80)), Environment()).kernel == "slow"


def test_a_shortcut_after_selection_tries_nothing(tmp_path):
    tables = _after_selection_tables()
    tables["rules/shortcuts.yaml"]["shortcuts"][0]["try"] = ["slow"]
    with pytest.raises(TableError) as info:
        load(tmp_path, tables)
    assert "tries no kernel" in str(info.value)


def test_a_constraint_binding_every_kernel_stops_a_shortcut(tmp_path):
    tables = base_tables()
    tables["rules/shortcuts.yaml"] = {
        "kind": "shortcuts",
        "shortcuts": [{"id": "shortcut.always_slow", "when": {"platform": ["cuda"]}, "try": [], "otherwise": "slow", "label": "always", "reason": "test", "reference": "test"}],
    }
    tables["rules/constraints.yaml"] = {
        "kind": "constraints",
        "constraints": [{"id": "constraint.small", "field": "num_experts", "max": 128, "reason": "shape_unsupported", "hint": "test", "reference": "test"}],
    }
    catalog = load(tmp_path, tables)
    assert evaluate(catalog, cfg(num_experts=64), Environment()).kernel == "slow"
    refused = evaluate(catalog, cfg(num_experts=256), Environment())
    assert refused.kernel is None and refused.shortcut == "shortcut.always_slow"


# ------------------------------------------------------------------ the MXFP4 entry point


@pytest.mark.parametrize("weight, method, model_type, expected", [
    (None, "mxfp4", "gpt_oss", NONE),
    ("fp8_static_block128", "fp8", None, NONE),
    ("mxfp4_static", "mxfp4", "gpt_oss", "generic"),
    ("mxfp4_static", "gpt_oss_mxfp4", "deepseek_v4", "generic"),
    ("mxfp4_static", "mxfp4", "deepseek_v4", "deepseek_v4"),
    ("mxfp4_static", "mxfp4", "kimi_k3", "deepseek_v4"),
    ("mxfp4_static", "mxfp4", None, "generic"),
    ("mxfp4_static", "fp8", "deepseek_v4", "deepseek_v4"),
    ("mxfp4_static", "compressed-tensors", None, "compressed_tensors"),
    ("mxfp4_static", "quark", None, "generic"),
    ("mxfp4_static", None, None, "generic"),
])
def test_mxfp4_selector(weight, method, model_type, expected):
    assert mxfp4_selector(weight, method, model_type) == expected


def _values(**kw):
    dep = Deployment(platform="cuda", capability=100, family="mxfp4", weight_key="mxfp4_static", **kw)
    return evaluate_dep(dep).normalized.values


def evaluate_dep(dep, release="0.33.0"):
    return evaluate(OurSide(release).oracle.catalog, config_for(dep), environment_for(dep, release))


def test_the_selector_is_asked_for_the_checkpoint_key_unless_the_method_passes_none():
    assert _values(activation_key="mxfp8_dynamic", front_end="direct")["selector_activation_quant"] == "mxfp8_dynamic"
    assert _values(activation_key="fp8_static_tensor", front_end="quark_mxfp4")["selector_activation_quant"] == "fp8_static_tensor"
    # GptOssMxfp4MoEMethod and compressed-tensors call select_mxfp4_moe_backend(moe) without a key.
    assert _values(activation_key="mxfp8_dynamic", front_end="mxfp4", model_type="gpt_oss")["selector_activation_quant"] == NONE
    assert _values(activation_key="mxfp4_dynamic", front_end="compressed_tensors_mxfp4")["selector_activation_quant"] == NONE


# ------------------------------------------------------------------ vLLM's MXFP4 selection, release by release


GPT_OSS = dict(platform="cuda", family="mxfp4", front_end="mxfp4", model_type="gpt_oss", weight_key="mxfp4_static", num_experts=128, top_k=4,
               hidden_size=2880, intermediate_size=2880, activation="swigluoai", routing_method="renormalize", has_bias=True, swiglu_limit=7.0)


def answer(release, **kw):
    base = dict(GPT_OSS)
    base.update(kw)
    return OurSide(release).answer(Deployment(**base))


def test_gpt_oss_on_blackwell_runs_trtllm_bf16_variant():
    a = answer("0.33.0", capability=100, packages=("flashinfer", "flashinfer_cubin", "triton_kernels"))
    assert (a.experts, a.backend, a.detail) == ("TrtLlmMxfp4ExpertsMonolithic", "FLASHINFER_TRTLLM_MXFP4_BF16", "flashinfer_trtllm_mxfp4_monolithic")


@pytest.mark.parametrize("release, expected", [("0.31.0", "error"), ("0.32.0", "MarlinExperts"), ("0.33.0", "MarlinExperts")])
def test_requested_activation_key_falls_back_to_bf16_variants_from_032(release, expected):
    # SM 9.0 without quark: no MXFP8 kernel, no emulation. 0.32 tries the BF16 variants after the matching
    # ones (with a warning); before 0.32 the selector raises.
    a = answer(release, front_end="direct", model_type=None, activation_key="mxfp8_dynamic", capability=90, packages=())
    assert (a.experts or a.status) == expected


def test_bf16_fallback_is_reported_as_a_degradation():
    dep = Deployment(**{**GPT_OSS, "front_end": "direct", "model_type": None, "activation_key": "mxfp8_dynamic", "capability": 90, "packages": ()})
    d = evaluate_dep(dep)
    assert d.kernel == "marlin"
    assert "priority.mxfp4.requested_activation_first" in {x.rule for x in d.demotions}


def test_emulation_comes_before_the_bf16_fallback():
    a = answer("0.33.0", front_end="direct", model_type=None, activation_key="mxfp8_dynamic", capability=90, packages=("quark",))
    assert a.experts == "OCP_MXQuantizationEmulationTritonExperts"


def test_consumer_blackwell_runs_marlin_before_triton():
    # 0.31: the OAI Triton kernels run only below SM 11.0; 0.32 runs them on SM 12.x, but after Marlin.
    assert answer("0.31.0", capability=120, packages=("triton_kernels",)).experts == "MarlinExperts"
    assert answer("0.32.0", capability=120, packages=("triton_kernels",)).experts == "MarlinExperts"
    d = evaluate_dep(Deployment(**{**GPT_OSS, "capability": 120, "packages": ("triton_kernels",)}), "0.32.0")
    assert ("priority.mxfp4.sm12x_demotes_triton", "triton", "after:marlin") in {(x.rule, x.backend, x.position) for x in d.demotions}
    # Where Marlin cannot run (FlashInfer's two-sided NVLink all2all), TRITON's modular class is next.
    nvl = dict(capability=120, packages=("triton_kernels", "flashinfer", "flashinfer_cubin"), dp_size=2, use_ep=True, all2all_backend="flashinfer_nvlink_two_sided")
    assert answer("0.32.0", **nvl).experts == "OAITritonExperts"
    # On SM 10.0 TRITON comes before Marlin.
    assert answer("0.33.0", capability=100, packages=("triton_kernels",)).experts == "OAITritonMxfp4ExpertsMonolithic"


@pytest.mark.parametrize("release, expected", [("0.31.0", "MarlinExperts"), ("0.33.0", "HummingIndexedExperts")])
def test_hopper_prefers_humming_from_032(release, expected):
    a = answer(release, capability=90, packages=("humming",), activation="silu")
    assert a.experts == expected


@pytest.mark.parametrize("release, expected", [("0.32.0", "OCP_MXQuantizationEmulationTritonExperts"), ("0.33.0", "AiterMxfp4Experts")])
def test_qwen38_tep8_emulation_until_033(release, expected):
    a = answer(release, front_end="direct", model_type=None, platform="rocm", capability=None, arch="gfx950", activation_key="mxfp4_dynamic",
               num_experts=512, top_k=10, hidden_size=2560, intermediate_size=640, tp_size=8, use_ep=True, activation="silu", has_bias=False,
               swiglu_limit=None, packages=("aiter", "quark"), env=(("VLLM_ROCM_USE_AITER", "1"),))
    assert a.experts == expected


def test_trtllm_lora_experts_only_on_an_explicit_request():
    explicit = answer("0.33.0", capability=100, packages=("flashinfer", "flashinfer_cubin"), lora=True, moe_backend="flashinfer_trtllm")
    assert explicit.experts == "TrtLlmMxfp4LoRAExperts"
    assert answer("0.32.0", capability=100, packages=("flashinfer", "flashinfer_cubin"), lora=True, moe_backend="flashinfer_trtllm").status == "error"
    auto = answer("0.33.0", capability=100, packages=("flashinfer", "flashinfer_cubin", "triton_kernels"), lora=True)
    assert auto.experts != "TrtLlmMxfp4LoRAExperts"


def test_deepseek_v4_selector_on_rocm_with_deepseek_v4_routing():
    a = answer("0.33.0", model_type="deepseek_v4", platform="rocm", capability=None, arch="gfx942", routing_method="deepseek_v4", activation="silu",
               has_bias=False, swiglu_limit=None, packages=("triton_kernels",))
    assert a.experts == "UnfusedOAITritonExperts"
    # gpt-oss on the same machine asks the generic selector: the OAI Triton kernels do not route DeepseekV4.
    b = answer("0.33.0", platform="rocm", capability=None, arch="gfx942", routing_method="deepseek_v4", packages=("triton_kernels",))
    assert b.experts == "OAITritonExperts"


def test_deepseek_v4_selector_on_blackwell_prefers_mxfp8_activations():
    a = answer("0.33.0", model_type="deepseek_v4", capability=100, routing_method="deepseek_v4", activation="silu", has_bias=False, swiglu_limit=None,
               packages=("flashinfer", "flashinfer_cubin"))
    assert (a.experts, a.backend) == ("TrtLlmMxfp4ExpertsModular", "FLASHINFER_TRTLLM_MXFP4_MXFP8")


def test_compressed_tensors_picks_cutlass_marlin_or_xpu_unchecked():
    ct = dict(front_end="compressed_tensors_mxfp4", model_type=None, activation="silu", has_bias=False, swiglu_limit=None)
    assert answer("0.33.0", capability=100, **ct).experts == "CutlassExpertsMxfp4"
    assert answer("0.33.0", capability=90, **ct).experts == "MarlinExperts"
    # Marlin is returned even where it cannot run (no check): with a warning.
    dep = Deployment(**{**GPT_OSS, **ct, "platform": "rocm", "capability": None, "arch": "gfx942"})
    d = evaluate_dep(dep)
    assert d.kernel == "marlin" and d.shortcut == "shortcut.ct_mxfp4_marlin" and any(w.code == "unchecked" for w in d.warnings)
    # A moe_backend vLLM refuses at start stops even this path.
    assert answer("0.33.0", capability=100, moe_backend="cpu", **ct).status == "error"


@pytest.mark.parametrize("release, expected", [("0.32.0", "TrtLlmMxfp4ExpertsMonolithic"), ("0.33.0", "TrtLlmMxfp4ExpertsModular")])
def test_quark_takes_the_backends_first_class_until_033(release, expected):
    # DP 2: the monolithic TRT-LLM class fails its parallel check, the modular one is selected.
    a = answer(release, front_end="quark_mxfp4", model_type=None, capability=100, dp_size=2, packages=("flashinfer", "flashinfer_cubin"))
    assert a.experts == expected


@pytest.mark.parametrize("release, ok", [("0.30.0", True), ("0.31.0", False), ("0.32.0", False), ("0.33.0", True)])
def test_aiter_w4a16_monolithic_and_expert_parallelism(release, ok):
    # TP 8 with EP, no all2all: 0.31-0.32 reject any EP, 0.33 only all2all kernels again.
    a = answer(release, platform="rocm", capability=None, arch="gfx942", tp_size=8, use_ep=True, packages=("aiter",),
               env=(("VLLM_ROCM_USE_AITER", "1"),))
    assert (a.experts == "AiterW4A16ExpertsMonolithic") is ok


@pytest.mark.parametrize("release, ok", [("0.32.0", False), ("0.33.0", True)])
def test_aiter_w4a16_monolithic_opts_in_to_hash_routing_in_033(release, ok):
    a = answer(release, platform="rocm", capability=None, arch="gfx942", has_hash_routing=True, packages=("aiter",), env=(("VLLM_ROCM_USE_AITER", "1"),))
    assert (a.experts == "AiterW4A16ExpertsMonolithic") is ok


def test_moe_backend_names_outside_the_release_are_refused():
    assert answer("0.29.0", platform="rocm", capability=None, arch="gfx942", moe_backend="aiter_triton_mxfp4_bf16", packages=("aiter",)).status == "error"
    assert answer("0.30.0", platform="rocm", capability=None, arch="gfx942", moe_backend="aiter_triton_mxfp4_bf16", packages=("aiter",),
                  env=(("VLLM_ROCM_USE_AITER", "1"),)).experts == "AiterW4A16ExpertsMonolithic"
    # map_mxfp4_backend knows xpu, KernelConfig does not: refused at start.
    assert answer("0.33.0", platform="xpu", capability=None, moe_backend="xpu").status == "error"


def test_an_mxfp4_layer_without_model_type_whose_routing_rules_out_gpt_oss_is_not_answered_as_gpt_oss():
    # vLLM: quant_method mxfp4 is GptOssMxfp4Config only for model_type gpt_oss (Q/mxfp4.py
    # override_quantization_method); GPT-OSS's MLPBlock routes with softmax and swigluoai, so a
    # DeepSeek-V4 layer (sqrtsoftplus routing) without a model_type is Mxfp4Config's.
    v = _values(front_end="mxfp4", routing_method="deepseek_v4", activation="silu", swiglu_limit=10.0)
    assert v["mxfp4_selector"] == "deepseek_v4"
    assert mxfp4_selector("mxfp4_static", "mxfp4", None, "routing deepseek_v4") == "deepseek_v4"
    # GPT-OSS's own fields keep the GPT-OSS guess
    assert _values(front_end="mxfp4", routing_method="renormalize", activation="swigluoai", has_bias=True)["mxfp4_selector"] == "generic"
