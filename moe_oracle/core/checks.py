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
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Callable, Mapping, NamedTuple, Sequence

from .fields import FIELDS, field_spec
from .predicates import Predicate
from .records import _SCALARS, Assumption, json_copy, jsonable
from .vocab import ReasonCode

__all__ = ["Check", "CheckIndex", "GateBucket", "Outcome", "PlainChecks", "Tolerance", "build_index"]


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

    @cached_property
    def source_field(self) -> str:
        """The field whose source a failure reports: the first one read for a deny check."""
        return self.fields_read[0] if self.deny else self.field

    @cached_property
    def allowed_value(self) -> Any:
        """:meth:`allowed`, computed once per check (shared by every record of it: read-only)."""
        return self.allowed()

    @cached_property
    def allowed_json(self) -> Any:
        """``jsonable(allowed())``, computed once per check; copy it (``json_copy``) before handing it out."""
        return jsonable(self.allowed_value)

    @cached_property
    def code_value(self) -> str:
        return self.code.value

    @cached_property
    def code_rank(self) -> int:
        """Position of :attr:`code` in the ``ReasonCode`` declaration (the primary failure is the lowest)."""
        return _CODE_RANKS[self.code]

    @cached_property
    def code_bit(self) -> int:
        """``1 << code_rank``: a candidate's reason codes as one small bit set (see ``Decision.code_masks``)."""
        return 1 << self.code_rank

    @cached_property
    def allowed_copy(self) -> Callable[[Any], Any] | None:
        """How a record gets its own copy of :attr:`allowed_json`: ``None`` for a scalar (shared),
        ``list.copy`` / ``dict.copy`` for a list / mapping of scalars, else ``json_copy``."""
        value = self.allowed_json
        if isinstance(value, list) and all(type(v) in _SCALARS for v in value):
            return list.copy
        if isinstance(value, dict) and all(type(v) in _SCALARS for v in value.values()):
            return dict.copy
        return json_copy if isinstance(value, (list, dict)) else None

    @cached_property
    def record_parts(self) -> tuple[dict[str, Any], str | None, str, Callable[[Any], Any] | None]:
        """(:attr:`failure_template`, the field whose value is observed or ``None`` for a deny check,
        :attr:`source_field`, :attr:`allowed_copy`): what a failure record needs, in one lookup."""
        return (self.failure_template, None if self.deny else self.field, self.source_field, self.allowed_copy)

    @cached_property
    def assumption_template(self) -> dict[str, Any]:
        """``self.assumption.to_dict()``, computed once; copy it and its ``assumed`` value
        (:attr:`allowed_copy`) before handing it out."""
        return self.assumption.to_dict()

    @cached_property
    def table_key(self) -> tuple[int, str]:
        """(seq, rule): the order failures are reported in."""
        return (self.seq, self.rule)

    @cached_property
    def failure_template(self) -> dict[str, Any]:
        """This check's failure record (``Failure.to_dict`` key order) with the parts that do not
        depend on the config filled in; ``observed`` and ``source`` are ``None``. Copy before use."""
        return {"code": self.code.value, "field": self.field, "observed": None, "allowed": self.allowed_json, "rule": self.rule, "source": None, "hint": self.hint, "reference": self.reference}

    @cached_property
    def assumption(self) -> Assumption:
        """The record of this check abstaining (its input unknown); the same for every selection."""
        assumed = self.predicate.describe() if self.predicate is not None else "the known-bad condition does not hold"
        return Assumption(field=self.field, assumed=self.allowed_value, rule=self.rule, hint=f"{self.field} is unknown; assumed {assumed} ({self.hint})")

    @cached_property
    def condition_assumptions(self) -> dict[str, Assumption]:
        """Per field of this check's condition, the record of the check abstaining because that
        field is unknown while its own field is known and outside what it allows: the candidate
        stays eligible on the assumption that the condition does not hold. Empty for a check
        with no condition or no own field."""
        if self.predicate is None:
            return {}
        out = {}
        for p in self.condition:
            spec = dict(p.spec)
            lone_bool = len(p.spec) == 1 and len(spec.get("in", ())) == 1 and isinstance(spec["in"][0], bool)
            assumed: Any = (not spec["in"][0]) if lone_bool else {"not": p.allowed()}
            said = f"it is {str(assumed).lower()}" if lone_bool else f"it is not {p.describe()}"
            out[p.field] = Assumption(field=p.field, assumed=assumed, rule=self.rule, hint=f"{p.field} is unknown; assumed {said}, so this rule does not check {self.field} ({self.hint})")
        return out

    def assumption_for(self, values: Mapping[str, Any]) -> Assumption:
        """:attr:`assumption`, or the :attr:`condition_assumptions` record of the first unknown
        field of the condition where the checked field itself is known under ``values``."""
        if self.condition and self.predicate is not None and values.get(self.field) is not None:
            for p in self.condition:
                if values.get(p.field) is None:
                    return self.condition_assumptions[p.field]
        return self.assumption

    @cached_property
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


