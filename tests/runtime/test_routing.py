"""Reference routing against hand-computed examples (numbers worked out here, not by the code).

Tolerance: 1e-5 absolute on weights of order 1. Logits are built as log(p) or
log(s / (1 - s)) so that softmax / sigmoid give the round numbers below; float32
reproduces them to ~1e-7.
"""

from __future__ import annotations

import math

import pytest
import torch

from moe_oracle.runtime.errors import UnsupportedConfigError
from moe_oracle.runtime.routing import IMPLEMENTED_ROUTING, route
from moe_oracle.runtime.spec import RoutingParams
from moe_oracle.core.vocab import RoutingMethod

TOL = 1e-5


def logit(s: float) -> float:
    """Inverse sigmoid: sigmoid(logit(s)) == s."""
    return math.log(s / (1 - s))


# softmax(log([1, 2, 3, 4])) = [0.1, 0.2, 0.3, 0.4]
SOFTMAX_LOGITS = torch.log(torch.tensor([[1.0, 2.0, 3.0, 4.0]]))
# sigmoid of these = [0.5, 0.75, 0.25, 0.9]
SIGMOID_LOGITS = torch.tensor([[logit(0.5), logit(0.75), logit(0.25), logit(0.9)]])

CASES = [
    # method, logits, top_k, extra params, expected ids, expected weights (hand-computed)
    pytest.param("default", SOFTMAX_LOGITS, 2, {}, [3, 2], [0.4, 0.3], id="default: softmax then top-2 = p[3], p[2]"),
    pytest.param("renormalize", SOFTMAX_LOGITS, 2, {}, [3, 2], [4 / 7, 3 / 7], id="renormalize: softmax(log4, log3) = 4/7, 3/7"),
    pytest.param("renormalize_naive", SOFTMAX_LOGITS, 2, {}, [3, 2], [0.4 / 0.7, 0.3 / 0.7], id="renormalize_naive: 0.4/0.7, 0.3/0.7"),
    pytest.param("llama4", SIGMOID_LOGITS, 1, {}, [3], [0.9], id="llama4: top-1 logit, sigmoid -> 0.9"),
    pytest.param("topk", SIGMOID_LOGITS, 2, {}, [3, 1], [math.log(9.0), math.log(3.0)], id="topk: raw logits log9, log3"),
    pytest.param("sigmoid", SIGMOID_LOGITS, 2, {}, [3, 1], [0.9, 0.75], id="sigmoid: 0.9, 0.75"),
    pytest.param("sigmoid_renorm", SIGMOID_LOGITS, 2, {}, [3, 1], [0.9 / 1.65, 0.75 / 1.65], id="sigmoid_renorm: 6/11, 5/11"),
]


@pytest.mark.parametrize("method, logits, top_k, extra, ids, weights", CASES)
def test_routing_hand_computed(method, logits, top_k, extra, ids, weights):
    w, got = route(logits, RoutingParams(method, top_k, **extra))
    assert got.tolist() == [ids]
    assert w.dtype == torch.float32 and got.dtype == torch.int64
    assert torch.allclose(w, torch.tensor([weights]), atol=TOL)


def test_minimax2_bias_selects_weights_do_not_include_it():
    # scores s = [0.5, 0.75, 0.25, 0.9]; bias [0, 0, 0.6, 0] -> choice [0.5, 0.75, 0.85, 0.9]
    # top-2 by choice: experts 3, 2; weights from s: 0.9, 0.25 -> / 1.15 -> * 2.0
    bias = torch.tensor([0.0, 0.0, 0.6, 0.0])
    w, ids = route(SIGMOID_LOGITS, RoutingParams("minimax2", 2, routed_scaling_factor=2.0), correction_bias=bias)
    assert ids.tolist() == [[3, 2]]
    assert torch.allclose(w, torch.tensor([[0.9 / 1.15 * 2.0, 0.25 / 1.15 * 2.0]]), atol=TOL)


# DeepSeek-V3: 8 experts in 4 groups of 2; sigmoid scores chosen by hand:
#   group A [0.95, 0.05] sum 1.00 | B [0.60, 0.62] sum 1.22 | C [0.55, 0.75] sum 1.30 | D [0.10, 0.20] sum 0.30
# topk_group = 2 keeps C and B. Top-2 inside them: expert 5 (0.75), expert 3 (0.62).
# Without the group restriction expert 0 (0.95) would win: the test catches a missing group step.
DS_SCORES = [0.95, 0.05, 0.60, 0.62, 0.55, 0.75, 0.10, 0.20]
DS_LOGITS = torch.tensor([[logit(s) for s in DS_SCORES]])


