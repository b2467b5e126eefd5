"""The note that a requested round-robin expert placement has no effect on a layer.

vLLM 0.29.0-0.34.0 P/expert_map_manager.py ``determine_expert_placement_strategy`` falls back to
linear placement where a layer cannot use round-robin (:func:`moe_oracle.core.placement.placement_strategy`);
the doors (:mod:`.deployment`, :mod:`.model_deployment`) say so where the operator asked for it.
"""

from __future__ import annotations

from dataclasses import replace

from ..core.catalog import Catalog
from ..core.config import MoEConfig, ParallelConfig
from ..core.errors import ConfigError
from ..core.placement import placement_strategy, places_experts
from ..core.requests import bind_all2all
from .operator_inputs import OperatorInputs

__all__ = ["bound_parallel", "placement_note"]


def bound_parallel(catalog: Catalog, config: MoEConfig) -> ParallelConfig:
    """The parallel config the layer gets once a ``moe_backend`` that dispatches and combines
    itself has bound its all2all backend (:func:`moe_oracle.core.requests.bind_all2all`); a
    refused pairing is left to the selection, which raises it with the rest of its answer."""
    try:
        return bind_all2all(catalog, config)[0].parallel
    except ConfigError:
        return config.parallel


def placement_note(given: OperatorInputs, parallel: ParallelConfig, num_expert_group: int | None) -> str | None:
    """The note that the ``round_robin`` placement the operator asked for (``--expert-placement``,
    a serve line's ``--expert-placement-strategy``) has no effect on a layer with
    ``num_expert_group`` expert groups under ``parallel``: vLLM places its experts linearly
    (:func:`moe_oracle.core.placement.placement_strategy`); ``None`` where it keeps round-robin or
    none was asked for."""
    if given.expert_placement != "round_robin" or parallel.all2all_backend.value == "moonep":  # MoonEP refuses the request itself at start
        return None
    used, why = placement_strategy(replace(parallel, expert_placement_strategy="round_robin"), num_expert_group)
    if used == "round_robin":
        return None
    placement_from = "the --serve line's --expert-placement-strategy" if "expert_placement" in given.from_serve else "--expert-placement"
    if not places_experts(parallel):
        return f"{placement_from} round_robin has no effect: without expert parallelism over more than one rank (--ep with --tp or --dp above 1) every rank holds every expert"
    return f"{placement_from} round_robin has no effect on this layer: vLLM places its experts linearly ({why}; vLLM 0.29.0-0.34.0 P/expert_map_manager.py determine_expert_placement_strategy)"
