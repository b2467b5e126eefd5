"""Under a shortcut that returns its kernel before reading --moe-backend, a request is no fix.

A compressed-tensors MXFP4 layer on a B200: vLLM 0.34.0 CompressedTensorsW4A4Mxfp4MoEMethod.__init__
returns CutlassExpertsMxfp4 unless the request is b12x, deep_gemm or a FlashInfer MoE-EP backend
(rules/shortcuts.yaml shortcut.ct_mxfp4_cutlass.deep_gemm). Before this change why-not offered
"--moe-backend flashinfer_trtllm" as its first fix, with the text "--moe-backend flashinfer_trtllm
selects both; the engine takes vllm_cutlass_mxfp4 first", and explain said only "outranked by" for
kernels the shortcut never ranks against. Both tests fail on that code.
"""

from __future__ import annotations

import json

import pytest

from moe_oracle.cli import main

QUANT = {"quant_method": "compressed-tensors", "format": "mxfp4-pack-quantized", "ignore": [], "config_groups": {"g": {
    "targets": ["Linear"], "input_activations": None, "format": "mxfp4-pack-quantized",
    "weights": {"type": "float", "num_bits": 4, "strategy": "group", "group_size": 32, "symmetric": True, "dynamic": False, "scale_dtype": "torch.uint8"}}}}


@pytest.fixture
def layer(tmp_path):
    (tmp_path / "hf_quant_config.json").write_text(json.dumps(QUANT))
    return ["--model", "qwen3-30b-a3b", "--hf-quant-config", str(tmp_path / "hf_quant_config.json"), "--gpu", "B200"]


def test_why_not_offers_no_request_the_shortcut_ignores(layer, capsys):
    assert main(["select", *layer, "--moe-backend", "flashinfer_trtllm", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["selected"]["kernel"] == "vllm_cutlass_mxfp4" and record["selected_by"] == "shortcut"  # the request is not read
    main(["why-not", *layer, "--backend", "flashinfer_trtllm", "--json"])
    answer = json.loads(capsys.readouterr().out)
    flags = [a["flags"] for a in answer["alternatives"]]
    assert answer["found"] and "--moe-backend flashinfer_trtllm" not in flags
    assert all(a["winner_after"] == a["kernel"] or not a["flags"].startswith("--moe-backend") for a in answer["alternatives"])


def test_explain_says_the_shortcut_returns_the_winner_first(layer, capsys):
    assert main(["explain", *layer, "--moe-backend", "flashinfer_trtllm"]) == 0
    out = capsys.readouterr().out
    assert "flashinfer_trtllm_mxfp4_monolithic [flashinfer_trtllm, monolithic]  ELIGIBLE" in out
    assert "eligible, outranked by vllm_cutlass_mxfp4, which the engine returns before its priority order and any --moe-backend (shortcut.ct_mxfp4_cutlass.deep_gemm)" in out
