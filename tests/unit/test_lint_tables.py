"""Table-author mistakes that loading refuses or lint reports (numeric domains, unquoted YAML
scalars, indistinguishable twins, cascades, schema wording, version bounds)."""

from __future__ import annotations

import copy

import pytest

from moe_oracle.core.errors import TableError
from moe_oracle.core.fields import CUDA_CAPABILITIES, FIELDS
from moe_oracle.inputs.hardware import GPU_CATALOG
from moe_oracle.tools.lint import lint
from tests.tables_fixture import base_tables, load


def _findings(catalog):
    return {(f.code, f.subject): f for f in lint(catalog, sample=False)}


def _slow(t):
    return t["kernels/slow.yaml"]["entries"][0]


def _issues(tmp_path, t):
    with pytest.raises(TableError) as exc:
        load(tmp_path, t)
    return exc.value.issues


# ---------------------------------------------------------------- numeric domains


@pytest.mark.parametrize(
    ("field", "bound", "arg"),
    [("num_experts", "max", 0), ("num_experts", "max", -5), ("top_k", "max", 0), ("device_capability", "min", 2000), ("hidden_size", "max", 0)],
    ids=["experts-max-0", "experts-max-neg", "top_k-max-0", "capability-min-2000", "hidden-max-0"],
)
def test_a_bound_no_value_of_the_domain_passes_is_unsatisfiable(tmp_path, field, bound, arg):
    t = copy.deepcopy(base_tables())
    _slow(t)["constraints"].append({"id": "slow.bad_bound", "field": field, bound: arg, "reason": "shape_unsupported", "hint": "test"})
    finding = _findings(load(tmp_path, t))[("unsatisfiable", "slow:slow.bad_bound")]
    assert finding.severity == "error"
    assert FIELDS[field].ints.describe() in finding.message


@pytest.mark.parametrize(
    ("field", "spec"),
    [("num_experts", {"max": 512}), ("num_experts", {"min": 1, "max": 1}), ("num_experts", {"multiple_of": 128, "not_multiple_of": 256}), ("num_experts", {"not_in": [1, 2, 3]}), ("intermediate_size_per_partition", {"in": [0, 8]})],
    ids=["max-512", "exactly-1", "odd-multiple", "not-in", "in-zero-allowed"],
)
def test_a_bound_some_value_of_the_domain_passes_is_not_reported(tmp_path, field, spec):
    t = copy.deepcopy(base_tables())
    _slow(t)["constraints"].append({"id": "slow.fine", "field": field, **spec, "reason": "shape_unsupported", "hint": "test"})
    assert ("unsatisfiable", "slow:slow.fine") not in _findings(load(tmp_path, t))


def test_moduli_no_integer_satisfies_are_unsatisfiable(tmp_path):
    t = copy.deepcopy(base_tables())
    _slow(t)["constraints"].append({"id": "slow.mult", "field": "num_experts", "multiple_of": 4, "not_multiple_of": 2, "reason": "shape_unsupported", "hint": "test"})
    assert _findings(load(tmp_path, t))[("unsatisfiable", "slow:slow.mult")].severity == "error"


def test_a_listed_value_outside_the_domain_is_refused_at_load(tmp_path):
    t = copy.deepcopy(base_tables())
    t["kernels/fast.yaml"]["entries"][1]["platforms"] = {"cuda": {"device_capability": [100, 103, 1070]}}
    _slow(t)["constraints"].append({"id": "slow.zero", "field": "num_experts", "not_in": [0], "reason": "shape_unsupported", "hint": "test"})
    issues = {(i.entry, i.path): i for i in _issues(tmp_path, t)}
    cap = issues[("fast", "$.entries[1].platforms.cuda.device_capability")]
    assert cap.value == 1070 and "[10, 200]" in cap.format()
    zero = issues[("slow", "$.entries[0].constraints[1].not_in")]
    assert zero.value == 0 and "integer >= 1" in zero.format()


def test_a_capability_no_gpu_has_is_refused_with_a_did_you_mean(tmp_path):
    t = copy.deepcopy(base_tables())
    t["kernels/fast.yaml"]["entries"][1]["platforms"] = {"cuda": {"device_capability": [100, 1003]}}
    t["kernels/fast.yaml"]["entries"][0]["platforms"] = {"cuda": {"device_capability": [100, 102]}}
    issues = {i.entry: i for i in _issues(tmp_path, t)}
    assert issues["fast"].value == 1003
    assert issues["fast_monolithic"].value == 102 and issues["fast_monolithic"].suggestion() in ("100", "103", "120", "121")
    assert "did you mean" in issues["fast_monolithic"].format()


