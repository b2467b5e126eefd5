"""Why-not moves: the input edits that could satisfy one failing check (from its allowed set, the
device catalog, package versions and parallel shapes)."""
from __future__ import annotations

import math
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from ..core.checks import Check
from ..core.predicates import Predicate
from ..core.config import EXPERT_PLACEMENTS, Device, MoEConfig, ParallelConfig
from ..core.errors import ConfigError
from ..core.environment import ABSENT, Environment
from ..core.fields import FIELDS
from ..inputs.hardware import GPU_CATALOG
from ..core.quant import SCHEMES
from ..core.vocab import Activation, All2AllBackend, DType, ReasonCode, RoutingMethod
from .whynot_edits import COSTS, category

if TYPE_CHECKING:
    pass

__all__ = ["EditGen", "State", "candidate_edits", "condition_edits", "wrap_config"]


# Fields a parallel edit changes (the FP8 weight block is refined to, or checked against, the TP shard).
_PARALLEL_FIELDS = {"tp_size", "dp_size", "moe_tp_size", "ep_size", "use_ep", "all2all_backend", "all2all", "dispatch", "activation_format",
                    "intermediate_size_per_partition", "num_local_experts", "weight_block", "weight_block_aligned"}


_DEVICE_FIELDS = {"platform", "device_capability", "gpu_arch", "cpu_arch", "cpu_amx"}


_QUANT_FIELDS = {"quant_scheme", "weight_quant", "activation_quant", "quant_family"}


State = tuple[MoEConfig, Environment]


EditGen = tuple[str, Callable[[State], State], Any, Any, int]


def _sizes(current: int) -> list[int]:
    return sorted({1, 2, 4, 8, 16, current})


def _parallel_edits(config: MoEConfig) -> Iterator[tuple[str, Callable[[MoEConfig], MoEConfig], Any, Any, int]]:
    """Parallel edits: flags first (``--ep``, ``--all2all``, cost 1), then redeployments of the same
    GPUs (another TP/DP split, DP+EP over an all2all backend: cost 3), then other GPU counts (4)."""
    p = config.parallel
    world = p.tp_size * p.dp_size  # the GPUs the moves split anew; the PCP size is kept as given
    yield "parallel.use_ep", lambda c: c.with_changes(parallel__use_ep=not c.parallel.use_ep), p.use_ep, not p.use_ep, COSTS["flag"]
    for backend in All2AllBackend:
        if backend is not p.all2all_backend:
            yield "parallel.all2all_backend", lambda c, b=backend: c.with_changes(parallel__all2all_backend=b), p.all2all_backend, backend, COSTS["flag"]
    # Whole deployments: TP only, and DP + EP over each all2all backend, same GPU count.
    ep_world = world if world > 1 else 8

    def valid(**kwargs: Any) -> ParallelConfig | None:
        try:
            return ParallelConfig(**kwargs)
        except ConfigError:  # tp * dp past the validator's limit after earlier edits: no such preset
            return None

    presets = [q for q in [valid(tp_size=world, pcp_size=p.pcp_size)] + [valid(dp_size=ep_world, pcp_size=p.pcp_size, use_ep=True, all2all_backend=b) for b in All2AllBackend] if q is not None]
    for preset in presets:
        if preset != p:
            after = f"tp={preset.tp_size} dp={preset.dp_size}" + (f" ep all2all={preset.all2all_backend.value}" if preset.use_ep else "")
            before = f"tp={p.tp_size} dp={p.dp_size}" + (f" ep all2all={p.all2all_backend.value}" if p.use_ep else "")
            cost = COSTS["redeploy"] if preset.tp_size * preset.dp_size == world else COSTS["resize"]
            yield "parallel", lambda c, pre=preset: c.with_changes(parallel__tp_size=pre.tp_size, parallel__dp_size=pre.dp_size, parallel__use_ep=pre.use_ep, parallel__all2all_backend=pre.all2all_backend), before, after, cost
    for tp in _sizes(p.tp_size):
        if tp != p.tp_size:
            yield "parallel.tp_size", lambda c, tp=tp: c.with_changes(parallel__tp_size=tp), p.tp_size, tp, COSTS["redeploy"] if tp * p.dp_size == world else COSTS["resize"]
    for dp in _sizes(p.dp_size):
        if dp != p.dp_size:
            yield "parallel.dp_size", lambda c, dp=dp: c.with_changes(parallel__dp_size=dp), p.dp_size, dp, COSTS["redeploy"] if dp * p.tp_size == world else COSTS["resize"]


