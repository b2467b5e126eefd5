"""whynot_search.search_eligible's ``admissible`` verdicts: True or None start, False or a message
refuse; the refused edit sets that made the target eligible are kept (one per message, cheapest
first, at most MAX_REFUSED_SHOWN) and shown only when nothing was found."""

from __future__ import annotations

from moe_oracle.core.environment import Environment
from moe_oracle.core.oracle import Oracle, default_catalog
from moe_oracle.core.vocab import Platform
from moe_oracle.explain.whynot import why_not
from moe_oracle.explain.whynot_search import MAX_REFUSED_SHOWN
from moe_oracle.inputs.files import config_from_document

_DOC = {"model": {"num_experts": 64, "top_k": 4, "hidden_size": 1024, "intermediate_size": 512, "activation": "silu", "quant": "fp8_block", "quant_method": "fp8"},
        "device": {"gpu": "H200"}}


def _setup():
    catalog = default_catalog()
    return Oracle(catalog, Environment()), config_from_document(_DOC, catalog).config


def test_a_message_refuses_and_is_kept_with_its_edits():
    oracle, config = _setup()
    answer = why_not(oracle, config, "xpu", n=3, admissible=lambda c, e: "no XPU today" if c.device.platform is Platform.XPU else None)
    assert not answer.found and answer.kernel is None
    (refused,) = answer.refused_at_start
    assert refused.reason == "no XPU today" and any(e.target == "device" for e in refused.edits)
    assert "  - --gpu " in answer.render_text() and answer.render_text().endswith(": no XPU today")
    assert answer.to_dict()["refused_at_start"] == [refused.to_dict()]


def test_false_refuses_with_a_generic_reason_and_true_or_none_start():
    oracle, config = _setup()
    refused = why_not(oracle, config, "xpu", n=3, admissible=lambda c, e: c.device.platform is not Platform.XPU)
    assert not refused.found and [r.reason for r in refused.refused_at_start] == ["the engine refuses to start with these inputs"]
    for verdict in (True, None):
        started = why_not(oracle, config, "xpu", n=3, admissible=lambda c, e, v=verdict: v)
        assert started.found and started.refused_at_start == () and started.to_dict()["refused_at_start"] == []


def test_one_entry_per_message_and_at_most_the_bound():
    oracle, config = _setup()
    seen: list[str] = []

    def every_edit_its_own_message(c, e):
        seen.append(f"refusal {len(seen)}")
        return seen[-1]

    # TRT-LLM needs a Blackwell GPU: several edit sets (--gpu B200, --gpu B300, ...) reach it.
    answer = why_not(oracle, config, "flashinfer_trtllm", n=3, admissible=every_edit_its_own_message)
    assert not answer.found and len(seen) > MAX_REFUSED_SHOWN  # more refusals met than kept
    assert [r.reason for r in answer.refused_at_start] == seen[:MAX_REFUSED_SHOWN]
    costs = [sum(e.cost for e in r.edits) for r in answer.refused_at_start]
    assert costs == sorted(costs)
    same = why_not(oracle, config, "flashinfer_trtllm", n=3, admissible=lambda c, e: "same")
    assert [r.reason for r in same.refused_at_start] == ["same"]
