"""Quant-method rewrites vLLM applies to a checkpoint's document before resolving its method
(moe_oracle/inputs/checkpoint/quant_formats.py)."""

from __future__ import annotations

import copy

from moe_oracle.inputs.checkpoint import read_checkpoint
from moe_oracle.inputs.hf import load_hf_config
from moe_oracle.inputs.models import resolve_model_path


def _kimi_k3() -> dict:
    return copy.deepcopy(load_hf_config(resolve_model_path("kimi-k3")))


def test_kimi_k3_compressed_tensors_mxfp4_is_read_as_mxfp4():
    # vLLM 0.29.0-0.34.0 KimiK3ForConditionalGenerationConfig rewrites quant_method to "mxfp4":
    # Mxfp4MoEMethod (the DeepSeek-V4 MXFP4 selector), not CompressedTensorsW4A4Mxfp4MoEMethod.
    ck = read_checkpoint(_kimi_k3())
    assert ck.quant.method == "mxfp4"
    assert any("KimiK3ForConditionalGenerationConfig" in n for n in ck.notes)
    assert ck.representative().kwargs["quant_method"] == "mxfp4"


def test_other_architectures_keep_compressed_tensors_mxfp4():
    cfg = _kimi_k3()
    cfg["architectures"] = ["DeepseekV3ForCausalLM"]
    assert read_checkpoint(cfg).quant.method == "compressed-tensors"


def test_only_the_mxfp4_pack_format_is_rewritten():
    cfg = _kimi_k3()
    doc = cfg.get("quantization_config") or cfg["text_config"]["quantization_config"]
    doc["format"] = "pack-quantized"
    doc["config_groups"]["group_0"]["format"] = "pack-quantized"
    doc["config_groups"]["group_0"]["weights"].update(type="int", num_bits=4)
    assert read_checkpoint(cfg).quant.method == "compressed-tensors"
