"""The version model: engine ranges on every kind of item, release-named answers, per-release views."""

from __future__ import annotations

import copy

import pytest
from packaging.version import Version

from moe_oracle import Device, Environment, MoEConfig, Oracle
from moe_oracle.core.engine import evaluate
from moe_oracle.tools.lint import ranged_items
from moe_oracle.core.tables import load_schemas
from moe_oracle.core.versions import Known
from moe_oracle.core.vocab import ReasonCode, Source
from tests.tables_fixture import base_tables, load

B200 = Device("cuda", capability=100)
A100 = Device("cuda", capability=80)


def cfg(**kw):
    base = dict(num_experts=64, top_k=4, hidden_size=1024, intermediate_size=512, device=B200)
    base.update(kw)
    return MoEConfig(**base)


def vllm(version: str, *more: str) -> Environment:
    return Environment.declared([f"vllm=={version}", *more])


def versioned_tables() -> dict:
    """The fixture tables with one item of every versionable kind restricted to some releases."""
    t = copy.deepcopy(base_tables())
    fast, slow = t["kernels/fast.yaml"]["entries"], t["kernels/slow.yaml"]["entries"]
    fast[0]["engine"] = {"vllm": ">=0.33.0"}  # fast_monolithic appears in 0.33.0
    slow[0]["constraints"].append({"id": "slow.no_gelu_before_0_33", "engine": {"vllm": "<0.33.0"}, "field": "activation", "not_in": ["gelu"], "reason": "activation_unsupported", "hint": "gelu from 0.33.0"})
    t["prepare_finalize/pf.yaml"]["entries"][3]["engine"] = {"vllm": ">=0.32.0"}  # ht dispatch from 0.32.0
    pri = t["rules/priority.yaml"]
    pri["orders"].insert(0, {"id": "order.cuda.old", "engine": {"vllm": "<0.32.0"}, "when": {"platform": ["cuda"]}, "backends": ["slow", "fast", "optin"], "reference": "test"})
    pri["adjustments"][0]["engine"] = {"vllm": ">=0.32.0"}
    pri["opt_in_only"][0]["engine"] = {"vllm": ">=0.32.0"}
    t["rules/known_bad.yaml"]["entries"].append({"id": "bad.slow_old", "engine": {"vllm": "<0.32.0"}, "kernels": ["slow"], "when": {"num_experts": {"min": 100}}, "effect": "crash", "hint": "old crash", "reference": "test"})
    t["rules/aliases.yaml"]["backends"]["quick"]["engine"] = {"vllm": ">=0.33.0"}
    t["rules/aliases.yaml"]["all2all"]["naive"]["engine"] = {"vllm": "<0.33.0"}
    t["rules/environment.yaml"]["variables"].append({"name": "VLLM_NEW_SWITCH", "type": "bool", "parse": "int", "default": False, "doc": "test", "reference": "test", "engine": {"vllm": ">=0.33.0"}})
    t["rules/overrides.yaml"] = {"kind": "overrides", "overrides": [{"id": "override.optin", "engine": {"vllm": ">=0.33.0"}, "when": {"platform": ["cuda"]}, "explicit": ["VLLM_NEW_SWITCH"], "request": "optin", "reason": "test", "reference": "test"}]}
    t["rules/constraints.yaml"] = {"kind": "constraints", "constraints": [{"id": "constraint.old_tp", "engine": {"vllm": "<0.32.0"}, "field": "tp_size", "max": 4, "reason": "parallel_unsupported", "hint": "test"}]}
    t["rules/shortcuts.yaml"] = {"kind": "shortcuts", "shortcuts": [{"id": "shortcut.lora_slow", "engine": {"vllm": ">=0.33.0"}, "when": {"lora": [True]}, "try": [], "otherwise": "slow", "label": "for LoRA", "reason": "test", "reference": "test"}]}
    return t


@pytest.fixture()
def versioned(tmp_path):
    return load(tmp_path, versioned_tables())


