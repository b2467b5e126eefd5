"""Drift between the FlashInfer kernel tables and the installed FlashInfer (moe_oracle.tools.drift).

Most tests replace ``flashinfer`` in ``sys.modules`` with a small fake, so they run
the same whether or not flashinfer-python is installed. One test runs the real
check and is skipped unless flashinfer imports.
"""

from __future__ import annotations

import importlib.metadata
import json
import sys
import types

import pytest

from moe_oracle.cli import main
from moe_oracle.tools.drift import DRIFT_PROBES, FLASHINFER_PACKAGE, Probe, Query, check_drift, ours_sm_set, uses_flashinfer
from moe_oracle.tools.lint import lint
from tests.tables_fixture import base_tables, load, write_tables

API = "flashinfer.fused_moe.api"
FAKE_VERSION = "0.0.fake1"


def fi_tables() -> dict:
    """The synthetic table set plus three kernels that need flashinfer-python."""
    tables = base_tables()

    def kernel(kid: str, ccs: list[int], schemes: list[str], **extra):
        entry = {
            "id": kid,
            "backend": "fi",
            "interface": "modular",
            "activation_format": "standard",
            "adapter": f"tests.fake:{kid}",
            "provider": "moe_oracle",
            "runtime": "untested",
            "upstream": kid,
            "platforms": {"cuda": {"device_capability": ccs}},
            "packages": {FLASHINFER_PACKAGE: ""},
            "supports": {"quant_scheme": schemes, "activation": ["silu"]},
            "features": {"lora": False, "batch_invariant": False, "eplb": True},
        }
        entry.update(extra)
        return entry

    sm90_block = {
        "id": "fi_a.block_sm90",
        "if": {"platform": ["cuda"], "quant_scheme": ["fp8_block"]},
        "field": "device_capability",
        "in": [90],
        "reason": "sm_unsupported",
        "hint": "FP8 block-scale only on SM 9.0",
    }
    tables["kernels/fi.yaml"] = {
        "kind": "experts",
        "family": "fi",
        "reference": "test",
        "entries": [
            kernel("fi_a", [90, 100, 103], ["unquantized", "fp8_block"], constraints=[sm90_block]),
            kernel("fi_b", [100, 103], ["unquantized"]),
            kernel("fi_unmapped", [100], ["unquantized"]),
        ],
    }
    return tables


@pytest.fixture()
def fi_catalog(tmp_path):
    return load(tmp_path, fi_tables())


def _clear_flashinfer(monkeypatch):
    for name in [n for n in sys.modules if n == "flashinfer" or n.startswith("flashinfer.")]:
        monkeypatch.delitem(sys.modules, name)


def _allow(*ccs: int):
    return classmethod(lambda cls, arch: arch in ccs)


@pytest.fixture()
def fake_flashinfer(monkeypatch):
    """A fake ``flashinfer`` package: the unified API's configs, one decorated entry point, one backend_requirement API."""
    _clear_flashinfer(monkeypatch)
    root = types.ModuleType("flashinfer")
    root.__version__ = FAKE_VERSION
    fused_moe = types.ModuleType("flashinfer.fused_moe")
    api = types.ModuleType(API)
    root.fused_moe, fused_moe.api = fused_moe, api
    api.BF16Config = type("BF16Config", (), {"supported": _allow(90, 100, 103)})
    api.BlockConfig = type("BlockConfig", (), {"supported": _allow(90, 100)})
    api.BConfig = type("BConfig", (), {"supported": _allow(100, 103, 107)})

    class Broken:
        @classmethod
        def supported(cls, arch):
            raise RuntimeError("needs a CUDA device")

    api.Broken = Broken

    def entry_point():  # @supported_compute_capability([100, 103]) metadata, as FlashInfer attaches it
        pass

    entry_point._supported_ccs = {100, 103}
    entry_point.is_compute_capability_supported = lambda cc: cc in entry_point._supported_ccs
    fused_moe.entry_point = entry_point

    def routed():  # @backend_requirement metadata: per-backend CC sets
        pass

    per_backend = {"trtllm": {100, 103, 110}, "cutlass": {90}}
    routed.is_backend_supported = lambda backend, cc=None: backend in per_backend and (cc is None or cc in per_backend[backend])
    fused_moe.routed = routed
    for module in (root, fused_moe, api):
        monkeypatch.setitem(sys.modules, module.__name__, module)
    return api


@pytest.fixture()
def no_flashinfer(monkeypatch):
    """``import flashinfer`` fails as if flashinfer-python were not installed."""
    _clear_flashinfer(monkeypatch)
    monkeypatch.setitem(sys.modules, "flashinfer", None)


PROBES = (
    Probe("fi_a", (Query(f"{API}:BF16Config.supported"),), scheme="unquantized"),
    Probe("fi_a", (Query(f"{API}:BlockConfig.supported"),), scheme="fp8_block"),
    # The first alternative does not import (as the CuTe-DSL entry points without nvidia-cutlass-dsl).
    Probe("fi_b", (Query("flashinfer.fused_moe.cute_dsl.fused_moe:entry.is_compute_capability_supported"), Query(f"{API}:BConfig.supported"))),
    Probe("not_in_this_catalog", (Query(f"{API}:BF16Config.supported"),)),
)


