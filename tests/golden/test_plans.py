"""Golden whole-model plans for every shipped config.

1. Hand-checked (``plans/hand_checked.yaml``): layer groups, kinds, target/draft, the routed
   experts' scheme, the exclusion entry that decided, the shared experts' fate, and per-rank
   placements, all written from the configs' own fields and the vLLM rule named there.
2. Snapshot (``plans/snapshots/*.json``): the kernel each group gets; regenerate with
   ``python -m tests.golden.regen_plans`` and review the diff.
"""

from __future__ import annotations

import json

import pytest

from moe_oracle.core.config import ParallelConfig
from moe_oracle.core.environment import Environment
from moe_oracle.inputs.hardware import lookup_hardware
from moe_oracle.inputs.models import example_names
from moe_oracle.core.oracle import Oracle, default_catalog
from moe_oracle.explain.plan import build_plan
from moe_oracle.core.tables import load_schemas
from tests.golden.regen_plans import DEPLOYMENTS, HAND, MODELS, checkpoint, plan, snapshot, snapshot_path


def parse_layers(text: str) -> tuple[int, ...]:
    """``"0-2"``, ``"1-47/2"``, ``"0,2,4"`` -> indices."""
    out: list[int] = []
    for part in str(text).split(","):
        part = part.strip()
        step = 1
        if "/" in part:
            part, s = part.split("/")
            step = int(s)
        if "-" in part:
            a, b = part.split("-")
            out += list(range(int(a), int(b) + 1, step))
        elif part:
            out.append(int(part))
    return tuple(out)


def test_every_shipped_config_has_a_hand_checked_plan():
    covered = {HAND[m].get("model", m) for m in MODELS}
    assert set(example_names()) <= covered


def _shared(group) -> str:
    if group.first.spec.shared is None:
        return "none"
    return "excluded" if group.shared_excluded_by() else "follows"


@pytest.mark.parametrize("model", MODELS)
def test_layer_groups_match_the_hand_check(model):
    p = plan(model, "H200__tp8")
    got = set()
    for g in p.groups:
        q = g.first.quant
        got.add((g.indices, g.kind, g.role, q.label if q else None, _shared(g) if q else None))
    expected = set()
    for e in HAND[model]["groups"]:
        expected.add((parse_layers(e["layers"]), e["kind"], e["role"], e.get("quant"), e.get("shared")))
    assert got == expected
    every = sorted(i for g in p.groups for i in g.indices)
    assert every == sorted(set(every)), "a layer appears in two groups"
    for e in HAND[model]["groups"]:
        if "excluded" in e:
            g = next(g for g in p.groups if g.indices == parse_layers(e["layers"]))
            assert e["excluded"] in g.excluded_by()
    for fragment in HAND[model].get("notes", []):
        assert any(fragment in n for n in p.notes), f"no note mentions {fragment!r}: {p.notes}"


@pytest.mark.parametrize("case", HAND["placements"], ids=[f"{c['model']}-{c.get('placement', 'linear')}" for c in HAND["placements"]])
def test_per_rank_placement_matches_the_hand_check(case):
    oracle = Oracle(default_catalog(), Environment())
    p = build_plan(checkpoint(case["model"]), oracle, device=lookup_hardware("H200").device,
                   parallel=ParallelConfig(**case["parallel"], expert_placement_strategy=case.get("placement", "linear")))
    pl = next(g.placement for g in p.moe_groups() if g.role == "target")
    assert {n: parse_layers(r) for n, r in case["counts"].items()} == {n: rs for n, rs in pl.classes().items()}
    for rank, ids in case["ranks"].items():
        assert pl.ranks[rank].physical == parse_layers(ids) if ids else pl.ranks[rank].physical == ()
    for rank, n in case.get("redundant", {}).items():
        assert pl.ranks[rank].redundant == n
    assert (pl.fallback is not None) == bool(case.get("fallback", False))
    if "redundant" in case:
        assert pl.ranks[7].logical[-8:] == tuple(range(8))
    assert pl.empty_ranks() == parse_layers(case["counts"].get(0, ""))


@pytest.mark.parametrize("deployment", sorted(DEPLOYMENTS))
def test_kernel_snapshots(deployment):
    path = snapshot_path(deployment)
    if not path.exists():
        pytest.fail(f"missing {path.name}; run python -m tests.golden.regen_plans")
    recorded = json.loads(path.read_text(encoding="utf-8"))
    oracle = Oracle(default_catalog(), Environment())
    validator = load_schemas().for_kind("plan")
    for model in MODELS:
        p = plan(model, deployment, oracle)
        assert list(validator.iter_errors(json.loads(json.dumps(p.to_dict(), default=str)))) == [], model
        assert snapshot(p) == recorded[model], f"{model} under {deployment} changed; run python -m tests.golden.regen_plans and review the diff"
