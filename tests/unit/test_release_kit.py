"""The release kit's pieces: per-function source diff, release registration, cause grouping,
release-ranged identity of entries, and the FlashInfer substitute bracket."""

from __future__ import annotations

import shutil
import zipfile
from pathlib import Path

import pytest
import yaml
from packaging.version import Version

from moe_oracle.core.compile.formats import identity_for, identity_issues
from moe_oracle.verify.flashinfer_substitute import bracket
from moe_oracle.verify.new_release import group_disagreements, related_functions, wheel_facts
from moe_oracle.verify.releases import ENGINE_TABLE, read_releases, register_release
from moe_oracle.verify.source_diff import diff_trees, functions_of
from moe_oracle.core.vocab import ActivationFormat

OLD = '''"""doc"""
X = [1, 2]


class A(Base):
    y = 1

    def f(self):
        """doc one"""
        return 1

    def g(self):
        return 2


def h():
    def inner():
        return 3
    return inner
'''


def _tree(root: Path, text: str, name: str = "vllm/model_executor/layers/fused_moe/m.py") -> Path:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return root


def test_functions_of_names_methods_nested_functions_and_blocks():
    names = set(functions_of(OLD))
    assert {"<module>", "A.<bases>", "A.<body>", "A.f", "A.g", "h", "h.<locals>.inner"} == names


@pytest.mark.parametrize(
    ("new", "changed"),
    [
        (OLD.replace("return 1", "return 10"), {("A.f", "changed")}),
        (OLD.replace('"""doc one"""', '"""other doc"""'), set()),  # docstrings are not compared
        (OLD.replace("return 1", "return  (1)"), set()),  # formatting is not a change
        (OLD.replace("X = [1, 2]", "X = [1, 2, 3]"), {("<module>", "changed")}),
        (OLD.replace("class A(Base)", "class A(Other)"), {("A.<bases>", "changed")}),
        (OLD.replace("        return 3", "        return 4"), {("h.<locals>.inner", "changed")}),
        (OLD.replace("    def g(self):\n        return 2\n", ""), {("A.g", "removed")}),
        (OLD + "\n\ndef k():\n    return 5\n", {("k", "added")}),
    ],
)
def test_diff_trees_reports_exactly_the_functions_whose_definition_changed(tmp_path, new, changed):
    a = _tree(tmp_path / "a", OLD)
    b = _tree(tmp_path / "b", new)
    d = diff_trees(a, b)
    assert {(f.name, f.kind) for f in d.functions} == changed


def test_diff_trees_lists_added_and_removed_files_and_refuses_a_non_tree(tmp_path):
    a = _tree(tmp_path / "a", OLD)
    b = _tree(_tree(tmp_path / "b", OLD), "Y = 1\n", "vllm/config/new.py")
    d = diff_trees(a, b)
    assert d.added_files == ["vllm/config/new.py"] and not d.removed_files and not d.functions
    with pytest.raises(FileNotFoundError, match="no vllm/ directory"):
        diff_trees(tmp_path, b)


def test_register_release_appends_once_keeps_comments_and_refuses_older(tmp_path):
    table = tmp_path / "engine.yaml"
    shutil.copy(ENGINE_TABLE, table)
    before = table.read_text()
    newest = read_releases(table)[-1].version
    nxt = f"{Version(newest).major}.{Version(newest).minor + 1}.0"
    assert register_release(nxt, date="2027-01-01", flashinfer_pin="9.9.9", substitute=("9.9.10", "not served"), path=table)
    after = table.read_text()
    assert after.startswith(before[: before.index("\npackages:")])  # earlier text (comments included) untouched
    rel = read_releases(table)[-1]
    assert (rel.version, rel.verified, rel.flashinfer_pin, rel.flashinfer_substitute) == (nxt, False, "9.9.9", ("9.9.10", "not served"))
    assert yaml.safe_load(after)["packages"] == yaml.safe_load(before)["packages"]
    assert not register_release(nxt, date=None, flashinfer_pin=None, path=table)
    with pytest.raises(ValueError, match="older than"):
        register_release("0.1.0", date=None, flashinfer_pin=None, path=table)
    with pytest.raises(ValueError, match="not X.Y.Z"):
        register_release("1.0", date=None, flashinfer_pin=None, path=table)