def test_ours_follows_platforms_and_sm_coupled_constraints(fi_catalog):
    entry = next(e for e in fi_catalog.experts if e.id == "fi_a")
    assert ours_sm_set(entry, "unquantized") == (90, 100, 103)
    assert ours_sm_set(entry, "fp8_block") == (90,)
    assert ours_sm_set(entry) == (90, 100, 103)  # union over its schemes
    assert ours_sm_set(entry, "nvfp4") == ()  # a scheme it does not support


def test_mismatches_carry_both_values_and_matches_are_silent(fi_catalog, fake_flashinfer):
    report = check_drift(fi_catalog, probes=PROBES)
    assert report.available and report.version == FAKE_VERSION
    by_subject = {r.subject: r for r in report.results}
    assert set(by_subject) == {"fi_a[unquantized]", "fi_a[fp8_block]", "fi_b"}  # unknown kernels are ignored
    assert by_subject["fi_a[unquantized]"].status == "match"
    block = by_subject["fi_a[fp8_block]"]
    assert (block.status, block.ours, block.theirs, block.only_theirs, block.only_ours) == ("mismatch", (90,), (90, 100), (100,), ())
    b = by_subject["fi_b"]
    assert (b.status, b.ours, b.theirs, b.symbol) == ("mismatch", (100, 103), (100, 103, 107), f"{API}:BConfig.supported")
    assert len(b.skipped) == 1 and "cute_dsl" in b.skipped[0] and "ModuleNotFoundError" in b.skipped[0]
    assert report.unmapped == ("fi_unmapped",)

    findings = report.findings()
    warnings = {f.subject: f for f in findings if f.severity == "warning"}
    assert set(warnings) == {"fi_a[fp8_block]", "fi_b"}
    assert all(f.code == "drift" for f in findings)
    msg = warnings["fi_a[fp8_block]"].message
    assert "tables declare SM {90}" in msg and "declares SM {90, 100}" in msg
    assert f"{API}:BlockConfig.supported" in msg and FAKE_VERSION in msg and "only FlashInfer: {100}" in msg
    assert "only FlashInfer: {107}" in warnings["fi_b"].message
    assert not any(f.subject == "fi_a[unquantized]" for f in findings)
    summary = [f for f in findings if f.subject == FLASHINFER_PACKAGE]
    assert len(summary) == 1 and summary[0].severity == "note" and "2 mismatch(es)" in summary[0].message
    assert any(f.subject == "fi_unmapped" and f.severity == "note" and "DRIFT_PROBES" in f.message for f in findings)


def test_tables_only_capabilities_are_reported_too(fi_catalog, fake_flashinfer):
    fake_flashinfer.BF16Config.supported = _allow(100)
    report = check_drift(fi_catalog, probes=PROBES[:1])
    (r,) = report.results
    assert (r.status, r.only_ours, r.only_theirs) == ("mismatch", (90, 103), ())
    (warning,) = [f for f in report.findings() if f.severity == "warning"]
    assert "only tables: {90, 103}" in warning.message


def test_decorator_and_backend_requirement_queries(fi_catalog, fake_flashinfer):
    probes = (
        Probe("fi_b", (Query("flashinfer.fused_moe:entry_point.is_compute_capability_supported"),)),
        Probe("fi_a", (Query("flashinfer.fused_moe:routed.is_backend_supported", backend="cutlass"),), scheme="fp8_block"),
        Probe("fi_a", (Query("flashinfer.fused_moe:routed.is_backend_supported", backend="trtllm"),), scheme="unquantized"),
    )
    results = check_drift(fi_catalog, probes=probes).results
    assert [(r.status, r.theirs) for r in results] == [("match", (100, 103)), ("match", (90,)), ("mismatch", (100, 103, 110))]


def test_a_query_that_cannot_answer_is_a_note_not_a_crash(fi_catalog, fake_flashinfer):
    probes = (
        Probe("fi_b", (Query(f"{API}:Broken.supported"),)),
        Probe("fi_a", (Query(f"{API}:Missing.supported"), Query("flashinfer.not_there:x")), scheme="unquantized"),
    )
    report = check_drift(fi_catalog, probes=probes)
    assert [r.status for r in report.results] == ["unqueried", "unqueried"]
    notes = {f.subject: f.message for f in report.findings() if f.severity == "note"}
    assert "could not query FlashInfer" in notes["fi_b"] and "RuntimeError: needs a CUDA device" in notes["fi_b"]
    assert "AttributeError" in notes["fi_a[unquantized]"] and "flashinfer.not_there" in notes["fi_a[unquantized]"]
    assert not [f for f in report.findings() if f.severity != "note"]


def test_flashinfer_absent_skips_with_a_note_or_fails_when_required(fi_catalog, no_flashinfer):
    report = check_drift(fi_catalog)
    assert not report.available and "not installed" in report.reason
    (note,) = report.findings()
    assert (note.severity, note.code, note.subject) == ("note", "drift", FLASHINFER_PACKAGE) and "skipped" in note.message
    (error,) = check_drift(fi_catalog, required=True).findings()
    assert error.severity == "error" and "requested" in error.message


