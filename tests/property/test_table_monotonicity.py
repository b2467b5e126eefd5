"""Invariants over edited tables: widening, narrowing and adding kernels (recompiled with compile_tables)."""

from __future__ import annotations

import pytest
from hypothesis import given, note
from hypothesis import strategies as st

from moe_oracle.core.records import Status
from tests.property import invariants as inv
from tests.property.profiles import budget
from tests.property.strategies import CATALOG, cases, note_case
from tests.property.table_mutations import added_kernels, narrowings, widenings

pytestmark = pytest.mark.property

_ALL = [e.id for e in CATALOG.experts]


def _group(data):
    group = data.draw(st.lists(cases(), min_size=1, max_size=3), label="configs")
    for i, case in enumerate(group):
        note_case(case, f"config {i}")
    return group, inv.decide(group[0])


@budget(0.4)
@given(st.data())
def test_widening_never_removes_an_eligible_candidate(data):
    group, first = _group(data)
    # Widen a kernel that is eligible for the first config: the edit must not take it away.
    kernel = data.draw(st.sampled_from(sorted(inv.eligible(first)) or _ALL), label="kernel")
    mutation = data.draw(widenings(kernel), label="edit")
    note(mutation.description)
    inv.check_widening(group, mutation.files)


@budget(0.4)
@given(st.data())
def test_narrowing_never_adds_an_eligible_candidate(data):
    group, first = _group(data)
    # Narrow a kernel that is rejected with few failures: the edit must not make it eligible.
    rejected = sorted((len(c.failures), c.kernel) for c in first.candidates if c.status is Status.REJECTED)
    kernel = data.draw(st.sampled_from([k for _, k in rejected[:8]] or _ALL), label="kernel")
    mutation = data.draw(narrowings(kernel), label="edit")
    note(mutation.description)
    inv.check_narrowing(group, mutation.files)


@budget(0.3)
@given(st.data())
def test_adding_a_kernel_keeps_the_order_of_the_others(data):
    group, first = _group(data)
    source = data.draw(st.sampled_from(sorted(inv.eligible(first)) or _ALL), label="source")
    mutation = data.draw(added_kernels(source), label="edit")
    note(mutation.description)
    inv.check_added_kernel_keeps_order(group, mutation.files, mutation.new_id)


@budget(0.3)
@given(st.data())
def test_adding_a_kernel_keeps_the_verdicts_of_the_others(data):
    group, first = _group(data)
    source = data.draw(st.sampled_from(sorted(inv.eligible(first)) or _ALL), label="source")
    mutation = data.draw(added_kernels(source), label="edit")
    note(mutation.description)
    inv.check_added_kernel_keeps_verdicts(group, mutation.files, mutation.new_id)
