"""The differential sampler (moe_oracle/verify/space.py) puts mixed-case spellings to both sides.

breakit18 finding 1: the sampler drew only lower-case VLLM_HUMMING_MOE_GEMM_TYPE values, so the
differential tier could not see that vLLM lowercases the value while the tables compared it as written.
"""

from __future__ import annotations

from collections import Counter

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
