""""Why not X?": the smallest change to the config or environment that makes backend X eligible.

A best-first search over *input* edits. Each failing check of the backend's
candidates proposes edits that would satisfy it (from its allowed set); an edit
is applied to the config or environment, the whole selection is re-evaluated,
and the search stops at the cheapest edit set that leaves one of the backend's
candidates with no failure. Costs prefer what an operator controls:
environment (install a package, set a variable) and deployment flags cost 1,
the model dtype 2, the GPU 2, the checkpoint's quantization 3, properties of
the model itself (activation, routing, shapes) 5.

Because every answer is re-evaluated before it is returned, applying
``result.config`` and ``result.environment`` always makes the backend eligible.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, replace
from itertools import count
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from .checks import Check
from .config import Device, MoEConfig, ParallelConfig
from .decision import Decision
from .engine import evaluate, resolve_request
from .errors import ConfigError, InputIssue
from .environment import ABSENT, Environment
from .hardware import GPU_CATALOG
from .quant import SCHEMES
from .vocab import Activation, All2AllBackend, DType, Policy, RoutingMethod

if TYPE_CHECKING:
    from .catalog import Catalog
    from .decision import Row
    from .oracle import Oracle

__all__ = ["Edit", "SearchResult", "WhyNot", "repair", "search_eligible", "why_not"]

MAX_EXPANSIONS = 400
MAX_EDITS = 4


@dataclass(frozen=True)
class Edit:
    """One change to an input: ``target`` is a MoEConfig path (``parallel.tp_size``),
    ``device``, ``packages.<name>`` or ``env.<VAR>``."""

    target: str
    before: Any
    after: Any
    cost: int

    def describe(self) -> str:
        return f"{self.target}: {_text(self.before)} -> {_text(self.after)}"

    def to_dict(self) -> dict[str, Any]:
        return {"target": self.target, "before": _text(self.before), "after": _text(self.after), "cost": self.cost}


@dataclass(frozen=True)
class WhyNot:
    """Answer for one backend.

    Attributes:
        backend: backend ids asked about.
        already_eligible: a candidate of the backend is eligible without change.
        kernel: the candidate the edits make eligible (or that already is).
        edits: the cheapest edit set found; empty when already eligible.
        config, environment: inputs with the edits applied.
        decision: the Decision under the edited inputs.
        blocking: when no edit set was found, the failures that could not be fixed.
    """

    backend: tuple[str, ...]
    already_eligible: bool
    kernel: str | None
    edits: tuple[Edit, ...]
    config: MoEConfig
    environment: Environment
    decision: Decision | None
    found: bool
    blocking: tuple[str, ...] = ()
    explored: int = 0

    @property
    def cost(self) -> int:
        return sum(e.cost for e in self.edits)

    def render_text(self) -> str:
        name = "/".join(self.backend)
        if self.already_eligible:
            winner = self.decision.kernel if self.decision else None
            if self.decision is not None and self.decision.rows[self.decision.winner or 0].entry.backend in self.backend:
                return f"{name} is already selected ({self.kernel})."
            return f"{name} is already eligible ({self.kernel}) but outranked by {winner}; request it with --moe-backend {self.backend[0]}."
        if not self.found:
            lines = [f"No change of at most {MAX_EDITS} inputs makes {name} eligible (searched {self.explored} edit sets). Blocking:"]
            lines += [f"  - {b}" for b in self.blocking]
            return "\n".join(lines)
        lines = [f"{name} becomes eligible ({self.kernel}) with {len(self.edits)} change{'s' if len(self.edits) != 1 else ''} (cost {self.cost}):"]
        lines += [f"  - {e.describe()}" for e in self.edits]
        if self.decision is not None and self.decision.kernel != self.kernel:
            lines.append(f"It would then be eligible but outranked by {self.decision.kernel}; add --moe-backend {self.backend[0]} to run it.")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {
            "backend": list(self.backend),
            "already_eligible": self.already_eligible,
            "found": self.found,
            "kernel": self.kernel,
            "cost": self.cost,
            "edits": [e.to_dict() for e in self.edits],
            "winner_after": self.decision.kernel if self.decision else None,
            "blocking": list(self.blocking),
            "explored": self.explored,
        }


def _text(value: Any) -> str:
    if value is ABSENT:
        return "not installed"
    if isinstance(value, Device):
        if value.name:
            return value.name
        return f"{value.platform.value} {value.capability or value.arch or ''}".strip()
    if hasattr(value, "value"):
        return str(value.value)
    if hasattr(value, "name") and not isinstance(value, str):
        return str(value.name)
    return str(value)


# ----------------------------------------------------------------------------- edit generation

_PARALLEL_FIELDS = {"tp_size", "dp_size", "moe_tp_size", "ep_size", "use_ep", "all2all_backend", "all2all", "dispatch", "activation_format", "intermediate_size_per_partition", "num_local_experts"}
_DEVICE_FIELDS = {"platform", "device_capability", "gpu_arch", "cpu_arch", "cpu_amx"}
_QUANT_FIELDS = {"quant_scheme", "weight_quant", "activation_quant", "quant_family"}

State = tuple[MoEConfig, Environment]


def _sizes(current: int) -> list[int]:
    return sorted({1, 2, 4, 8, 16, current})


def _parallel_edits(config: MoEConfig) -> Iterator[tuple[str, Callable[[MoEConfig], MoEConfig], Any, Any, int]]:
    p = config.parallel
    world = p.tp_size * p.dp_size
    # Whole deployments first: TP only, and DP + EP over each all2all backend, same GPU count.
    ep_world = world if world > 1 else 8

    def valid(**kwargs: Any) -> ParallelConfig | None:
        try:
            return ParallelConfig(**kwargs)
        except ConfigError:  # tp * dp past the validator's limit after earlier edits: no such preset
            return None

    presets = [q for q in [valid(tp_size=world)] + [valid(dp_size=ep_world, use_ep=True, all2all_backend=b) for b in All2AllBackend] if q is not None]
    for preset in presets:
        if preset != p:
            after = f"tp={preset.tp_size} dp={preset.dp_size}" + (f" ep all2all={preset.all2all_backend.value}" if preset.use_ep else "")
            before = f"tp={p.tp_size} dp={p.dp_size}" + (f" ep all2all={p.all2all_backend.value}" if p.use_ep else "")
            yield "parallel", lambda c, pre=preset: c.with_changes(parallel__tp_size=pre.tp_size, parallel__dp_size=pre.dp_size, parallel__use_ep=pre.use_ep, parallel__all2all_backend=pre.all2all_backend), before, after, 1 if preset.tp_size * preset.dp_size == world else 2
    for tp in _sizes(p.tp_size):
        if tp != p.tp_size:
            yield "parallel.tp_size", lambda c, tp=tp: c.with_changes(parallel__tp_size=tp), p.tp_size, tp, 1 if tp * p.dp_size == world else 2
    for dp in _sizes(p.dp_size):
        if dp != p.dp_size:
            yield "parallel.dp_size", lambda c, dp=dp: c.with_changes(parallel__dp_size=dp), p.dp_size, dp, 1 if dp * p.tp_size == world else 2
    yield "parallel.use_ep", lambda c: c.with_changes(parallel__use_ep=not c.parallel.use_ep), p.use_ep, not p.use_ep, 1
    for backend in All2AllBackend:
        if backend is not p.all2all_backend:
            yield "parallel.all2all_backend", lambda c, b=backend: c.with_changes(parallel__all2all_backend=b), p.all2all_backend, backend, 1


def _candidate_edits(chk: Check, state: State, values: dict[str, Any]) -> Iterator[tuple[str, Callable[[State], State], Any, Any, int]]:
    """Edits that could satisfy ``chk`` (they are verified by re-evaluation, not trusted)."""
    config, env = state
    fields: Iterable[str] = chk.fields_read if chk.deny or chk.condition else (chk.field,)
    seen: set[str] = set()
    for field in fields:
        if field in seen:
            continue
        seen.add(field)
        yield from _edits_for_field(field, chk, config, env)


def _wrap_config(fn: Callable[[MoEConfig], MoEConfig]) -> Callable[[State], State]:
    return lambda s: (fn(s[0]), s[1])


def _edits_for_field(field: str, chk: Check, config: MoEConfig, env: Environment) -> Iterator[tuple[str, Callable[[State], State], Any, Any, int]]:
    if field in _DEVICE_FIELDS:
        for name, hw in GPU_CATALOG.items():
            if hw.device != config.device:
                yield "device", (lambda s, d=hw.device: (replace(s[0], device=d), s[1])), config.device, hw.device, 2
        return
    if field.startswith("packages."):
        name = field[9:]
        current = env.package(name)
        spec = None
        if chk.predicate is not None and chk.predicate.field == field:
            spec = dict(chk.predicate.spec).get("version")
        for version in _versions_for(spec):
            shown = version if spec else "installed (any version)"
            yield field, (lambda s, v=version: (s[0], s[1].with_package(name, v))), current, shown, 1
        if current not in (None, ABSENT):
            yield field, (lambda s: (s[0], s[1].with_package(name, None))), current, ABSENT, 1
        return
    if field.startswith("env."):
        var = field[4:]
        options = _allowed_values(chk, field) or ["1", "0"]
        for value in options:
            raw = ("1" if value else "0") if isinstance(value, bool) else str(value)
            yield field, (lambda s, r=raw: (s[0], s[1].with_env(var, r))), env.env_value(var), raw, 1
        return
    if field in _PARALLEL_FIELDS:
        for target, fn, before, after, cost in _parallel_edits(config):
            yield target, _wrap_config(fn), before, after, cost
        return
    if field in _QUANT_FIELDS:
        for name, scheme in SCHEMES.items():
            if scheme != config.quant:
                yield "quant", _wrap_config(lambda c, q=scheme: replace(c, quant=q)), config.quant.name, name, 3
        return
    simple = {
        "lora": (lambda c, v: replace(c, lora=v), [True, False], 1),
        "enable_eplb": (lambda c, v: c.with_changes(parallel__enable_eplb=v), [True, False], 1),
        "moe_backend": (lambda c, v: replace(c, moe_backend=v), _allowed_values(chk, field) or [], 1),
        "quant_method": (lambda c, v: replace(c, quant_method=v), _allowed_values(chk, field) or [], 3),
        "in_dtype": (lambda c, v: replace(c, in_dtype=DType(v)), [d.value for d in DType], 2),
        "router_logits_dtype": (lambda c, v: replace(c, router_logits_dtype=DType(v)), [d.value for d in DType], 2),
        "activation": (lambda c, v: replace(c, activation=Activation(v)), [a.value for a in Activation], 5),
        "is_gated": (lambda c, v: replace(c, activation=Activation(v)), [a.value for a in Activation], 5),
        "routing_method": (lambda c, v: replace(c, routing_method=RoutingMethod(v)), [r.value for r in RoutingMethod], 5),
        "has_bias": (lambda c, v: replace(c, has_bias=v), [True, False], 5),
        "swiglu_clamp": (lambda c, v: replace(c, swiglu_limit=None if not v else 7.0), [True, False], 5),
    }
    if field == "batch_invariant":
        # The flag and VLLM_BATCH_INVARIANT both turn it on: one edit sets both.
        for value in (True, False):
            raw = "1" if value else None
            yield "batch_invariant", (lambda s, v=value, r=raw: (replace(s[0], batch_invariant=v), s[1].with_env("VLLM_BATCH_INVARIANT", r))), config.batch_invariant, value, 1
        return
    if field in simple:
        setter, options, cost = simple[field]
        attr = {"enable_eplb": None, "is_gated": "activation", "swiglu_clamp": "swiglu_limit"}.get(field, field)
        before = getattr(config, attr) if attr else config.parallel.enable_eplb
        for value in options:
            if value == "auto" and field == "moe_backend":
                continue
            yield field, _wrap_config(lambda c, v=value, f=setter: f(c, v)), before, value, cost
        return
    numeric = {"max_num_tokens": 1, "num_experts": 5, "top_k": 5, "hidden_size": 5, "intermediate_size": 5}
    if field in numeric:
        current = getattr(config, field)
        for value in _numeric_candidates(chk, field, current):
            yield field, _wrap_config(lambda c, v=value: replace(c, **{field: v})), current, value, numeric[field]


def _allowed_values(chk: Check, field: str) -> list[Any] | None:
    preds = [chk.predicate] if chk.predicate is not None and chk.predicate.field == field else []
    preds += [p for p in chk.condition if p.field == field]
    for pred in preds:
        spec = dict(pred.spec)
        if "in" in spec:
            return list(spec["in"])
    return None


def _numeric_candidates(chk: Check, field: str, current: Any) -> list[int]:
    out: set[int] = set()
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


# ----------------------------------------------------------------------------- search


def _target_failures(decision: Decision, target: Callable[["Row"], bool]) -> tuple[list[Check] | None, str | None]:
    """Failing checks of the least-failing targeted candidate, or (None, kernel) if one is eligible."""
    best: list[Check] | None = None
    for row in decision.rows:
        if not target(row):
            continue
        if not row.failures:
            return None, row.entry.id
        if best is None or len(row.failures) < len(best):
            best = list(row.failures)
    return best or [], None


@dataclass(frozen=True)
class SearchResult:
    """Outcome of :func:`search_eligible`."""

    found: bool
    kernel: str | None
    edits: tuple[Edit, ...]
    config: MoEConfig
    environment: Environment
    decision: Decision | None
    blocking: tuple[str, ...]
    explored: int


def search_eligible(catalog: "Catalog", config: MoEConfig, env: Environment, target: Callable[["Row"], bool], *, max_expansions: int = MAX_EXPANSIONS, policy: Policy = Policy.FAITHFUL) -> SearchResult:
    """Cheapest edit set (at most :data:`MAX_EDITS`) after which a row matching ``target`` has no failure (under ``policy``)."""
    tie = count()
    frontier: list[tuple[int, int, tuple[Edit, ...], State]] = [(0, next(tie), (), (config, env))]
    seen: set[tuple[str, ...]] = set()
    explored = 0
    blocking: tuple[str, ...] = ()
    while frontier and explored < max_expansions:
        cost, _, edits, state = heapq.heappop(frontier)
        explored += 1
        try:
            decision = evaluate(catalog, state[0], state[1], policy=policy)
        except Exception:  # noqa: BLE001 - an edit produced an invalid config; skip it
            continue
        failing, kernel = _target_failures(decision, target)
        if failing is None:
            return SearchResult(True, kernel, edits, state[0], state[1], decision, (), explored)
        if not edits:
            blocking = tuple(f"{c.code.value}: {c.field} [{c.rule}]" for c in failing)
        if len(edits) >= MAX_EDITS or not failing:
            continue
        values = dict(decision.normalized.values)
        for name, apply, before, after, edit_cost in _candidate_edits(failing[0], state, values):
            earlier = next((e for e in edits if e.target == name), None)
            # A package edit may be revised: installing it can satisfy a presence check and then
            # fail its version range (installed 1.0.0, needs >=2.9). Other targets are edited once.
            if earlier is not None and not name.startswith("packages."):
                continue
            try:
                new_state = apply(state)
            except Exception:  # noqa: BLE001 - e.g. a ParallelConfig the edit made invalid
                continue
            kept = tuple(e for e in edits if e is not earlier)
            if earlier is not None:
                before = earlier.before
            key = tuple(sorted(f"{e.target}={_text(e.after)}" for e in kept) + [f"{name}={_text(after)}"])
            if key in seen:
                continue
            seen.add(key)
            base = cost - (earlier.cost if earlier is not None else 0)
            heapq.heappush(frontier, (base + edit_cost, next(tie), kept + (Edit(name, before, after, edit_cost),), new_state))
    return SearchResult(False, None, (), config, env, None, blocking, explored)


def repair(catalog: "Catalog", config: MoEConfig, env: Environment, target: Callable[["Row"], bool], *, max_rounds: int = 16, policy: Policy = Policy.FAITHFUL) -> SearchResult:
    """Greedy repair: fix the target's first failing check with its cheapest working edit, repeat.

    Among the edits that fix the check, the one leaving the fewest failures wins. Not minimal
    (that is :func:`search_eligible`'s job) but reaches far-away configs in few rounds; lint
    uses it to show that a kernel can be eligible at all.
    """
    state: State = (config, env)
    edits: tuple[Edit, ...] = ()
    explored = 0
    visited = {(config, env.fingerprint)}
    for _ in range(max_rounds):
        decision = evaluate(catalog, state[0], state[1], policy=policy)
        explored += 1
        failing, kernel = _target_failures(decision, target)
        if failing is None:
            return SearchResult(True, kernel, edits, state[0], state[1], decision, (), explored)
        if not failing:
            break
        chk = failing[0]
        best: tuple[int, int, State, Edit] | None = None
        for name, apply, before, after, edit_cost in _candidate_edits(chk, state, dict(decision.normalized.values)):
            try:
                new_state = apply(state)
                if (new_state[0], new_state[1].fingerprint) in visited:
                    continue  # never undo an earlier repair: that oscillates
                trial = evaluate(catalog, new_state[0], new_state[1], policy=policy)
            except Exception:  # noqa: BLE001 - an edit produced an invalid config; try the next
                continue
            explored += 1
            still, _ = _target_failures(trial, target)
            remaining = 0 if still is None else len(still)
            if still is not None and any(c.rule == chk.rule for c in still):
                continue
            if best is None or (remaining, edit_cost) < best[:2]:
                best = (remaining, edit_cost, new_state, Edit(name, before, after, edit_cost))
        if best is None:
            return SearchResult(False, None, edits, state[0], state[1], None, (f"{chk.code.value}: {chk.field} [{chk.rule}]",), explored)
        state, edits = best[2], edits + (best[3],)
        visited.add((state[0], state[1].fingerprint))
    return SearchResult(False, None, edits, state[0], state[1], None, (), explored)


def why_not(oracle: "Oracle", config: MoEConfig, backend_name: str, env: Environment, *, policy: Policy = Policy.FAITHFUL) -> WhyNot:
    """Smallest change that makes ``backend_name`` eligible under ``policy``.

    Raises:
        ConfigError: ``backend_name`` is not a known backend or alias.
    """
    catalog = oracle.catalog
    backend = resolve_request(catalog, backend_name)
    if backend is None:
        raise ConfigError([InputIssue("--backend", "why-not asks about one backend; 'auto' is the priority order itself (use explain)", backend_name, sorted(catalog.backend_names))])
    target = lambda row: row.entry.backend in backend  # noqa: E731
    start = evaluate(catalog, config, env, policy=policy)
    failing, kernel = _target_failures(start, target)
    if failing is None:
        return WhyNot(backend, True, kernel, (), config, env, start, True)
    r = search_eligible(catalog, config, env, target, policy=policy)
    return WhyNot(backend, False, r.kernel, r.edits, r.config, r.environment, r.decision, r.found, r.blocking, r.explored)
