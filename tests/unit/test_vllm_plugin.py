"""The vLLM plugin's pure parts: grouping vLLM's layers against moe-oracle's plan groups, and the
entry point's declaration (the observer inside vLLM is exercised by the differential tier)."""

from __future__ import annotations

import logging
import tomllib
from pathlib import Path

from moe_oracle.verify import vllm_plugin
from moe_oracle.verify.vllm_plugin import compare_layers

UPSTREAM = {"triton": "TritonExperts", "no_dp_ep_modular": "MoEPrepareAndFinalizeNoDPEPModular", "deep_gemm": "DeepGemmExperts"}.get


def _built(indices, experts="TritonExperts", pf="MoEPrepareAndFinalizeNoDPEPModular"):
    return [{"prefix": f"model.layers.{i}.mlp.experts", "index": i, "quant_method": "Fp8MoEMethod", "experts": experts, "prepare_finalize": pf} for i in indices]


def test_agreeing_layers_form_one_group():
    groups = compare_layers(_built(range(3, 7)), [{"layers": [3, 4, 5, 6], "kernel": "triton", "prepare_finalize": "no_dp_ep_modular", "line": "triton ..."}], UPSTREAM)
    assert len(groups) == 1 and groups[0]["agree"] is True and groups[0]["layers"] == [3, 4, 5, 6]


def test_a_different_experts_class_is_a_disagreement_and_splits_the_group():
    built = _built([3, 4]) + _built([5], experts="DeepGemmExperts")
    groups = compare_layers(built, [{"layers": [3, 4, 5], "kernel": "triton", "prepare_finalize": "no_dp_ep_modular", "line": "triton ..."}], UPSTREAM)
    assert [(g["layers"], g["agree"]) for g in groups] == [([3, 4], True), ([5], False)]


def test_a_different_prepare_finalize_is_a_disagreement_but_one_not_built_yet_is_not():
    plan = [{"layers": [1], "kernel": "triton", "prepare_finalize": "no_dp_ep_modular", "line": "x"}]
    assert compare_layers(_built([1], pf="DeepEPLLPrepareAndFinalize"), plan, UPSTREAM)[0]["agree"] is False
    assert compare_layers(_built([1], pf=None), plan, UPSTREAM)[0]["agree"] is True


def test_a_layer_the_plan_does_not_place_has_no_answer():
    (group,) = compare_layers(_built([9]), [], UPSTREAM)
    assert group["moe_oracle"] is None and group["agree"] is None


def test_observe_logs_a_warning_and_never_raises_when_planning_fails(caplog):
    class Broken:
        def named_modules(self):
            raise RuntimeError("boom")

    with caplog.at_level(logging.WARNING, logger="moe_oracle.vllm_plugin"):
        assert vllm_plugin.observe(Broken(), object()) is None
    assert "could not compare" in caplog.text


def test_layer_ranges_are_compact():
    assert vllm_plugin._ranges([3, 4, 5, 7, 61]) == "3-5, 7, 61"


def test_the_entry_point_vllm_loads_is_declared():
    doc = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())
    assert doc["project"]["entry-points"]["vllm.general_plugins"] == {"moe_oracle": "moe_oracle.verify.vllm_plugin:register"}
