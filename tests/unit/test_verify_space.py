"""The differential sampler (moe_oracle/verify/space.py) puts mixed-case spellings to both sides.

breakit18 finding 1: the sampler drew only lower-case VLLM_HUMMING_MOE_GEMM_TYPE values, so the
differential tier could not see that vLLM lowercases the value while the tables compared it as written.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import pytest

from moe_oracle.verify.cases import Deployment
from moe_oracle.verify.space import random_deployments


def _spellings(deps, name):
    return Counter(value for dep in deps for var, value in dep.env if var == name)


def test_word_valued_variables_are_drawn_in_mixed_case_too():
    deps = random_deployments(3000, 7, ["wna16", "int8", "w4a8_fp8"])
    spellings = _spellings(deps, "VLLM_HUMMING_MOE_GEMM_TYPE")
    folded = {v for v in spellings if v != v.lower()}
    assert folded, spellings
    assert {v.lower() for v in folded} <= {"indexed", "grouped", "grouped_contiguous", "auto"}
    assert any(v == v.lower() for v in spellings), "lower-case spellings must stay in the draw"


def test_digit_values_keep_their_spelling():
    deps = random_deployments(500, 8)
    assert {value for dep in deps for var, value in dep.env if var == "VLLM_USE_DEEP_GEMM"} == {"0", "1"}


def test_the_draw_is_deterministic():
    assert random_deployments(200, 9) == random_deployments(200, 9)


def test_round_robin_placement_is_drawn_with_the_groups_that_decide_it():
    deps = random_deployments(3000, 11)
    rr = [d for d in deps if d.expert_placement_strategy == "round_robin"]
    # A quarter of the EP draws (a few of the others), with every group count vLLM's fallback reads.
    assert 0.15 < sum(d.use_ep for d in rr) / sum(d.use_ep for d in deps) < 0.35
    assert any(not d.use_ep for d in rr)
    assert {d.num_expert_group for d in rr} == {8, 4, 3, 1, None}
    assert all(d.num_expert_group is None for d in deps if d.expert_placement_strategy == "linear")
    # The CPU router reshapes the scores by the groups: only groups that divide the experts there.
    assert all(d.num_experts % d.num_expert_group == 0 for d in rr if d.platform == "cpu" and d.num_expert_group)


def test_placement_fields_keep_the_keys_of_linear_deployments():
    dep = Deployment(platform="cuda", capability=90)
    assert "expert_placement_strategy" not in dep.to_dict() and "num_expert_group" not in dep.to_dict()
    rr = replace(dep, expert_placement_strategy="round_robin", num_expert_group=8)
    assert rr.key() != dep.key() and Deployment.from_dict(rr.to_dict()) == rr
    with pytest.raises(ValueError, match="expert_placement_strategy: 'striped'"):
        Deployment(platform="cuda", expert_placement_strategy="striped")
