"""Invariants of selection over the real shipped catalog, over generated configs.

The one-case engine invariants run together on each example (they share its Decision); the
invariants that need a second input have a test each.

A failing example prints (hypothesis ``note``) a config file that
``moe-oracle explain --config FILE`` replays.
"""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from moe_oracle.core.fields import FIELDS
from tests.property import invariants as inv
from tests.property.found_cases import CT_W4A8_FP8_OLD_RELEASE, MOONEP_SHORTCUT_RAISES, ONE_SIDED_PAYLOAD_AT_CONSTRUCTION, LORA_ON_A_BATCHED_ALL2ALL, TRTLLM_LLAMA4_TOP_2_REFUSED
from tests.property.profiles import budget
from tests.property.strategies import ACCEPTED_BY_SOME_RELEASE, CATALOG, backend_names, cases, changed_inputs, note_case, text_values

pytestmark = pytest.mark.property


@budget(40.0)
@given(st.one_of(cases(backend=backend_names()), cases()))
@example(CT_W4A8_FP8_OLD_RELEASE)
@example(MOONEP_SHORTCUT_RAISES)
@example(ONE_SIDED_PAYLOAD_AT_CONSTRUCTION)
@example(TRTLLM_LLAMA4_TOP_2_REFUSED)
@example(LORA_ON_A_BATCHED_ALL2ALL)
def test_every_engine_invariant_holds(case):
    """All one-case engine invariants (invariants.ENGINE_INVARIANTS) on each config: determinism,
    the winner is the first eligible candidate, backend blocks, every non-winner explained,
    normalized values, failures sound and complete, assumptions, ranking, requested backends, the
    record's schema. They share one Decision and one re-derivation per config (determinism
    evaluates afresh), so one example costs what one invariant cost alone."""
    note_case(case)
    for name, check in inv.ENGINE_INVARIANTS.items():
        try:
            check(case)
        except AssertionError as exc:
            raise AssertionError(f"invariant {name}: {exc}") from exc


@budget(0.25)
@given(cases(), st.permutations(range(len(inv.shipped_files()))))
def test_table_file_order_does_not_matter(case, order):
    note_case(case)
    inv.check_file_order(case, order)


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
    # the TRT-LLM FP8 SwiGLU parameter rules: fields swiglu_alpha, swiglu_beta, swiglu_params; and
    # num_expert_group since constraint.trtllm_groups_divide: field expert_groups_divide; topk_group
    # since FlashInfer's TRT-LLM routing limits: fields trtllm_grouped_routing_fits and others.)
    assert {"routed_scaling_factor", "has_correction_bias", "device.name", "provenance"} <= set(inv.unread_leaves())
    assert {"swiglu_alpha", "swiglu_beta", "num_expert_group", "topk_group"} <= {i for f in inv.read_fields() if f in FIELDS for i in FIELDS[f].inputs}


def test_the_compiled_decision_validator_rejects_what_jsonschema_rejects():
    # decision_schema uses jsonschema_rs on the bundled schema when installed: it must refuse
    # exactly the broken records jsonschema refuses (and accept the good one).
    import copy

    good = inv.decide(_pinned()).to_dict()
    slow = inv.SCHEMAS.for_kind("decision")
    broken = []
    for edit in (
        lambda r: r.pop("candidates"),
        lambda r: r.__setitem__("format_version", "2"),
        lambda r: r["candidates"][0].__setitem__("status", "chosen"),
        lambda r: r["candidates"][-1]["failures"].append({"code": "no_such_code"}),
        lambda r: r.__setitem__("extra_key", 1),
        lambda r: r["inputs"]["platform"].__setitem__("source", "guess"),
    ):
        rec = copy.deepcopy(good)
        edit(rec)
        broken.append(rec)
    assert not inv.decision_validator()(good) and not list(slow.iter_errors(good))
    for rec in broken:
        assert bool(inv.decision_validator()(rec)) == bool(list(slow.iter_errors(rec)))
    assert sum(bool(inv.decision_validator()(rec)) for rec in broken) >= 5


def _pinned():
    from tests.property.strategies import pinned

    return pinned()
