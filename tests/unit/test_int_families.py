"""INT8, WNA16 and W4A8 selection: checkpoint fields, the derived fields vLLM's quantization
methods compute, family request maps, constraints checked after selection, and the shipped facts
of vLLM 0.29.0-0.33.0 they encode."""

from __future__ import annotations

import copy

import pytest

from moe_oracle.core.config import Device, MoEConfig, ParallelConfig
from moe_oracle.core.environment import Environment
from moe_oracle.core.engine import evaluate
from moe_oracle.core.errors import ConfigError, TableError
from moe_oracle.core.normalize import normalize
from moe_oracle.core.oracle import default_catalog
from moe_oracle.core.quant import QUANT_KEYS, QuantScheme, method_weight_key
from tests.tables_fixture import after_selection_refusal, base_tables, load

H100 = Device("cuda", capability=90)
B200 = Device("cuda", capability=100)


def env(release: str = "0.33.0", **variables: str) -> Environment:
    return Environment((("vllm", release),), frozenset(), True, tuple(variables.items()))


def layer(quant: tuple[str | None, str | None] = ("int4_static", None), **changes) -> MoEConfig:
    base = dict(num_experts=128, top_k=8, hidden_size=4096, intermediate_size=1536, device=H100, quant=QuantScheme(*quant))
    base.update(changes)
    return MoEConfig(**base)


def values(config: MoEConfig, release: str = "0.33.0") -> dict:
    cat = default_catalog()
    return dict(normalize(config, env(release), cat.package_names, cat.env_vars).values)


# ------------------------------------------------------------------ checkpoint fields


@pytest.mark.parametrize(
    ("field", "value", "path"),
    [("act_order", "desc", "$.act_order"), ("weight_group_size", 0, "$.weight_group_size"), ("weight_group_size", -2, "$.weight_group_size"), ("weight_zero_point", "yes", "$.weight_zero_point")],
)
def test_checkpoint_fields_refuse_bad_values_naming_the_field(field, value, path):
    with pytest.raises(ConfigError) as info:
        layer(**{field: value})
    assert info.value.issues[0].path == path


def test_zero_points_default_to_what_the_weight_key_says():
    assert values(layer(("int4_static_asym", None)))["weight_zero_point"] is True
    assert values(layer(("int4_static", None)))["weight_zero_point"] is False
    assert values(layer(("int4_static", None), weight_zero_point=True))["weight_zero_point"] is True


# ------------------------------------------------------------------ vLLM check_moe_marlin_supports_config and the MoeWNA16 fallback


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"weight_group_size": 128}, True),
        ({"weight_group_size": -1}, True),
        ({"weight_group_size": 48}, False),  # not a Marlin group size
        ({"weight_group_size": 128, "hidden_size": 2880}, False),  # hidden % 128
        ({"weight_group_size": 128, "device": Device("rocm", arch="gfx942")}, False),  # never on ROCm
        ({"weight_group_size": 128, "parallel": ParallelConfig(tp_size=16)}, False),  # 96 per partition: groups straddle it
        ({"weight_group_size": 32, "parallel": ParallelConfig(tp_size=16), "act_order": "none"}, True),  # padded to whole tiles
        ({"weight_group_size": 32, "parallel": ParallelConfig(tp_size=16), "act_order": "weight"}, True),  # static ordering pads too
        ({"weight_group_size": 32, "parallel": ParallelConfig(tp_size=16), "act_order": "group"}, False),  # act-order keeps the strict shape
        ({"weight_group_size": -1, "parallel": ParallelConfig(tp_size=16), "act_order": "group"}, True),  # a no-op per channel
        ({"weight_group_size": 32, "parallel": ParallelConfig(tp_size=16)}, None),  # unknown ordering decides it
        ({"weight_group_size": 128}, True),  # unknown ordering, but both readings agree
        ({"weight_group_size": None}, None),
    ],
)
def test_marlin_moe_supported_follows_check_moe_marlin_supports_config(changes, expected):
    assert values(layer(**changes))["marlin_moe_supported"] is expected


