"""The differential harness's INT8, WNA16 and W4A8 pieces that run without vLLM: the sampler's
checkpoint axes, what our side is told, the registry, and the simulated CPU platform rule."""

from __future__ import annotations

import json

from moe_oracle.verify.cases import Deployment
from moe_oracle.verify.frontends import FRONT_ENDS, QUANT_METHOD
from moe_oracle.verify.ours import config_for
from moe_oracle.verify.space import FRONT_END_SCHEMES, FRONT_ENDS_BY_FAMILY, exhaustive_deployments, random_deployments
from moe_oracle.verify.vllm_sim import Simulation

FAMILIES = ["wna16", "int8", "w4a8_fp8", "w4a8_int8"]


def test_every_sampled_front_end_is_registered_with_its_quant_method():
    for family in FAMILIES:
        for front in FRONT_ENDS_BY_FAMILY[family]:
            assert front in FRONT_ENDS and front in QUANT_METHOD


def test_wna16_checkpoints_are_coherent_per_front_end():
    deps = [d for d in random_deployments(3000, 11, ["wna16"])]
    assert {d.front_end for d in deps} == {"ct_wna16", "gptq", "awq", "moe_wna16"}
    for d in deps:
        assert d.weight_group_size is not None and d.zero_point is not None
        key = d.weight_key or ""
        assert key.endswith("_asym") == d.zero_point
        assert ("g32" in key) == (d.weight_group_size == 32 and key.startswith("int4"))
        if d.front_end == "awq":
            assert d.act_order is None
    # every field vLLM reads is sampled, refusals included
    assert {d.act_order for d in deps if d.front_end == "ct_wna16"} >= {None, "weight", "group", "dynamic", "static"}
    assert {d.weight_group_size for d in deps} >= {-1, 32, 64, 128, 48, 256}
    assert any(d.front_end == "gptq" and d.zero_point for d in deps)  # AutoGPTQ refuses it
    assert any(d.front_end == "awq" and d.weight_key.startswith("int8") for d in deps)  # AutoAWQ refuses it


def test_front_ends_with_fixed_keys_are_given_only_those():
    for d in random_deployments(3000, 12, ["int8"]):
        if d.front_end in FRONT_END_SCHEMES:
            assert (d.weight_key, d.activation_key) in FRONT_END_SCHEMES[d.front_end]
    for d in exhaustive_deployments(shapes=[(8, 2, 4096, 14336)], families=["int8"], platforms=["xpu"]):
        if d.front_end in FRONT_END_SCHEMES:
            assert (d.weight_key, d.activation_key) in FRONT_END_SCHEMES[d.front_end]


def test_our_side_is_told_the_checkpoint_fields():
    dep = Deployment(platform="cuda", capability=90, family="wna16", front_end="gptq", weight_key="int4_static_g32", weight_group_size=32, act_order="group", zero_point=False)
    cfg = config_for(dep)
    assert (cfg.quant_method, cfg.weight_group_size, cfg.act_order, cfg.weight_zero_point) == ("gptq", 32, "group", False)
    plain = config_for(Deployment(platform="cuda", capability=90, family="wna16", front_end="ct_wna16", weight_key="int4_static", weight_group_size=128))
    assert plain.act_order == "none"
    assert config_for(Deployment(platform="cuda", capability=90, family="int8", weight_key="int8_static_channel", activation_key="int8_dynamic_token")).act_order is None


def test_deployments_with_checkpoint_fields_round_trip_through_json():
    dep = Deployment(platform="rocm", arch="gfx1100", family="wna16", front_end="ct_wna16", weight_key="int4_static", weight_group_size=64, act_order="weight", zero_point=False)
    again = Deployment.from_dict(json.loads(json.dumps(dep.to_dict())))
    assert again == dep and again.key() == dep.key()


def test_the_zen_platform_is_an_x86_cpu_without_amx_that_has_zentorch():
    rule = Simulation._platform_class
    assert rule(Deployment(platform="cpu", arch="x86_64", cpu_amx=False, packages=("zentorch",))) == "zen_cpu"
    assert rule(Deployment(platform="cpu", arch="x86_64", cpu_amx=True, packages=("zentorch",))) == "cpu"  # Intel
    assert rule(Deployment(platform="cpu", arch="x86_64", cpu_amx=False)) == "cpu"
    assert rule(Deployment(platform="cpu", arch="aarch64", packages=("zentorch",))) == "cpu"
    assert rule(Deployment(platform="cuda", capability=90, packages=("zentorch",))) == "cuda"
