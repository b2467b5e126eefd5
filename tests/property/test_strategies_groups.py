"""The expert-group leaves of the config generators draw counts that do not divide the experts
off CPU (vLLM's router routes them ungrouped: GroupedTopKRouter ``valid_grouping``, vLLM
0.29.0-0.34.0 P/router/grouped_topk_router.py), with any ``topk_group`` since it is then never
read, and never on CPU, where MoEConfig refuses them (core/config.grouping_problems)."""

from __future__ import annotations

import pytest
from hypothesis import find, given, settings
from hypothesis import strategies as st

from moe_oracle.core.config import grouping_problems
from moe_oracle.core.vocab import Platform
from tests.property.strategies import LEAVES, _PLAUSIBLE

pytestmark = pytest.mark.property

_FIND = settings(max_examples=500, database=None, deadline=None)


@pytest.mark.parametrize("leaves", [LEAVES, _PLAUSIBLE], ids=["wild", "plausible"])
def test_off_cpu_the_groups_need_not_divide_the_experts(leaves):
    ctx = {"num_experts": 60, "device.platform": Platform.CUDA}
    assert find(leaves["num_expert_group"](ctx), lambda g: g is not None and 60 % g != 0, settings=_FIND)


@pytest.mark.parametrize("leaves", [LEAVES, _PLAUSIBLE], ids=["wild", "plausible"])
@settings(max_examples=50, deadline=None)
@given(data=st.data(), platform=st.sampled_from(list(Platform)))
def test_drawn_groups_are_ones_the_platform_takes(leaves, data, platform):
    ctx = {"num_experts": 60, "device.platform": platform}
    ctx["num_expert_group"] = data.draw(leaves["num_expert_group"](ctx))
    ctx["topk_group"] = data.draw(leaves["topk_group"](ctx))
    assert grouping_problems(60, ctx["num_expert_group"], ctx["topk_group"], platform=platform.value) == []
