"""A coverage-guided sampler: deployments that reach kernels independent draws leave unreached.

Independent draws rarely line up every axis a kernel needs (issue 25: MoRI and passthrough never
selected, W4A8-INT8 never selected, no XPU kernel). For each kernel of the release's tables that
vLLM provides, :func:`guided_deployments` *solves* for it: from a shared pool of random
deployments of the sampler (:mod:`.space`) it takes the ones our tables reject the kernel for
only on fields a deployment can set (fewest failures first), and repairs each along its failing
fields (device, all2all, request, packages, host tools, environment variables, activation and its
parameters, routing, dtype, bias, LoRA, EPLB, shape, weight block), up to ``steps`` times. A
deployment is kept when our tables then select the kernel; vLLM judges it in the run, so a wrong
table shows up as a disagreement, never as coverage.

Everything is read from the release's view of the tables and drawn from the release's families,
so each release is searched for its own kernels. A kernel only a shortcut's substitution selects
(a quantization method that takes another class of the backend the oracle chose) is solved for
through the class it replaces, from deployments the shortcut's family and quant method hold for.
:func:`guided_pairs` solves the same way for each (quant family, kernel) pair, from a pool of each
family's own draws.

Our tables guide the search only: nothing here is compared, and a kernel the search cannot reach
is returned (:func:`guided_deployments`); the kernels no deployment of the harness can make vLLM
select, and why, are :data:`.coverage.UNREACHABLE` (per release), and are not searched.
:func:`guided_all2all` does the same for each all2all backend (a positive selection dispatching
through it).
"""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any, Sequence

from ..core.requests import request_name
from .cases import PACKAGES, Deployment
from .coverage import all2all_used, unreachable
from .ours import FRONT_END_QUANT_METHOD, PACKAGE_NAMES, OurSide
from .space import SHAPES, families_for, random_deployment

__all__ = ["REPAIRABLE", "can_repair", "guided_all2all", "guided_deployments", "guided_pairs", "repair", "repairable"]

_DISTRIBUTION_TO_SHORT = {v: k for k, v in PACKAGE_NAMES.items()}
_DEVICE_FIELDS = {"device_capability": "capability", "gpu_arch": "arch", "cpu_arch": "arch"}
_DEVICE_OF = {"cuda": {"capability": 90}, "cpu": {"arch": "x86_64", "cpu_amx": False}, "rocm": {"arch": "gfx942"}, "xpu": {"arch": "xe2"}}
_SHAPE_FIELDS = ("num_experts", "top_k", "hidden_size", "intermediate_size", "intermediate_size_per_partition", "padded_hidden_size", "ep_size")
_FLAGS = ("has_bias", "lora", "has_hash_routing", "require_decomposed")
_MORI_DISPATCH = {"mori_epv1": "0", "mori_epv2": "1"}
_A2A_PACKAGE = {"deepep_high_throughput": "deep_ep", "deepep_low_latency": "deep_ep", "deepep_v2": "deep_ep", "nixl_ep": "nixl_ep",
                "moonep": "moonep", "mori": "mori", "mori_high_throughput": "mori", "mori_low_latency": "mori",
                "flashinfer_nvlink_one_sided": "flashinfer_cubin", "flashinfer_nvlink_two_sided": "flashinfer_cubin"}
"""The package each all2all backend's kernels need: without it vLLM refuses the backend at start-up
(its all2all manager asserts it), in a part the harness does not build, so the case is not compared."""
_NEVER = "(none)"
_TP_DP = ((1, 1), (2, 1), (1, 2), (2, 2), (1, 4), (4, 2), (1, 8))

REPAIRABLE: frozenset[str] = frozenset({
    "platform", "cpu_amx", "activation_format", "all2all", "dispatch", "dp_size", "use_ep", "moe_backend", "activation", "routing_method",
    "in_dtype", "router_logits_dtype", "enable_eplb", "batch_invariant", "architecture", "weight_block", "swiglu_clamp",
    "swiglu_alpha", "swiglu_beta", "situ_beta", "situ_linear_beta", *_DEVICE_FIELDS, *_SHAPE_FIELDS, *_FLAGS,
})
"""Failing fields :func:`repair` can set (besides ``packages.*``, ``tools.*`` and ``env.*``)."""


def repairable(field: str) -> bool:
    """Whether :func:`repair` can change a failing ``field``."""
    if field.startswith("packages."):
        return _DISTRIBUTION_TO_SHORT.get(field[9:]) in PACKAGES
    return field in REPAIRABLE or field.startswith(("tools.", "env."))