@pytest.mark.parametrize(("key", "arg"), [("min", 8.9), ("max", 99.5)])
def test_a_fractional_bound_on_an_integer_field_is_refused(tmp_path, key, arg):
    t = copy.deepcopy(base_tables())
    _slow(t)["constraints"].append({"id": "slow.frac", "field": "device_capability", key: arg, "reason": "sm_unsupported", "hint": "test"})
    (issue,) = _issues(tmp_path, t)
    assert issue.path == f"$.entries[0].constraints[1].{key}" and issue.value == arg and "integers" in issue.message


def test_every_capability_of_the_hardware_catalog_is_a_known_capability():
    caps = {hw.device.capability for hw in GPU_CATALOG.values() if hw.device.capability is not None}
    assert caps and caps <= set(CUDA_CAPABILITIES)
    assert all(FIELDS["device_capability"].ints.contains(c) for c in CUDA_CAPABILITIES)


# ---------------------------------------------------------------- unquoted YAML scalars in string lists


def test_an_unquoted_yaml_boolean_in_a_string_list_is_refused_with_a_quoting_hint(tmp_path):
    """``in: [gfx908, no, gfx942]``: YAML reads ``no`` as False; the list must not silently hold it."""
    t = copy.deepcopy(base_tables())
    path = tmp_path / "kernels" / "slow.yaml"
    load(tmp_path, t)  # writes the files
    text = path.read_text(encoding="utf-8").replace("constraints:\n", "constraints:\n  - id: slow.arch\n    field: gpu_arch\n    in: [gfx908, no, gfx942]\n    reason: sm_unsupported\n    hint: test\n", 1)
    path.write_text(text, encoding="utf-8")
    from moe_oracle.core.loading import load_catalog

    with pytest.raises(TableError) as exc:
        load_catalog([tmp_path / "kernels", tmp_path / "prepare_finalize", tmp_path / "rules"])
    (issue,) = exc.value.issues
    assert issue.entry == "slow" and issue.value is False and issue.path.endswith("[1]")
    assert "boolean false" in issue.message and "quote it" in issue.message


@pytest.mark.parametrize(
    ("where", "value"),
    [("supports", True), ("supports", 3), ("constraint", 1.5), ("constraint", False)],
    ids=["enum-true", "enum-int", "str-number", "str-false"],
)
def test_a_non_string_in_a_string_field_list_is_refused(tmp_path, where, value):
    t = copy.deepcopy(base_tables())
    if where == "supports":
        _slow(t)["supports"]["activation"] = ["silu", value]
    else:
        _slow(t)["constraints"].append({"id": "slow.method", "field": "quant_method", "not_in": ["fp8", value], "reason": "path_not_enabled", "hint": "test"})
    (issue,) = _issues(tmp_path, t)
    assert issue.entry == "slow" and issue.value == value and "takes strings" in issue.message and issue.path.endswith("[1]")


# ---------------------------------------------------------------- cascades


def test_an_entry_dropped_for_its_own_error_is_not_reported_again_where_rules_name_it(tmp_path):
    t = copy.deepcopy(base_tables())
    t["kernels/fast.yaml"]["entries"][0]["engine"] = {"vllm": ">=0.31,<"}  # fast_monolithic: the known-bad entry names it
    for entry in t["kernels/slow.yaml"]["entries"]:  # every entry of backend slow: orders, adjustments and the fallback name it
        entry["engine"] = {"vllm": "<<0.33"}
    t["rules/aliases.yaml"]["backends"]["typo"] = {"backends": ["slo"]}  # a real unknown backend is still reported
    issues = _issues(tmp_path, t)
    assert sorted((i.entry, i.path) for i in issues) == [
        ("fast_monolithic", "$.entries[0].engine.vllm"),
        ("slow", "$.entries[0].engine.vllm"),
        ("slow_batched", "$.entries[1].engine.vllm"),
        ("typo", "$.backends.typo.backends[0]"),
    ]


# ---------------------------------------------------------------- schema and compile messages