def test_broken_flashinfer_install_is_reported_not_raised(fi_catalog, monkeypatch, tmp_path):
    _clear_flashinfer(monkeypatch)
    pkg = tmp_path / "site" / "flashinfer"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("import cuda_python_that_is_not_installed\n")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    report = check_drift(fi_catalog)
    assert not report.available and "does not import" in report.reason and "cuda_python_that_is_not_installed" in report.reason
    assert [f.severity for f in report.findings()] == ["note"]


def test_lint_hook_off_by_default_auto_and_required(fi_catalog, no_flashinfer):
    assert not [f for f in lint(fi_catalog, sample=False) if f.code == "drift"]
    auto = [f for f in lint(fi_catalog, sample=False, drift=None) if f.code == "drift"]
    assert [f.severity for f in auto] == ["note"]
    required = [f for f in lint(fi_catalog, sample=False, drift=True) if f.code == "drift"]
    assert [f.severity for f in required] == ["error"]


@pytest.fixture()
def fi_tables_dir(tmp_path):
    write_tables(tmp_path, fi_tables())
    return str(tmp_path)


def test_cli_lint_default_says_drift_was_skipped(fi_tables_dir, no_flashinfer, capsys):
    code = main(["lint", "--tables", fi_tables_dir])
    out = capsys.readouterr().out
    assert code == 0 and "drift check skipped" in out
    assert main(["lint", "--tables", fi_tables_dir, "--drift"]) == 1
    assert "drift check requested but flashinfer cannot be imported" in capsys.readouterr().out
    assert main(["lint", "--tables", fi_tables_dir, "--no-drift", "--json"]) == 0
    assert not [f for f in json.loads(capsys.readouterr().out)["findings"] if f["code"] == "drift"]


def test_cli_lint_default_runs_drift_when_flashinfer_imports(fi_tables_dir, fake_flashinfer, capsys):
    code = main(["lint", "--tables", fi_tables_dir, "--json"])
    findings = [f for f in json.loads(capsys.readouterr().out)["findings"] if f["code"] == "drift"]
    assert code == 0
    # The shipped mapping names none of the synthetic kernels: all three are unmapped, and the run is summarised.
    assert sorted(f["subject"] for f in findings if "DRIFT_PROBES" in f["message"]) == ["fi_a", "fi_b", "fi_unmapped"]
    assert any(f["subject"] == FLASHINFER_PACKAGE and FAKE_VERSION in f["message"] and f["message"].startswith("compared") for f in findings)


def test_every_shipped_flashinfer_kernel_maps_to_a_query(catalog):
    entries = {e.id: e for e in catalog.experts}
    flashinfer_kernels = {e.id for e in catalog.experts if uses_flashinfer(e)}
    assert flashinfer_kernels, "the shipped tables have FlashInfer kernels"
    mapped = {p.kernel for p in DRIFT_PROBES}
    assert flashinfer_kernels <= mapped, f"unmapped: {sorted(flashinfer_kernels - mapped)}"
    assert mapped <= set(entries), f"probes name unknown kernels: {sorted(mapped - set(entries))}"
    seen = set()
    for probe in DRIFT_PROBES:
        assert probe.queries and all(q.symbol.startswith("flashinfer.") and ":" in q.symbol for q in probe.queries)
        assert probe.subject not in seen, f"duplicate probe {probe.subject}"
        seen.add(probe.subject)
        assert ours_sm_set(entries[probe.kernel], probe.scheme), f"{probe.subject}: our tables allow no SM"


def test_real_flashinfer_drift_report_is_well_formed(catalog, capsys):
    """Runs the real check against the installed FlashInfer; mismatches are printed, not asserted away."""
    pytest.importorskip("flashinfer", reason="flashinfer-python is not installed")
    report = check_drift(catalog, required=True)
    assert report.available, report.reason
    try:
        installed = importlib.metadata.version(FLASHINFER_PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        installed = None
    assert report.version and (installed is None or report.version.split("+")[0] == installed.split("+")[0])
    assert report.unmapped == ()
    assert {r.kernel for r in report.results} == {e.id for e in catalog.experts if uses_flashinfer(e)}
    for r in report.results:
        assert r.ours and all(isinstance(c, int) for c in r.ours)
        if r.status == "unqueried":
            assert r.error and r.theirs is None
        else:
            assert r.symbol and r.symbol.startswith("flashinfer.") and all(isinstance(c, int) for c in r.theirs)
    findings = report.findings()
    assert all(f.code == "drift" and f.severity in ("warning", "note") for f in findings)
    warnings = [f for f in findings if f.severity == "warning"]
    assert len(warnings) == len(report.mismatches)
    for f, r in zip(warnings, report.mismatches):
        assert f.subject == r.subject and r.symbol in f.message and report.version in f.message
        assert "tables declare SM {" in f.message and "declares SM {" in f.message
    with capsys.disabled():
        print(f"\nFlashInfer drift ({len(report.mismatches)} mismatch(es)):\n" + report.render_markdown())
