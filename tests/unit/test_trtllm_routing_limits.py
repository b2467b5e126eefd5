"""FlashInfer's TRT-LLM routing limits, checked after vLLM selected a TRT-LLM monolithic kernel.

vLLM 0.29.0-0.34.0 hands ``num_expert_group`` / ``topk_group`` / ``top_k`` to FlashInfer's routing
without checking them; FlashInfer (0.6.18-0.7.4, the same checks) refuses them in vLLM's start-up
profile run: Routing::Runner / routingDeepSeek for every launcher (grouped DeepSeekV3), and
Fp8BlockScaleLauncher::check_routing for FP8 block and MXFP8 only. Before, moe-oracle answered
that the TRT-LLM kernel runs (rules/constraints.yaml constraint.trtllm_grouped_routing_limits and
its siblings).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from moe_oracle.inputs.models import examples_dir
from tests.cli_capture import edited_example as _model, select_json as _select

RELEASES = ("0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0", "0.34.0")






def _blocking(record: dict) -> list[str]:
    return sorted(r for b in record["blocking"] for r in b["rules"])


@pytest.mark.parametrize("release", RELEASES)
def test_five_top_groups_are_refused_after_the_trtllm_selection(tmp_path: Path, release: str) -> None:
    # DeepSeek-V3 FP8 block with topk_group 5: FlashInfer takes at most 4 top groups.
    model = _model(tmp_path, topk_group=5)
    code, record, err = _select("--model", model, "--gpu", "B200", "--package", f"vllm=={release}")
    assert code == 1, err
    assert record["selected"] is None
    assert _blocking(record) == ["constraint.trtllm_fp8_block_group_limits", "constraint.trtllm_grouped_routing_limits"]
    assert record["notes"][0].startswith("the engine selects TrtLlmFp8ExpertsMonolithic (flashinfer_trtllm_fp8_monolithic), then refuses the layer")
    code, record, err = _select("--model", model, "--gpu", "B200", "--package", f"vllm=={release}", "--moe-backend", "triton")
    assert code == 0 and record["selected"]["kernel"] == "triton", err


def test_top_k_past_8_is_refused_only_by_the_fp8_block_launcher(tmp_path: Path) -> None:
    # top_k 10 of 256 experts: the grouped routing kernel takes up to 22, the FP8 block launcher 8.
    code, record, err = _select("--model", _model(tmp_path, num_experts_per_tok=10), "--gpu", "B200")
    assert code == 1, err
    assert _blocking(record) == ["constraint.trtllm_fp8_block_group_limits"]


@pytest.mark.parametrize("name, kernel", [("deepseek-r1.json", "flashinfer_trtllm_fp8_monolithic"), ("kimi-k2-instruct.json", "flashinfer_trtllm_fp8_monolithic")])
def test_shipped_grouped_models_still_run_the_trtllm_kernel(tmp_path: Path, name: str, kernel: str) -> None:
    # DeepSeek-V3 (256 experts, 8 groups, 4 top groups, top-8) and Kimi-K2 (384 experts, 1 group, top-8) fit.
    code, record, err = _select("--model", _model(tmp_path, name), "--gpu", "B200")
    assert code == 0, err
    assert record["selected"]["kernel"] == kernel


def _config(tmp_path: Path, quant: str, routing: str, groups: int, top_groups: int, top_k: int = 4, experts: int = 64) -> str:
    path = tmp_path / "layer.yaml"
    path.write_text(
        f"model: {{num_experts: {experts}, top_k: {top_k}, hidden_size: 2048, intermediate_size: 1024, activation: silu, quant: {quant},"
        f" routing_method: {routing}, num_expert_group: {groups}, topk_group: {top_groups}}}\n"
        "device: {gpu: B200}\n", encoding="utf-8")
    return str(path)


def test_grouped_softmax_routing_is_refused_by_the_fp8_block_launcher_only(tmp_path: Path) -> None:
    code, record, err = _select("--config", _config(tmp_path, "fp8_block", "renormalize_naive", 8, 2), "--moe-backend", "flashinfer_trtllm")
    assert code == 1, err
    assert _blocking(record) == ["constraint.trtllm_fp8_block_ungrouped"]
    # One group is no grouping: the launcher takes it.
    code, record, err = _select("--config", _config(tmp_path, "fp8_block", "renormalize_naive", 1, 1), "--moe-backend", "flashinfer_trtllm")
    assert code == 0 and record["selected"]["kernel"] == "flashinfer_trtllm_fp8_monolithic", err


def test_the_fp8_block_launcher_needs_a_multiple_of_4_experts(tmp_path: Path) -> None:
    code, record, err = _select("--config", _config(tmp_path, "fp8_block", "renormalize", 1, 1, experts=62), "--moe-backend", "flashinfer_trtllm")
    assert code == 1, err
    assert _blocking(record) == ["constraint.trtllm_fp8_block_experts_4"]


def test_the_modular_fp8_block_kernel_calls_the_same_launcher(tmp_path: Path) -> None:
    # trtllm_fp8_block_scale_routed_moe is FlashInfer's trtllm_fp8_block_scale_moe op with top-k ids:
    # the expert count and top_k checks bind the modular kernel too.
    path = tmp_path / "layer.yaml"
    layer = "model: {{num_experts: {e}, top_k: {k}, hidden_size: 2048, intermediate_size: 1024, activation: silu, quant: fp8_block, routing_method: renormalize}}\n"
    rest = "device: {gpu: B200}\nparallel: {tp_size: 1, dp_size: 2, use_ep: true, all2all_backend: flashinfer_nvlink_two_sided}\n"
    for experts, top_k, rule in ((62, 4, "constraint.trtllm_fp8_block_experts_4"), (64, 33, "constraint.trtllm_fp8_block_routed_top_k")):
        path.write_text(layer.format(e=experts, k=top_k) + rest, encoding="utf-8")
        code, record, err = _select("--config", str(path), "--moe-backend", "flashinfer_trtllm")
        assert code == 1, err
        assert _blocking(record) == [rule]
        assert record["notes"][0].startswith("the engine selects TrtLlmFp8ExpertsModular (flashinfer_trtllm_fp8), then refuses the layer")
    path.write_text(layer.format(e=64, k=8) + rest, encoding="utf-8")
    code, record, err = _select("--config", str(path), "--moe-backend", "flashinfer_trtllm")
    assert code == 0 and record["selected"]["kernel"] == "flashinfer_trtllm_fp8", err


def test_llama4_routing_routes_one_expert_in_flashinfer(tmp_path: Path) -> None:
    # vLLM picks Llama4 routing for Llama4MoE's routing function whatever top_k; FlashInfer's routing
    # runner takes only top-1 (every TRT-LLM launcher). Llama 4 Scout itself is top-1 and unchanged.
    scout = "llama-4-scout-17b-16e-instruct.json"
    code, record, err = _select("--model", _model(tmp_path, scout), "--gpu", "B200")
    assert code == 0 and record["selected"]["kernel"] == "flashinfer_trtllm_bf16_monolithic", err
    text = json.loads((examples_dir() / scout).read_text(encoding="utf-8"))
    changes = {"text_config": {**text["text_config"], "num_experts_per_tok": 2}} if "text_config" in text else {"num_experts_per_tok": 2}
    code, record, err = _select("--model", _model(tmp_path, scout, **changes), "--gpu", "B200")
    assert code == 1, err
    assert _blocking(record) == ["constraint.trtllm_llama4_top_1"]
