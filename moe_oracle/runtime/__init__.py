"""The runtime half of moe_oracle: turn a Decision into a callable fused-MoE kernel and run it.

Needs torch (the ``runtime`` extra). The selection core never imports this package.
Names are loaded lazily so that adapter modules (``moe_oracle.kernels.*``,
``moe_oracle.prepare_finalize.*``) can import the pieces they need without cycles.

Public API:

* :class:`FusedMoEKernel` (``kernel.py``): prepare/finalize + experts, callable.
* :func:`make_kernel` / :func:`make_kernel_from_adapters` (``build.py``): build the pair a
  Decision chose, by its declared ``adapter`` strings.
* :class:`LayerSpec`, :class:`RoutingParams` (``spec.py``); :class:`MoEWeights`,
  :func:`make_random_weights` (``weights.py``); :func:`route` (``routing.py``);
  :func:`apply_activation` (``activations.py``).
* :func:`check_ranks_agree` (``agreement.py``): all ranks selected the same kernel.
* :func:`run_layer`, :class:`RunReport` (``runner.py``): run a selected kernel at a model's
  real dimensions and compare it with the float32 reference.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "FusedMoEKernel",
    "LayerSpec",
    "MoEWeights",
    "RoutingParams",
    "RunReport",
    "apply_activation",
    "check_ranks_agree",
    "make_kernel",
    "make_kernel_from_adapters",
    "make_random_weights",
    "route",
    "run_layer",
]

_WHERE = {
    "FusedMoEKernel": "kernel",
    "LayerSpec": "spec",
    "RoutingParams": "spec",
    "MoEWeights": "weights",
    "make_random_weights": "weights",
    "route": "routing",
    "apply_activation": "activations",
    "check_ranks_agree": "agreement",
    "make_kernel": "build",
    "make_kernel_from_adapters": "build",
    "run_layer": "runner",
    "RunReport": "runner",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'moe_oracle.runtime' has no attribute {name!r}")
    return getattr(importlib.import_module(f".{module}", __name__), name)


def __dir__() -> list[str]:
    return sorted(__all__)
