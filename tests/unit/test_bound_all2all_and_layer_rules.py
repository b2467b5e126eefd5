"""Mechanisms added for the NVFP4/MXFP8 families, on the small synthetic catalog (tests/tables_fixture.py).

* an alias that binds an all2all backend (vLLM 0.32 ``bind_passthrough_all2all_backend``);
* global constraints scoped to an interface and skipping kernels (the monolithic hash-routing gate);
* the ``present``/``version`` constraint keywords on package fields;
* activation-parameter fields ('none' when the model sets none) and ``swiglu_params``;
* a front-end key rewrite that drops the activation key.
"""

from __future__ import annotations

import copy

import pytest

from moe_oracle import ConfigError, Device, Environment, MoEConfig, ParallelConfig
from moe_oracle.core.engine import evaluate
from moe_oracle.core.errors import TableError
from moe_oracle.core.fields import NONE
from moe_oracle.core.quant import QuantScheme
from tests.tables_fixture import base_tables, load

B200 = Device("cuda", capability=100)


def cfg(**kw):
    base = dict(num_experts=64, top_k=4, hidden_size=1024, intermediate_size=512, device=B200)
    base.update(kw)
    return MoEConfig(**base)


def env(version: str = "0.33.0") -> Environment:
    return Environment.declared([f"vllm=={version}", "fastpkg==1.2"])


def _with_binding(tables):
    tables = copy.deepcopy(tables)
    tables["rules/aliases.yaml"]["backends"]["mega"] = {"backends": ["slow"], "all2all": "passthrough", "engine": {"vllm": ">=0.32.0"}}
    tables["prepare_finalize/pf.yaml"]["entries"].append(
        {"id": "pt", "dispatch": ["passthrough"], "interface": "modular", "activation_format": "standard", "carries_router_logits": False,
         "adapter": "tests.fake:PT", "provider": "moe_oracle", "runtime": "tested", "upstream": "pt", "platforms": {"cuda": {}}, "engine": {"vllm": ">=0.32.0"}})
    return tables


@pytest.fixture
def bound(tmp_path):
    return load(tmp_path, _with_binding(base_tables()))


def test_a_binding_name_turns_the_default_all2all_into_its_own(bound):
    d = evaluate(bound, cfg(moe_backend="mega", parallel=ParallelConfig(tp_size=2, use_ep=True)), env())
    assert d.config.parallel.all2all_backend.value == "passthrough"
    assert d.normalized.values["dispatch"] == "passthrough"  # even without all2all kernels (TP-only EP)
    assert d.kernel == "slow" and d.prepare_finalize == "pt"
    assert any("dispatches and combines itself" in n for n in d.notes)


def test_a_binding_name_refuses_any_other_explicit_all2all(bound):
    with pytest.raises(ConfigError, match="cannot be paired with all2all backend deepep_high_throughput"):
        evaluate(bound, cfg(moe_backend="mega", parallel=ParallelConfig(dp_size=2, use_ep=True, all2all_backend="deepep_high_throughput")), env())


def test_the_bound_all2all_is_refused_with_any_other_moe_backend(bound):
    for name in ("auto", "slow", "quick"):
        with pytest.raises(ConfigError, match="bound to the MoE backends"):
            evaluate(bound, cfg(moe_backend=name, parallel=ParallelConfig(all2all_backend="passthrough")), env())


def test_the_binding_holds_only_in_the_releases_of_its_alias(bound):
    # 0.31.0 has no "mega" name: the request is unknown (the binding never applies).
    with pytest.raises(ConfigError, match="unknown MoE backend"):
        evaluate(bound, cfg(moe_backend="mega"), env("0.31.0"))


