"""Compiled checks and the lookup index that evaluates all of them per selection.

A :class:`Check` is one predicate of one owner (experts kernel or
prepare/finalize) with its rule id, reason code, hint and reference. A
:class:`CheckIndex` evaluates *every* check of *every* owner for one set of
normalized values, without short-circuit: checks on finite-domain fields are
answered from a table built at load time (value -> failing checks); checks on
open fields are evaluated once per distinct predicate.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from .fields import FIELDS, field_spec
from .predicates import Predicate
from .vocab import ReasonCode

__all__ = ["Check", "CheckIndex", "Outcome", "build_index"]


class Outcome(enum.Enum):
    PASS = "pass"
    FAIL = "fail"
    ABSTAIN = "abstain"


@dataclass(frozen=True)
class Check:
    """One predicate a candidate must satisfy.

    Attributes:
        rule: stable rule id.
        field: field reported on failure.
        predicate: what ``field`` must satisfy; ``None`` for a deny check.
        condition: predicates that must all hold for the check to apply; for a
            deny check, the check *fails* when they all hold (known-bad).
        deny: known-bad semantics (see ``condition``).
        code: reason code of a failure.
        hint: human text.
        reference: upstream source of the fact.
        seq: position in its owner's check list (failures are reported in this order).
    """

    rule: str
    field: str
    predicate: Predicate | None
    condition: tuple[Predicate, ...]
    deny: bool
    code: ReasonCode
    hint: str
    reference: str
    seq: int = 0

    @property
    def fields_read(self) -> tuple[str, ...]:
        """Every field this check reads (condition first)."""
        own = () if self.predicate is None else (self.predicate.field,)
        return tuple(p.field for p in self.condition) + own

    def allowed(self) -> Any:
        """What passes, as data (a deny check allows anything but its condition)."""
        if self.deny:
            return {"not": {p.field: p.allowed() for p in self.condition}}
        assert self.predicate is not None
        return self.predicate.allowed()

    def observed(self, values: Mapping[str, Any]) -> Any:
        """The value(s) this check saw: a mapping for a deny check, else the field's value."""
        if self.deny:
            return {p.field: values.get(p.field) for p in self.condition}
        return values.get(self.field)

    def evaluate(self, values: Mapping[str, Any]) -> Outcome:
        """Outcome for ``values``; an unknown (``None``) input abstains, never passes silently."""
        unknown = False
        for cond in self.condition:
            v = values.get(cond.field)
            if v is None:
                unknown = True
            elif not cond.test(v):
                return Outcome.PASS
        if self.deny:
            return Outcome.ABSTAIN if unknown else Outcome.FAIL
        assert self.predicate is not None
        v = values.get(self.predicate.field)
        if v is None:
            return Outcome.ABSTAIN
        if self.predicate.test(v):
            return Outcome.PASS
        return Outcome.ABSTAIN if unknown else Outcome.FAIL


Member = tuple[int, Check]


