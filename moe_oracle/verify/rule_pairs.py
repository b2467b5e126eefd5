"""Deployment pairs that show a table rule decisive in both directions (issue 25: every rule
decisive both ways at least once, found by solving, not by luck).

A *rule pair* for a check of kernel ``K`` (a rule id of the release's view: a platform, SM,
package, env, feature, support or constraint check) is two deployments our tables answer
differently because of that check alone: in ``passing`` the check holds and our tables select
``K``; in ``failing`` the check is ``K``'s only failure and our tables select something else (or
nothing), ``K`` being ranked ahead of what they select. Both go into the differential run, where
vLLM answers each: when it agrees on both, vLLM's own code made the same decision on the same
edit, so the rule is *shown decisive* both ways (:func:`decisive_rules`).

Pairs are solved for in two directions, from deployments our tables already answer:

* *repair*: where ``K`` ranks ahead of the answer and fails one repairable check, set that
  check's field to a value it allows (:func:`.guided.repair`); a pair when ``K`` is then selected;
* *break*: where ``K`` is selected, set the field of one check that applies to a value it does
  not allow, drawn from the values the release's checks name for that field; a pair when ``K``
  then fails that check alone and loses.

An edit sets the check's field, with what :func:`.guided.repair` sets alongside it (a device's
defaults for a platform, the package an all2all backend needs; a shape field draws another real
shape and parallel layout), so a pair may differ in those fields too.

Our tables only find the pairs; nothing here is compared. A rule no search reaches stays
uncounted: :func:`decisive_rules` reports how many of the release's rule ids were shown.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any, Iterable, Mapping, Sequence

from ..core.requests import request_name
from .cases import Deployment
from .guided import can_repair, repair
from .ours import OurSide
from .space import DEVICES

__all__ = ["RulePair", "decisive_rules", "rule_ids", "rule_pairs"]

_DEVICE_COLUMN = {"device_capability": 1, "gpu_arch": 2, "cpu_arch": 2}
"""A device field's column in :data:`.space.DEVICES`: a break draws only values a device of the
deployment's platform has (an XPU deployment with a ROCm arch is no machine either side knows)."""
_BOOL_FIELDS = frozenset({"has_bias", "lora", "has_hash_routing", "require_decomposed", "enable_eplb", "use_ep", "cpu_amx"})


@dataclass(frozen=True)
class RulePair:
    """Two deployments our tables answer differently because of one check of one kernel.

    Attributes:
        rule: the check's rule id (``marlin.platforms.cuda.device_capability``).
        kernel: the kernel the check belongs to (our experts id).
        passing: a deployment where the check holds and our tables select ``kernel``.
        failing: the same deployment with the check's field edited; ``kernel`` fails that check
            alone and our tables answer something else.
    """

    rule: str
    kernel: str
    passing: Deployment
    failing: Deployment


def rule_ids(catalog: Any) -> tuple[str, ...]:
    """The rule ids a vLLM kernel of ``catalog`` (a release's view) can fail, sorted: its own
    checks and the family request maps' (``request.fp8``; ``request.<map>.kernels`` where a
    ``--moe-backend`` name maps to some kernels of a backend only; core/engine.py)."""
    own = {c.rule for e in catalog.experts if e.provider == "vllm" for c in e.checks}
    maps = {m.id for m in catalog.request_maps} | {f"{m.id}.kernels" for m in catalog.request_maps if m.kernels}
    return tuple(sorted(own | maps))


def _domains(catalog: Any) -> dict[str, tuple[Any, ...]]:
    """Per field, the values the view's checks name in their allowed lists (the values a break
    draws from: a value no check names is one neither side has a rule for)."""
    out: dict[str, dict[Any, None]] = {}
    for e in catalog.experts:
        for c in e.checks:
            allowed = c.allowed()
            if isinstance(allowed, list):
                out.setdefault(c.field, {}).update(dict.fromkeys(v for v in allowed if isinstance(v, (str, int, bool)) and v != "(none)"))
    return {k: tuple(v) for k, v in out.items()}


def _applies(check: Any, values: Mapping[str, Any]) -> bool:
    return all(p.test(values.get(p.field)) for p in check.condition)


def _ahead(decision: Any) -> int:
    """How many candidates of ``decision`` rank ahead of its answer (all of them when it refuses)."""
    return len(decision.rows) if decision.winner is None else decision.winner


