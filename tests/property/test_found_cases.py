"""The cases issue 25 found beyond CI's examples (tests/property/found_cases.py), each run on its own."""

from __future__ import annotations

import pytest

from moe_oracle.core.records import Status
from tests.property import invariants as inv
from tests.property.found_cases import ADDED_KERNEL_OUTRANKS_WINNER, CT_W4A8_FP8_OLD_RELEASE, MARLIN_COPY_REORDERS_ASSUMPTIONS, MOONEP_SHORTCUT_RAISES, MORI_EP_V2_BEFORE_034, ONE_SIDED_PAYLOAD_AT_CONSTRUCTION, TRTLLM_LLAMA4_TOP_2_REFUSED, added_kernel_mutation

pytestmark = pytest.mark.property

@pytest.mark.parametrize("name", ["non_winners_explained", "decision_schema", "requested"])
def test_moonep_shortcut_refusal_explains_every_candidate(name):
    inv.ENGINE_INVARIANTS[name](MOONEP_SHORTCUT_RAISES)


def test_moonep_shortcut_case_is_the_refusal_it_describes():
    # The case must stay a MoonEP shortcut refusal with triton failure-free (what made it bite).
    d = inv.decide(MOONEP_SHORTCUT_RAISES)
    assert d.shortcut == "shortcut.moonep" and d.winner is None
    assert d.candidates[0].kernel == "moonep_experts" and d.candidates[0].failures
    assert any(c.kernel == "triton" and c.status is Status.ELIGIBLE for c in d.candidates)


@pytest.mark.parametrize("name", sorted(inv.ENGINE_INVARIANTS))
def test_ct_w4a8_fp8_on_a_release_before_the_rewrite_bound(name):
    assert inv.decide(CT_W4A8_FP8_OLD_RELEASE).normalized.values["quant_scheme"] == "w4a8_int8_group32"
    inv.ENGINE_INVARIANTS[name](CT_W4A8_FP8_OLD_RELEASE)


def test_added_kernel_that_outranks_the_winner_keeps_the_verdicts():
    # The case as found: since batched_triton without a batched all2all is refused after selection
    # (vLLM builds a standard P/F and raises at construction; kernels/triton.yaml
    # triton_batched.standard_prepare_finalize), neither the copy nor triton_batched wins there.
    mutation = added_kernel_mutation()
    grown = inv.decide(ADDED_KERNEL_OUTRANKS_WINNER, inv.compiled(mutation.files))
    assert grown.kernel is None and inv.decide(ADDED_KERNEL_OUTRANKS_WINNER).kernel is None
    inv.check_added_kernel_keeps_verdicts([ADDED_KERNEL_OUTRANKS_WINNER], mutation.files, mutation.new_id)


def test_added_kernel_that_outranks_a_winner_with_a_waived_failure_keeps_the_verdicts():
    # The same bite on a winner whose P/F failure is waived (an unchecked warning): a copy of
    # flashinfer_cutlass wins, and the old winner's waived payload failure is a failure again.
    mutation = added_kernel_mutation("flashinfer_cutlass")
    grown = inv.decide(ONE_SIDED_PAYLOAD_AT_CONSTRUCTION, inv.compiled(mutation.files))
    assert grown.kernel == mutation.new_id and inv.decide(ONE_SIDED_PAYLOAD_AT_CONSTRUCTION).kernel == "flashinfer_cutlass"
    old = next(c for c in grown.candidates if c.kernel == "flashinfer_cutlass")
    assert [f.rule for f in old.failures] == ["flashinfer_nvlink_one_sided.payload"]
    inv.check_added_kernel_keeps_verdicts([ONE_SIDED_PAYLOAD_AT_CONSTRUCTION], mutation.files, mutation.new_id)


def test_added_copy_of_the_winner_keeps_its_assumptions_in_order():
    mutation = added_kernel_mutation("marlin")
    grown = inv.decide(MARLIN_COPY_REORDERS_ASSUMPTIONS, inv.compiled(mutation.files))
    assert grown.kernel == mutation.new_id and inv.decide(MARLIN_COPY_REORDERS_ASSUMPTIONS).kernel == "marlin"
    # The old winner's assumptions are several (the order could differ) and the same set.
    before = [c for c in inv.decide(MARLIN_COPY_REORDERS_ASSUMPTIONS).candidates if c.kernel == "marlin"][0]
    assert len(before.assumptions) > 2
    inv.check_added_kernel_keeps_verdicts([MARLIN_COPY_REORDERS_ASSUMPTIONS], mutation.files, mutation.new_id)


@pytest.mark.parametrize("name", sorted(inv.ENGINE_INVARIANTS))
def test_one_sided_payload_checked_at_construction(name):
    d = inv.decide(ONE_SIDED_PAYLOAD_AT_CONSTRUCTION)
    # Still the case that bit: the winner's payload failure is waived (an unchecked warning).
    assert d.kernel == "flashinfer_cutlass"
    assert any(w.code == "unchecked" and w.failure is not None and w.failure.rule == "flashinfer_nvlink_one_sided.payload" for w in d.warnings)
    inv.ENGINE_INVARIANTS[name](ONE_SIDED_PAYLOAD_AT_CONSTRUCTION)


def test_an_env_variable_the_release_does_not_read_is_not_parsed():
    case, (name, raw) = MORI_EP_V2_BEFORE_034
    inv.check_refused_env_value(case, name, raw)
    # The same value where the release reads it is bad input.
    newer = case.__class__(case.config, case.env.with_package("vllm", "0.34.0"))
    inv.check_refused_env_value(newer, name, raw)


@pytest.mark.parametrize("name", sorted(inv.ENGINE_INVARIANTS))
def test_a_layer_refused_after_selection_holds_every_engine_invariant(name):
    # The case must stay an after-selection refusal with an eligible candidate behind it.
    d = inv.decide(TRTLLM_LLAMA4_TOP_2_REFUSED)
    assert d.winner is None and d.shortcut is None and d.refused_kernel == "flashinfer_trtllm_bf16_monolithic"
    assert any(c.status is Status.ELIGIBLE for c in d.candidates)
    inv.ENGINE_INVARIANTS[name](TRTLLM_LLAMA4_TOP_2_REFUSED)