def test_awq_ignores_activation_ordering_in_the_marlin_check():
    # vLLM 0.29.0-0.34.0 Q/auto_awq.py always passes allow_tile_padding=True; GPTQ 0.29.0 does not
    # with desc_act. Shard 96 at TP 16 holds whole groups of 32 but is no multiple of 64.
    shape = {"weight_group_size": 32, "parallel": ParallelConfig(tp_size=16), "act_order": "group"}
    awq = values(layer(("int4_static", None), quant_method="awq", **shape))
    gptq = values(layer(("int4_static", None), quant_method="gptq", **shape))
    assert (awq["marlin_moe_supported"], awq["moe_quant_method"]) == (True, "awq")
    assert (gptq["marlin_moe_supported"], gptq["moe_quant_method"]) == (False, "moe_wna16")


def test_gptq_and_awq_layers_marlin_cannot_serve_fall_back_to_moe_wna16_with_its_key():
    served = values(layer(("int4_static_g32", None), quant_method="gptq", weight_group_size=32))
    assert (served["moe_quant_method"], served["weight_quant"]) == ("gptq", "int4_static")  # AutoGPTQMoEMethod: kInt4Static
    fallback = values(layer(("int4_static_g32", None), quant_method="gptq", weight_group_size=32, hidden_size=2880))
    assert (fallback["moe_quant_method"], fallback["weight_quant"]) == ("moe_wna16", "int4_static_g32")  # MoeWNA16Method: kInt4Static32
    awq = values(layer(("int4_static_asym", None), quant_method="awq", weight_group_size=128))
    assert (awq["moe_quant_method"], awq["weight_quant"], awq["weight_zero_point"]) == ("awq", "int4_static", True)
    ct = values(layer(("int4_static_g32_asym", None), quant_method="compressed-tensors", weight_group_size=32, hidden_size=2880))
    assert (ct["moe_quant_method"], ct["weight_quant"]) == ("compressed-tensors", "int4_static_g32_asym")
    assert values(layer(quant_method="gptq"))["moe_quant_method"] is None  # group size unknown


def test_method_weight_key_keeps_other_methods_keys():
    assert method_weight_key("compressed-tensors", "int4_static_g32", 32) == "int4_static_g32"
    assert method_weight_key("gptq", "int8_static", 128) == "int8_static"
    assert method_weight_key("awq", "int8_static", 128) == "int8_static"  # AWQ has no 8-bit key: refused elsewhere
    assert method_weight_key("moe_wna16", "int4_static_g32_asym", None) == "int4_static_g32"
    assert method_weight_key(None, "int4_static_g32", 32) == "int4_static_g32"
    assert QUANT_KEYS["int8_static_asym"].symmetric is False


def test_weight_groups_aligned():
    assert values(layer(weight_group_size=128))["weight_groups_aligned"] is True
    assert values(layer(weight_group_size=128, hidden_size=2880))["weight_groups_aligned"] is False
    assert values(layer(weight_group_size=-1, hidden_size=2880))["weight_groups_aligned"] is True
    assert values(layer())["weight_groups_aligned"] is None


# ------------------------------------------------------------------ family request maps (rules/aliases.yaml requests)


def _with_request_map(**names_and_auto) -> dict:
    t = copy.deepcopy(base_tables())
    t["rules/aliases.yaml"]["requests"] = [{"id": "request.test", "when": {"platform": ["cuda"]}, "reference": "test", **names_and_auto}]
    return t


def _small(cat, backend: str):
    cfg = MoEConfig(num_experts=8, top_k=2, hidden_size=1024, intermediate_size=512, device=B200, moe_backend=backend)
    return evaluate(cat, cfg, Environment((("vllm", "0.33.0"), ("fastpkg", "1.2")), frozenset(), True, ()))


