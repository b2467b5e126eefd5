"""The mutation tool's verdicts (moe_oracle/verify/mutate.py), with vLLM's answers stood in by a
function: a mutant the run's records do not kill is decided on the deployments it answers
differently (its targeted pool: the guided sampler aimed at its kernel, the dropped value set)."""

from __future__ import annotations

from typing import Any

import pytest

import moe_oracle.verify.mutate as mutate
from moe_oracle.core.loading import compile_tables
from moe_oracle.core.oracle import Oracle
from moe_oracle.verify.cases import Answer
from moe_oracle.verify.ours import OurSide

RELEASE = "0.33.0"
MUTANT = "triton: drop activation silu_no_mul"


@pytest.fixture(scope="module")
def sides() -> dict[str, Any]:
    m = next(m for m in mutate.mutants() if m.description == MUTANT)
    compiled = compile_tables(m.files)  # once: compiling the tables is the costly step
    base = OurSide(RELEASE)
    return {"mutant": m, "compiled": compiled, "original": base, "mutated": OurSide(RELEASE, Oracle(compiled)),
            "pool": mutate.targeted_pool(m, RELEASE, base)}


def _score(sides: dict[str, Any], monkeypatch: pytest.MonkeyPatch, vllm_like: str | None) -> dict[str, Any]:
    monkeypatch.setattr(mutate, "compile_tables", lambda files: sides["compiled"])
    monkeypatch.setattr(mutate, "targeted_pool", lambda *_a, **_k: sides["pool"])

    def ask(deployments):
        if vllm_like == "neither":
            return [Answer("platform") for _ in deployments]
        if vllm_like == "undriven":
            return [Answer("unsupported") for _ in deployments]
        return [sides[vllm_like].answer(d) for d in deployments]

    return mutate.score([], RELEASE, [sides["mutant"]], (), ask_vllm=ask if vllm_like else None)


def test_targeted_pool_sets_the_dropped_value(sides):
    assert sides["pool"], "the guided sampler found no deployment selecting triton"
    assert any(d.activation == "silu_no_mul" for d in sides["pool"])
    assert any(not sides["original"].answer(d).agrees(sides["mutated"].answer(d)) for d in sides["pool"])


def test_a_mutant_vllm_contradicts_on_a_targeted_deployment_is_killed(sides, monkeypatch):
    assert _score(sides, monkeypatch, "original")["counts"]["killed"] == 1


def test_a_mutant_vllm_agrees_with_survives(sides, monkeypatch):
    result = _score(sides, monkeypatch, "mutated")
    assert result["counts"]["survived"] == 1 and result["score"] == 0.0


def test_a_targeted_deployment_where_the_shipped_tables_disagree_is_listed(sides, monkeypatch):
    result = _score(sides, monkeypatch, "neither")
    assert result["counts"]["survived"] == 1 and result["original_disagrees"]


def test_without_vllm_an_unkilled_changing_mutant_survives(sides, monkeypatch):
    assert _score(sides, monkeypatch, None)["counts"]["survived"] == 1


def test_a_mutant_whose_targeted_deployments_vllm_cannot_drive_is_not_scored(sides, monkeypatch):
    # e.g. a DeepEP deployment without deep_ep: vLLM refuses it at start, so it says nothing.
    result = _score(sides, monkeypatch, "undriven")
    assert result["counts"]["undriven"] == 1 and result["counts"]["survived"] == 0 and result["score"] is None
