"""MoEConfig, quant schemes, predicates and the vocabulary schema."""

from __future__ import annotations

import json
import pickle

import pytest

from moe_oracle import ConfigError, Device, MoEConfig, ParallelConfig
from moe_oracle.core.environment import ABSENT, Environment, parse_package_spec
from moe_oracle.inputs.hardware import lookup_hardware
from moe_oracle.core.normalize import normalize
from moe_oracle.core.predicates import compile_value_spec
from moe_oracle.core.quant import SCHEMES, QuantFamily, QuantScheme, scheme_by_name
from moe_oracle.tools.schemagen import render
from moe_oracle.core._resources import schema_dir
from moe_oracle.core.vocab import Activation

H200 = Device("cuda", capability=90)


def cfg(**kw):
    base = dict(num_experts=128, top_k=8, hidden_size=2048, intermediate_size=768, device=H200)
    base.update(kw)
    return MoEConfig(**base)


@pytest.mark.parametrize(
    ("kwargs", "path", "suggestion"),
    [
        ({"activation": "slu"}, "$.activation", "silu"),
        ({"routing_method": "deepseekv3"}, "$.routing_method", "deepseek_v3"),
        ({"top_k": 0}, "$.top_k", None),
        ({"num_experts": "128"}, "$.num_experts", None),
        ({"top_k": 200}, "$.top_k", None),
        ({"in_dtype": "bf16"}, "$.in_dtype", "bfloat16"),
        ({"swiglu_limit": float("nan")}, "$.swiglu_limit", None),
        ({"num_experts": 2**50}, "$.num_experts", None),
    ],
)
def test_bad_fields_name_field_value_and_allowed(kwargs, path, suggestion):
    with pytest.raises(ConfigError) as info:
        cfg(**kwargs)
    issue = info.value.issues[0]
    assert issue.path == path
    assert issue.suggestion() == suggestion


def test_parallel_and_device_validation():
    with pytest.raises(ConfigError) as info:
        ParallelConfig(all2all_backend="deepep_low_latncy")
    assert info.value.issues[0].suggestion() == "deepep_low_latency"
    with pytest.raises(ConfigError):
        ParallelConfig(tp_size=0)
    with pytest.raises(ConfigError) as info:
        Device("rocm", capability=90)
    assert info.value.issues[0].path == "$.device.capability"


def test_strings_are_coerced_and_moe_backend_normalized():
    c = cfg(activation="gelu_tanh", moe_backend="FlashInfer-TRTLLM")
    assert c.activation is Activation.GELU_TANH
    assert c.moe_backend == "flashinfer_trtllm"


def test_hash_is_cached_but_never_pickled():
    c = cfg()
    h = hash(c)
    assert "_hash" in c.__dict__ and hash(c) == h
    clone = pickle.loads(pickle.dumps(c))
    assert clone == c and "_hash" not in clone.__dict__


def test_predicate_hash_is_cached_but_never_pickled():
    p = compile_value_spec("device_capability", {"in": [90, 100], "min": 80})
    h = hash(p)
    assert "_hash" in p.__dict__ and hash(p) == h
    clone = pickle.loads(pickle.dumps(p))
    assert clone == p and "_hash" not in clone.__dict__ and hash(clone) == h
    assert clone.test(90) and not clone.test(120)


def test_derived_parallel_fields_follow_vllm():
    env = Environment()
    tp = normalize(cfg(parallel=ParallelConfig(tp_size=8)), env, (), ()).values
    assert (tp["moe_tp_size"], tp["ep_size"], tp["intermediate_size_per_partition"], tp["dispatch"]) == (8, 1, 96, "none")
    dp_no_ep = normalize(cfg(parallel=ParallelConfig(dp_size=4)), env, (), ()).values
    assert (dp_no_ep["moe_tp_size"], dp_no_ep["all2all"], dp_no_ep["dispatch"]) == (4, "none", "allgather_reducescatter")
    ll = normalize(cfg(parallel=ParallelConfig(dp_size=8, use_ep=True, all2all_backend="deepep_low_latency")), env, (), ()).values
    assert (ll["ep_size"], ll["moe_tp_size"], ll["num_local_experts"], ll["intermediate_size_per_partition"], ll["activation_format"]) == (8, 1, 16, 768, "batched_experts")
    tp_ep = normalize(cfg(parallel=ParallelConfig(tp_size=8, use_ep=True)), env, (), ()).values
    assert (tp_ep["ep_size"], tp_ep["all2all"], tp_ep["dispatch"]) == (8, "none", "none")


def test_quant_schemes_and_aliases():
    assert scheme_by_name("FP8-Blk") is SCHEMES["fp8_block"]
    assert SCHEMES["nvfp4"].family is QuantFamily.NVFP4
    assert QuantScheme("fp8_static_channel", "fp8_dynamic_group128").name == "fp8_static_channel+fp8_dynamic_group128"
    with pytest.raises(ValueError):
        QuantScheme(None, "fp8_dynamic_token")
    with pytest.raises(ValueError):
        QuantScheme("fp9", None)


@pytest.mark.parametrize(
    ("spec", "passing", "failing"),
    [
        ([90, 100], [90, 100], [89, 120]),
        ({"not_in": ["a"]}, ["b"], ["a"]),
        ({"min": 2, "max": 8}, [2, 8], [1, 9, "x", True]),
        ({"multiple_of": 128}, [0, 256], [96, "128"]),
    ],
)
def test_predicate_keywords(spec, passing, failing):
    p = compile_value_spec("f", spec)
    assert all(p.test(v) for v in passing)
    assert not any(p.test(v) for v in failing)


def test_version_predicates_separate_absence_from_range():
    present = compile_value_spec("packages.x", {"present": True})
    version = compile_value_spec("packages.x", {"version": ">=1.2,<2"})
    assert present.test("1.0") and not present.test(ABSENT)
    assert version.test("1.5") and not version.test("2.0") and version.test(ABSENT)
    with pytest.raises(ValueError):
        compile_value_spec("packages.x", {"version": "=>1"})


def test_environment_declaration_and_fingerprint():
    env = Environment.declared(["FlashInfer_Python==0.7.2"], ["deep_ep"], {"VLLM_BATCH_INVARIANT": "1"})
    assert env.package("flashinfer-python") == "0.7.2" and env.package("deep-ep") is ABSENT and env.package("vllm") is None
    assert env.fingerprint == Environment.declared(["flashinfer-python==0.7.2"], ["deep-ep"], {"VLLM_BATCH_INVARIANT": "1"}).fingerprint
    assert env.fingerprint != Environment().fingerprint
    with pytest.raises(ConfigError):
        parse_package_spec("vllm>=0.10")
    with pytest.raises(ConfigError):
        Environment.declared(["vllm==1.0"], ["vllm"])


def test_hardware_catalog_exact_capabilities():
    assert [lookup_hardware(n).device.capability for n in ("H200", "B200", "B300", "RTX PRO 6000", "gb10")] == [90, 100, 103, 120, 121]
    assert lookup_hardware("mi355x").device.arch == "gfx950"
    with pytest.raises(ConfigError) as info:
        lookup_hardware("H200X")
    assert info.value.issues[0].suggestion() == "H200"


def test_vocabulary_schema_is_generated_from_the_code():
    committed = (schema_dir() / "vocabulary.schema.json").read_text(encoding="utf-8")
    assert json.loads(committed) == json.loads(render()), "run: python -m moe_oracle.tools.schemagen"