_CODE_RANKS = {code: i for i, code in enumerate(ReasonCode)}

_SET_BITS = tuple(tuple(b for b in range(8) if byte >> b & 1) for byte in range(256))
"""byte -> the positions of its set bits, low first."""

Member = tuple[int, Check]
"""(bit, check): a check and its bit in the index's failure and abstention masks."""

Group = tuple[Check, int]
"""(check, bits): one evaluation stands for every check with the same conditions, predicate and
deny flag (a global constraint repeated on every kernel, a rule shared by a backend's kernels)."""

ValueTable = tuple[str, Mapping[Any, int], int, tuple[tuple[int, Predicate], ...]]
"""(field, value -> failing bits, every bit on the field, (bit, predicate) for values outside the table)."""
OpenTest = tuple[str, Predicate, int]
"""(field, predicate, bits of every check that is this predicate)."""


@dataclass(frozen=True)
class PlainChecks:
    """Unconditional checks, indexed: per finite-domain field a value -> failing-bits table,
    per distinct predicate on an open field one test."""

    by_value: tuple[ValueTable, ...]
    generic: tuple[OpenTest, ...]

    def evaluate(self, get: Any, fail: int, abstain: int) -> tuple[int, int]:
        for name, table, everyone, members in self.by_value:
            v = get(name)
            if v is None:
                abstain |= everyone
                continue
            try:
                failing = table.get(v)
            except TypeError:  # unhashable value: evaluate directly below
                failing = None
            if failing is None:
                for bit, pred in members:
                    if not pred.test(v):
                        fail |= 1 << bit
            elif failing:  # OR-ing even 0 into a ~6,000-bit int copies it
                fail |= failing
        for name, pred, mask in self.generic:
            v = get(name)
            if v is None:
                abstain |= mask
            elif not pred.test(v):
                fail |= mask
        return fail, abstain


@dataclass(frozen=True)
class GateBucket:
    """The conditional checks whose gate holds for one value of the gate field, resolved for it.

    ``always``: deny checks (and checks on the gate field itself) that fail for this value;
    ``plain``: checks left with no condition once the gate field's value is known (``None``: none);
    ``rest``: checks with conditions on other fields (evaluated once per group of equal checks).
    """

    always: int
    plain: PlainChecks | None
    rest: tuple[Group, ...]


