"""Invariants of selection over the real shipped catalog, one per test, over generated configs.

A failing example prints (hypothesis ``note``) a config file that
``moe-oracle explain --config FILE`` replays.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from moe_oracle.fields import FIELDS
from tests.property import invariants as inv
from tests.property.profiles import budget
from tests.property.strategies import ACCEPTED_BY_SOME_RELEASE, CATALOG, backend_names, cases, changed_inputs, note_case, text_values

pytestmark = pytest.mark.property


@budget(0.5)
@given(cases())
def test_same_inputs_give_the_same_record(case):
    note_case(case)
    inv.check_deterministic(case)


@budget(0.25)
@given(cases(), st.permutations(range(len(inv.shipped_files()))))
def test_table_file_order_does_not_matter(case, order):
    note_case(case)
    inv.check_file_order(case, order)


@budget(1.0)
@given(cases())
def test_winner_is_the_first_eligible_candidate(case):
    note_case(case)
    inv.check_winner_is_first_eligible(case)


@budget(1.0)
@given(cases())
def test_within_a_backend_monolithic_precedes_modular(case):
    note_case(case)
    inv.check_backend_blocks(case)


@budget(1.0)
@given(cases())
def test_every_non_winner_is_outranked_or_fails(case):
    note_case(case)
    inv.check_non_winners_explained(case)


@budget(1.0)
@given(cases())
def test_normalized_values_follow_the_documented_derivation(case):
    note_case(case)
    inv.check_normalized_values(case)


@budget(1.0)
@given(cases())
def test_every_failure_names_a_declared_rule_that_really_fails(case):
    note_case(case)
    inv.check_failures_sound(case)


@budget(1.0)
@given(cases())
def test_no_failing_rule_is_left_out(case):
    note_case(case)
    inv.check_failures_complete(case)


@budget(1.0)
@given(cases())
def test_assumptions_are_exactly_the_rules_with_unknown_inputs(case):
    note_case(case)
    inv.check_assumptions_are_unknown_inputs(case)


@budget(1.0)
@given(cases())
def test_ranking_follows_the_declared_priority_rules(case):
    note_case(case)
    inv.check_ranking_follows_priority(case)


@budget(1.0)
@given(st.one_of(cases(backend=backend_names()), cases()))
def test_requested_backend_wins_or_the_error_names_it(case):
    note_case(case)
    inv.check_requested(case)


def _unknown(name: str) -> bool:
    """No modelled release accepts the name (nor is it a backend name of ours)."""
    key = name.strip().lower().replace("-", "_")
    return bool(name) and key != "auto" and key not in CATALOG.backend_names and key not in ACCEPTED_BY_SOME_RELEASE


@budget(0.3)
@given(cases(), text_values(24).filter(_unknown))
def test_unknown_backend_names_are_rejected_before_evaluation(case, name):
    note_case(case)
    inv.check_unknown_backend_rejected(case, name)


@budget(1.0)
@given(cases(), st.data())
def test_inputs_no_predicate_reads_do_not_change_the_decision(case, data):
    note_case(case, "original")
    changed = data.draw(changed_inputs(case, inv.unread_leaves()), label="changed")
    note_case(changed, "changed")
    inv.check_unread_change(case, changed)


def test_unread_inputs_include_the_ones_no_field_can_read():
    # No normalized field is derived from these (fields.FIELDS inputs), so no table can read them:
    # the perturbation test above is never vacuous. (swiglu_alpha and swiglu_beta are read since
    # the TRT-LLM FP8 SwiGLU parameter rules: fields swiglu_alpha, swiglu_beta, swiglu_params.)
    assert {"num_expert_group", "topk_group", "routed_scaling_factor", "has_correction_bias", "device.name", "provenance"} <= set(inv.unread_leaves())
    assert {"swiglu_alpha", "swiglu_beta"} <= {i for f in inv.read_fields() if f in FIELDS for i in FIELDS[f].inputs}


@budget(0.4)
@given(cases())
def test_decision_record_validates_against_its_schema(case):
    note_case(case)
    inv.check_decision_schema(case)
