"""The harness's online FP8 front ends (moe_oracle/verify/frontends/fp8.py), without vLLM: what
the sampler draws for them and what our side is told.

The vLLM side builds the release's own online method and checks the weight key it selects with
(tests/differential runs it); here the harness's description of each front end is held to the
product's reading of the same ``--quantization`` flag (inputs/checkpoint/formats_float.ONLINE_FP8),
so a serve line and the differential run answer the same question.
"""

from __future__ import annotations

import pytest

from moe_oracle.core.quant import SCHEMES
from moe_oracle.inputs.checkpoint.formats_float import ONLINE_FP8
from moe_oracle.verify.families import FRONT_END_SCHEMES, FRONT_ENDS_BY_FAMILY, ONLINE_FRONT_ENDS
from moe_oracle.verify.frontends import FRONT_ENDS, QUANT_METHOD
from moe_oracle.verify.frontends.fp8 import ONLINE_FP8 as HARNESS_ONLINE_FP8
from moe_oracle.verify.space import exhaustive_deployments, random_deployments


@pytest.mark.parametrize("flag", sorted(ONLINE_FP8))
def test_each_shorthand_has_a_front_end_asked_as_the_serve_line_asks(flag):
    front = f"online_{flag}"
    scheme = SCHEMES[ONLINE_FP8[flag][0]]
    assert front in FRONT_ENDS and front in ONLINE_FRONT_ENDS and front in FRONT_ENDS_BY_FAMILY["fp8"]
    assert QUANT_METHOD[front] == flag
    assert FRONT_END_SCHEMES[front] == ((scheme.weight, scheme.activation),) == (HARNESS_ONLINE_FP8[front][1],)


def test_a_front_end_restriction_keeps_only_its_draws_and_no_checkpoint_block():
    wanted = sorted(ONLINE_FRONT_ENDS)
    deps = random_deployments(300, 3, front_ends=wanted)
    assert len(deps) == 300 and {d.front_end for d in deps} == set(wanted)
    assert all(d.block is None and d.family == "fp8" for d in deps)
    assert deps == random_deployments(300, 3, front_ends=wanted)
    exhaustive = list(exhaustive_deployments(families=["fp8"], platforms=["cuda"], front_ends=["online_fp8_per_block"]))
    assert exhaustive and {(d.front_end, d.weight_key, d.block) for d in exhaustive} == {("online_fp8_per_block", "fp8_static_block128", None)}


def test_a_restriction_no_family_reaches_is_refused():
    with pytest.raises(ValueError, match="online_fp8_per_block"):
        random_deployments(10, 0, families=["nvfp4"], front_ends=["online_fp8_per_block"])


def test_the_unrestricted_draw_reaches_the_online_front_ends():
    fronts = {d.front_end for d in random_deployments(2000, 0)}
    assert ONLINE_FRONT_ENDS <= fronts