def test_deepseek_v3_grouped_topk_without_bias():
    params = RoutingParams("deepseek_v3", 2, num_expert_group=4, topk_group=2, routed_scaling_factor=2.5)
    w, ids = route(DS_LOGITS, params)
    assert ids.tolist() == [[5, 3]]
    # weights: [0.75, 0.62] / 1.37 * 2.5
    assert torch.allclose(w, torch.tensor([[0.75 / 1.37 * 2.5, 0.62 / 1.37 * 2.5]]), atol=TOL)


def test_deepseek_v3_correction_bias_changes_selection_not_weights():
    # bias +0.05 on expert 2: choice 0.65 beats expert 3 (0.62); group B sum 1.27 < C 1.30, > A 1.00.
    bias = torch.zeros(8)
    bias[2] = 0.05
    params = RoutingParams("deepseek_v3", 2, num_expert_group=4, topk_group=2, routed_scaling_factor=2.5, has_correction_bias=True)
    w, ids = route(DS_LOGITS, params, correction_bias=bias)
    assert ids.tolist() == [[5, 2]]
    # weights use the unbiased scores 0.75 and 0.60: / 1.35 * 2.5
    assert torch.allclose(w, torch.tensor([[0.75 / 1.35 * 2.5, 0.60 / 1.35 * 2.5]]), atol=TOL)


def test_deepseek_v3_single_group_is_plain_biased_topk():
    # n_group 1 (Kimi-K2 style): top-2 of all scores: 0 (0.95), 5 (0.75).
    w, ids = route(DS_LOGITS, RoutingParams("deepseek_v3", 2, num_expert_group=1, topk_group=1))
    assert ids.tolist() == [[0, 5]]
    assert torch.allclose(w, torch.tensor([[0.95 / 1.70, 0.75 / 1.70]]), atol=TOL)


def test_methods_disagree_on_the_same_logits():
    """The methods are not aliases of each other: on one random batch every pair differs somewhere."""
    logits = torch.randn(16, 8, generator=torch.Generator().manual_seed(3))
    results = {m: route(logits, RoutingParams(m, 2, num_expert_group=2, topk_group=1)) for m in IMPLEMENTED_ROUTING}
    # Equal by definition, skipped: renormalize == renormalize_naive (both exp(l_i) / sum of the top-k
    # exps); llama4 == sigmoid (sigmoid is monotonic, so top-k then sigmoid = sigmoid then top-k);
    # minimax2 without bias and with scaling 1 == sigmoid_renorm.
    same = {
        frozenset({RoutingMethod.RENORMALIZE, RoutingMethod.RENORMALIZE_NAIVE}),
        frozenset({RoutingMethod.LLAMA4, RoutingMethod.SIGMOID}),
        frozenset({RoutingMethod.SIGMOID_RENORM, RoutingMethod.MINIMAX2}),
    }
    for a in IMPLEMENTED_ROUTING:
        for b in IMPLEMENTED_ROUTING:
            if a.value < b.value and frozenset({a, b}) not in same:
                wa, ia = results[a]
                wb, ib = results[b]
                assert not (torch.equal(ia, ib) and torch.allclose(wa, wb, atol=1e-4)), (a, b)


@pytest.mark.parametrize("method", ["unspecified", "custom", "simulated", "deepseek_v4"])
def test_methods_without_math_raise(method):
    with pytest.raises(UnsupportedConfigError) as err:
        route(SOFTMAX_LOGITS, RoutingParams(method, 1))
    assert err.value.field == "routing_method"


def test_bias_on_a_method_that_ignores_it_raises():
    with pytest.raises(UnsupportedConfigError) as err:
        route(SOFTMAX_LOGITS, RoutingParams("renormalize", 1), correction_bias=torch.zeros(4))
    assert err.value.field == "correction_bias"


@pytest.mark.parametrize("groups", [3, 8, 16], ids=["not-dividing", "as-many-as-experts", "more-than-experts"])
def test_groups_vllms_router_cannot_apply_route_ungrouped(groups):
    # vLLM 0.29.0-0.34.0 GroupedTopKRouter.valid_grouping: fused_topk_bias over every expert
    # (before, the reference raised for groups that do not divide the experts). topk_group is unread.
    w, ids = route(DS_LOGITS, RoutingParams("deepseek_v3", 2, num_expert_group=groups, topk_group=99, routed_scaling_factor=2.5))
    w1, ids1 = route(DS_LOGITS, RoutingParams("deepseek_v3", 2, num_expert_group=1, topk_group=1, routed_scaling_factor=2.5))
    assert ids.tolist() == ids1.tolist() == [[0, 5]] and torch.allclose(w, w1)