@dataclass(frozen=True)
class CheckIndex:
    """All checks of ``owners`` (parallel tuples), indexed for one-pass evaluation.

    Every check has one bit; :meth:`evaluate` answers with two integers used as bit sets
    (failing checks, abstaining checks), so evaluating every check of every owner costs one
    dictionary lookup and one ``|`` per finite-domain field and one test per distinct predicate
    on an open field. A conditional check is gated on its first condition over a finite domain:
    per value of that field, the checks whose gate holds are pre-resolved (:class:`GateBucket`).
    An owner's bits are contiguous (from ``start[i]``), in evaluation order: finite-domain
    fields (in the order they first appear), then open-field predicates, then gated and
    ungated conditional checks, each in the owner's table order. :meth:`checks_in` turns a
    mask back into the owner's checks in that order.
    """

    owners: tuple[str, ...]
    checks: tuple[tuple[Check, ...], ...]
    ordered: tuple[tuple[Check, ...], ...]
    start: tuple[int, ...]
    masks: tuple[int, ...]
    plain: PlainChecks
    gated: tuple[tuple[str, Mapping[Any, GateBucket], tuple[Group, ...], bool], ...]
    special: tuple[Group, ...]

    def evaluate(self, values: Mapping[str, Any]) -> tuple[int, int]:
        """Every check against ``values``, without short-circuit.

        Returns:
            (failing, abstaining): bit sets over every owner's checks (see :meth:`checks_in`).
        """
        get = values.get
        fail, abstain = self.plain.evaluate(get, 0, 0)
        for name, by_gate, members, open_field in self.gated:
            v = get(name)
            bucket = None
            if v is not None:
                try:
                    bucket = by_gate.get(v)
                except TypeError:
                    bucket = None
                else:
                    if bucket is None and open_field:
                        continue  # a value no gate lists: no check of this field applies
            if bucket is not None:
                if bucket.always:
                    fail |= bucket.always
                if bucket.plain is not None:
                    fail, abstain = bucket.plain.evaluate(get, fail, abstain)
                candidates = bucket.rest
            else:
                candidates = members
            for chk, bits in candidates:
                outcome = chk.evaluate(values)
                if outcome is Outcome.FAIL:
                    fail |= bits
                elif outcome is Outcome.ABSTAIN:
                    abstain |= bits
        for chk, bits in self.special:
            outcome = chk.evaluate(values)
            if outcome is Outcome.FAIL:
                fail |= bits
            elif outcome is Outcome.ABSTAIN:
                abstain |= bits
        return fail, abstain

    def checks_in(self, i: int, mask: int) -> tuple[Check, ...]:
        """Owner ``i``'s checks whose bits are set in ``mask``, in evaluation order."""
        m = (mask >> self.start[i]) & ((1 << len(self.ordered[i])) - 1)
        if not m:
            return ()
        ordered = self.ordered[i]
        out = []
        while m:
            low = m & -m
            out.append(ordered[low.bit_length() - 1])
            m ^= low
        return tuple(out)

    @cached_property
    def _bit_table(self) -> tuple[tuple[int, ...], tuple[Check, ...]]:
        owners = []
        checks: list[Check] = []
        for i, ordered in enumerate(self.ordered):
            owners += [i] * len(ordered)
            checks += ordered
        return tuple(owners), tuple(checks)

    def split(self, mask: int) -> dict[int, tuple[Check, ...]]:
        """Every owner's checks whose bits are set in ``mask``: owner index -> checks in evaluation
        order (owners with none left out). One pass over the set bits, for reading every owner
        at once (``checks_in`` per owner shifts the whole mask each time)."""
        if not mask:
            return {}
        owners, checks = self._bit_table
        out: dict[int, tuple[Check, ...]] = {}
        current, run = -1, None
        base = -8
        for byte in mask.to_bytes((mask.bit_length() + 7) // 8, "little"):
            base += 8
            if byte:
                for b in _SET_BITS[byte]:
                    bit = base + b
                    owner = owners[bit]
                    if owner != current:  # an owner's bits are contiguous: a new run starts
                        if run is not None:
                            out[current] = tuple(run)
                        current, run = owner, [checks[bit]]
                    else:
                        run.append(checks[bit])  # type: ignore[union-attr]
        if run is not None:
            out[current] = tuple(run)
        return out

    def bits_where(self, keep: Callable[[int, Check], bool]) -> int:
        """The bit set of the checks ``keep(owner index, check)`` accepts."""
        out = 0
        for i, ordered in enumerate(self.ordered):
            base = self.start[i]
            for n, chk in enumerate(ordered):
                if keep(i, chk):
                    out |= 1 << (base + n)
        return out


class Tolerance(NamedTuple):
    """Checks a failure of which does not stop a candidate from being selected: their rule ids,
    and their bits in a catalog view's experts, prepare/finalize and known-bad indices."""

    rules: frozenset[str]
    experts: int
    pf: int
    known_bad: int


def _domain(field: str, env_types: Mapping[str, str]) -> tuple[Any, ...] | None:
    if field in FIELDS:
        return FIELDS[field].domain
    if field.startswith("env.") and env_types.get(field[4:]) == "bool":
        return (False, True)
    return field_spec(field).domain  # KeyError for unknown fields; tools.* are bools


def _plain(members: Sequence[tuple[int, Predicate]], env_types: Mapping[str, str], failing: dict[Predicate, tuple[Any, ...]]) -> PlainChecks:
    """Index unconditional checks given as (bit, predicate), in evaluation order.

    ``failing``: predicate -> the domain values it rejects, filled as predicates are met (shared by
    one :func:`build_index` call: the same predicate recurs in many owners and gate buckets).
    """
    tables: dict[str, tuple[dict[Any, int], list[tuple[int, Predicate]]]] = {}
    generic: dict[Predicate, int] = {}
    # An open field whose predicates here are lone ``in`` lists (moe_backend in [...] on every
    # kernel) gets a value table too, over the union of the lists: one lookup answers them all; a
    # value outside the union is tested against each predicate (it fails them all).
    listed_values: dict[str, dict[Any, None]] = {}
    for _, pred in members:
        if _lone_in(pred) and _domain(pred.field, env_types) is None:
            listed_values.setdefault(pred.field, {}).update(dict.fromkeys(pred.spec[0][1]))
    for bit, pred in members:
        domain = _domain(pred.field, env_types)
        if domain is None:
            if not _lone_in(pred):
                generic[pred] = generic.get(pred, 0) | 1 << bit
                continue
            domain = tuple(listed_values[pred.field])
        table, listed = tables.setdefault(pred.field, ({d: 0 for d in domain}, []))
        listed.append((bit, pred))
        if pred.field in listed_values:  # a domain of this call's own: not shared in ``failing``
            rejected = tuple(d for d in domain if not pred.test(d))
        else:
            rejected = failing.get(pred)
            if rejected is None:
                rejected = failing[pred] = tuple(d for d in domain if not pred.test(d))
        for d in rejected:
            table[d] |= 1 << bit
    return PlainChecks(
        # Plain dicts, never written after this: a read-only view would add a call to every lookup.
        tuple((f, table, sum(1 << b for b, _ in listed), tuple(listed)) for f, (table, listed) in tables.items()),
        tuple((p.field, p, m) for p, m in generic.items()),
    )


def _lone_in(pred: Predicate) -> bool:
    return len(pred.spec) == 1 and pred.spec[0][0] == "in"


def _groups(members: Sequence[Member]) -> tuple[Group, ...]:
    """Members grouped by what their evaluation reads (conditions, predicate, deny flag), in
    order of first appearance; each group's bits are every member's."""
    groups: dict[tuple[Any, ...], tuple[Check, int]] = {}
    for bit, chk in members:
        key = (chk.condition, chk.predicate, chk.deny)
        first, bits = groups.get(key, (chk, 0))
        groups[key] = (first, bits | 1 << bit)
    return tuple(groups.values())


def _bucket(field: str, value: Any, members: Sequence[tuple[Member, Predicate]], env_types: Mapping[str, str], failing: dict[Predicate, tuple[Any, ...]]) -> GateBucket:
    """The checks gated on ``field`` whose gate holds for ``value``, resolved for that value."""
    always = 0
    plain: list[tuple[int, Predicate]] = []
    rest: list[Member] = []
    for (bit, chk), gate in members:
        others = list(chk.condition)
        others.remove(gate)
        # Conditions on the gate field are decided by its value: one that fails means the check
        # passes (it does not apply); one that holds is dropped.
        if any(p.field == field and not p.test(value) for p in others):
            continue
        others = [p for p in others if p.field != field]
        if others:
            rest.append((bit, chk))
        elif chk.deny:
            always |= 1 << bit
        else:
            assert chk.predicate is not None
            if chk.predicate.field == field:
                if not chk.predicate.test(value):
                    always |= 1 << bit
            else:
                plain.append((bit, chk.predicate))
    return GateBucket(always, _plain(plain, env_types, failing) if plain else None, _groups(rest))


def build_index(owners: Sequence[str], checks: Sequence[Sequence[Check]], env_types: Mapping[str, str]) -> CheckIndex:
    """Compile the per-owner checks into a :class:`CheckIndex`.

    Args:
        owners: owner ids, in table order.
        checks: ``checks[i]`` are owner ``i``'s checks.
        env_types: declared type per environment variable (``bool`` variables get a finite domain).
    """
    # Slot of each check: (kind, first appearance of its field or predicate). Kinds: 0 finite-domain
    # field, 1 open-field predicate, 2 conditional check gated on a finite-domain field, 3 other
    # conditional checks. An owner's bits follow (slot, table order).
    value_fields: dict[str, int] = {}
    predicates: dict[Predicate, int] = {}
    gates: dict[str, int] = {}
    gate_of: dict[tuple[int, int], Predicate] = {}
    slots: list[list[tuple[tuple[int, int], int]]] = []
    for i, owner_checks in enumerate(checks):
        owner_slots = []
        for j, chk in enumerate(owner_checks):
            if chk.deny or chk.condition:
                # Gate on the first condition over a finite domain: for each value of that field,
                # only the checks whose gate holds need evaluating (the others pass or, for deny
                # checks, do not fire).
                gate = next((p for p in chk.condition if _domain(p.field, env_types) is not None), None)
                if gate is None:
                    # Else on the first lone ``in`` list over an open field: its listed values are
                    # the only ones under which the check applies (its bit keeps the slot of the
                    # ungated checks, so the evaluation order records report stays as it was).
                    open_gate = next((p for p in chk.condition if _lone_in(p)), None)
                    if open_gate is not None:
                        gate_of[(i, j)] = open_gate
                        gates.setdefault(open_gate.field, len(gates))
                    slot = (3, 0)
                else:
                    gate_of[(i, j)] = gate
                    slot = (2, gates.setdefault(gate.field, len(gates)))
            else:
                assert chk.predicate is not None
                if _domain(chk.predicate.field, env_types) is None:
                    slot = (1, predicates.setdefault(chk.predicate, len(predicates)))
                else:
                    slot = (0, value_fields.setdefault(chk.predicate.field, len(value_fields)))
            owner_slots.append((slot, j))
        slots.append(sorted(owner_slots))

    starts: list[int] = []
    masks: list[int] = []
    ordered: list[tuple[Check, ...]] = []
    plain: list[tuple[tuple[int, int], tuple[int, Predicate]]] = []
    gated_bits: dict[str, list[tuple[tuple[int, int], Member]]] = {f: [] for f in gates}
    special: list[tuple[tuple[int, int], Member]] = []
    bit = 0
    for i, owner_slots in enumerate(slots):
        starts.append(bit)
        owner_checks = checks[i]
        ordered.append(tuple(owner_checks[j] for _, j in owner_slots))
        for (kind, position), j in owner_slots:
            chk = owner_checks[j]
            if kind in (0, 1):
                plain.append(((kind, position), (bit, chk.predicate)))  # type: ignore[arg-type]
            elif (i, j) in gate_of:
                gated_bits[gate_of[(i, j)].field].append(((i, j), (bit, chk)))
            else:
                special.append(((i, j), (bit, chk)))
            bit += 1
        masks.append(((1 << bit) - 1) ^ ((1 << starts[-1]) - 1))
    plain.sort(key=lambda m: m[0])  # stable: (field or predicate, owner, table order)
    failing: dict[Predicate, tuple[Any, ...]] = {}
    gated = []
    for f, members in gated_bits.items():
        members.sort(key=lambda m: m[0])
        listed = tuple(m for _, m in members)
        with_gate = [((b, chk), gate_of[key]) for key, (b, chk) in members]
        domain = _domain(f, env_types)
        if domain is None:  # an open field: the values its gates list (any other: every gate fails)
            domain = tuple(dict.fromkeys(v for _, gate in with_gate for v in gate.spec[0][1]))
        by_gate = {d: _bucket(f, d, [m for m in with_gate if m[1].test(d)], env_types, failing) for d in domain}
        gated.append((f, by_gate, _groups(listed), _domain(f, env_types) is None))  # by_gate: a plain dict, as in _plain
    return CheckIndex(
        owners=tuple(owners),
        checks=tuple(tuple(c) for c in checks),
        ordered=tuple(ordered),
        start=tuple(starts),
        masks=tuple(masks),
        plain=_plain([m for _, m in plain], env_types, failing),
        gated=tuple(gated),
        special=_groups([m for _, m in sorted(special, key=lambda m: m[0])]),
    )