def test_every_kind_of_item_holds_only_in_its_range(versioned):
    new, old = versioned.for_version("0.33.0"), versioned.for_version("0.31.0")
    assert "fast_monolithic" in {e.id for e in new.experts} and "fast_monolithic" not in {e.id for e in old.experts}
    assert "slow.no_gelu_before_0_33" in {c.rule for c in old.experts_by_id("slow").checks} - {c.rule for c in new.experts_by_id("slow").checks}
    assert {p.id for p in new.prepare_finalize} - {p.id for p in old.prepare_finalize} == {"ht"}
    assert [o.id for o in old.orders][0] == "order.cuda.old" and "order.cuda.old" not in {o.id for o in new.orders}
    assert [a.id for a in new.adjustments] == ["adjust.slow_first_on_ampere"] and old.adjustments == ()
    assert [o.id for o in new.opt_in] == ["optin.only"] and old.opt_in == ()
    assert {k.id for k in old.known_bad} == {"bad.fast_monolithic_gelu", "bad.slow_old"} and {k.id for k in new.known_bad} == {"bad.fast_monolithic_gelu"}
    assert "quick" in new.backend_names and "quick" not in old.backend_names
    assert "naive" in old.all2all_aliases and "naive" not in new.all2all_aliases
    assert "VLLM_NEW_SWITCH" in {v.name for v in new.env_vars} - {v.name for v in old.env_vars}
    assert [o.id for o in new.overrides] == ["override.optin"] and old.overrides == ()
    assert old.global_constraints and not new.global_constraints
    assert [s.id for s in new.shortcuts] == ["shortcut.lora_slow"] and old.shortcuts == ()


def test_the_environment_chooses_the_release_and_the_answer_names_it(versioned):
    d31 = evaluate(versioned, cfg(), vllm("0.31.0"))
    d33 = evaluate(versioned, cfg(), vllm("0.33.0"))
    assert d31.kernel == "slow" and d33.kernel == "fast_monolithic"  # order.cuda.old, and fast_monolithic exists only in 0.33
    assert d31.release.label() == "vLLM 0.31.0 (declared)" and d31.release.known is Known.DECLARED
    assert d33.to_dict()["engine"]["version"] == "0.33.0"
    assumed = evaluate(versioned, cfg(), Environment())
    assert assumed.release.label() == "vLLM 0.33.0 (assumed: newest modelled)" and assumed.kernel == d33.kernel
    assert "for vLLM 0.31.0 (declared)" in d31.select_line() and "Answer for: vLLM 0.31.0 (declared)" in d31.render_text()
    # A per-entry constraint of one release only, with its rule id in the failure.
    gelu = evaluate(versioned, cfg(device=A100, activation="gelu"), vllm("0.31.0"))
    assert "slow.no_gelu_before_0_33" in {f.rule for f in gelu.candidate("slow").failures}
    assert evaluate(versioned, cfg(device=A100, activation="gelu"), vllm("0.33.0")).kernel == "slow"


def test_views_are_built_once_per_admitted_set_and_the_default_costs_nothing(versioned):
    source = versioned.source
    assert versioned.for_version("0.33.0") is versioned  # load_catalog returns the newest modelled view
    assert versioned.for_release(versioned.release(Environment())) is versioned
    v31 = versioned.for_version("0.31.0")
    assert versioned.for_version(Version("0.31.0")) is v31 and versioned.for_version("0.31.0+cu130") is v31
    # Versions whose ranges admit the same items share one view; a new admitted set makes one more.
    assert versioned.for_version("0.34.0") is versioned and versioned.for_version("0.33.1.dev0+gabc") is versioned
    assert versioned.for_version("0.28.0") is v31  # every "<0.32" fact, none of ">=0.32"
    v32 = versioned.for_version("0.32.0")
    assert v32 is not v31 and v32 is not versioned and versioned.for_version("0.32.7") is v32
    # Three admitted sets (<0.32, 0.32.x, >=0.33), each linked once, at load (every range boundary is checked there).
    assert len(source._views) == 3


@pytest.mark.parametrize(
    ("version", "warning", "modelled"),
    [
        ("0.34.0", "answers are for vLLM 0.31.0\u20130.33.0; you declared 0.34.0: facts of 0.33.0 that are not known to have changed are assumed", False),
        ("0.28.0", "answers are for vLLM 0.31.0\u20130.33.0; you declared 0.28.0: facts of 0.31.0 that are not known to have changed are assumed", False),
        ("0.33.1.dev0+gabc", "you declared 0.33.1.dev0+gabc: facts of 0.33.0", False),
        ("0.32.5", "vLLM 0.32.5 is not a modelled release (0.31.0, 0.33.0); facts of 0.31.0 that are not known to have changed are assumed", False),
        ("0.31.0+cu130", None, True),
    ],
)
def test_unmodelled_releases_still_answer_with_a_warning_in_text_and_json(versioned, version, warning, modelled):
    d = evaluate(versioned, cfg(), vllm(version))
    assert d.kernel is not None and d.release.modelled is modelled
    record = d.to_dict()
    assert list(load_schemas().for_kind("decision").iter_errors(record)) == []
    texts = [w["message"] for w in record["warnings"] if w["code"] == "engine_release"]
    if warning is None:
        assert texts == [] and record["engine"]["warnings"] == []
    else:
        assert len(texts) == 1 and warning in texts[0] and record["engine"]["warnings"] == texts
        assert f"WARNING: {texts[0]}" in d.render_text()