def candidate_edits(chk: Check, state: State, values: dict[str, Any], keep: frozenset[str] = frozenset()) -> Iterator[EditGen]:
    """Edits that could satisfy ``chk`` (they are verified by re-evaluation, not trusted), none
    in a kept category."""
    config, env = state
    fields: Iterable[str] = chk.fields_read if chk.deny or chk.condition else (chk.field,)
    if chk.code is ReasonCode.ENV_DISABLED:
        # The variable that disables the kernel is the first thing to change back: its edits go
        # before the condition's (a MoRI all2all needing VLLM_ROCM_USE_AITER), so among fixes of
        # equal cost the ones that set it are found, and shown, first.
        fields = sorted(fields, key=lambda f: not f.startswith("env."))
    elif not chk.deny and chk.condition:
        # The checked field first: setting it to what the check allows keeps the inputs its
        # condition reads (MoonEP's placement check: --expert-placement linear before every
        # other --all2all), so among fixes of equal cost it is found, and shown, first.
        fields = (chk.field, *(f for f in fields if f != chk.field))
    seen: set[str] = set()
    for field in fields:
        if field in seen:
            continue
        seen.add(field)
        edits = list(_edits_for_field(field, chk, config, env))
        if not edits:  # a derived field no move sets (intermediate_divisible): move what it is computed from
            for source in _sources(field):
                if source not in seen:
                    seen.add(source)
                    edits += _edits_for_field(source, chk, config, env)
        for edit in edits:
            if category(edit[0]) not in keep:
                yield edit


def condition_edits(preds: Iterable[Predicate], state: State, keep: frozenset[str] = frozenset()) -> Iterator[EditGen]:
    """Edits that could make a condition (a shortcut's ``when``) stop holding: the moves of every
    field it reads, as for a check on that field (verified by re-evaluation), none in a kept
    category."""
    config, env = state
    seen: set[str] = set()
    for pred in preds:
        if pred.field in seen:
            continue
        seen.add(pred.field)
        for edit in _edits_for_field(pred.field, None, config, env):
            if category(edit[0]) not in keep:
                yield edit


_INPUT_FIELD = {"parallel": "moe_tp_size", "device.platform": "platform", "device.arch": "gpu_arch", "quant": "quant_scheme"}
"""A derived field's input (core/fields.py ``inputs``) as the moves name it: any parallel input is
the parallel edits, a device input the device edits, ``quant`` the scheme edits."""


def _sources(field: str) -> tuple[str, ...]:
    """The fields a derived ``field`` is computed from, as :func:`_edits_for_field` names them (none
    for an input field)."""
    spec = FIELDS.get(field)
    if spec is None or spec.category != "derived":
        return ()
    return tuple(dict.fromkeys(_INPUT_FIELD.get("parallel" if i.startswith("parallel.") else i, i) for i in spec.inputs))


def wrap_config(fn: Callable[[MoEConfig], MoEConfig]) -> Callable[[State], State]:
    return lambda s: (fn(s[0]), s[1])


def _architectures() -> list[tuple[str, Device]]:
    """One catalog device per architecture (the first name in catalog order): H100, H200, H20
    and GH200 are one candidate, not four."""
    seen: dict[tuple[Any, ...], tuple[str, Device]] = {}
    for name, hw in GPU_CATALOG.items():
        d = hw.device
        seen.setdefault((d.platform, d.capability, d.arch, d.cpu_amx), (name, d))
    return list(seen.values())


