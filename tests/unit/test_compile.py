"""One small compiler per table kind, composed by one literal mapping; every issue reported at once."""

from __future__ import annotations

import copy
import inspect

import pytest

from moe_oracle.core.loading import load_runtime_catalog
from moe_oracle.core.compile import COMPILERS, ENGINE_REQUIRED, RUNTIME_KINDS
from moe_oracle.core.errors import TableError
from moe_oracle.core.oracle import default_catalog
from moe_oracle.core.tables import TABLE_KINDS
from tests.tables_fixture import base_tables, load, write_tables


def issues_of(tmp_path, tables) -> list:
    with pytest.raises(TableError) as info:
        load(tmp_path, tables)
    return list(info.value.issues)


def test_every_table_kind_has_exactly_one_compiler_in_dependency_order():
    assert set(COMPILERS) == set(TABLE_KINDS)
    order = list(COMPILERS)
    # Ranges need the engine; field checks the environment variables; rules the entries.
    assert order.index("engine") < order.index("environment") < order.index("experts") < order.index("prepare_finalize")
    assert all(order.index("experts") < order.index(k) for k in ("constraints", "priority", "known_bad", "aliases", "overrides", "shortcuts"))
    for kind, fn in COMPILERS.items():
        assert list(inspect.signature(fn).parameters) == ["ctx", "files"], kind
    assert set(ENGINE_REQUIRED) <= set(TABLE_KINDS) and set(RUNTIME_KINDS) <= set(TABLE_KINDS)


def test_problems_in_many_kinds_are_raised_together_with_file_entry_path_and_did_you_mean(tmp_path):
    t = copy.deepcopy(base_tables())
    t["kernels/slow.yaml"]["entries"][0]["constraints"][0] = {"id": "slow.act", "field": "activation", "not_in": ["gelu_tanhh"], "reason": "activation_unsupported", "hint": "x"}  # experts
    t["rules/priority.yaml"]["orders"][0]["backends"].append("slwo")  # priority
    t["rules/known_bad.yaml"]["entries"][0]["kernels"] = ["fast_monolitic"]  # known_bad
    t["rules/known_bad.yaml"]["entries"][0]["engine"] = {"vllmm": ">=0.31"}  # a range keyed by another engine
    t["rules/aliases.yaml"]["backends"]["quick"]["engine"] = {"vllm": "=>0.31"}  # not PEP 440
    t["rules/shortcuts.yaml"] = {"kind": "shortcuts", "shortcuts": [{"id": "s.x", "when": {"lora": [True]}, "try": ["fast"], "otherwise": "reff", "label": "x", "reason": "x", "reference": "x"}]}
    issues = issues_of(tmp_path, t)
    by = {(i.file, i.entry, i.path): i for i in issues}
    assert by["kernels/slow.yaml", "slow", "$.entries[0].constraints[0].not_in"].suggestion() == "gelu_tanh"
    assert by["rules/priority.yaml", "order.cuda", "$.orders[0].backends[3]"].suggestion() == "slow"
    assert by["rules/known_bad.yaml", "bad.fast_monolithic_gelu", "$.entries[0].kernels[0]"].suggestion() == "fast_monolithic"
    assert by["rules/known_bad.yaml", "bad.fast_monolithic_gelu", "$.entries[0].engine.vllmm"].suggestion() == "vllm"
    assert "PEP 440" in by["rules/aliases.yaml", "quick", "$.backends.quick.engine.vllm"].message
    assert by["rules/shortcuts.yaml", "s.x", "$.shortcuts[0].otherwise"].suggestion() == "ref"
    assert len(issues) == 6


def test_the_engine_table_is_required_and_checked(tmp_path):
    t = copy.deepcopy(base_tables())
    del t["rules/engine.yaml"]
    assert "exactly one table of kind 'engine' is required" in issues_of(tmp_path / "a", t)[0].message
    t = copy.deepcopy(base_tables())
    t["rules/engine.yaml"]["releases"].append({"version": "0.31.0", "verified": True})
    t["rules/engine.yaml"]["packages"]["fastpkg"]["newest"] = "0.5"
    messages = sorted(i.message for i in issues_of(tmp_path / "b", t))
    assert messages == ["older than what release 0.31.0 pins (1.0)", "release listed twice"]


def test_the_engine_is_not_a_package_requirement(tmp_path):
    t = copy.deepcopy(base_tables())
    t["kernels/slow.yaml"]["entries"][0]["packages"] = {"vllm": ""}
    [issue] = issues_of(tmp_path, t)
    assert issue.path == "$.entries[0].packages.vllm" and "engine: {vllm:" in issue.message


def test_a_release_whose_items_do_not_link_is_reported_at_load(tmp_path):
    # Only from 0.33.0 on do two prepare/finalize entries serve one dispatch kind.
    t = copy.deepcopy(base_tables())
    extra = dict(t["prepare_finalize/pf.yaml"]["entries"][0], id="local_modular_new", engine={"vllm": ">=0.33.0"})
    t["prepare_finalize/pf.yaml"]["entries"].append(extra)
    issues = issues_of(tmp_path, t)
    assert issues and all("engine release 0.33.0" in i.message for i in issues)
    assert {i.entry for i in issues} >= {"slow", "ref"}


def test_runtime_tables_implement_engine_entries_and_are_checked(tmp_path):
    engine = default_catalog()
    root = tmp_path / "rt"
    good_entry = {"id": "ours_triton", "implements": "triton", "adapter": "tests.fake:Ours", "provider": "moe_oracle", "runtime": "untested", "supports": {"activation": ["silu"]}}
    tables = {
        "kernels/ours.yaml": {"kind": "experts", "family": "ours", "reference": "test", "entries": [good_entry]},
        "prepare_finalize/ours.yaml": {"kind": "prepare_finalize", "reference": "test", "entries": [{"id": "ours_pf", "implements": "no_dp_ep_modular", "adapter": "tests.fake:PF", "provider": "moe_oracle", "runtime": "untested"}]},
        "rules/priority.yaml": {"kind": "priority", "orders": [{"id": "ours.order", "when": {"platform": ["cuda"]}, "backends": ["triton"], "reference": "test"}]},
    }
    runtime = load_runtime_catalog(engine, write_tables(root, tables))
    ours = runtime.experts_by_id("ours_triton")
    assert (ours.backend, ours.implements, ours.upstream) == ("triton", "triton", "TritonExperts")
    rules = [c.rule for c in ours.checks]
    assert rules.index("triton.platform") < rules.index("ours_triton.supports.activation")  # inherited first, then its own
    bad = copy.deepcopy(tables)
    bad["kernels/ours.yaml"]["entries"].append(dict(good_entry, id="triton_wna16", implements="tritonn"))
    bad["rules/known_bad.yaml"] = {"kind": "known_bad", "entries": []}
    with pytest.raises(TableError) as info:
        load_runtime_catalog(engine, write_tables(tmp_path / "bad", bad))
    messages = {(i.path, i.message) for i in info.value.issues}
    assert ("$.kind", "a runtime table set holds only experts, prepare_finalize and priority tables; the rest comes from the engine tables") in messages
    with pytest.raises(TableError) as info:
        del bad["rules/known_bad.yaml"]
        load_runtime_catalog(engine, write_tables(tmp_path / "bad2", bad))
    by = {i.path: i for i in info.value.issues}
    assert by["$.entries[1].implements"].suggestion() == "triton"
    assert "may not repeat an engine kernel id" in by["$.entries[1].id"].message
