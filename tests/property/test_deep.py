"""The deep property tier (marker ``property_deep``, deselected by default): the invariants that
CI's derandomized ``ci`` profile once passed while broken (issue 25: a MoonEP shortcut refusal, a
compressed-tensors W4A8 rewrite before vLLM 0.31.0, a kernel copy that outranks the winner), run
with **fresh seeds** every time and more examples than ``ci``.

Run it with ``python3 -m pytest -m property_deep tests/property`` (``.ci/run`` does, and prints its
time). Size: ``MOE_ORACLE_DEEP_EXAMPLES`` examples for the one-case engine invariants (default
1000), a tenth of it for each table-edit invariant (each recompiles the tables). A failure prints
its seed and a ``@reproduce_failure`` blob; keep every case found as an explicit example
(tests/property/found_cases.py).
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from moe_oracle.core.records import Status
from tests.property import invariants as inv
from tests.property.strategies import CATALOG, backend_names, cases, note_case
from tests.property.table_mutations import added_kernels, narrowings, widenings

pytestmark = pytest.mark.property_deep

EXAMPLES = int(os.environ.get("MOE_ORACLE_DEEP_EXAMPLES", "1000"))
_SLOW_OK = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]


def deep(fraction: float) -> settings:
    """Fresh seeds (not derandomized, no example database) and ``fraction`` of :data:`EXAMPLES`."""
    return settings(max_examples=max(10, int(EXAMPLES * fraction)), derandomize=False, database=None, deadline=None, print_blob=True, suppress_health_check=_SLOW_OK)


_ALL = [e.id for e in CATALOG.experts]


@deep(1.0)
@given(st.one_of(cases(backend=backend_names()), cases()))
def test_deep_every_engine_invariant_holds(case):
    note_case(case)
    for name, check in inv.ENGINE_INVARIANTS.items():
        try:
            check(case)
        except AssertionError as exc:
            raise AssertionError(f"invariant {name}: {exc}") from exc


def _group(data):
    group = data.draw(st.lists(cases(), min_size=1, max_size=3), label="configs")
    for i, case in enumerate(group):
        note_case(case, f"config {i}")
    return group, inv.decide(group[0])


@deep(0.1)
@given(st.data())
def test_deep_adding_a_kernel_keeps_the_verdicts_of_the_others(data):
    group, first = _group(data)
    source = data.draw(st.sampled_from(sorted(inv.eligible(first)) or _ALL), label="source")
    mutation = data.draw(added_kernels(source), label="edit")
    note(mutation.description)
    inv.check_added_kernel_keeps_verdicts(group, mutation.files, mutation.new_id)
    inv.check_added_kernel_keeps_order(group, mutation.files, mutation.new_id)


@deep(0.1)
@given(st.data())
def test_deep_widening_and_narrowing(data):
    group, first = _group(data)
    kernel = data.draw(st.sampled_from(sorted(inv.eligible(first)) or _ALL), label="widened")
    mutation = data.draw(widenings(kernel), label="widening")
    note(mutation.description)
    inv.check_widening(group, mutation.files)
    rejected = sorted((len(c.failures), c.kernel) for c in first.candidates if c.status is Status.REJECTED)
    kernel = data.draw(st.sampled_from([k for _, k in rejected[:8]] or _ALL), label="narrowed")
    mutation = data.draw(narrowings(kernel), label="narrowing")
    note(mutation.description)
    inv.check_narrowing(group, mutation.files)