def test_registered_table_still_compiles(tmp_path):
    from moe_oracle.core.loading import load_catalog
    from moe_oracle.core._resources import table_dirs

    dirs = []
    for d in table_dirs():
        target = tmp_path / d.name
        shutil.copytree(d, target)
        dirs.append(target)
    rules = next(d for d in dirs if (d / "engine.yaml").exists())
    newest = read_releases(rules / "engine.yaml")[-1].version
    nxt = f"{Version(newest).major}.{Version(newest).minor + 1}.0"
    register_release(nxt, date="2027-01-01", flashinfer_pin="0.7.4", path=rules / "engine.yaml")
    catalog = load_catalog(dirs)
    assert str(catalog.engine.newest.version) == nxt and not catalog.engine.newest.verified


def _rec(family, v, o):
    return {"case": {"family": family}, "key": f"k{family}{v}{o}", "vllm": v, "ours": o}


def _ans(status, experts=None, fmt=None, detail=""):
    return {"status": status, "experts": experts, "activation_format": fmt, "backend": None, "detail": detail}


def test_group_disagreements_by_shape_largest_first():
    recs = [
        _rec("fp8", _ans("ok", "TritonExperts", "padded_standard"), _ans("ok", "TritonExperts", "standard")),
        _rec("int8", _ans("ok", "TritonExperts", "padded_standard"), _ans("ok", "TritonExperts", "standard")),
        _rec("fp8", _ans("error", detail="ValueError: needs 128 experts"), _ans("ok", "MarlinExperts", "standard")),
        _rec("fp8", _ans("error", detail="ValueError: needs 256 experts"), _ans("ok", "MarlinExperts", "standard")),
        _rec("nvfp4", _ans("ok", "A", "standard"), _ans("ok", "B", "standard")),
        _rec("nvfp4", _ans("ok", "A", "standard"), _ans("error", detail="refused: x")),
    ]
    groups = group_disagreements(recs)
    assert [(g.kind, g.count) for g in groups] == [("format", 2), ("vllm_refuses", 2), ("kernel", 1), ("ours_refuses", 1)]
    assert dict(groups[0].families) == {"fp8": 1, "int8": 1}
    assert "ValueError: needs N experts" in groups[1].key  # numbers masked: one cause


def test_related_functions_name_the_classes_of_a_cause(tmp_path):
    a = _tree(tmp_path / "a", "class TritonExperts:\n    def f(self):\n        return 1\n")
    b = _tree(tmp_path / "b", "class TritonExperts:\n    def f(self):\n        return 2\n")
    (g,) = group_disagreements([_rec("fp8", _ans("ok", "TritonExperts", "padded_standard"), _ans("ok", "TritonExperts", "standard"))])
    assert related_functions(g, diff_trees(a, b)) == ["changed fused_moe/m.py::TritonExperts.f"]


def test_wheel_facts_reads_the_flashinfer_pin_and_build_date(tmp_path):
    wheel = tmp_path / "vllm-9.9.9-cp38-abi3-x.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        info = zipfile.ZipInfo("vllm-9.9.9.dist-info/METADATA", date_time=(2027, 2, 3, 4, 5, 6))
        zf.writestr(info, "Name: vllm\nRequires-Dist: torch==2.14.0\nRequires-Dist: flashinfer-python==0.7.3\n")
    assert wheel_facts(wheel) == ("0.7.3", "2027-02-03")