def _with_all2all_package(dep: Deployment) -> Deployment:
    """``dep`` with the package of the all2all backend it dispatches through (:data:`_A2A_PACKAGE`)."""
    pkg = _A2A_PACKAGE.get(all2all_used(dep) or "")
    if pkg is None or pkg in dep.packages:
        return dep
    # FlashInfer's NVLink all2all needs has_flashinfer(): the package with its precompiled kernels.
    extra = {"flashinfer"} if pkg == "flashinfer_cubin" else set()
    return replace(dep, packages=tuple(sorted({*dep.packages, pkg, *extra})))


def _device(platform: str) -> dict[str, Any]:
    """A known device of ``platform``: with no arch our side's arch rules abstain while the
    harness's vLLM runs some arch, so the two would answer different devices (the 200-mutant run
    met 10 such ROCm deployments); an arch rule that fails then repairs it."""
    return {"platform": platform, "capability": None, "arch": None, "cpu_amx": None, **_DEVICE_OF.get(platform, {})}


def _parallel(dep: Deployment, field: str, pick: Any, rng: random.Random) -> dict[str, Any]:
    if field == "dispatch" and pick in _MORI_DISPATCH:
        return {"use_ep": True, "dp_size": max(dep.dp_size, 2), "all2all_backend": "mori"}
    if pick == "passthrough":
        return {"use_ep": True, "all2all_backend": "passthrough"}
    if pick and pick not in ("none", "allgather_reducescatter") and isinstance(pick, str):
        return {"use_ep": True, "dp_size": max(dep.dp_size, 2), "all2all_backend": pick}
    if field in ("use_ep", "dp_size") and pick is True:
        return {"use_ep": True}
    return {"dp_size": 1, "use_ep": False, "all2all_backend": "allgather_reducescatter"}


def repair(dep: Deployment, failures: Sequence[Any], request: str | None, rng: random.Random) -> Deployment:
    """``dep`` with the failing fields set to a value the failure allows, where the deployment
    has such a field (a failure on a field it cannot set is left: the search moves on). A
    failing derived shape field (per-partition sizes, padding, EP size) draws another real shape
    and parallel layout."""
    changes: dict[str, Any] = {}
    env = dict(dep.env)
    packages = set(dep.packages)
    tools = set(dep.tools)
    for f in failures:
        field, allowed = f.field, f.allowed
        pick = rng.choice(allowed) if isinstance(allowed, (list, tuple)) and allowed else None
        if field == "platform" and pick:
            changes.update(_device(pick))
        elif field in _DEVICE_FIELDS and pick is not None:
            changes[_DEVICE_FIELDS[field]] = pick
        elif field == "cpu_amx" and pick is not None:
            changes["cpu_amx"] = pick
        elif field == "activation_format" and pick in ("batched_experts", "standard"):
            # The layout follows the all2all: DeepEP low-latency dispatches batched (vLLM
            # P/prepare_finalize/deepep_ll.py), the rank-local path standard.
            if pick == "batched_experts":
                changes.update(use_ep=True, dp_size=max(dep.dp_size, 2), all2all_backend="deepep_low_latency")
                packages.add("deep_ep")
            else:
                changes.update(_parallel(dep, "all2all", "none", rng))
        elif field in ("all2all", "dispatch", "dp_size", "use_ep"):
            changes.update(_parallel(dep, field, pick, rng))
            if field == "dispatch" and pick in _MORI_DISPATCH:
                env["VLLM_MORI_EP_V2"] = _MORI_DISPATCH[pick]
                packages.add("mori")
        elif field == "moe_backend":
            # A kernel no --moe-backend value requests is reached under auto (its shortcut or
            # priority list; the allowed value names the backend, not a value vLLM accepts).
            changes["moe_backend"] = request or "auto"
        elif field.startswith("packages."):
            short = _DISTRIBUTION_TO_SHORT.get(field[9:])
            if short in PACKAGES:
                (packages.discard if pick is False else packages.add)(short)
        elif field.startswith("tools.") and isinstance(pick, bool):
            (tools.add if pick else tools.discard)(field[6:])
        elif field == "batch_invariant" and pick is False:
            env.pop("VLLM_BATCH_INVARIANT", None)
        elif field.startswith("env.") and pick is not None:
            env[field[4:]] = ("1" if pick else "0") if isinstance(pick, bool) else str(pick)
        elif field in ("activation", "routing_method", "in_dtype", "architecture") and isinstance(pick, str):
            changes[field] = pick
        elif field == "router_logits_dtype" and pick is not None:
            changes[field] = pick
        elif field in _FLAGS and isinstance(pick, bool):
            changes[field] = pick
        elif field == "swiglu_clamp" and isinstance(pick, bool):
            changes["swiglu_limit"] = 7.0 if pick else None
        elif field in ("swiglu_alpha", "swiglu_beta", "situ_beta", "situ_linear_beta"):
            changes[field] = pick if not isinstance(pick, str) else None
        elif field == "enable_eplb" and pick is False:
            changes.update(enable_eplb=False, num_redundant_experts=0)
        elif field == "weight_block" and isinstance(pick, str) and "x" in pick:
            n, k = pick.split("x")
            changes["block"] = (int(n), int(k))
        elif field in _SHAPE_FIELDS:
            e, k, h, i = rng.choice(SHAPES)
            tp, dp = rng.choice(_TP_DP)
            changes.update(num_experts=e, top_k=k, hidden_size=h, intermediate_size=i, tp_size=tp, dp_size=dp)
    return _with_all2all_package(replace(dep, env=tuple(env.items()), packages=tuple(sorted(packages)), tools=tuple(sorted(tools)), **changes))


