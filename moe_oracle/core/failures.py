"""Failure records made from checks, in the order they are reported (shared by the engine, the
Decision's views and the explanations)."""

from __future__ import annotations

from operator import attrgetter

from .checks import Check
from .normalize import Normalized
from .records import Failure
from .vocab import Source

__all__ = ["make_failure", "table_order"]

_TABLE_ORDER = attrgetter("table_key")


def table_order(checks: tuple[Check, ...]) -> tuple[Check, ...] | list[Check]:
    """``checks`` in the order failures are reported (table order: ``Check.seq``, then rule id)."""
    return sorted(checks, key=_TABLE_ORDER) if len(checks) > 1 else checks


def make_failure(chk: Check, norm: Normalized) -> Failure:
    """The :class:`Failure` record of a failing check under ``norm``."""
    return Failure.of(chk.code, chk.field, chk.observed(norm.values), chk.allowed_value, chk.rule, norm.sources.get(chk.source_field, Source.DERIVED), chk.hint, chk.reference)
