"""Frozen records of a selection: failures, assumptions, demotions, candidate verdicts.

Each record's ``to_dict()`` keys are part of the Decision artifact format
(``schemas/decision.schema.json``); renaming one is a format change.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from .vocab import ActivationFormat, Interface, ReasonCode, Source

__all__ = ["Assumption", "CandidateResult", "DecisionWarning", "Demotion", "Failure", "Status", "json_copy", "jsonable"]


_SCALARS = frozenset({str, int, float, bool, type(None)})


def jsonable(value: Any) -> Any:
    """Turn enums, tuples and frozensets into JSON values (sets sorted).

    >>> jsonable((Interface.MODULAR, frozenset({2, 1})))
    ['modular', [1, 2]]
    """
    if type(value) in _SCALARS:
        return value
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, (tuple, list)):
        return [jsonable(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((jsonable(v) for v in value), key=lambda v: (str(type(v)), v))
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    return value


def json_copy(value: Any) -> Any:
    """A fresh copy of a JSON value (lists and dicts copied at every level, scalars shared)."""
    t = type(value)
    if t is list:
        return [json_copy(v) if type(v) in _CONTAINERS else v for v in value]
    if t is dict:
        return {k: json_copy(v) if type(v) in _CONTAINERS else v for k, v in value.items()}
    return value


_CONTAINERS = frozenset({list, dict})


@dataclass(frozen=True)
class Failure:
    """One predicate that fails for one candidate.

    Attributes:
        code: closed reason code.
        field: normalized config field the predicate read (``"device_capability"``,
            ``"packages.flashinfer-python"``, ``"env.VLLM_ROCM_USE_AITER"``).
        observed: the value seen (``None`` never: unknown values abstain).
        allowed: what would pass, as data (a list of values, ``{"min": 2}``, a PEP 440 range ...).
        rule: stable rule id from the tables.
        source: provenance of the observed value.
        hint: human text; never parsed.
        reference: upstream source of the fact (file, commit, issue).
    """

    code: ReasonCode
    field: str
    observed: Any
    allowed: Any
    rule: str
    source: Source
    hint: str
    reference: str

    @classmethod
    def of(cls, code: ReasonCode, field: str, observed: Any, allowed: Any, rule: str, source: Source, hint: str, reference: str) -> "Failure":
        """``Failure(...)`` by position, built without the frozen ``__init__``: that sets each field
        through ``object.__setattr__`` (4x the cost), and an explain builds hundreds of failures."""
        record = object.__new__(cls)
        d = record.__dict__
        d["code"], d["field"], d["observed"], d["allowed"], d["rule"], d["source"], d["hint"], d["reference"] = code, field, observed, allowed, rule, source, hint, reference
        return record

    def to_dict(self) -> dict[str, Any]:
        return {
            "code": self.code.value,
            "field": self.field,
            "observed": jsonable(self.observed),
            "allowed": jsonable(self.allowed),
            "rule": self.rule,
            "source": self.source.value,
            "hint": self.hint,
            "reference": self.reference,
        }


@dataclass(frozen=True)
class Assumption:
    """A predicate that abstained because its input is unknown.

    The candidate stays eligible on the assumption that the predicate holds.
    """

    field: str
    assumed: Any
    rule: str
    hint: str

    def to_dict(self) -> dict[str, Any]:
        return {"field": self.field, "assumed": jsonable(self.assumed), "rule": self.rule, "hint": self.hint}


@dataclass(frozen=True)
class Demotion:
    """A priority adjustment that fired: ``backend`` moved to ``position``."""

    rule: str
    backend: str
    position: str  # "front" | "back" | "before:<backend>" | "after:<backend>"
    reason: str
    reference: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "backend": self.backend,
            "position": self.position,
            "reason": self.reason,
            "reference": self.reference,
        }


@dataclass(frozen=True)
class DecisionWarning:
    """Something the answer holds despite: a known bug, an unchecked early return, an unmodelled release.

    Attributes:
        code: ``known_bad`` (the winner matches a known-bad rule), ``unchecked`` (the engine
            returns the winner without this check, which fails), ``engine_release`` (the release
            or a pinned package is outside what the tables model).
        message: human text; never parsed.
        rule: the known-bad or shortcut rule id, when there is one.
        reference: upstream source of the fact.
        safe_alternative: the winner under the safe policy (``None`` when nothing is eligible
            there, or for ``engine_release``).
        failure: for ``unchecked``, the check that fails.
    """

    code: str
    message: str
    rule: str | None = None
    reference: str = ""
    safe_alternative: str | None = None
    failure: Failure | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "message": self.message,
            "rule": self.rule,
            "reference": self.reference,
            "safe_alternative": self.safe_alternative,
            "failure": self.failure.to_dict() if self.failure is not None else None,
        }


class Status(str, enum.Enum):
    """Candidate status in a Decision. ``eligible`` means eligible but outranked."""

    SELECTED = "selected"
    ELIGIBLE = "eligible"
    REJECTED = "rejected"


@dataclass(frozen=True)
class CandidateResult:
    """Verdict for one experts kernel paired with its prepare/finalize.

    Raises:
        ValueError: a rejected candidate without failures, or a selected or
            eligible one with failures.
    """

    kernel: str
    backend: str
    interface: Interface
    activation_format: ActivationFormat
    prepare_finalize: str | None
    status: Status
    failures: tuple[Failure, ...]
    assumptions: tuple[Assumption, ...]
    rank: int
    outranked_by: str | None = None

    @classmethod
    def of(cls, kernel: str, backend: str, interface: Interface, activation_format: ActivationFormat, prepare_finalize: str | None, status: Status,
           failures: tuple[Failure, ...], assumptions: tuple[Assumption, ...], rank: int, outranked_by: str | None = None) -> "CandidateResult":
        """``CandidateResult(...)`` by position without the frozen ``__init__`` (see :meth:`Failure.of`); validated the same way."""
        record = object.__new__(cls)
        d = record.__dict__
        d["kernel"], d["backend"], d["interface"], d["activation_format"], d["prepare_finalize"] = kernel, backend, interface, activation_format, prepare_finalize
        d["status"], d["failures"], d["assumptions"], d["rank"], d["outranked_by"] = status, failures, assumptions, rank, outranked_by
        record.__post_init__()
        return record

    def __post_init__(self) -> None:
        if self.status is Status.REJECTED and not self.failures:
            raise ValueError(f"candidate {self.kernel}: rejected without a failure")
        if self.status is not Status.REJECTED and self.failures:
            raise ValueError(f"candidate {self.kernel}: {self.status.value} with failures")

    @property
    def eligible(self) -> bool:
        return self.status is not Status.REJECTED

    def to_dict(self) -> dict[str, Any]:
        return {
            "rank": self.rank,
            "kernel": self.kernel,
            "backend": self.backend,
            "interface": self.interface.value,
            "activation_format": self.activation_format.value,
            "prepare_finalize": self.prepare_finalize,
            "status": self.status.value,
            "outranked_by": self.outranked_by,
            "failures": [f.to_dict() for f in self.failures],
            "assumptions": [a.to_dict() for a in self.assumptions],
        }