def can_repair(check: Any) -> bool:
    """Whether :func:`repair` can act on ``check``: its field is repairable and some value passes
    (an oracle that never requests the kernel's backend allows only the ``(none)`` sentinel,
    ``core/catalog.py`` ``FamilyMap.checks``)."""
    allowed = check.allowed() if callable(check.allowed) else check.allowed
    return repairable(check.field) and allowed != [_NEVER]


def _position(decision: Any, kernel: str) -> int | None:
    """Rank position of ``kernel`` among ``decision``'s candidates (``None``: not a candidate)."""
    return next((pos for pos, row in enumerate(decision.rows) if row.entry.id == kernel), None)


def _failures(decision: Any, kernel: str) -> tuple[Any, ...] | None:
    """The failure records of ``kernel`` in ``decision`` (built for that candidate only)."""
    pos = _position(decision, kernel)
    return None if pos is None else decision.candidate_at(pos).failures or ()


def _score(decision: Any, kernel: str) -> tuple[int, int] | None:
    """How far ``decision``'s deployment is from selecting ``kernel``: (failures :func:`repair`
    cannot change, all failures); ``None`` when the kernel is no candidate there."""
    if decision is None:
        return None
    if decision.kernel == kernel:
        return (0, 0)
    pos = _position(decision, kernel)
    if pos is None:
        return None
    checks = decision.rows[pos].failures
    return (sum(not can_repair(c) for c in checks), len(checks) + 1)


def _solve(side: OurSide, catalog: Any, entry: Any, deps: Sequence[Deployment], decisions: Sequence[Any], per_kernel: int,
           rng: random.Random, starts: int, steps: int, goal: str | None = None) -> dict[str, Deployment]:
    """Deployments (by key) our tables answer with ``goal`` (default ``entry``'s id), repaired
    towards selecting ``entry`` from the ``starts`` of ``deps`` closest to it; of different quant
    schemes where the starts give them (a scheme a release's vLLM has no key for, e.g. 0.29.0's
    NVFP4 per-token activations, is not driven: another scheme still reaches the kernel)."""
    goal = goal or entry.id
    request = request_name(catalog, entry.backend) if entry.backend else "auto"
    request = None if request == "auto" else request
    scored = sorted((s, i) for i, d in enumerate(decisions) if (s := _score(d, entry.id)) is not None)
    # Starts failing only where repair can act come first; the others are tried only when
    # there are none (a derived field may still follow a repaired one).
    fewest = scored[0][0][0] if scored else 0
    hits: dict[str, Deployment] = {}
    spares: dict[str, Deployment] = {}
    for _score_i, index in [x for x in scored if x[0][0] == fewest][:starts]:
        if len(hits) >= per_kernel:
            break
        dep = _with_all2all_package(deps[index])
        for _step in range(steps + 1):
            decision = side.decide(dep)
            if decision is None:
                break
            if decision.kernel == goal:
                schemes = {(h.weight_key, h.activation_key) for h in hits.values()}
                (spares if (dep.weight_key, dep.activation_key) in schemes else hits).setdefault(dep.key(), dep)
                break
            if decision.kernel == entry.id:  # selected, but the path to ``goal`` does not hold
                break
            failures = _failures(decision, entry.id)
            if failures is None:
                break
            if not failures:  # eligible but outranked: request it
                if request is None or dep.moe_backend == request:
                    break
                dep = replace(dep, moe_backend=request)
                continue
            fixed = repair(dep, failures, request, rng)
            if fixed == dep:
                break
            dep = fixed
    for key, dep in spares.items():
        if len(hits) >= per_kernel:
            break
        hits.setdefault(key, dep)
    return hits


