"""Reference routing: router logits -> (top-k weights, top-k expert ids), every method with defined math.

All arithmetic is float32; ids are global expert ids (int64). ``T`` tokens,
``E`` experts, ``K`` = top-k. Definitions (``sigmoid``/``softmax`` over experts):

==================  ==============================================================================
method              definition
==================  ==============================================================================
default             ``p = softmax(logits)``; ids = top-k of ``p``; weights = ``p[ids]``
renormalize         ids = top-k of ``logits``; weights = ``softmax(logits[ids])``
renormalize_naive   ``p = softmax(logits)``; ids = top-k of ``p``; weights = ``p[ids] / sum(p[ids])``
deepseek_v3         ``s = sigmoid(logits)``, ``c = s + bias``; per group of ``E / n_group`` experts the
                    group score is the sum of its top-2 ``c``; keep the ``topk_group`` best groups;
                    ids = top-k of ``c`` inside them; weights =
                    ``s[ids] / sum(s[ids]) * routed_scaling_factor``; groups that do not divide
                    the experts, or not fewer than them, are not applied (as ``minimax2``), as
                    vLLM's router routes them (``core.config.router_groups``)
llama4              ids = top-k of ``logits`` (top-1 in Llama-4); weights = ``sigmoid(logits[ids])``
topk                ids = top-k of ``logits``; weights = ``logits[ids]`` (no normalization)
sigmoid             ``s = sigmoid(logits)``; ids = top-k of ``s``; weights = ``s[ids]``
sigmoid_renorm      as ``sigmoid``, then weights divided by their sum
minimax2            ``s = sigmoid(logits)``, ``c = s + bias``; ids = top-k of ``c``; weights =
                    ``s[ids] / sum(s[ids]) * routed_scaling_factor``
==================  ==============================================================================

``unspecified``, ``custom``, ``simulated`` and ``deepseek_v4`` have no fixed math
here and raise :class:`~moe_oracle.runtime.errors.UnsupportedConfigError`.

Source: vLLM main 00f7f258 ``RoutingMethodType`` comments (``P/config.py``, kept
in sync with FlashInfer ``include/flashinfer/trtllm/fused_moe/runner.h``),
reference catalog §1.5; DeepSeek-V3 grouped top-k as in vLLM ``grouped_topk``
(group score = sum of the top-2 biased scores; weights from unbiased scores).
"""

from __future__ import annotations

import torch

from ..core.config import router_groups
from ..core.vocab import RoutingMethod
from .errors import UnsupportedConfigError
from .spec import RoutingParams

__all__ = ["IMPLEMENTED_ROUTING", "route"]

IMPLEMENTED_ROUTING = frozenset(
    {
        RoutingMethod.DEFAULT,
        RoutingMethod.RENORMALIZE,
        RoutingMethod.RENORMALIZE_NAIVE,
        RoutingMethod.DEEPSEEK_V3,
        RoutingMethod.LLAMA4,
        RoutingMethod.TOPK,
        RoutingMethod.SIGMOID,
        RoutingMethod.SIGMOID_RENORM,
        RoutingMethod.MINIMAX2,
    }
)
"""Routing methods with defined math here."""

_BIASED = frozenset({RoutingMethod.DEEPSEEK_V3, RoutingMethod.MINIMAX2})


