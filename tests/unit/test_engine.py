"""Engine semantics on a small synthetic catalog (tests/tables_fixture.py)."""

from __future__ import annotations

import pytest

from moe_oracle import ConfigError, Device, Environment, MoEConfig, NoEligibleKernelError, Oracle, ParallelConfig
from moe_oracle.core.engine import evaluate
from moe_oracle.core.records import Status
from moe_oracle.core.vocab import ReasonCode
from tests.tables_fixture import base_tables, load

B200 = Device("cuda", capability=100)
A100 = Device("cuda", capability=80)
H200 = Device("cuda", capability=90)


def cfg(**kw):
    base = dict(num_experts=64, top_k=4, hidden_size=1024, intermediate_size=512, device=B200)
    base.update(kw)
    return MoEConfig(**base)


def codes(decision, kernel):
    return sorted({f.code.value for f in decision.candidate(kernel).failures})


def test_monolithic_precedes_modular_within_a_backend_and_wins(small_catalog):
    d = evaluate(small_catalog, cfg(), Environment())
    order = [c.kernel for c in d.candidates]
    assert order.index("fast_monolithic") < order.index("fast") < order.index("slow")
    assert d.kernel == "fast_monolithic"
    assert d.prepare_finalize == "local_monolithic"
    assert d.candidate("fast").status is Status.ELIGIBLE
    assert d.candidate("fast").outranked_by == "fast_monolithic"


def test_every_predicate_is_evaluated_no_short_circuit(small_catalog):
    # Wrong SM, too many experts and an unsupported activation: all three reported for `slow`.
    d = evaluate(small_catalog, cfg(device=Device("cuda", capability=75), num_experts=1024, activation="relu2_no_mul"), Environment())
    failures = {(f.code.value, f.field) for f in d.candidate("slow").failures}
    assert failures == {("sm_unsupported", "device_capability"), ("shape_unsupported", "num_experts"), ("activation_unsupported", "activation")}


def test_unknown_package_abstains_and_is_an_assumption(small_catalog):
    d = evaluate(small_catalog, cfg(), Environment())
    winner = d.selected
    assert winner is not None and winner.kernel == "fast_monolithic"
    assert {a.field for a in winner.assumptions} == {"packages.fastpkg"}
    assert d.to_dict()["assumptions"][0]["rule"] == "fast_monolithic.packages.fastpkg"


def test_known_absent_package_rejects_and_version_range_is_checked(small_catalog):
    absent = evaluate(small_catalog, cfg(), Environment.declared(absent=["fastpkg"]))
    assert codes(absent, "fast") == ["package_missing"]
    old = evaluate(small_catalog, cfg(), Environment.declared(["fastpkg==0.9"]))
    assert codes(old, "fast") == ["package_version_unsupported"]
    ok = evaluate(small_catalog, cfg(), Environment.declared(["fastpkg==1.2"]))
    assert ok.kernel == "fast_monolithic" and ok.selected.assumptions == ()


def test_demotion_is_recorded_and_changes_the_order(small_catalog):
    d = evaluate(small_catalog, cfg(device=A100), Environment())
    assert d.backend_order[0] == "slow"
    assert [(x.rule, x.backend, x.position) for x in d.demotions] == [("adjust.slow_first_on_ampere", "slow", "front")]
    assert d.kernel == "slow"


def test_adjustment_on_unknown_input_is_not_applied_and_is_noted(small_catalog):
    d = evaluate(small_catalog, cfg(device=Device("cuda")), Environment())
    assert d.demotions == ()
    assert any("adjust.slow_first_on_ampere" in n for n in d.notes)


def test_known_bad_warns_by_default_and_rejects_the_variant_not_its_sibling_under_the_safe_policy(small_catalog):
    config = cfg(num_experts=400, routing_method="deepseek_v3")
    faithful = evaluate(small_catalog, config, Environment())
    assert faithful.kernel == "fast_monolithic" and faithful.policy == "faithful"
    [warning] = [w for w in faithful.warnings if w.code == "known_bad"]
    assert (warning.rule, warning.reference, warning.safe_alternative) == ("bad.fast_monolithic_gelu", "test", "fast")
    assert faithful.to_dict()["warnings"][0]["safe_alternative"] == "fast"
    safe = evaluate(small_catalog, config, Environment(), policy="safe")
    bad = safe.candidate("fast_monolithic")
    assert [f.code for f in bad.failures] == [ReasonCode.KNOWN_BAD]
    assert bad.failures[0].observed == {"routing_method": "deepseek_v3", "num_experts": 400}
    assert safe.kernel == "fast" and safe.warnings == ()  # the modular sibling stays eligible
    clean = evaluate(small_catalog, cfg(num_experts=200, routing_method="deepseek_v3"), Environment())
    assert clean.kernel == "fast_monolithic" and clean.warnings == ()


def test_requested_backend_is_strict_with_the_full_trail(small_catalog):
    oracle = Oracle(small_catalog)
    d = oracle.select(cfg(moe_backend="slow"))
    assert d.kernel == "slow" and d.requested == ("slow",)
    assert codes(d, "fast_monolithic") == ["not_requested"]
    with pytest.raises(NoEligibleKernelError) as info:
        oracle.select(cfg(moe_backend="slow", num_experts=1024))
    err = info.value
    assert err.decision.winner is None
    assert "slow" in str(err) and "shape_unsupported" in str(err)


def test_alias_requests_its_backend_and_unknown_names_fail_before_evaluation(small_catalog):
    assert evaluate(small_catalog, cfg(moe_backend="Quick"), Environment()).requested == ("fast",)
    with pytest.raises(ConfigError) as info:
        evaluate(small_catalog, cfg(moe_backend="slwo"), Environment())
    assert info.value.issues[0].suggestion() == "slow"