def test_a_known_release_assumes_the_package_versions_it_pins(versioned):
    d = evaluate(versioned, cfg(), vllm("0.31.0"))
    assert d.normalized.values["packages.fastpkg"] == "1.0" and d.normalized.sources["packages.fastpkg"] is Source.ENGINE_PIN
    assert dict(d.release.assumed_packages) == {"fastpkg": "1.0"} and d.to_dict()["engine"]["assumed_packages"] == {"fastpkg": "1.0"}
    assert "Assumed: fastpkg 1.0 (assumed: pinned by vLLM 0.31.0)" in d.render_text()
    assert not d.selected.assumptions  # the pinned version answers the package checks
    # A declared version wins over the pin; a declared absence stays absent; unknown vLLM assumes nothing.
    assert evaluate(versioned, cfg(), vllm("0.33.0", "fastpkg==0.9")).candidate("fast").failures[0].code is ReasonCode.PACKAGE_VERSION_UNSUPPORTED
    absent = evaluate(versioned, cfg(), Environment.declared(["vllm==0.33.0"], absent=["fastpkg"]))
    assert absent.candidate("fast").failures[0].code is ReasonCode.PACKAGE_MISSING
    assert evaluate(versioned, cfg(), Environment()).normalized.values["packages.fastpkg"] is None
    assert evaluate(versioned, cfg(), vllm("0.34.0")).normalized.values["packages.fastpkg"] is None  # unmodelled: no pins assumed


def test_a_pinned_package_newer_than_the_tables_know_is_a_warning(versioned):
    d = evaluate(versioned, cfg(), vllm("0.33.0", "fastpkg==1.4"))
    assert [w.message for w in d.warnings] == ["fastpkg 1.4 is newer than the newest the tables know (1.3); its facts are assumed unchanged since 1.3"]


def test_a_probed_release_and_an_absent_engine(versioned):
    probed = Environment((("vllm", "0.31.0"),), frozenset(), True, (), True)
    d = evaluate(versioned, cfg(), probed)
    assert d.release.label() == "vLLM 0.31.0 (probed)"
    none = Environment((), frozenset(), True, (), True)
    assert evaluate(versioned, cfg(), none).release.label() == "vLLM 0.33.0 (assumed: newest modelled; vllm is not installed)"
    assert "vllm" in versioned.package_names  # so probe_environment reads the engine's version


def test_oracle_memo_separates_releases(versioned):
    oracle = Oracle(versioned)
    a, b = oracle.select(cfg(), vllm("0.31.0")), oracle.select(cfg(), vllm("0.33.0"))
    assert (a.kernel, b.kernel) == ("slow", "fast_monolithic") and oracle.select(cfg(), vllm("0.31.0")) is a


def test_ranged_items_is_the_hook_for_range_lint_rules(versioned):
    items = {(kind, ident): str(rng) for kind, ident, rng in ranged_items(versioned) if rng is not None}
    assert items[("experts", "fast_monolithic")] == ">=0.33.0"
    assert items[("constraint", "slow:slow.no_gelu_before_0_33")] == "<0.33.0"
    assert {kind for kind, _ in items} == {"experts", "constraint", "prepare_finalize", "priority_order", "adjustment", "opt_in", "known_bad", "backend_alias", "all2all_alias", "environment", "override", "global_constraint", "shortcut"}


# ------------------------------------------------------------------ the shipped tables


