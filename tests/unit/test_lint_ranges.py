"""Lint rules on engine ranges (issue 8): dead ranges, bounds past the newest verified release, open-ended facts."""

from __future__ import annotations

import copy

from moe_oracle.tools.lint import lint
from tests.tables_fixture import load
from tests.unit.test_versions import versioned_tables


def _codes(catalog):
    return {(f.code, f.subject): f for f in lint(catalog, sample=False)}


def test_open_ended_facts_are_listed_in_one_note(tmp_path):
    findings = _codes(load(tmp_path, versioned_tables()))
    (note,) = [f for (code, _), f in findings.items() if code == "open_ended"]
    assert note.severity == "note" and "fast_monolithic (>=0.33.0)" in note.message and "0.33.0" in note.subject
    # a bounded range (<0.33.0) is not open-ended
    assert "no_gelu_before_0_33" not in note.message


def test_dead_and_unverified_bounds_are_warnings(tmp_path):
    t = copy.deepcopy(versioned_tables())
    slow = t["kernels/slow.yaml"]["entries"][0]
    slow["constraints"].append({"id": "slow.from_0_40", "engine": {"vllm": ">=0.40.0"}, "field": "top_k", "max": 2, "reason": "shape_unsupported", "hint": "test"})
    slow["constraints"].append({"id": "slow.until_0_35", "engine": {"vllm": "<0.35.0"}, "field": "top_k", "max": 64, "reason": "shape_unsupported", "hint": "test"})
    findings = _codes(load(tmp_path, t))
    assert findings[("range_admits_no_release", "constraint:slow:slow.from_0_40")].severity == "warning"
    assert findings[("range_past_verified", "constraint:slow:slow.until_0_35")].severity == "warning"
    assert ("range_past_verified", "constraint:slow:slow.no_gelu_before_0_33") not in findings