def test_backend_outside_the_order_is_path_not_enabled_unless_requested(small_catalog):
    d = evaluate(small_catalog, cfg(device=Device("rocm", arch="gfx942")), Environment())
    fast = d.candidate("fast")
    assert ReasonCode.PATH_NOT_ENABLED in {f.code for f in fast.failures}
    assert d.kernel == "ref"  # slow is CUDA-only, so the fallback wins on ROCm


def test_opt_in_backend_is_rejected_in_auto_and_eligible_on_request(small_catalog):
    auto = evaluate(small_catalog, cfg(device=A100, activation="gelu"), Environment())
    assert codes(auto, "optin") == ["activation_unsupported", "path_not_enabled"]
    requested = evaluate(small_catalog, cfg(moe_backend="optin"), Environment())
    assert requested.kernel == "optin"


def test_batched_format_pairs_only_with_batched_experts(small_catalog):
    ep = ParallelConfig(dp_size=4, use_ep=True, all2all_backend="deepep_low_latency")
    d = evaluate(small_catalog, cfg(device=A100, parallel=ep), Environment())
    assert d.kernel == "slow_batched" and d.prepare_finalize == "ll"
    failures = {f.rule: f for f in d.candidate("slow").failures if f.code is ReasonCode.PAIRING_INCOMPATIBLE}
    # The oracle's activation-format peek rejects it, and so does the pairing check.
    assert failures["slow.activation_format"].observed == "batched_experts"
    assert failures["slow.pairing"].observed == "deepep_low_latency"
    # Monolithic kernels have no P/F for all2all dispatch at all.
    assert ReasonCode.PAIRING_INCOMPATIBLE in {f.code for f in d.candidate("fast_monolithic").failures}


def test_prepare_finalize_requirements_warn_when_faithful_and_reject_when_safe(small_catalog):
    # vLLM selects experts without building their prepare/finalize: the faithful answer is the
    # kernel it selects, with an unchecked warning naming the P/F requirement that fails later.
    ep = ParallelConfig(dp_size=4, use_ep=True, all2all_backend="deepep_low_latency")
    env = Environment.declared(absent=["deep-ep"])
    d = evaluate(small_catalog, cfg(device=A100, parallel=ep), env)
    assert d.kernel == "slow_batched"
    unchecked = [w for w in d.warnings if w.code == "unchecked"]
    assert [w.failure.rule for w in unchecked] == ["ll.packages.deep-ep"]
    assert unchecked[0].failure.code is ReasonCode.PACKAGE_MISSING and "prepare/finalize" in unchecked[0].message
    safe = evaluate(small_catalog, cfg(device=A100, parallel=ep), env, policy="safe")
    failure = safe.candidate("slow_batched").failures[0]
    assert (failure.code, failure.rule) == (ReasonCode.PACKAGE_MISSING, "ll.packages.deep-ep")
    assert safe.kernel != "slow_batched"


def test_runtime_view_keeps_prepare_finalize_requirements_blocking(small_catalog):
    from dataclasses import replace as _replace

    runtime = _replace(small_catalog, view_name="runtime")
    ep = ParallelConfig(dp_size=4, use_ep=True, all2all_backend="deepep_low_latency")
    d = evaluate(runtime, cfg(device=A100, parallel=ep), Environment.declared(absent=["deep-ep"]))
    assert d.kernel != "slow_batched" and not [w for w in d.warnings if w.code == "unchecked"]


def test_nothing_eligible_returns_a_decision_in_non_strict_mode(small_catalog):
    d = Oracle(small_catalog).select(cfg(activation="swiglustep"), strict=False)
    assert d.winner is None and d.selected is None
    assert all(c.status is Status.REJECTED for c in d.candidates)
    assert d.summary().startswith(f"{len(d.candidates)} candidates: 0 eligible")


def test_memo_returns_the_same_decision_and_env_changes_invalidate_it(small_catalog):
    oracle = Oracle(small_catalog)
    c = cfg()
    first = oracle.select(c)
    assert oracle.select(cfg()) is first  # equal config, same environment
    other = oracle.select(c, Environment.declared(absent=["fastpkg"]))
    assert other is not first and other.kernel == "slow"
    # Notes change no selection (not in the fingerprint) but the record echoes them: not memoized across.
    a, b = Environment(notes=("read from A",)), Environment(notes=("read from B",))
    assert a.fingerprint == b.fingerprint
    assert oracle.select(c, a).to_dict()["environment"]["notes"] == ["read from A"]
    assert oracle.select(c, b).to_dict()["environment"]["notes"] == ["read from B"]


def test_table_file_order_does_not_change_the_decision(tmp_path):
    tables = base_tables()
    reversed_tables = dict(reversed(list(tables.items())))
    a = load(tmp_path / "a", tables)
    b = load(tmp_path / "b", reversed_tables)
    for config in (cfg(), cfg(device=A100), cfg(num_experts=400, routing_method="deepseek_v3")):
        da, db = evaluate(a, config, Environment()), evaluate(b, config, Environment())
        assert da.to_dict()["candidates"] == db.to_dict()["candidates"]
    assert a.tables_hash == b.tables_hash


def test_batch_invariance_env_var_is_read_and_echoed(small_catalog):
    d = evaluate(small_catalog, cfg(), Environment(env=(("VLLM_BATCH_INVARIANT", "1"),)))
    assert d.to_dict()["inputs"]["batch_invariant"] == {"value": True, "source": "env_var"}
    assert codes(d, "fast") == ["batch_invariance_unsupported"]