@pytest.mark.parametrize(
    ("mutate", "path", "value", "suggestion"),
    [
        (lambda t: _slow(t)["supports"].update(quant_schem=_slow(t)["supports"].pop("quant_scheme")), "$.entries[0].supports.quant_schem", "quant_schem", "quant_scheme"),
        (lambda t: _slow(t)["constraints"][0].update(field="num_expertz"), "$.entries[0].constraints[0].field", "num_expertz", "num_experts"),
        (lambda t: _slow(t)["constraints"][0].update({"if": {"platfrom": ["cuda"]}}), "$.entries[0].constraints[0].if.platfrom", "platfrom", "platform"),
        (lambda t: _slow(t)["constraints"][0].update(reson=_slow(t)["constraints"][0].pop("reason")), "$.entries[0].constraints[0].reson", "reson", "reason"),
        (lambda t: _slow(t)["platforms"].update(cudaa=_slow(t)["platforms"].pop("cuda")), "$.entries[0].platforms.cudaa", "cudaa", "cuda"),
    ],
    ids=["supports-key", "constraint-field", "if-key", "constraint-key", "platform-key"],
)
def test_a_nested_misspelt_key_or_field_is_named_with_a_did_you_mean(tmp_path, mutate, path, value, suggestion):
    t = copy.deepcopy(base_tables())
    mutate(t)
    issues = _issues(tmp_path, t)
    named = [i for i in issues if i.path == path]
    assert len(named) == 1 and named[0].value == value and named[0].suggestion() == suggestion, [i.format() for i in issues]
    assert all(len(i.format()) < 2000 and "{" not in i.message for i in issues)  # no dump of the mapping


def test_a_non_finite_bound_is_reported_where_it_is_written(tmp_path):
    t = copy.deepcopy(base_tables())
    _slow(t)["constraints"][0]["max"] = float("nan")
    (issue,) = _issues(tmp_path, t)
    assert issue.path == "$.entries[0].constraints[0].max" and "finite" in issue.message


def test_a_duplicate_id_in_one_file_is_reported_at_the_second_entry(tmp_path):
    t = copy.deepcopy(base_tables())
    t["kernels/slow.yaml"]["entries"][1]["id"] = "slow"
    (issue,) = _issues(tmp_path, t)
    assert issue.path == "$.entries[1].id" and "$.entries[0].id" in issue.message and issue.value == "slow"


# ---------------------------------------------------------------- twins: rank order without file names


def _with_twin(file_name: str, family: str):
    t = copy.deepcopy(base_tables())
    twin = dict(copy.deepcopy(_slow(t)), id="slow_twin")
    t[f"kernels/{file_name}.yaml"] = {"kind": "experts", "family": family, "reference": "test", "entries": [twin]}
    return t


@pytest.mark.parametrize("file_name", ["aa_twin", "zz_twin"])
def test_a_copy_of_an_entry_in_another_file_ranks_after_it_whatever_the_file_is_called(tmp_path, file_name):
    from moe_oracle.core.config import Device, MoEConfig
    from moe_oracle.core.engine import evaluate
    from moe_oracle.core.environment import Environment

    catalog = load(tmp_path, _with_twin(file_name, file_name))
    config = MoEConfig(num_experts=8, top_k=2, hidden_size=1024, intermediate_size=512, device=Device("cuda", capability=80))
    decision = evaluate(catalog, config, Environment((("vllm", "0.33.0"), ("fastpkg", "1.2")), frozenset(), True, ()))
    assert decision.kernel == "slow"
    finding = _findings(catalog)[("indistinguishable", "slow/slow_twin")]
    assert finding.severity == "warning" and f"kernels/{file_name}.yaml" in finding.message


def test_two_files_of_one_family_are_refused(tmp_path):
    issues = _issues(tmp_path, _with_twin("aa_twin", "slow"))
    assert [(i.file, i.path, i.value) for i in issues] == [("kernels/slow.yaml", "$.family", "slow")]


def test_kernels_that_differ_in_a_check_are_not_indistinguishable(tmp_path):
    t = _with_twin("aa_twin", "aa_twin")
    t["kernels/aa_twin.yaml"]["entries"][0]["constraints"][0]["max"] = 256
    assert not [k for k in _findings(load(tmp_path, t)) if k[0] == "indistinguishable"]


# ---------------------------------------------------------------- engine range bounds