def _holds(shortcut: Any, dep: Deployment) -> bool:
    """Whether ``dep``'s family and front end meet ``shortcut``'s ``when`` on the quant family
    and the checkpoint's quant method (the other fields are left to the search)."""
    values = {"quant_family": dep.family, "quant_method": FRONT_END_QUANT_METHOD.get(dep.front_end)}
    return all(p.test(values[p.field]) for p in shortcut.when if p.field in values)


def _substituted(release: str, side: OurSide, catalog: Any, kernel: str, per_kernel: int, rng: random.Random, starts: int, steps: int,
                 pool: int, only: Sequence[str] | None = None) -> dict[str, Deployment]:
    """Deployments reaching ``kernel`` where only a shortcut's substitution selects it (a
    quantization method taking another class of the backend the oracle chose, e.g. vLLM 0.29.0's
    Quark MXFP4 and BatchedHummingGroupedExperts): the search solves for each class the shortcut
    replaces, from a pool of deployments its ``when`` holds for on family and quant method (of the
    families ``only`` names, when given)."""
    hits: dict[str, Deployment] = {}
    by_id = {e.id: e for e in catalog.experts}
    for shortcut in catalog.shortcuts:
        if shortcut.otherwise != kernel or not shortcut.selected:
            continue
        families = [f for f in (only or families_for(release)) if all(p.test(f) for p in shortcut.when if p.field == "quant_family")]
        drawn = (random_deployment(rng, families=[families[i % len(families)]]) for i in range(4 * pool)) if families else iter(())
        deps = [d for d in drawn if _holds(shortcut, d)][:pool]
        decisions = [side.decide(d) for d in deps]
        for selected in shortcut.selected:
            if selected in by_id and len(hits) < per_kernel:
                hits.update(_solve(side, catalog, by_id[selected], deps, decisions, per_kernel - len(hits), rng, starts, steps, goal=kernel))
    return hits


def _targets(catalog: Any, release: str, kernels: Sequence[str] | None = None) -> list[Any]:
    """The vLLM kernels of ``catalog`` (``release``'s view) to search for: those ``kernels`` names,
    else every one :func:`.coverage.unreachable` does not list for the release."""
    skip = unreachable(release) if kernels is None else {}
    return [e for e in catalog.experts if e.provider == "vllm" and e.id not in skip and (kernels is None or e.id in kernels)]


