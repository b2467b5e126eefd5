"""A coverage-guided sampler: deployments that reach kernels independent draws leave unreached.

Independent draws rarely line up every axis a kernel needs (issue 25: MoRI and passthrough never
selected, W4A8-INT8 never selected, no XPU kernel). For each kernel of the release's tables that
vLLM provides, :func:`guided_deployments` starts from random deployments of the sampler
(:mod:`.space`) and *solves* for it: it asks our tables why the kernel lost and repairs the
deployment along the failing fields it can set (device, all2all, request, packages, host tools, environment
variables, activation, routing, dtype, bias, LoRA), up to ``steps`` times. A deployment is kept
when our tables then select the kernel; vLLM judges it in the run, so a wrong table shows up as
a disagreement, never as coverage.

Our tables guide the search only: nothing here is compared, and a kernel the search cannot reach
is reported (:func:`guided_deployments` returns the unreached ids).
"""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any, Sequence

from .cases import PACKAGES, Deployment
from .ours import PACKAGE_NAMES, OurSide
from .space import FAMILY_SCHEMES, random_deployment

__all__ = ["guided_deployments", "repair"]

_DISTRIBUTION_TO_SHORT = {v: k for k, v in PACKAGE_NAMES.items()}
_FAMILIES = tuple(FAMILY_SCHEMES)
_DEVICE_FIELDS = {"device_capability": "capability", "gpu_arch": "arch", "cpu_arch": "arch"}


def _first(allowed: Any) -> Any:
    if isinstance(allowed, (list, tuple)) and allowed:
        return allowed[0]
    return None


def repair(dep: Deployment, failures: Sequence[Any], request: str | None, rng: random.Random) -> Deployment:
    """``dep`` with the failing fields set to a value the failure allows, where the deployment
    has such a field (a failure on a field it cannot set is left: the search moves on)."""
    changes: dict[str, Any] = {}
    env = dict(dep.env)
    packages = set(dep.packages)
    tools = set(dep.tools)
    for f in failures:
        field, allowed = f.field, f.allowed
        pick = rng.choice(allowed) if isinstance(allowed, (list, tuple)) and allowed else None
        if field == "platform" and pick:
            changes.update(platform=pick, capability=None, arch=None, cpu_amx=None)
            # A known device: with no arch our side's arch rules abstain while the harness's vLLM
            # runs some arch, so the two would answer different devices (the 200-mutant run met
            # 10 such ROCm deployments); an arch rule that fails then repairs it.
            if pick == "cuda":
                changes["capability"] = 90
            elif pick == "cpu":
                changes.update(arch="x86_64", cpu_amx=False)
            elif pick == "rocm":
                changes["arch"] = "gfx942"
            elif pick == "xpu":
                changes["arch"] = "xe2"
        elif field in _DEVICE_FIELDS and pick is not None:
            changes[_DEVICE_FIELDS[field]] = pick
        elif field == "cpu_amx" and pick is not None:
            changes["cpu_amx"] = pick
        elif field in ("all2all", "dispatch") and pick and pick not in ("none", "allgather_reducescatter"):
            changes.update(use_ep=True, dp_size=max(dep.dp_size, 2), all2all_backend=pick)
        elif field in ("all2all", "dispatch", "dp_size", "use_ep") and (pick in ("none",) or field == "dp_size"):
            changes.update(dp_size=1, use_ep=False, all2all_backend="allgather_reducescatter")
        elif field == "moe_backend" and request:
            changes["moe_backend"] = request
        elif field.startswith("packages."):
            short = _DISTRIBUTION_TO_SHORT.get(field[9:])
            if short in PACKAGES:
                packages.add(short)
        elif field.startswith("tools.") and isinstance(pick, bool):
            (tools.add if pick else tools.discard)(field[6:])
        elif field.startswith("env.") and pick is not None:
            env[field[4:]] = ("1" if pick else "0") if isinstance(pick, bool) else str(pick)
        elif field in ("activation", "routing_method", "in_dtype") and pick:
            changes[field] = pick
        elif field in ("has_bias", "lora") and isinstance(pick, bool):
            changes[field] = pick
        elif field == "enable_eplb" and pick is False:
            changes.update(enable_eplb=False, num_redundant_experts=0)
    return replace(dep, env=tuple(env.items()), packages=tuple(sorted(packages)), tools=tuple(sorted(tools)), **changes)


def guided_deployments(
    release: str,
    per_kernel: int = 3,
    seed: int = 0,
    starts: int = 40,
    steps: int = 4,
    kernels: Sequence[str] | None = None,
    side: OurSide | None = None,
) -> tuple[list[Deployment], list[str]]:
    """Deployments our tables answer with each vLLM kernel of ``release`` (``per_kernel`` each, as
    far as the search finds them), and the kernel ids it did not reach.

    ``starts`` random deployments per kernel are repaired ``steps`` times each at most.
    """
    side = side or OurSide(release)
    catalog = side.oracle.catalog.for_version(release)
    targets = [e for e in catalog.experts if e.provider == "vllm" and (kernels is None or e.id in kernels)]
    rng = random.Random(seed)
    found: list[Deployment] = []
    unreached: list[str] = []
    for entry in targets:
        hits = 0
        request = entry.backend if entry.backend in catalog.backend_names else None
        for start in range(starts):
            if hits >= per_kernel:
                break
            # Starts cycle through the quant families: a kernel serves one or two, and our repair
            # does not change the checkpoint.
            dep = random_deployment(rng, families=[_FAMILIES[start % len(_FAMILIES)]])
            for _step in range(steps + 1):
                decision = side.decide(dep)
                if decision is None:
                    break
                if decision.kernel == entry.id:
                    found.append(dep)
                    hits += 1
                    break
                cand = next((c for c in decision.candidates if c.kernel == entry.id), None)
                if cand is None:
                    break
                failures = cand.failures or ()
                if not failures:  # eligible but outranked: request it
                    if request is None or dep.moe_backend == request:
                        break
                    dep = replace(dep, moe_backend=request)
                    continue
                dep = repair(dep, failures, request, rng)
        if hits == 0:
            unreached.append(entry.id)
    return found, unreached