@pytest.mark.parametrize(("rng", "bad"), [("<0.32.5", "0.32.5"), (">=0.31.0,<0.33.1", "0.33.1"), ("<0.33.0", None), (">=0.31.0,<0.33.0", None)])
def test_a_range_bound_that_is_not_a_modelled_release_is_an_error(tmp_path, rng, bad):
    t = copy.deepcopy(base_tables())
    _slow(t)["constraints"].append({"id": "slow.ranged", "engine": {"vllm": rng}, "field": "top_k", "max": 8, "reason": "shape_unsupported", "hint": "test"})
    finding = _findings(load(tmp_path, t)).get(("range_bound_unmodelled", "constraint:slow:slow.ranged"))
    if bad is None:
        assert finding is None
    else:
        assert finding.severity == "error" and bad in finding.message and "0.31.0, 0.33.0" in finding.message


# ---------------------------------------------------------------- conditions (if / when)


def _guarded(t, cid, guard, **pred):
    _slow(t)["constraints"].append({"id": cid, "if": guard, **pred, "reason": "shape_unsupported", "hint": "test"})


@pytest.mark.parametrize(
    ("guard", "pred"),
    [
        ({"num_experts": {"max": 0}}, {"field": "num_experts", "max": 0}),
        ({"num_experts": {"max": 0}}, {"field": "top_k", "max": 8}),
        ({"quant_scheme": ["fp8_block"], "quant_family": ["unquantized"]}, {"field": "top_k", "max": 8}),
    ],
    ids=["never-holds-bad-predicate", "never-holds-fine-predicate", "quant-fields-never-together"],
)
def test_a_check_whose_condition_never_holds_is_a_warning_that_it_never_applies(tmp_path, guard, pred):
    """The lint judged a check's predicate without its ``if``: a predicate no value passes under a
    condition that never holds was an error ("never eligible when its condition holds"), though the
    check never applies; a dead condition over a fine predicate was not reported at all."""
    t = copy.deepcopy(base_tables())
    _guarded(t, "slow.dead", guard, **pred)
    found = [(f.code, f.severity, f.message) for f in lint(load(tmp_path, t), sample=False) if f.subject == "slow:slow.dead"]
    assert len(found) == 1 and found[0][:2] == ("unsatisfiable", "warning") and found[0][2].endswith("can never hold; the check never applies")


def test_a_known_bad_condition_whose_quant_fields_never_meet_is_reported(tmp_path):
    # each field alone can hold; no quant scheme is fp8_block and unquantized at once
    t = copy.deepcopy(base_tables())
    t["rules/known_bad.yaml"]["entries"].append({"id": "bad.never", "kernels": ["slow"], "when": {"quant_scheme": ["fp8_block"], "quant_family": ["unquantized"]}, "hint": "test", "reference": "test"})
    assert _findings(load(tmp_path, t))[("unsatisfiable", "slow:bad.never")].severity == "warning"


def test_a_predicate_only_its_condition_excludes_is_a_conditional_refusal_not_a_finding(tmp_path):
    # the shipped constraint.modelopt_nvfp4_per_token_trtllm's shape: "when C holds, refuse"
    t = copy.deepcopy(base_tables())
    _guarded(t, "slow.refuse_many", {"num_experts": {"min": 64}}, field="num_experts", max=32)
    _guarded(t, "slow.bad_under_guard", {"top_k": {"max": 8}}, field="num_experts", max=0)  # and a control: still an error
    findings = _findings(load(tmp_path, t))
    assert ("unsatisfiable", "slow:slow.refuse_many") not in findings
    assert findings[("unsatisfiable", "slow:slow.bad_under_guard")].severity == "error"


def test_cli_lint_of_a_table_directory_with_a_dead_condition_passes_with_a_warning(tmp_path):
    from tests.cli_capture import cli
    from tests.tables_fixture import write_tables

    t = copy.deepcopy(base_tables())
    _guarded(t, "slow.dead", {"num_experts": {"max": 0}}, field="num_experts", max=0)
    write_tables(tmp_path / "tables", t)
    code, out, err = cli("lint", "--tables", str(tmp_path / "tables"), "--no-drift")
    assert code == 0, out + err
    assert "warning unsatisfiable          slow:slow.dead: its condition (num_experts: <= 0) can never hold; the check never applies" in out
    assert "0 error(s), 1 warning(s)" in out
    code, out, _ = cli("lint", "--tables", str(tmp_path / "tables"), "--no-drift", "--strict")
    assert code == 1