def test_a_request_map_refuses_unmapped_names_and_a_kernel_list_narrows_the_backend(tmp_path):
    cat = load(tmp_path, _with_request_map(names={"quick": {"kernels": ["fast"]}, "slow": {"kernels": ["slow_batched"]}, "fast": ["fast"]}))
    assert _small(cat, "quick").kernel == "fast"  # the modular kernel only, not fast_monolithic
    assert _small(cat, "fast").kernel == "fast_monolithic"  # the whole backend, monolithic first
    refused = _small(cat, "ref")
    assert refused.winner is None
    assert all(any(f.rule == "request.test" for f in c.failures) for c in refused.candidates)
    # slow maps to the batched kernel alone, which the standard format rejects: vLLM raises too
    assert _small(cat, "slow").winner is None
    narrowed = _small(cat, "quick").candidate("fast_monolithic")
    assert [f.rule for f in narrowed.failures] == ["request.test.kernels"]


def test_names_read_as_auto_select_as_auto(tmp_path):
    cat = load(tmp_path, _with_request_map(names={}, auto=["ref", "slow"]))
    asked = _small(cat, "ref")
    assert asked.kernel == _small(cat, "auto").kernel == "fast_monolithic"
    assert any("read as auto" in n for n in asked.notes)


def test_request_maps_are_checked_at_load(tmp_path):
    with pytest.raises(TableError) as info:
        load(tmp_path / "a", _with_request_map(names={"quick": {"kernels": ["fsat"]}}))
    assert info.value.issues[0].suggestion() == "fast"
    with pytest.raises(TableError) as info:
        load(tmp_path / "b", _with_request_map(names={"quick": ["fast"]}, auto=["quick"]))
    assert "cannot both" in info.value.issues[0].message


# ------------------------------------------------------------------ constraints checked after selection


def test_an_after_selection_constraint_refuses_the_layer_instead_of_passing_on(tmp_path):
    cat, cfg, e = after_selection_refusal(tmp_path)
    d = evaluate(cat, cfg, e)
    assert d.winner is None and any("then refuses the layer" in n for n in d.notes)
    assert evaluate(cat, cfg.with_changes(moe_backend="slow"), e).kernel == "slow"
    assert evaluate(after_selection_refusal(tmp_path / "b", after_selection=False)[0], cfg, e).kernel == "slow"  # a filter passes on instead


# ------------------------------------------------------------------ shipped facts (vLLM 0.29.0-0.33.0)


def select(config: MoEConfig, release: str = "0.33.0", **variables: str):
    return evaluate(default_catalog(), config, env(release, **variables))


def test_int8_request_map_refuses_names_the_int8_oracle_does_not_map():
    w8a8 = layer(("int8_static_channel", "int8_dynamic_token"))
    assert select(w8a8).kernel == "triton"
    assert select(w8a8.with_changes(moe_backend="batched_triton")).winner is None  # map_int8_backend: triton, humming
    assert select(w8a8.with_changes(moe_backend="triton")).kernel == "triton"


def test_w4a8_fp8_reads_moe_backend_from_0_31_and_runs_cutlass_only_on_sm90():
    w4a8 = layer(("int4_static", "fp8_dynamic_token"))
    assert select(w4a8, "0.29.0").kernel == "vllm_cutlass_w4a8"
    assert select(w4a8.with_changes(moe_backend="marlin"), "0.29.0").kernel == "vllm_cutlass_w4a8"  # never read
    assert select(w4a8.with_changes(moe_backend="marlin")).winner is None
    assert select(w4a8.with_changes(device=B200), "0.30.0").kernel == "vllm_cutlass_w4a8"
    assert select(w4a8.with_changes(device=B200)).winner is None  # exactly SM 9.0 from 0.31.0 (no humming installed)


def test_wna16_prefers_humming_to_marlin_on_sm90_from_0_32():
    ct = layer(("int4_static", None), quant_method="compressed-tensors", weight_group_size=128)
    e32 = Environment((("vllm", "0.32.0"), ("humming", "1.0")), frozenset(), True, ())
    e31 = Environment((("vllm", "0.31.0"), ("humming", "1.0")), frozenset(), True, ())
    assert evaluate(default_catalog(), ct, e32).kernel == "humming_indexed"
    assert evaluate(default_catalog(), ct, e31).kernel == "marlin"


