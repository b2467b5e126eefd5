"""The selection tier's prepare/finalize field (issues 20 and 25): our P/F id -> vLLM class, and
when two answers' P/F are compared."""

from __future__ import annotations

import pytest

from moe_oracle.core.oracle import Oracle
from moe_oracle.verify.cases import PF_NONE, PF_RAISES, PF_UNASKED, Answer, Deployment
from moe_oracle.verify.ours import OurSide


@pytest.fixture(scope="module")
def ours() -> OurSide:
    return OurSide("0.33.0", Oracle.default())


def _pf(ours: OurSide, **kw) -> tuple[str | None, str | None]:
    a = ours.answer(Deployment(**kw))
    assert a.status == "ok", a.detail
    return a.prepare_finalize, ours.decide(Deployment(**kw)).prepare_finalize


def test_every_pf_id_maps_to_its_upstream_class(ours):
    for entry in ours.oracle.catalog.prepare_finalize:
        assert ours.pf_class(entry.id) == entry.upstream and entry.upstream.isidentifier()
    assert ours.pf_class(None) is None
    with pytest.raises(KeyError):
        ours.pf_class("no_such_pf")


def test_the_answer_carries_the_class_of_the_deployment_s_dispatch(ours):
    single, _ = _pf(ours, platform="cuda", capability=90)
    assert single.startswith("MoEPrepareAndFinalizeNoDPEP")
    dp, _ = _pf(ours, platform="cuda", capability=90, dp_size=2)  # DP without EP: all-gather fallback
    assert dp.startswith("MoEPrepareAndFinalizeNaiveDPEP")
    ht, pf_id = _pf(ours, platform="cuda", capability=90, dp_size=2, use_ep=True, all2all_backend="deepep_high_throughput", packages=("deep_ep",))
    assert (ht, pf_id) == ("DeepEPHTPrepareAndFinalize", "deepep_high_throughput")


def test_the_interface_of_the_class_follows_the_selected_kernel(ours):
    for cap in (80, 90, 100):
        dep = Deployment(platform="cuda", capability=cap, packages=("flashinfer",))
        decision = ours.decide(dep)
        interface = decision.rows[decision.winner].entry.interface.value
        assert ours.answer(dep).prepare_finalize.lower().endswith(interface)


def test_pf_is_compared_only_where_both_select_and_both_asked():
    a = Answer("ok", "TritonExperts", "standard", "TRITON", prepare_finalize="MoEPrepareAndFinalizeNoDPEPModular")
    b = Answer("ok", "TritonExperts", "standard", "TRITON", prepare_finalize="MoEPrepareAndFinalizeNaiveDPEPModular")
    assert a.agrees(b) and not a.same_pf(b) and a.differs_in(b) == ("prepare_finalize",)
    direct = Answer("ok", "TritonExperts", "standard", "TRITON", prepare_finalize=None)  # no method to ask with
    unasked = Answer("ok", "TritonExperts", "standard", "TRITON", prepare_finalize=PF_UNASKED + "get_fused_moe_quant_config: AttributeError")
    assert not direct.pf_compared(b) and direct.same_pf(b) and unasked.same_pf(b) and not unasked.pf_compared(b)
    # vLLM building none, or raising, disagrees with any class of ours.
    assert not Answer("ok", prepare_finalize=PF_NONE).same_pf(Answer("ok", prepare_finalize="MoEPrepareAndFinalizeNoDPEPModular"))
    assert not Answer("ok", prepare_finalize=PF_RAISES + "NameError").same_pf(Answer("ok", prepare_finalize="DeepEPV2PrepareAndFinalize"))
    # Refusals carry no P/F.
    assert Answer("error", stage="config").same_pf(Answer("error", stage="config"))
    assert Answer.from_dict(a.to_dict()) == a and Answer.from_dict({"status": "ok"}).prepare_finalize is None