def test_shipped_engine_table_models_vllm_0_29_to_0_34_with_flashinfer_pins(catalog):
    spec = catalog.engine
    assert (spec.name, spec.display) == ("vllm", "vLLM")
    assert [(str(r.version), r.pins["flashinfer-python"]) for r in spec.releases] == [
        ("0.29.0", "0.6.18"), ("0.30.0", "0.6.18.post1"), ("0.31.0", "0.7.0.post1"), ("0.32.0", "0.7.0.post1"), ("0.33.0", "0.7.2.post1"), ("0.34.0", "0.7.3")]
    # 0.34.0 was registered unverified until the differential tiers passed on it (2026-12-04).
    assert [str(r.version) for r in spec.releases if not r.verified] == []
    assert dict(spec.newest_packages) == {"flashinfer-python": "0.7.4"}


def test_declaring_vllm_alone_answers_for_its_flashinfer(catalog):
    d = evaluate(catalog, MoEConfig(num_experts=128, top_k=8, hidden_size=2048, intermediate_size=768, device=B200), vllm("0.31.0"))
    assert d.normalized.values["packages.flashinfer-python"] == "0.7.0.post1" and d.release.label() == "vLLM 0.31.0 (declared)"
    # The pin is a known version, not an assumption; what stays unknown is the host's toolchain
    # (FlashInfer's gate without flashinfer-cubin, rules/constraints.yaml), assumed found.
    assert d.kernel == "flashinfer_trtllm_bf16_monolithic"
    assert [(a.field, a.rule) for a in d.selected.assumptions] == [("tools.nvcc", "constraint.flashinfer_toolchain.nvcc_on_path")]


def test_shipped_ranged_fact_trtllm_bf16_minimax2_routing_from_0_32(catalog):
    config = MoEConfig(num_experts=128, top_k=8, hidden_size=2048, intermediate_size=768, device=B200, routing_method="minimax2")
    old = evaluate(catalog, config, vllm("0.31.0"))
    assert "flashinfer_trtllm_bf16_monolithic.minimax2_since_0_32" in {f.rule for f in old.candidate("flashinfer_trtllm_bf16_monolithic").failures}
    assert evaluate(catalog, config, vllm("0.32.0")).kernel == "flashinfer_trtllm_bf16_monolithic"


def test_every_modelled_release_of_the_shipped_tables_links(catalog):
    for rel in catalog.engine.releases:
        view = catalog.for_version(rel.version)
        assert view.experts and view.prepare_finalize and view.engine is catalog.engine
    assert catalog.for_version(str(catalog.engine.newest.version)) is catalog
    # 0.34.0 changes experts formats (PaddedStandard): its view is not 0.33.0's.
    assert catalog.for_version("0.33.0") is not catalog.for_version("0.34.0")


@pytest.mark.parametrize(("version", "stand_in"), [("0.31.1", "0.31.0"), ("0.33.0rc1", "0.32.0"), ("0.30.5", "0.30.0")])
def test_a_version_between_modelled_releases_answers_for_the_newest_below_it(version, stand_in):
    """With several modelled releases below it (the shipped tables model 0.29.0-0.33.0), the
    stand-in is the newest of them (it crashed comparing release records before)."""
    from moe_oracle.core.oracle import default_catalog

    d = evaluate(default_catalog(), cfg(), Environment.declared([f"vllm=={version}"]))
    assert d.release.modelled is False and d.release.stand_in == stand_in
    assert any(f"{version} is not a modelled release" in w and f"facts of {stand_in}" in w for w in d.release.warnings)


@pytest.mark.parametrize("suffix", ["rc1", ".dev0", "a2"])
def test_a_pre_release_of_a_range_bound_reads_its_stand_ins_view(catalog, suffix):
    """A pre- or development release of a modelled release X admits neither ``<X`` nor ``>=X``
    (PEP 440), so its own ranges would drop every fact split at X (0.30.0rc1 matched no wna16
    priority order and selected emulation_int4 for Kimi-K2.5): it reads its stand-in's view."""
    for rel in catalog.engine.releases[1:]:
        env = Environment.declared([f"vllm=={rel.version}{suffix}"])
        release = catalog.release(env)
        assert not release.modelled and release.stand_in != str(rel.version)
        assert catalog.for_release(release) is catalog.for_version(release.stand_in)


def test_a_release_older_than_every_modelled_one_keeps_its_own_ranges(catalog):
    release = catalog.release(Environment.declared(["vllm==0.28.0"]))
    assert release.stand_in == "0.29.0" and catalog.for_release(release).key == catalog.source.key(Version("0.28.0"))
