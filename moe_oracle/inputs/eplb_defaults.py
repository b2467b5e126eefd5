"""The EPLB redundant-expert count vLLM picks when none is given (vLLM 0.34.0+).

vLLM 0.34.0 vllm/config/parallel.py: ``EPLBConfig.num_redundant_experts`` defaults to ``None``
(0 in 0.29.0-0.33.0), and ``ParallelConfig.compute_eplb_num_redundant_experts`` (called from
``VllmConfig.__post_init__`` with ``model_config.get_num_experts()``) sets it, when EPLB is on and
no count is given, to the least count that makes the physical experts divide evenly over the EP
group: ``(ep - E % ep) % ep`` with ``ep = TP x PCP x DP``. An explicit count is kept (and an uneven
one is still refused by the layer: P/layer.py "EPLB currently only supports even distribution").
PCP is the deployment's ``pcp_size`` (``-pcp``), 1 unless given.
"""

from __future__ import annotations

from dataclasses import replace
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from ..core.config import MoEConfig, ParallelConfig, Provenance
from ..core.versions import admits
from ..core.vocab import Source

__all__ = ["DEFAULT_COUNT_RANGE", "default_redundant_experts", "default_redundant_parallel", "minimum_redundant"]

DEFAULT_COUNT_RANGE = SpecifierSet(">=0.34.0")
"""The releases that compute the count when it is not given (vLLM 0.34.0 vllm/config/parallel.py
``compute_eplb_num_redundant_experts``; absent from 0.29.0-0.33.0, checked in their trees)."""


def minimum_redundant(num_experts: int, ep_size: int) -> int:
    """``(ep - E % ep) % ep``: the least redundant experts making ``E + r`` divisible by ``ep``.

    >>> minimum_redundant(256, 8), minimum_redundant(60, 8), minimum_redundant(128, 3)
    (0, 4, 1)

    Raises:
        ValueError: ``num_experts`` < 1 or ``ep_size`` < 1.
    """
    if num_experts < 1 or ep_size < 1:
        raise ValueError(f"num_experts and ep_size must be positive, got {num_experts} and {ep_size}")
    return (ep_size - num_experts % ep_size) % ep_size


def default_redundant_experts(config: MoEConfig, release: str | None) -> tuple[MoEConfig, str | None]:
    """(``config`` with the count vLLM ``release`` computes, the note saying so); ``config``
    unchanged and ``None`` when the release keeps 0, EPLB is off, or the count was given
    (a ``parallel.num_redundant_experts`` provenance: a flag, a serve line, a config file)."""
    par: ParallelConfig = config.parallel
    if release is None or not admits(DEFAULT_COUNT_RANGE, Version(release)) or not par.enable_eplb:
        return config, None
    if any(p.field == "parallel.num_redundant_experts" for p in config.provenance):
        return config, None
    ep = par.world
    count = minimum_redundant(config.num_experts, ep)
    evidence = f"vLLM {release} compute_eplb_num_redundant_experts: (ep - E % ep) % ep with E={config.num_experts}, ep=TPxPCPxDP={ep}"
    provenance = tuple(p for p in config.provenance if p.field != "parallel.num_redundant_experts") + (Provenance("parallel.num_redundant_experts", Source.DERIVED, evidence),)
    new = replace(config, parallel=replace(par, num_redundant_experts=count), provenance=provenance)
    note = f"EPLB without a redundant-expert count: vLLM {release} picks num_redundant_experts={count}, the least that spreads the {config.num_experts} experts evenly over EP={ep} (vllm/config/parallel.py compute_eplb_num_redundant_experts)"
    return new, note


def default_redundant_parallel(par: ParallelConfig, num_experts: int, release: str | None, *, given: bool) -> tuple[ParallelConfig, str | None]:
    """:func:`default_redundant_experts` for a whole model (``plan``): ``par`` with the count vLLM
    ``release`` computes from the model's ``num_experts`` (``model_config.get_num_experts()``)
    when EPLB is on and no count was ``given``; the note saying so, else ``None``."""
    if given or release is None or not admits(DEFAULT_COUNT_RANGE, Version(release)) or not par.enable_eplb:
        return par, None
    ep = par.world
    count = minimum_redundant(num_experts, ep)
    note = f"EPLB without a redundant-expert count: vLLM {release} picks num_redundant_experts={count}, the least that spreads the {num_experts} experts evenly over EP={ep} (vllm/config/parallel.py compute_eplb_num_redundant_experts)"
    return replace(par, num_redundant_experts=count), note