def test_identity_by_engine_applies_in_its_range_and_reports_overlaps():
    d = {"by_engine": [{"engine": {"vllm": ">=0.34.0"}, "activation_format": "padded_standard", "upstream": "New"}]}
    assert identity_for(d, Version("0.33.0")) == {}
    assert identity_for(d, Version("0.34.0")) == {"activation_format": ActivationFormat.PADDED_STANDARD, "upstream": "New"}
    releases = [Version("0.33.0"), Version("0.34.0")]
    bad = {"by_engine": [{"engine": {"vllm": ">=0.33.0"}, "upstream": "A"}, {"engine": {"vllm": ">=0.34.0"}, "upstream": "B"},
                         {"engine": {"vllm": ">=9.0"}, "upstream": "C"}, {"engine": {"vllm": ">=0.34.0"}, "activation_format": "bogus"}]}
    messages = [m for _, m, _ in identity_issues(bad, releases)]
    assert "admits no modelled release" in messages and "not an activation format" in messages
    assert any(m.startswith("overlaps") for m in messages)


def test_shipped_tables_give_0_34_its_own_formats_and_keep_0_33():
    from moe_oracle.core.loading import load_catalog

    c = load_catalog()
    old, new = c.for_version("0.33.0"), c.for_version("0.34.0")
    fmt = lambda view, eid: next(e for e in view.experts if e.id == eid).activation_format.value  # noqa: E731
    assert (fmt(old, "triton"), fmt(new, "triton")) == ("standard", "padded_standard")
    assert fmt(new, "flashinfer_cutlass") == "standard" if any(e.id == "flashinfer_cutlass" for e in new.experts) else True
    up = lambda view, eid: next(e for e in view.experts if e.id == eid).upstream  # noqa: E731
    assert (up(old, "flashinfer_trtllm_mxfp4_mxfp8"), up(new, "flashinfer_trtllm_mxfp4_mxfp8")) == ("TrtLlmMxfp4ExpertsModular", "TrtLlmMxfp4Mxfp8ExpertsModular")
    assert (up(old, "cpu_zentorch_int4"), up(new, "cpu_zentorch_int4")) == ("ZentorchExpertsInt4", "ZentorchExpertsWNA16")
    pf = lambda view: next(p for p in view.prepare_finalize if p.id == "deepep_v2").activation_format.value  # noqa: E731
    assert (pf(old), pf(new)) == ("standard", "padded_standard")


def test_flashinfer_substitute_bracket():
    assert bracket("0.7.3", ["0.7.4", "0.6.18", "0.7.2.post1"]) == ("0.7.2.post1", "0.7.4")
    assert bracket("0.7.3", ["0.7.4"]) == (None, "0.7.4")


def test_deepep_v2_refuses_standard_only_experts_at_selection_from_0_34():
    """vLLM 0.34.0 P/config.py FusedMoEConfig.activation_format: DeepEP v2 makes PaddedStandard before
    selection, so FlashInfer CUTLASS (Standard only) loses where 0.33.0 selected it; a moe_backend
    that forces the batched format decides first."""
    from moe_oracle import Device, Environment, MoEConfig, ParallelConfig
    from moe_oracle.core.loading import load_catalog
    from moe_oracle.core.engine import evaluate

    c = load_catalog()
    from moe_oracle.core.quant import QuantScheme

    config = MoEConfig(num_experts=256, top_k=8, hidden_size=7168, intermediate_size=2048, device=Device("cuda", capability=90),
                       quant=QuantScheme("fp8_static_block128", "fp8_dynamic_group128"), quant_method="fp8",
                       parallel=ParallelConfig(dp_size=2, use_ep=True, all2all_backend="deepep_v2"))
    env = lambda v: Environment.declared([f"vllm=={v}", "deep-ep==1.0", "flashinfer-python==0.7.4"])  # noqa: E731
    old, new = evaluate(c, config, env("0.33.0")), evaluate(c, config, env("0.34.0"))
    assert old.kernel == "flashinfer_cutlass"  # DeepSeek-R1 FP8 on H200, DP2 + EP + deepep_v2
    assert new.kernel == "deep_gemm" and c.for_version("0.34.0").experts_by_id("deep_gemm").activation_format.value == "padded_standard"
    fi = next(x for x in new.candidates if x.kernel == "flashinfer_cutlass")
    assert "flashinfer_cutlass.activation_format.dispatch" in {f.rule for f in fi.failures}