def _edits_for_field(field: str, chk: Check | None, config: MoEConfig, env: Environment) -> Iterator[EditGen]:
    if field in _DEVICE_FIELDS:
        here = config.device
        for _name, device in _architectures():
            if (device.platform, device.capability, device.arch, device.cpu_amx) != (here.platform, here.capability, here.arch, here.cpu_amx):
                yield "device", (lambda s, d=device: (replace(s[0], device=d), s[1])), config.device, device, COSTS["hardware"]
        return
    if field.startswith("packages."):
        name = field[9:]
        current = env.package(name)
        spec = None
        if chk.predicate is not None and chk.predicate.field == field:
            spec = dict(chk.predicate.spec).get("version")
        for version in _versions_for(spec):
            shown = version if spec else "installed (any version)"
            yield field, (lambda s, v=version: (s[0], s[1].with_package(name, v))), current, shown, COSTS["package"]
        if current not in (None, ABSENT):
            yield field, (lambda s: (s[0], s[1].with_package(name, None))), current, ABSENT, COSTS["package"]
        return
    if field.startswith("tools."):
        tool = field[6:]
        for found in (True, False):
            if env.tool(tool) is not found:
                yield field, (lambda s, f=found: (s[0], s[1].with_tool(tool, f))), env.tool(tool), found, COSTS["package"]
        return
    if field.startswith("env."):
        var = field[4:]
        options = _allowed_values(chk, field) or ["1", "0"]
        for value in options:
            raw = ("1" if value else "0") if isinstance(value, bool) else str(value)
            yield field, (lambda s, r=raw: (s[0], s[1].with_env(var, r))), env.env_value(var), raw, COSTS["flag"]
        return
    if field in ("expert_placement", "expert_placement_strategy"):
        # The placement asked for (--expert-placement-strategy); expert_placement is the one vLLM
        # ends with, so a parallel edit that makes vLLM fall back is found by the parallel moves.
        requested = config.parallel.expert_placement_strategy
        for value in _allowed_values(chk, field) or EXPERT_PLACEMENTS:
            if value != requested:
                yield "parallel.expert_placement_strategy", wrap_config(lambda c, v=value: c.with_changes(parallel__expert_placement_strategy=v)), requested, value, COSTS["flag"]
        return
    if field in _PARALLEL_FIELDS:
        for target, fn, before, after, cost in _parallel_edits(config):
            yield target, wrap_config(fn), before, after, cost
        return
    if field in _QUANT_FIELDS:
        for name, scheme in SCHEMES.items():
            if scheme != config.quant:
                yield "quant", wrap_config(lambda c, q=scheme: replace(c, quant=q)), config.quant.name, name, COSTS["numerics"]
        return
    flag, numerics, model = COSTS["flag"], COSTS["numerics"], COSTS["model"]
    simple = {
        "lora": (lambda c, v: replace(c, lora=v), [True, False], flag),
        "enable_eplb": (lambda c, v: c.with_changes(parallel__enable_eplb=v), [True, False], flag),
        "moe_backend": (lambda c, v: replace(c, moe_backend=v), _allowed_values(chk, field) or [], flag),
        "quant_method": (lambda c, v: replace(c, quant_method=v), _allowed_values(chk, field) or [], numerics),
        "in_dtype": (lambda c, v: replace(c, in_dtype=DType(v)), [d.value for d in DType], numerics),
        "router_logits_dtype": (lambda c, v: replace(c, router_logits_dtype=DType(v)), [d.value for d in DType], model),
        "activation": (lambda c, v: replace(c, activation=Activation(v)), [a.value for a in Activation], model),
        "is_gated": (lambda c, v: replace(c, activation=Activation(v)), [a.value for a in Activation], model),
        "routing_method": (lambda c, v: replace(c, routing_method=RoutingMethod(v)), [r.value for r in RoutingMethod], model),
        "has_bias": (lambda c, v: replace(c, has_bias=v), [True, False], model),
        "swiglu_clamp": (lambda c, v: replace(c, swiglu_limit=None if not v else 7.0), [True, False], model),
    }
    if field == "batch_invariant":
        # The flag and VLLM_BATCH_INVARIANT both turn it on: one edit sets both.
        for value in (True, False):
            raw = "1" if value else None
            yield "batch_invariant", (lambda s, v=value, r=raw: (replace(s[0], batch_invariant=v), s[1].with_env("VLLM_BATCH_INVARIANT", r))), config.batch_invariant, value, flag
        return
    if field in simple:
        setter, options, cost = simple[field]
        attr = {"enable_eplb": None, "is_gated": "activation", "swiglu_clamp": "swiglu_limit"}.get(field, field)
        before = getattr(config, attr) if attr else config.parallel.enable_eplb
        for value in options:
            if value == "auto" and field == "moe_backend":
                continue
            yield field, wrap_config(lambda c, v=value, f=setter: f(c, v)), before, value, cost
        return
    numeric = {"max_num_tokens": flag, "num_experts": model, "top_k": model, "hidden_size": model, "intermediate_size": model}
    if field in numeric:
        current = getattr(config, field)
        for value in _numeric_candidates(chk, field, current):
            yield field, wrap_config(lambda c, v=value: replace(c, **{field: v})), current, value, numeric[field]


def _allowed_values(chk: Check | None, field: str) -> list[Any] | None:
    if chk is None:
        return None
    preds = [chk.predicate] if chk.predicate is not None and chk.predicate.field == field else []
    preds += [p for p in chk.condition if p.field == field]
    for pred in preds:
        spec = dict(pred.spec)
        if "in" in spec:
            return list(spec["in"])
    return None


def _numeric_candidates(chk: Check | None, field: str, current: Any) -> list[int]:
    out: set[int] = set()
    if chk is None:
        return []
    for pred in ([chk.predicate] if chk.predicate is not None else []) + list(chk.condition):
        if pred.field != field:
            continue
        spec = dict(pred.spec)
        for bound in ("max", "min"):
            # A table may say `max: .nan` or `.inf` (no candidate); an int bound is always finite.
            if bound in spec and (isinstance(spec[bound], int) or math.isfinite(spec[bound])):
                out.add(int(spec[bound]))
        if "multiple_of" in spec and isinstance(current, int):
            m = int(spec["multiple_of"])
            out.add(max(m, (current // m) * m))
            out.add(-(-current // m) * m)
        if "in" in spec:
            out.update(v for v in spec["in"] if isinstance(v, int))
    return sorted(v for v in out if v >= 1 and v != current)


def _versions_for(spec: str | None) -> list[str]:
    """A few concrete versions that satisfy ``spec`` (its own bounds first)."""
    if not spec:
        return ["1.0.0"]
    sset = SpecifierSet(spec)
    candidates = []
    for s in sset:
        try:
            v = Version(s.version.replace(".*", ""))
        except InvalidVersion:  # arbitrary equality (===abc) names no PEP 440 version
            continue
        candidates += [str(v), f"{v.major}.{v.minor}.{v.micro + 1}", f"{v.major}.{v.minor + 1}.0", f"{v.major + 1}.0.0"]
    good = [c for c in dict.fromkeys(candidates) if Version(c) in sset]
    return good[:3] or ["99.0.0"]
