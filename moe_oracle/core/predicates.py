"""Predicate keywords: pure tests on one normalized field value.

Like jsonschema keywords, each keyword is a small function of one signature,
``keyword(spec) -> test``, where ``test(value) -> bool`` says whether the value
passes. A :class:`Predicate` combines the keywords of one value spec (``in``,
``not_in``, ``min``, ``max``, ``multiple_of``, ``not_multiple_of``, ``version``, ``present``) and
knows how to describe what it allows. The engine adds the context: rule id,
candidate, field, source tag, reason code. Nothing here reads the host.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any, Callable, Mapping

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from .environment import ABSENT

__all__ = ["KEYWORDS", "Predicate", "compile_value_spec", "value_spec_keywords"]

Test = Callable[[Any], bool]


# Tests are bound methods and ``functools.partial`` of module functions rather than closures, so
# a compiled catalog pickles (the compiled-catalog cache, moe_oracle.core.tables).


def _kw_in(spec: Any) -> Test:
    return frozenset(spec).__contains__


def _not_in(forbidden: frozenset[Any], v: Any) -> bool:
    return v not in forbidden


def _kw_not_in(spec: Any) -> Test:
    return partial(_not_in, frozenset(spec))


_NUMBERS = frozenset({int, float})


def _number(v: Any) -> bool:
    return type(v) in _NUMBERS or (isinstance(v, (int, float)) and not isinstance(v, bool))


def _min(spec: Any, v: Any) -> bool:
    return _number(v) and v >= spec


def _max(spec: Any, v: Any) -> bool:
    return _number(v) and v <= spec


def _multiple_of(spec: Any, v: Any) -> bool:
    return _number(v) and v % spec == 0


def _not_multiple_of(spec: Any, v: Any) -> bool:
    # Known-bad conditions need the negation ("intermediate size not a multiple of 128").
    return _number(v) and v % spec != 0


def _present(want: bool, v: Any) -> bool:
    # Package predicate: the value is a version string (installed) or ABSENT.
    return (v is not ABSENT) is want


def _version(specifier: SpecifierSet, v: Any) -> bool:
    if v is ABSENT:
        return True  # absence is the `present` predicate's failure, not this one's
    try:
        return Version(v) in specifier
    except (InvalidVersion, TypeError):
        return False


def _all(tests: tuple[Test, ...], v: Any) -> bool:
    return all(t(v) for t in tests)


def _kw_min(spec: Any) -> Test:
    return partial(_min, spec)


def _kw_max(spec: Any) -> Test:
    return partial(_max, spec)


def _kw_multiple_of(spec: Any) -> Test:
    return partial(_multiple_of, spec)


def _kw_not_multiple_of(spec: Any) -> Test:
    return partial(_not_multiple_of, spec)


def _kw_present(spec: Any) -> Test:
    return partial(_present, bool(spec))


def _kw_version(spec: Any) -> Test:
    return partial(_version, SpecifierSet(spec))


KEYWORDS: Mapping[str, Callable[[Any], Test]] = {
    "in": _kw_in,
    "not_in": _kw_not_in,
    "min": _kw_min,
    "max": _kw_max,
    "multiple_of": _kw_multiple_of,
    "not_multiple_of": _kw_not_multiple_of,
    "present": _kw_present,
    "version": _kw_version,
}
"""Keyword name -> compiler. The closed set a value spec may use."""


def value_spec_keywords() -> tuple[str, ...]:
    """Keywords a value spec may use, in evaluation order."""
    return tuple(KEYWORDS)


def _freeze(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _freeze(v)) for k, v in value.items()))
    return value


@dataclass(frozen=True)
class Predicate:
    """A conjunction of keywords on one field; equal specs compile to equal predicates.

    Attributes:
        field: normalized field name.
        spec: keyword -> argument, e.g. ``(("in", (90, 100)),)`` (frozen, sorted).
        test: compiled ``value -> bool``.
    """

    field: str
    spec: tuple[tuple[str, Any], ...]
    test: Test

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Predicate) and (self.field, self.spec) == (other.field, other.spec)

    def __hash__(self) -> int:
        # Cached: predicates key the check index's tables (checks.build_index), hashed by the
        # hundred thousand per compile; the nested spec is hashed once.
        cached = self.__dict__.get("_hash")
        if cached is None:
            cached = hash((self.field, self.spec))
            object.__setattr__(self, "_hash", cached)
        return cached  # type: ignore[no-any-return]

    def __getstate__(self) -> dict[str, Any]:
        # str hashes differ between processes (the compiled-catalog cache pickles predicates):
        # never ship the cached hash.
        return {k: v for k, v in self.__dict__.items() if k != "_hash"}

    def allowed(self) -> Any:
        """What passes, as data: a list for a lone ``in``, else a keyword mapping.

        >>> compile_value_spec("num_experts", {"max": 2048}).allowed()
        {'max': 2048}
        """
        if len(self.spec) == 1 and self.spec[0][0] == "in":
            return list(self.spec[0][1])
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.spec}

    def describe(self) -> str:
        """Short human text of what passes (``"one of 90, 100"``, ``">= 2"``)."""
        parts = []
        for key, arg in self.spec:
            if key == "in":
                parts.append("one of " + ", ".join(str(a) for a in arg))
            elif key == "not_in":
                parts.append("none of " + ", ".join(str(a) for a in arg))
            elif key == "min":
                parts.append(f">= {arg}")
            elif key == "max":
                parts.append(f"<= {arg}")
            elif key == "multiple_of":
                parts.append(f"a multiple of {arg}")
            elif key == "not_multiple_of":
                parts.append(f"not a multiple of {arg}")
            elif key == "present":
                parts.append("installed" if arg else "not installed")
            elif key == "version":
                parts.append(f"version {arg}")
        return " and ".join(parts)


def compile_value_spec(field: str, spec: Any) -> Predicate:
    """Compile a table value spec (a list means ``in``) into a :class:`Predicate`.

    >>> p = compile_value_spec("device_capability", [90, 100])
    >>> p.test(90), p.test(120)
    (True, False)

    Raises:
        ValueError: an unknown keyword, an empty spec, or an invalid PEP 440 specifier.
    """
    if isinstance(spec, list):
        spec = {"in": spec}
    if not isinstance(spec, dict) or not spec:
        raise ValueError(f"value spec for {field!r} must be a non-empty list or mapping, got {spec!r}")
    tests: list[Test] = []
    for key, arg in spec.items():
        if key not in KEYWORDS:
            raise ValueError(f"unknown predicate keyword {key!r} for {field!r}; allowed: {sorted(KEYWORDS)}")
        if key == "version":
            try:
                SpecifierSet(arg)
            except InvalidSpecifier as exc:
                raise ValueError(f"invalid PEP 440 specifier {arg!r} for {field!r}: {exc}") from None
        tests.append(KEYWORDS[key](arg))
    test = tests[0] if len(tests) == 1 else partial(_all, tuple(tests))
    return Predicate(field, tuple(sorted((k, _freeze(v)) for k, v in spec.items())), test)