def test_an_interface_scoped_layer_rule_binds_only_that_interface_and_skips_listed_kernels(tmp_path):
    tables = base_tables()
    tables["rules/constraints.yaml"] = {
        "kind": "constraints",
        "constraints": [
            {"id": "gate.monolithic_only", "applies_to": {"interfaces": ["monolithic"]}, "field": "has_hash_routing", "in": [False],
             "reason": "routing_unsupported", "hint": "monolithic kernels route themselves"},
        ],
    }
    d = evaluate(load(tmp_path, tables), cfg(has_hash_routing=True), env())
    assert "gate.monolithic_only" in {f.rule for f in d.candidate("fast_monolithic").failures}
    assert "gate.monolithic_only" not in {f.rule for f in d.candidate("fast").failures}
    assert d.kernel == "fast"
    tables["rules/constraints.yaml"]["constraints"][0]["applies_to"]["except_kernels"] = ["fast_monolithic"]
    d = evaluate(load(tmp_path / "b", tables), cfg(has_hash_routing=True), env())
    assert d.kernel == "fast_monolithic"
    tables["rules/constraints.yaml"]["constraints"][0]["applies_to"]["except_kernels"] = ["no_such_kernel"]
    with pytest.raises(TableError, match="unknown kernel"):
        load(tmp_path / "c", tables)


def test_package_keywords_in_a_ranged_constraint(tmp_path):
    tables = base_tables()
    tables["kernels/fast.yaml"]["entries"][1]["constraints"] = [
        {"id": "fast.pkg_since_0_33", "engine": {"vllm": ">=0.33.0"}, "field": "packages.fastpkg", "version": ">=1.2",
         "reason": "package_version_unsupported", "hint": "0.33 needs fastpkg 1.2"},
    ]
    cat = load(tmp_path, tables)
    old = Environment.declared(["vllm==0.33.0", "fastpkg==1.1"])
    assert "fast.pkg_since_0_33" in {f.rule for f in evaluate(cat, cfg(), old).candidate("fast").failures}
    older = Environment.declared(["vllm==0.31.0", "fastpkg==1.1"])
    assert "fast.pkg_since_0_33" not in {f.rule for f in evaluate(cat, cfg(), older).candidate("fast").failures}
    tables["kernels/fast.yaml"]["entries"][1]["constraints"][0]["field"] = "num_experts"
    with pytest.raises(TableError, match="applies only to packages"):
        load(tmp_path / "b", tables)


def test_activation_parameters_are_none_when_unset_and_checkable(tmp_path):
    tables = base_tables()
    tables["kernels/fast.yaml"]["entries"][1]["supports"]["swiglu_alpha"] = [NONE]
    tables["kernels/slow.yaml"]["entries"][0]["constraints"].append(
        {"id": "slow.params_need_silu", "if": {"swiglu_params": [True]}, "field": "activation", "in": ["silu"], "reason": "feature_unsupported", "hint": "t"})
    cat = load(tmp_path, tables)
    d = evaluate(cat, cfg(), env())
    assert d.normalized.values["swiglu_alpha"] == NONE and d.normalized.values["swiglu_params"] is False
    assert not d.candidate("fast").failures
    d = evaluate(cat, cfg(swiglu_alpha=1.702, activation="gelu"), env())
    assert d.normalized.values["swiglu_params"] is True
    assert "fast.supports.swiglu_alpha" in {f.rule for f in d.candidate("fast").failures}
    assert "slow.params_need_silu" in {f.rule for f in d.candidate("slow").failures}


def test_a_rewrite_may_drop_the_activation_key(tmp_path):
    tables = base_tables()
    tables["kernels/slow.yaml"]["entries"][0]["supports"]["quant_scheme"] = ["unquantized", "fp8_block", "fp8_block_w16"]
    tables["rules/frontends.yaml"] = {
        "kind": "frontends",
        "rewrites": [{"id": "rw.a16", "when": {"moe_backend": ["slow"]}, "activation": "none", "reason": "test", "reference": "test"}],
    }
    cat = load(tmp_path, tables)
    d = evaluate(cat, cfg(quant=QuantScheme("fp8_static_block128", "fp8_dynamic_group128"), moe_backend="slow"), env())
    assert (d.config.quant.weight, d.config.quant.activation) == ("fp8_static_block128", None)
    assert d.kernel == "slow"
    tables["rules/frontends.yaml"]["rewrites"][0]["activation"] = "nope"
    with pytest.raises(TableError, match="unknown quant key"):
        load(tmp_path / "b", tables)