def _reach(release: str, side: OurSide, catalog: Any, entry: Any, deps: Sequence[Deployment], decisions: Sequence[Any], n: int,
           rng: random.Random, starts: int, steps: int, pool: int, only: Sequence[str] | None = None) -> dict[str, Deployment]:
    """Up to ``n`` deployments reaching ``entry``: solved from ``deps`` (:func:`_solve`), else
    through a shortcut's substitution from ``pool // 4`` fresh draws (of the families ``only``
    names, when given; :func:`_substituted`)."""
    return (_solve(side, catalog, entry, deps, decisions, n, rng, starts, steps)
            or _substituted(release, side, catalog, entry.id, n, rng, starts, steps, pool // 4, only=only))


def guided_deployments(
    release: str,
    per_kernel: int = 3,
    seed: int = 0,
    starts: int = 12,
    steps: int = 6,
    kernels: Sequence[str] | None = None,
    side: OurSide | None = None,
    pool: int = 1000,
) -> tuple[list[Deployment], list[str]]:
    """Deployments our tables answer with each vLLM kernel of ``release`` (``per_kernel`` each, as
    far as the search finds them), and the kernel ids it did not reach.

    ``pool`` random deployments (every family of the release in turn) are answered once; for each
    kernel of the release's view of the tables the ``starts`` closest of them are repaired
    ``steps`` times each at most. A kernel that no start reaches and that a shortcut substitutes
    for another class is then solved through that shortcut (:func:`_substituted`). The kernels
    :func:`.coverage.unreachable` lists for the release are not searched (nor returned) unless
    ``kernels`` names them.
    """
    side = side or OurSide(release)
    catalog = side.oracle.catalog.for_version(release)
    rng = random.Random(seed)
    families = families_for(release)
    deps = [random_deployment(rng, families=[families[i % len(families)]]) for i in range(pool)]
    decisions = [side.decide(d) for d in deps]
    found: list[Deployment] = []
    unreached: list[str] = []
    for entry in _targets(catalog, release, kernels):
        hits = _reach(release, side, catalog, entry, deps, decisions, per_kernel, rng, starts, steps, pool)
        found.extend(hits.values())
        if not hits:
            unreached.append(entry.id)
    return found, unreached


def guided_pairs(
    release: str,
    per_pair: int = 1,
    seed: int = 0,
    starts: int = 12,
    steps: int = 6,
    pool: int = 200,
    side: OurSide | None = None,
) -> tuple[list[Deployment], dict[str, tuple[str, ...]]]:
    """Deployments our tables answer with each vLLM kernel of ``release`` *for each quantization
    family*, and per family the kernels reached.

    :func:`guided_deployments` solves for a kernel from a pool of every family, so it reaches each
    kernel through whichever family is closest; a kernel several families reach (Marlin: FP8,
    MXFP4, NVFP4, WNA16 ...) answers through one of them and the others' paths stay undrawn. Here
    each family gets its own ``pool`` of random deployments and every kernel is solved for from
    it (``per_pair`` hits, of different quant schemes where the starts give them), then through a
    shortcut's substitution restricted to the family (:func:`_substituted`). The kernels
    :func:`.coverage.unreachable` lists are not searched. A (family, kernel) pair the search does
    not reach is not returned: no start of the family came within repair of it (most such pairs
    cannot exist: an FP8 layer never runs an NVFP4 kernel).
    """
    side = side or OurSide(release)
    catalog = side.oracle.catalog.for_version(release)
    targets = _targets(catalog, release)
    rng = random.Random(seed)
    found: dict[str, Deployment] = {}
    reached: dict[str, tuple[str, ...]] = {}
    for family in families_for(release):
        deps = [random_deployment(rng, families=[family]) for _ in range(pool)]
        decisions = [side.decide(d) for d in deps]
        hit_kernels: list[str] = []
        for entry in targets:
            hits = _reach(release, side, catalog, entry, deps, decisions, per_pair, rng, starts, steps, pool, only=(family,))
            if hits:
                hit_kernels.append(entry.id)
                found.update(hits)
        reached[family] = tuple(hit_kernels)
    return list(found.values()), reached


def guided_all2all(
    release: str,
    backends: Sequence[str],
    starts: Sequence[Deployment],
    per_backend: int = 3,
    seed: int = 0,
    steps: int = 6,
    side: OurSide | None = None,
) -> tuple[list[Deployment], list[str]]:
    """Deployments our tables answer with a kernel while dispatching through each all2all backend
    of ``backends`` (``per_backend`` each), and the backends it did not reach.

    Each of ``starts`` (deployments our tables select a kernel for, e.g. :func:`guided_deployments`'
    finds) is moved onto the backend (EP, two DP ranks at least) and repaired along the failures
    of the candidate closest to eligible, leaving the all2all as it is.
    """
    side = side or OurSide(release)
    rng = random.Random(seed)
    bound_all2all = side.oracle.catalog.for_version(release).bound_all2all
    found: list[Deployment] = []
    unreached: list[str] = []
    for backend in backends:
        hits: dict[str, Deployment] = {}
        order = list(starts)
        rng.shuffle(order)
        # A backend some moe_backend names bind (passthrough: the FlashInfer MoE-EP megakernels)
        # is reached from starts that request such a name: those are tried first.
        binds = {name for name, bound in bound_all2all.items() if bound == backend}
        order = [s for s in order if s.moe_backend in binds] + [s for s in order if s.moe_backend not in binds]
        for start in order[:60]:
            if len(hits) >= per_backend:
                break
            dp = start.dp_size if backend == "passthrough" else max(start.dp_size, 2)
            dep = _with_all2all_package(replace(start, use_ep=True, dp_size=dp, all2all_backend=backend))
            for _step in range(steps + 1):
                decision = side.decide(dep)
                if decision is None:
                    break
                if decision.kernel is not None and all2all_used(dep) == backend:
                    hits.setdefault(dep.key(), dep)
                    break
                closest = min(((s, row.entry.id) for row in decision.rows if (s := _score(decision, row.entry.id)) is not None), default=None)
                if closest is None:
                    break
                failures = [f for f in _failures(decision, closest[1]) or () if f.field not in ("all2all", "dp_size", "use_ep")]
                fixed = repair(dep, failures, None, rng) if failures else dep
                if fixed == dep:
                    break
                dep = fixed
        found.extend(hits.values())
        if not hits:
            unreached.append(backend)
    return found, unreached
