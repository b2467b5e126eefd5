"""Rule pairs (moe_oracle/verify/rule_pairs.py, issue 25: every table rule decisive both ways):
two deployments our tables answer differently because of one check of one kernel. Our side
only; vLLM judges both deployments of each pair in the differential tier."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from moe_oracle.verify.guided import guided_deployments
from moe_oracle.verify.ours import OurSide
from moe_oracle.verify.rule_pairs import _break_values, _sole_failure, decisive_rules, rule_ids, rule_pairs
from moe_oracle.verify.run import RELEASES
from moe_oracle.verify.space import random_deployments

NEWEST = RELEASES[-1]


@pytest.fixture(scope="module")
def found():
    side = OurSide(NEWEST)
    starts, _ = guided_deployments(NEWEST, per_kernel=1, side=side, seed=2)
    return side, rule_pairs(NEWEST, starts + random_deployments(200, seed=2), seed=2, side=side)


def test_each_pair_differs_in_the_answer_because_of_its_rule_alone(found):
    side, pairs = found
    assert len(pairs) > 200
    for rule, pair in pairs.items():
        passing, failing = side.decide(pair.passing), side.decide(pair.failing)
        assert passing.kernel == pair.kernel, rule
        assert failing.kernel != pair.kernel, rule
        sole = _sole_failure(failing, pair.kernel)
        assert sole is not None and sole.rule == rule


def test_pairs_reach_every_kind_of_check(found):
    _, pairs = found
    kinds = {r.split(".")[1] for r in pairs if not r.startswith("constraint.")}
    assert {"platform", "platforms", "packages", "env", "features", "supports"} <= kinds
    assert any(r.startswith("constraint.") for r in pairs)
    assert set(pairs) <= set(rule_ids(OurSide(NEWEST).oracle.catalog.for_version(NEWEST)))


def test_break_values_are_the_values_the_check_refuses():
    check = SimpleNamespace(field="platform", deny=False, predicate=SimpleNamespace(test=lambda v: v == "cuda"), allowed=lambda: ["cuda"])
    assert _break_values(check, {"platform": ("cuda", "rocm", "cpu")}) == ["rocm", "cpu"]
    pkg = SimpleNamespace(field="packages.aiter", deny=False, predicate=SimpleNamespace(test=lambda v: bool(v)), allowed=lambda: {"present": True})
    assert _break_values(pkg, {}) == [False]
    env = SimpleNamespace(field="env.VLLM_X", deny=False, predicate=SimpleNamespace(test=lambda v: v is True), allowed=lambda: [True])
    assert _break_values(env, {}) == [False]
    assert _break_values(SimpleNamespace(field="lora", deny=True, predicate=None, allowed=lambda: None), {}) == []


def test_a_rule_is_shown_only_when_vllm_agreed_on_both_deployments(found):
    _, pairs = found
    rule, pair = next(iter(pairs.items()))
    both = [SimpleNamespace(case=pair.passing, agree=True), SimpleNamespace(case=pair.failing, agree=True)]
    assert decisive_rules(both, {rule: pair}) == (rule,)
    assert decisive_rules([both[0], SimpleNamespace(case=pair.failing, agree=False)], {rule: pair}) == ()
    assert decisive_rules(both[:1], {rule: pair}) == ()
