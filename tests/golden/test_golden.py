"""Golden Decisions: 13 real model configs x {H200, B200, RTX PRO 6000, MI300X} x {TP8; DP8 + EP + DeepEP LL}.

Two independent checks per case:

1. **Hand-checked**: ``hand_derived.yaml`` was derived by hand from the reference catalogs
   (``shared/reference``), by an engineer who did not read our tables or engine; each case
   names the vLLM class that should run and why every earlier candidate fails. Our winner must
   be a kernel whose ``upstream`` is that class (and the prepare/finalize likewise), unless the
   case is listed in ``divergences.yaml`` with the reason and the fact that decides it.
2. **Snapshot**: ``decisions/<case>.json`` records the winner, the backend order and every
   candidate's status and failing rule ids. Any change to the tables that changes a decision
   shows up here; regenerate with ``MOE_ORACLE_UPDATE_GOLDEN=1 pytest tests/golden`` and review
   the diff.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
import yaml

from moe_oracle.core.config import Device, MoEConfig, ParallelConfig
from moe_oracle.core.engine import evaluate
from moe_oracle.core.environment import Environment
from moe_oracle.inputs.hardware import lookup_hardware
from moe_oracle.inputs.hf import from_hf_config, load_hf_config
from moe_oracle.inputs.models import resolve_model_path
from moe_oracle.core.tables import load_schemas

HERE = Path(__file__).parent
HAND = yaml.safe_load((HERE / "hand_derived.yaml").read_text(encoding="utf-8"))
DIVERGENCES = yaml.safe_load((HERE / "divergences.yaml").read_text(encoding="utf-8"))["divergences"]
MODELS = sorted({case["model"] for case in HAND})
GPUS = ("H200", "B200", "RTX_PRO_6000", "MI300X")
DEPLOYMENTS = {
    "tp8": ParallelConfig(tp_size=8),
    "dp8_ep_ll": ParallelConfig(dp_size=8, use_ep=True, all2all_backend="deepep_low_latency"),
}
UPDATE = os.environ.get("MOE_ORACLE_UPDATE_GOLDEN") == "1"


def case_id(model: str, gpu: str, deployment: str) -> str:
    return f"{model}__{gpu}__{deployment}"


def build_config(model: str, gpu: str, deployment: str) -> MoEConfig:
    if model == "nemotron-nvfp4":
        cfg = load_hf_config(resolve_model_path("nvidia-nemotron-3-nano-30b-a3b-bf16"))
        quant = load_hf_config(resolve_model_path("nvidia-nemotron-3-nano-30b-a3b-nvfp4.hf_quant_config"))
        ck = from_hf_config(cfg, quant_cfg=quant)
    else:
        ck = from_hf_config(load_hf_config(resolve_model_path(model)))
    device: Device = lookup_hardware(gpu).device
    return MoEConfig(device=device, parallel=DEPLOYMENTS[deployment], provenance=ck.provenance, **ck.kwargs)


def decide(model: str, gpu: str, deployment: str, catalog):
    return evaluate(catalog, build_config(model, gpu, deployment), Environment())


CASES = [(c["model"], c["gpu"], c["deployment"]) for c in HAND]


def test_the_matrix_is_complete():
    assert len(MODELS) >= 10
    assert {(m, g, d) for m in MODELS for g in GPUS for d in DEPLOYMENTS} == set(CASES)


def _upstream_matches(upstream: str, cls: str) -> bool:
    return re.search(rf"\b{re.escape(cls)}\b", upstream) is not None


@pytest.mark.parametrize(("model", "gpu", "deployment"), CASES, ids=[case_id(*c) for c in CASES])
def test_against_the_hand_derivation(model, gpu, deployment, catalog):
    hand = next(c for c in HAND if (c["model"], c["gpu"], c["deployment"]) == (model, gpu, deployment))
    decision = decide(model, gpu, deployment, catalog)
    cid = case_id(model, gpu, deployment)
    if cid in DIVERGENCES:
        expected = DIVERGENCES[cid]["ours"]
        assert decision.kernel == expected["kernel"], f"{cid}: divergence record is stale"
        hand_rows = [c for c in decision.candidates if hand["winner"] and _upstream_matches(catalog.experts_by_id(c.kernel).upstream, hand["winner"]["class"])]
        assert hand_rows, f"{cid}: the hand-derived class is not in the catalog"
        for cand in hand_rows:  # the hand-derived winner loses, to the rule the record names
            assert {f.rule for f in cand.failures} >= set(expected["rejected_by"]), f"{cid}: {cand.kernel} {[f.rule for f in cand.failures]}"
        return
    if hand["winner"] is None:
        assert decision.kernel is None, f"{cid}: hand derivation finds nothing eligible, we select {decision.kernel}"
        return
    assert decision.kernel is not None, f"{cid}: we find nothing eligible; hand derivation: {hand['winner']}\n{decision.render_failure()}"
    entry = catalog.experts_by_id(decision.kernel)
    assert _upstream_matches(entry.upstream, hand["winner"]["class"]), f"{cid}: we select {entry.id} ({entry.upstream}), hand derivation {hand['winner']['class']}"
    pf = catalog.prepare_finalize_by_id(decision.prepare_finalize)
    assert _upstream_matches(pf.upstream, hand["prepare_finalize"]), f"{cid}: P/F {pf.upstream} vs {hand['prepare_finalize']}"


def snapshot(decision) -> dict:
    return {
        "selected": None if decision.kernel is None else {"kernel": decision.kernel, "prepare_finalize": decision.prepare_finalize},
        "priority": decision.to_dict()["priority"],
        "demotions": [d.rule + ":" + d.backend for d in decision.demotions],
        "assumptions": sorted(a.rule for a in decision.assumptions),
        "warnings": sorted(f"{w.code}:{w.rule}" for w in decision.warnings),
        "candidates": {c.kernel: [c.status.value, sorted({f.rule for f in c.failures})] for c in decision.candidates},
    }


@pytest.mark.parametrize(("model", "gpu", "deployment"), CASES, ids=[case_id(*c) for c in CASES])
def test_snapshot(model, gpu, deployment, catalog):
    decision = decide(model, gpu, deployment, catalog)
    record = decision.to_dict()
    assert list(load_schemas().for_kind("decision").iter_errors(record)) == []
    path = HERE / "decisions" / f"{case_id(model, gpu, deployment)}.json"
    got = snapshot(decision)
    if UPDATE or not path.exists():
        if not UPDATE:
            pytest.fail(f"missing golden {path.name}; run MOE_ORACLE_UPDATE_GOLDEN=1 pytest tests/golden")
        path.parent.mkdir(exist_ok=True)
        path.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    assert got == json.loads(path.read_text(encoding="utf-8"))


def test_divergences_are_documented():
    for cid, record in DIVERGENCES.items():
        assert record["reason"].strip() and record["reference"].strip(), cid
        model, gpu, deployment = cid.split("__")
        assert (model, gpu, deployment) in set(CASES), cid