@dataclass(frozen=True)
class CheckIndex:
    """All checks of ``owners`` (parallel tuples), indexed for one-pass evaluation."""

    owners: tuple[str, ...]
    checks: tuple[tuple[Check, ...], ...]
    by_value: Mapping[str, Mapping[Any, tuple[Member, ...]]]
    field_members: Mapping[str, tuple[Member, ...]]
    generic: tuple[tuple[Predicate, tuple[Member, ...]], ...]
    special: tuple[Member, ...]
    gated: Mapping[str, tuple[Mapping[Any, tuple[Member, ...]], tuple[Member, ...]]] = field(default_factory=dict)

    def evaluate(self, values: Mapping[str, Any]) -> tuple[list[list[Check]], list[list[Check]]]:
        """Failing and abstaining checks per owner, each list in table order.

        Returns:
            (failures, abstentions): ``failures[i]`` are the checks owner ``i`` fails.
        """
        n = len(self.owners)
        fails: list[list[Check]] = [[] for _ in range(n)]
        abstains: list[list[Check]] = [[] for _ in range(n)]
        get = values.get
        for name, table in self.by_value.items():
            v = get(name)
            if v is None:
                for i, chk in self.field_members[name]:
                    abstains[i].append(chk)
                continue
            try:
                failing = table.get(v)
            except TypeError:  # unhashable value: evaluate directly below
                failing = None
            if failing is None:
                for i, chk in self.field_members[name]:
                    if not chk.predicate.test(v):  # type: ignore[union-attr]
                        fails[i].append(chk)
            else:
                for i, chk in failing:
                    fails[i].append(chk)
        for pred, members in self.generic:
            v = get(pred.field)
            if v is None:
                for i, chk in members:
                    abstains[i].append(chk)
            elif not pred.test(v):
                for i, chk in members:
                    fails[i].append(chk)
        for name, (by_gate, members) in self.gated.items():
            v = get(name)
            if v is None:
                candidates = members
            else:
                try:
                    candidates = by_gate.get(v, members)
                except TypeError:
                    candidates = members
            for i, chk in candidates:
                outcome = chk.evaluate(values)
                if outcome is Outcome.FAIL:
                    fails[i].append(chk)
                elif outcome is Outcome.ABSTAIN:
                    abstains[i].append(chk)
        for i, chk in self.special:
            outcome = chk.evaluate(values)
            if outcome is Outcome.FAIL:
                fails[i].append(chk)
            elif outcome is Outcome.ABSTAIN:
                abstains[i].append(chk)
        return fails, abstains


def _domain(field: str, env_types: Mapping[str, str]) -> tuple[Any, ...] | None:
    if field in FIELDS:
        return FIELDS[field].domain
    if field.startswith("env.") and env_types.get(field[4:]) == "bool":
        return (False, True)
    field_spec(field)  # KeyError for unknown fields
    return None


def build_index(owners: Sequence[str], checks: Sequence[Sequence[Check]], env_types: Mapping[str, str]) -> CheckIndex:
    """Compile the per-owner checks into a :class:`CheckIndex`.

    Args:
        owners: owner ids, in table order.
        checks: ``checks[i]`` are owner ``i``'s checks.
        env_types: declared type per environment variable (``bool`` variables get a finite domain).
    """
    by_value: dict[str, dict[Any, list[Member]]] = {}
    field_members: dict[str, list[Member]] = {}
    generic: dict[Predicate, list[Member]] = {}
    special: list[Member] = []
    gated: dict[str, tuple[dict[Any, list[Member]], list[Member]]] = {}
    for i, owner_checks in enumerate(checks):
        for chk in owner_checks:
            if chk.deny or chk.condition:
                # Gate on the first condition over a finite domain: for each value of that field,
                # only the checks whose gate holds need evaluating (the others pass or, for deny
                # checks, do not fire).
                gate = next((p for p in chk.condition if _domain(p.field, env_types) is not None), None)
                if gate is None:
                    special.append((i, chk))
                    continue
                by_gate, members = gated.setdefault(gate.field, ({d: [] for d in _domain(gate.field, env_types) or ()}, []))
                members.append((i, chk))
                for d, bucket in by_gate.items():
                    if gate.test(d):
                        bucket.append((i, chk))
                continue
            assert chk.predicate is not None
            domain = _domain(chk.predicate.field, env_types)
            if domain is None:
                generic.setdefault(chk.predicate, []).append((i, chk))
                continue
            table = by_value.setdefault(chk.predicate.field, {d: [] for d in domain})
            field_members.setdefault(chk.predicate.field, []).append((i, chk))
            for d in domain:
                if not chk.predicate.test(d):
                    table[d].append((i, chk))
    return CheckIndex(
        owners=tuple(owners),
        checks=tuple(tuple(c) for c in checks),
        by_value={f: {d: tuple(m) for d, m in t.items()} for f, t in by_value.items()},
        field_members={f: tuple(m) for f, m in field_members.items()},
        generic=tuple((p, tuple(m)) for p, m in generic.items()),
        special=tuple(special),
        gated={f: ({d: tuple(m) for d, m in by_gate.items()}, tuple(members)) for f, (by_gate, members) in gated.items()},
    )