def test_compressed_tensors_wna16_eplb_is_refused_after_marlin_is_selected():
    ct = layer(("int4_static", None), quant_method="compressed-tensors", weight_group_size=128, parallel=ParallelConfig(tp_size=4, use_ep=True, enable_eplb=True))
    assert select(ct).winner is None  # Marlin is selected, then supports_eplb (Triton only) refuses
    assert select(ct.with_changes(moe_backend="triton")).kernel == "triton_wna16"


def test_rdna3_first_on_gfx1100_from_0_30_and_a_failing_method_in_0_29():
    ct = layer(("int4_static", None), quant_method="compressed-tensors", weight_group_size=128, device=Device("rocm", arch="gfx1100"))
    assert select(ct).kernel == "rdna3_wna16"
    assert select(ct, "0.30.0").kernel == "rdna3_wna16"
    assert select(ct, "0.29.0").winner is None


@pytest.mark.parametrize("group", [128, 64, 32])
def test_compressed_tensors_w4a8_fp8_goes_to_the_int8_method_off_sm90_before_0_31(group):
    # 0.29.0-0.30.0: _is_fp8_w4a8_sm90 needs exactly SM 9.0; elsewhere _is_dynamic_token_w4a8_int
    # (no type check) takes the int4 + FP8-input checkpoint: CompressedTensorsW4A8Int8MoEMethod.
    ct = layer(("int4_static", "fp8_dynamic_token"), quant_method="compressed-tensors", weight_group_size=group, hidden_size=4096, intermediate_size=2048,
               device=Device("cpu", arch="aarch64"))
    before = select(ct, "0.30.0")
    assert before.kernel == "cpu_w4a8_int8"
    assert any(f"frontend.ct_w4a8_fp8_to_int8_off_sm90_g{group}" in n for n in before.notes)
    assert select(ct, "0.31.0").winner is None  # CompressedTensorsW4A8Fp8MoEMethod: no CPU kernel
    on_b200 = select(ct.with_changes(device=B200), "0.29.0")
    assert any("frontend.ct_w4a8_fp8_to_int8_off_sm90" in n for n in on_b200.notes)
    assert not any("frontend.ct_w4a8_fp8_to_int8_off_sm90" in n for n in select(ct.with_changes(device=Device("cuda", capability=90)), "0.30.0").notes)


def test_cpu_int8_classes_in_vllm_order():
    w8a8 = dict(quant=("int8_static_channel", "int8_dynamic_token"))
    zen = Environment((("vllm", "0.33.0"), ("zentorch", "5.0")), frozenset(), True, ())
    assert evaluate(default_catalog(), layer(**w8a8, device=Device("cpu", arch="x86_64", cpu_amx=False)), zen).kernel == "cpu_zen_int8"
    assert select(layer(**w8a8, device=Device("cpu", arch="ppc64le"))).kernel == "cpu_power_int8"
    assert select(layer(**w8a8, device=Device("cpu", arch="ppc64le")), "0.30.0").winner is None  # PowerCPUExpertsInt8 is new in 0.31.0
    assert select(layer(**w8a8, device=Device("cpu", arch="aarch64"))).kernel == "cpu_arm_int8"
    assert select(layer(**w8a8, device=Device("cpu", arch="x86_64", cpu_amx=True))).kernel == "cpu_int8"


def test_compressed_tensors_w4a8_int8_goes_to_the_fp8_method_on_sm90_before_0_31():
    ct = layer(("int4_w4a8_static_group128", "int8_dynamic_token"), quant_method="compressed-tensors", weight_group_size=128, hidden_size=4096, intermediate_size=2048)
    before = select(ct, "0.30.0")
    assert before.kernel == "vllm_cutlass_w4a8"  # _is_fp8_w4a8 has no type check before 0.31.0
    assert any("frontend.ct_w4a8_int8_to_fp8_sm90" in n for n in before.notes)
    assert select(ct, "0.31.0").winner is None  # CompressedTensorsW4A8Int8MoEMethod: CPU kernels only
    assert select(ct.with_changes(device=B200), "0.30.0").winner is None
    assert select(ct.with_changes(weight_zero_point=True), "0.30.0").winner is None
