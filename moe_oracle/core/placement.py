"""Which experts each expert-parallel rank holds (vLLM 0.33.0-0.34.0 ``determine_expert_map``).

Pure arithmetic over the physical experts of one MoE layer: the logical experts plus EPLB
redundant ones, whose initial physical-to-logical map is ``[0..E-1] + [i % E for the R
redundant]`` (``EplbState.build_initial_global_physical_to_logical_map``). Ranks get
``P // ep`` experts and the first ``P % ep`` ranks one more; ``linear`` placement gives each
rank a contiguous run, ``round_robin`` every ``ep``-th expert, and falls back to ``linear``
where vLLM does (:func:`placement_strategy`: ``determine_expert_placement_strategy``), which is
the placement normalization gives the rules (the ``expert_placement`` field: vLLM 0.34.0's LoRA
wrapper refuses any other than ``linear`` under EP).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .config import EXPERT_PLACEMENTS, ParallelConfig
from .errors import ConfigError, InputIssue

__all__ = ["PLACEMENTS", "Placement", "RankExperts", "expert_placement", "placement_strategy", "places_experts", "ranges_text"]

PLACEMENTS = EXPERT_PLACEMENTS

# All2all backends whose routing tables support round-robin placement (vLLM 0.33.0-0.34.0
# FusedMoEParallelConfig.needs_round_robin_routing_tables: DeepEP low-latency, NIXL EP).
_ROUND_ROBIN_A2A = ("deepep_low_latency", "nixl_ep")
_MAX_EP = 1 << 16
_MAX_EXPERTS = 1 << 20


def _ranges(ids: tuple[int, ...]) -> tuple[tuple[int, int], ...]:
    """Inclusive runs of consecutive ids (with stride 1)."""
    out: list[tuple[int, int]] = []
    for i in ids:
        if out and i == out[-1][1] + 1:
            out[-1] = (out[-1][0], i)
        else:
            out.append((i, i))
    return tuple(out)


def ranges_text(ids: tuple[int, ...] | list[int], limit: int = 6) -> str:
    """``0-31``, ``0, 8, 16, ...`` style text for a list of ids.

    >>> ranges_text((0, 1, 2, 5))
    '0-2, 5'
    """
    runs = _ranges(tuple(ids))
    parts = [f"{a}" if a == b else f"{a}-{b}" for a, b in runs]
    if len(parts) > limit:
        parts = parts[: limit - 1] + [f"... ({len(ids)} in all)"]
    return ", ".join(parts) if parts else "none"


@dataclass(frozen=True)
class RankExperts:
    """One EP rank's experts.

    Attributes:
        rank: EP rank.
        physical: physical expert ids on this rank (in local order).
        logical: the logical expert each physical one serves (initial EPLB map).
        num_logical: logical experts of the layer (ids at or above it are redundant copies).
    """

    rank: int
    physical: tuple[int, ...]
    logical: tuple[int, ...]
    num_logical: int

    @property
    def count(self) -> int:
        return len(self.physical)

    @property
    def redundant(self) -> int:
        """Redundant (EPLB) physical experts on this rank."""
        return sum(1 for p in self.physical if p >= self.num_logical)

    def to_dict(self) -> dict[str, Any]:
        return {
            "rank": self.rank,
            "num_experts": self.count,
            "redundant": self.redundant,
            "physical": [list(r) for r in _ranges(self.physical)],
            "logical": [list(r) for r in _ranges(tuple(sorted(set(self.logical))))],
        }


@dataclass(frozen=True)
class Placement:
    """Experts of one MoE layer across the EP group.

    Attributes:
        num_logical: logical (routed) experts; num_physical: with redundant copies.
        ep_size: EP group size.
        strategy: placement vLLM uses; requested: the one asked for.
        fallback: why a requested ``round_robin`` became ``linear``, else ``None``.
        ranks: every rank's experts.
    """

    num_logical: int
    num_physical: int
    ep_size: int
    strategy: str
    requested: str
    fallback: str | None
    ranks: tuple[RankExperts, ...]

    def empty_ranks(self) -> tuple[int, ...]:
        """Ranks that hold no expert of this layer."""
        return tuple(r.rank for r in self.ranks if r.count == 0)

    def classes(self) -> dict[int, tuple[int, ...]]:
        """Local expert count -> ranks with that count."""
        out: dict[int, list[int]] = {}
        for r in self.ranks:
            out.setdefault(r.count, []).append(r.rank)
        return {k: tuple(v) for k, v in out.items()}

    def to_dict(self) -> dict[str, Any]:
        return {
            "num_logical": self.num_logical,
            "num_physical": self.num_physical,
            "ep_size": self.ep_size,
            "strategy": self.strategy,
            "requested": self.requested,
            "fallback": self.fallback,
            "empty_ranks": list(self.empty_ranks()),
            "ranks": [r.to_dict() for r in self.ranks],
        }


def places_experts(parallel: ParallelConfig) -> bool:
    """Whether ranks hold different experts: expert parallelism over more than one rank, TP x PCP
    x DP (vLLM 0.29.0-0.34.0 P/config.py ``FusedMoEParallelConfig.make``; it places experts per EP
    rank only then; otherwise every rank holds every expert)."""
    return parallel.use_ep and parallel.world > 1


def placement_strategy(parallel: ParallelConfig, num_expert_group: int | None) -> tuple[str, str | None]:
    """(the placement vLLM uses for a layer with ``num_expert_group`` expert groups, why a requested
    ``round_robin`` became ``linear`` or ``None``), for ``parallel.expert_placement_strategy``.

    Without expert parallelism over more than one rank every rank holds every expert: ``linear``
    (vLLM 0.29.0-0.34.0 P/expert_map_manager.py ``ExpertMapManager._determine_placement_strategy``:
    ``ep_size == 1``). With it, ``round_robin`` falls back to ``linear`` unless the layer has more
    than one expert group, no redundant experts and no EPLB, and, where the all2all kernels run
    (``use_all2all_kernels``: EP with DP or PCP above 1; its sequence-parallel term needs DP > 1),
    the all2all backend keeps round-robin routing tables (DeepEP low-latency, NIXL EP:
    ``needs_round_robin_routing_tables``) (``determine_expert_placement_strategy``, the same in
    0.29.0-0.34.0).

    >>> placement_strategy(ParallelConfig(tp_size=8, use_ep=True, expert_placement_strategy="round_robin"), 8)
    ('round_robin', None)
    >>> placement_strategy(ParallelConfig(tp_size=8, use_ep=True, expert_placement_strategy="round_robin"), None)[0]
    'linear'
    """
    strategy = parallel.expert_placement_strategy
    if strategy != "round_robin":
        return strategy, None
    if not places_experts(parallel):
        return "linear", "without expert parallelism over more than one rank every rank holds every expert"
    if not ((num_expert_group or 0) > 1 and parallel.num_redundant_experts == 0 and not parallel.enable_eplb):
        return "linear", "round-robin placement needs more than one expert group and no redundant experts or EPLB"
    if (parallel.dp_size > 1 or parallel.pcp_size > 1) and parallel.all2all_backend.value not in _ROUND_ROBIN_A2A:
        # use_all2all_kernels and not needs_round_robin_routing_tables (vLLM 0.29.0-0.34.0
        # P/expert_map_manager.py determine_expert_placement_strategy)
        return "linear", f"round-robin placement supports only the DeepEP low-latency or NIXL EP all2all, not {parallel.all2all_backend.value}"
    return "round_robin", None


def expert_placement(num_experts: int, parallel: ParallelConfig, *, num_expert_group: int | None = None) -> Placement | None:
    """Per-rank experts of a layer with ``num_experts`` logical experts, or ``None`` without EP.

    Args:
        num_experts: logical routed experts of the layer.
        parallel: deployment (EP is effective when ``use_ep`` and ``tp * pcp * dp > 1``); its
            ``expert_placement_strategy`` is the placement requested (``linear``, vLLM's default, or
            ``round_robin``), which :func:`placement_strategy` may turn into ``linear``.
        num_expert_group: the layer's expert groups (round-robin needs more than one).

    Raises:
        ConfigError: more than 65536 EP ranks or 2**20 physical experts.
    """
    if not places_experts(parallel):
        return None
    ep = parallel.world
    redundant = parallel.num_redundant_experts
    physical = num_experts + redundant
    if ep > _MAX_EP or physical > _MAX_EXPERTS:
        # Name the input that is too large: the rank count, the model's experts, or the redundant copies added to them.
        if ep > _MAX_EP:
            path, value, bound = "--tp/--pcp/--dp", ep, _MAX_EP
        elif num_experts > _MAX_EXPERTS:
            path, value, bound = "$.num_experts", physical, _MAX_EXPERTS
        else:
            path, value, bound = "$.parallel.num_redundant_experts", redundant, _MAX_EXPERTS - num_experts
        raise ConfigError([InputIssue(path, f"per-rank placement lists every rank and expert: at most {_MAX_EP} EP ranks and {_MAX_EXPERTS} physical experts ({num_experts} experts + {redundant} redundant)", value, {"maximum": bound})])
    used, fallback = placement_strategy(parallel, num_expert_group)
    base, extra = divmod(physical, ep)
    to_logical = list(range(num_experts)) + [i % num_experts for i in range(redundant)]
    ranks = []
    start = 0
    for rank in range(ep):
        count = base + (1 if rank < extra else 0)
        if used == "linear":
            ids = tuple(range(start, start + count))
            start += count
        else:
            ids = tuple(range(rank, physical, ep))
        ranks.append(RankExperts(rank, ids, tuple(to_logical[i] for i in ids), num_experts))
    return Placement(num_experts, physical, ep, used, parallel.expert_placement_strategy, fallback, tuple(ranks))