def _topk(scores: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    values, ids = torch.topk(scores, k, dim=-1, sorted=True)
    return values, ids


def _normalize(w: torch.Tensor) -> torch.Tensor:
    return w / w.sum(dim=-1, keepdim=True)


def _grouped_mask(choice: torch.Tensor, n_group: int, topk_group: int) -> torch.Tensor:
    """Boolean ``[T, E]`` mask of experts in the ``topk_group`` best groups (group score: sum of top-2)."""
    tokens, experts = choice.shape
    if experts % n_group:
        raise UnsupportedConfigError("route", "num_expert_group", n_group, f"a divisor of num_experts ({experts})")
    per_group = experts // n_group
    grouped = choice.view(tokens, n_group, per_group)
    group_scores = torch.topk(grouped, min(2, per_group), dim=-1).values.sum(dim=-1)  # [T, n_group]
    keep = torch.topk(group_scores, topk_group, dim=-1).indices  # [T, topk_group]
    group_mask = torch.zeros(tokens, n_group, dtype=torch.bool, device=choice.device)
    group_mask.scatter_(1, keep, True)
    return group_mask.unsqueeze(-1).expand(tokens, n_group, per_group).reshape(tokens, experts)


def route(
    router_logits: torch.Tensor,
    params: RoutingParams,
    *,
    correction_bias: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Route every token.

    Args:
        router_logits: ``[T, E]`` logits, any float dtype (computed in float32).
        params: method, top-k and grouping/scaling parameters.
        correction_bias: ``[E]`` per-expert bias added before top-k (``deepseek_v3``,
            ``minimax2`` only); ``None`` means zeros.

    Returns:
        ``(topk_weights, topk_ids)``: ``[T, K]`` float32 and ``[T, K]`` int64, ordered by
        decreasing selection score.

    Raises:
        UnsupportedConfigError: a method without defined math, a bias for a method that
            does not use one, or a ``topk_group`` outside 1..``num_expert_group`` where the groups
            are applied.

    >>> w, ids = route(torch.log(torch.tensor([[1.0, 2.0, 3.0, 4.0]])), RoutingParams("default", top_k=2))
    >>> ids.tolist(), [round(x, 4) for x in w[0].tolist()]
    ([[3, 2]], [0.4, 0.3])
    """
    method = params.method
    if method not in IMPLEMENTED_ROUTING:
        raise UnsupportedConfigError("route", "routing_method", method.value, sorted(m.value for m in IMPLEMENTED_ROUTING))
    if correction_bias is not None and method not in _BIASED:
        raise UnsupportedConfigError("route", "correction_bias", "given", f"only {sorted(m.value for m in _BIASED)} use a correction bias")
    logits = router_logits.float()
    k = params.top_k
    if method is RoutingMethod.DEFAULT:
        weights, ids = _topk(torch.softmax(logits, dim=-1), k)
    elif method is RoutingMethod.RENORMALIZE:
        top, ids = _topk(logits, k)
        weights = torch.softmax(top, dim=-1)
    elif method is RoutingMethod.RENORMALIZE_NAIVE:
        top, ids = _topk(torch.softmax(logits, dim=-1), k)
        weights = _normalize(top)
    elif method is RoutingMethod.LLAMA4:
        top, ids = _topk(logits, k)
        weights = torch.sigmoid(top)
    elif method is RoutingMethod.TOPK:
        weights, ids = _topk(logits, k)
    elif method is RoutingMethod.SIGMOID:
        weights, ids = _topk(torch.sigmoid(logits), k)
    elif method is RoutingMethod.SIGMOID_RENORM:
        top, ids = _topk(torch.sigmoid(logits), k)
        weights = _normalize(top)
    else:  # deepseek_v3, minimax2
        scores = torch.sigmoid(logits)
        choice = scores if correction_bias is None else scores + correction_bias.float().to(scores.device)
        n_group = params.num_expert_group or 1
        # vLLM 0.29.0-0.34.0 GroupedTopKRouter.valid_grouping: other groups are routed ungrouped.
        if method is RoutingMethod.DEEPSEEK_V3 and n_group > 1 and router_groups(choice.shape[-1], n_group):
            topk_group = params.topk_group if params.topk_group is not None else n_group
            if not 1 <= topk_group <= n_group:
                raise UnsupportedConfigError("route", "topk_group", topk_group, f"1..num_expert_group ({n_group})")
            choice = choice.masked_fill(~_grouped_mask(choice, n_group, topk_group), float("-inf"))
        _, ids = _topk(choice, k)
        weights = _normalize(scores.gather(1, ids)) * params.routed_scaling_factor
    return weights.float(), ids.to(torch.int64)
