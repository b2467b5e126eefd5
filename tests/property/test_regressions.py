"""The fixed sample pool: cases that once broke an invariant, run every time (strategies.REGRESSIONS)."""

from __future__ import annotations

import pytest

from tests.property import invariants as inv
from moe_oracle.core.oracle import default_runtime_catalog
from tests.property.strategies import REGRESSIONS, RUNTIME_REGRESSIONS

pytestmark = pytest.mark.property


@pytest.mark.parametrize("name", sorted(REGRESSIONS))
def test_why_not_answer_makes_the_backend_eligible(name):
    case, backend = REGRESSIONS[name]
    inv.check_why_not(case, backend)


@pytest.mark.parametrize("name", sorted(RUNTIME_REGRESSIONS))
def test_why_not_answer_makes_a_runtime_backend_eligible(name):
    case, backend = RUNTIME_REGRESSIONS[name]
    inv.check_why_not(case, backend, default_runtime_catalog())


@pytest.mark.parametrize("name", sorted(REGRESSIONS))
def test_why_not_finds_a_fix_that_only_installs_packages(name):
    case, backend = REGRESSIONS[name]
    inv.check_why_not_finds_package_fixes(case, backend)


@pytest.mark.parametrize("name", sorted({**REGRESSIONS, **RUNTIME_REGRESSIONS}))
@pytest.mark.parametrize("invariant", sorted(inv.ENGINE_INVARIANTS))
def test_engine_invariants(name, invariant):
    inv.ENGINE_INVARIANTS[invariant]({**REGRESSIONS, **RUNTIME_REGRESSIONS}[name][0])