def _sole_failure(decision: Any, kernel: str) -> Any | None:
    """``kernel``'s only failing check in ``decision`` when it ranks ahead of the answer."""
    for pos in range(_ahead(decision)):
        if decision.rows[pos].entry.id == kernel:
            failures = decision.candidate_at(pos).failures
            return failures[0] if len(failures) == 1 else None
    return None


def _break_values(check: Any, domains: Mapping[str, tuple[Any, ...]], platform: str | None = None) -> list[Any]:
    """Values of ``check``'s field its predicate refuses, as :func:`.guided.repair` takes them: a
    package or host tool ``False`` (absent) or ``True``; a boolean field or environment variable
    either truth value or a value some check names; a device field a value a device of
    ``platform`` has (:data:`.space.DEVICES`); any other field a value some check names."""
    if check.predicate is None or check.deny:
        return []
    field = check.field
    if field.startswith(("packages.", "tools.")):
        allowed = check.allowed()
        present = allowed.get("present") if isinstance(allowed, dict) else None
        return [not present] if isinstance(present, bool) else []
    candidates: tuple[Any, ...] = domains.get(field, ())
    if field in _DEVICE_COLUMN:
        column = _DEVICE_COLUMN[field]
        candidates = tuple(dict.fromkeys(d[column] for d in DEVICES if d[0] == platform and d[column] is not None))
    if field in _BOOL_FIELDS or field.startswith("env."):
        candidates = (True, False) + candidates
    return [v for v in dict.fromkeys(candidates) if not check.predicate.test(v)]


def rule_pairs(
    release: str,
    starts: Sequence[Deployment],
    seed: int = 0,
    side: OurSide | None = None,
    tries: int = 2,
) -> dict[str, RulePair]:
    """Rule id -> a :class:`RulePair` for each rule the search shows decisive on our side, from
    ``starts`` (e.g. the guided sampler's and some random deployments).

    For each start, the kernels ranked ahead of our answer with one repairable failing check are
    repaired on that check, and the checks of the selected kernel that apply are each broken
    (``tries`` refused values at most); the first pair found for a rule is kept.
    """
    side = side or OurSide(release)
    catalog = side.oracle.catalog.for_version(release)
    domains = _domains(catalog)
    rng = random.Random(seed)
    by_id = {e.id: e for e in catalog.experts if e.provider == "vllm"}
    pairs: dict[str, RulePair] = {}
    for dep in starts:
        decision = side.decide(dep)
        if decision is None:
            continue
        for pos in range(_ahead(decision)):  # repair: a kernel ahead of the answer that one check keeps out
            entry = decision.rows[pos].entry
            if entry.id not in by_id:
                continue
            failures = decision.candidate_at(pos).failures
            if len(failures) != 1 or failures[0].rule in pairs or not can_repair(failures[0]):
                continue
            request = request_name(catalog, entry.backend) if entry.backend else "auto"
            fixed = repair(dep, failures, None if request == "auto" else request, rng)
            if fixed != dep and (after := side.decide(fixed)) is not None and after.kernel == entry.id:
                pairs[failures[0].rule] = RulePair(failures[0].rule, entry.id, fixed, dep)
        kernel = decision.kernel
        if kernel not in by_id:
            continue
        values = decision.normalized.values
        for check in by_id[kernel].checks:  # break: a check of the selected kernel that applies
            if check.rule in pairs or not can_repair(check) or not _applies(check, values):
                continue
            refused = _break_values(check, domains, dep.platform)
            rng.shuffle(refused)
            for value in refused[:tries]:
                broken = repair(dep, [SimpleNamespace(field=check.field, allowed=[value])], None, rng)
                if broken == dep or (after := side.decide(broken)) is None or after.kernel == kernel:
                    continue
                sole = _sole_failure(after, kernel)
                if sole is not None and sole.rule == check.rule:
                    pairs[check.rule] = RulePair(check.rule, kernel, dep, broken)
                    break
    return pairs


def decisive_rules(records: Iterable[Any], pairs: Mapping[str, RulePair]) -> tuple[str, ...]:
    """The rules of ``pairs`` whose two deployments were both compared and agreed with vLLM (the
    run's :class:`.run.Record` list), sorted: vLLM made the same decision on the same edit."""
    agreed = {r.case.key() for r in records if r.agree}
    return tuple(sorted(rule for rule, p in pairs.items() if p.passing.key() in agreed and p.failing.key() in agreed))
