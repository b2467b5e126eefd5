"""Seeded random configs over the whole vocabulary (for lint's reachability scan and benchmarks).

Property tests use hypothesis strategies instead (``tests/property/strategies.py``);
this sampler is for tools that need a fixed, reproducible set without hypothesis.
"""

from __future__ import annotations

import random
from typing import Iterator

from ..core.catalog import Catalog
from ..core.config import MoEConfig, ParallelConfig
from ..core.environment import Environment
from ..inputs.hardware import GPU_CATALOG
from ..core.quant import SCHEMES
from ..core.vocab import Activation, All2AllBackend, DType, RoutingMethod

__all__ = ["sample_configs"]

_EXPERTS = (1, 8, 16, 32, 60, 64, 128, 160, 256, 384, 512, 1024, 2048, 4096)
_HIDDEN = (1024, 2048, 2688, 2880, 3072, 4096, 5120, 7168, 8192, 12288)
_INTER = (96, 192, 256, 512, 768, 1408, 1536, 1856, 2048, 2880, 8192, 14336)
_SIZES = (1, 2, 4, 8)


def sample_configs(n: int, seed: int, catalog: Catalog) -> Iterator[tuple[MoEConfig, Environment]]:
    """``n`` (config, environment) pairs, the same for the same ``seed``.

    Environments leave packages unknown (their predicates abstain) and set the
    declared environment variables to random values of their type half the time.
    """
    rng = random.Random(seed)
    devices = [hw.device for hw in GPU_CATALOG.values()]
    # An all2all backend bound to a moe_backend name is refused at start with any other name.
    all2all = [b for b in All2AllBackend if b.value not in set(catalog.bound_all2all.values())]
    schemes = list(SCHEMES.values())
    for _ in range(n):
        experts = rng.choice(_EXPERTS)
        dp = rng.choice(_SIZES)
        parallel = ParallelConfig(
            tp_size=rng.choice(_SIZES),
            dp_size=dp,
            use_ep=rng.random() < 0.5,
            all2all_backend=rng.choice(all2all),
            enable_eplb=rng.random() < 0.1,
        )
        activation = rng.choice(list(Activation))
        config = MoEConfig(
            num_experts=experts,
            top_k=rng.randint(1, min(experts, 8)),
            hidden_size=rng.choice(_HIDDEN),
            intermediate_size=rng.choice(_INTER),
            device=rng.choice(devices),
            activation=activation,
            routing_method=rng.choice(list(RoutingMethod)),
            quant=rng.choice(schemes),
            quant_method=rng.choice((None, "fp8", "compressed-tensors", "modelopt", "mxfp4")),
            in_dtype=rng.choice(list(DType)),
            router_logits_dtype=rng.choice((None, *DType)),
            has_bias=rng.random() < 0.2,
            swiglu_limit=7.0 if activation in (Activation.SWIGLUOAI, Activation.SWIGLUOAI_UNINTERLEAVE) and rng.random() < 0.5 else None,
            parallel=parallel,
            lora=rng.random() < 0.1,
            batch_invariant=rng.random() < 0.1,
            max_num_tokens=rng.choice((None, 256, 8192)),
        )
        env_values = []
        for var in catalog.env_vars:
            if rng.random() < 0.5:
                continue
            if var.type == "bool":
                env_values.append((var.name, rng.choice(("0", "1"))))
            else:
                env_values.append((var.name, rng.choice((str(var.default), "grouped"))))
        yield config, Environment(env=tuple(env_values))
