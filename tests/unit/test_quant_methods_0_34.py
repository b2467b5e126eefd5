"""vLLM 0.34.0's quantization-method changes on the serve line: ``mxfp4_hadamard32`` is an online
shorthand that quantizes only the linear layers (MoE unquantized, vllm/config/quantization.py
``_ONLINE_SHORTHANDS``); ``fp_quant`` is gone; ``w4afp8`` (Q/w4afp8.py ``W4AFP8Config``) gives the
routed experts compressed-tensors' W4A8-FP8 method, from a checkpoint's document or, without one,
from ``-q w4afp8`` alone (``get_quant_config`` builds ``W4AFP8Config()``); ``lut_b_moe`` (LUT-B experts)
is in tests/unit/test_lut_b.py. The w4afp8 answers below were checked by letting vLLM 0.34.0 build the
layers (the model-construction worker): CutlassExpertsW4A8Fp8 on H200 TP1 and DP2+EP DeepEP HT;
refused on H200 TP8 (intermediate 96 per rank, create_weights asserts % 256), on B200 without
humming (no W4A8 backend) and for group size 64 ("Only group size 128 supported")."""

from __future__ import annotations

import json

import pytest

from moe_oracle.cli import main
from moe_oracle.core.errors import ConfigError
from moe_oracle.inputs.checkpoint import read_checkpoint

SERVE = "vllm serve qwen3-30b-a3b -q {q}"


def test_mxfp4_hadamard32_leaves_the_moe_layers_unquantized_in_0_34(capsys):
    assert main(["explain", "--serve", SERVE.format(q="mxfp4_hadamard32"), "--gpu", "B200", "--package", "vllm==0.34.0"]) == 0
    out = capsys.readouterr().out
    assert "unquantized (unquantized)" in out and "the MoE layers stay unquantized" in out


def test_mxfp4_hadamard32_is_unknown_before_0_34(capsys):
    assert main(["select", "--serve", SERVE.format(q="mxfp4_hadamard32"), "--gpu", "B200", "--package", "vllm==0.33.0"]) == 2
    assert "vLLM 0.33.0 knows no such quantization method" in capsys.readouterr().err


def test_fp_quant_is_unknown_in_0_34(capsys):
    assert main(["select", "--serve", SERVE.format(q="fp_quant"), "--gpu", "B200", "--package", "vllm==0.34.0"]) == 2
    assert "vLLM 0.34.0 knows no such quantization method" in capsys.readouterr().err


def test_lut_b_moe_is_unknown_before_0_34(capsys):
    assert main(["select", "--serve", SERVE.format(q="lut_b_moe"), "--gpu", "B200", "--package", "vllm==0.33.0"]) == 2
    assert "vLLM 0.33.0 knows no such quantization method" in capsys.readouterr().err


def _json(capsys, *argv):
    code = main([*argv, "--json"])
    return code, json.loads(capsys.readouterr().out)


def test_w4afp8_flag_selects_the_w4a8_fp8_experts_on_h200(capsys):
    code, record = _json(capsys, "select", "--serve", SERVE.format(q="w4afp8"), "--gpu", "H200", "--package", "vllm==0.34.0")
    assert code == 0
    assert record["selected"]["adapter"].endswith(":CutlassExpertsW4A8Fp8")
    assert any("W4AFP8Config()" in n for n in record["notes"])


def test_w4afp8_flag_under_tp8_is_refused_for_the_partition_shape(capsys):
    code, record = _json(capsys, "plan", "--serve", SERVE.format(q="w4afp8"), "--gpu", "H200", "--tp", "8", "--package", "vllm==0.34.0")
    (group,) = [g for g in record["groups"] if g["kind"] == "moe"]
    assert (group["quant"]["weight"], group["quant"]["activation"], group["quant"]["weight_group_size"]) == ("int4_static", "fp8_dynamic_token", 128)
    assert group["selected"] is None and "shape_unaligned" in group["summary"]


def test_w4afp8_flag_on_rocm_is_refused_at_start_naming_the_flag(capsys):
    assert main(["select", "--serve", SERVE.format(q="w4afp8"), "--gpu", "MI300X", "--package", "vllm==0.34.0"]) == 2
    err = capsys.readouterr().err
    assert "--serve --quantization" in err and "w4afp8 quantization is currently not supported in rocm" in err


def test_w4afp8_is_unknown_before_0_34(capsys):
    assert main(["select", "--serve", SERVE.format(q="w4afp8"), "--gpu", "H200", "--package", "vllm==0.33.0"]) == 2
    assert "vLLM 0.33.0 knows no such quantization method" in capsys.readouterr().err


BASE = {"num_hidden_layers": 2, "hidden_size": 2048, "moe_intermediate_size": 768, "num_experts": 16, "num_experts_per_tok": 2, "model_type": "qwen3_moe"}


def test_w4afp8_checkpoint_reads_as_compressed_tensors_w4a8_fp8():
    layer = read_checkpoint({**BASE, "quantization_config": {"quant_method": "w4afp8", "group_size": 64}}, release="0.34.0").layers[0]
    assert (layer.quant.label, layer.kwargs["quant_method"], layer.kwargs["weight_group_size"]) == ("w4a8_fp8", "compressed-tensors", 64)


def test_w4afp8_checkpoint_group_64_is_refused_by_the_w4a8_method(tmp_path, capsys):
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps({**BASE, "architectures": ["Qwen3MoeForCausalLM"], "quantization_config": {"quant_method": "w4afp8", "group_size": 64}}))
    code, record = _json(capsys, "plan", "--model", str(cfg), "--gpu", "H200", "--package", "vllm==0.34.0")
    (group,) = [g for g in record["groups"] if g["kind"] == "moe"]
    assert group["selected"] is None and "quant_unsupported" in group["summary"]


def test_w4afp8_ignored_layers_leave_the_experts_unquantized():
    q = {"quant_method": "w4afp8", "ignored_layers": ["model.layers.0.mlp.experts"]}
    layers = read_checkpoint({**BASE, "quantization_config": q}, release="0.34.0").layers
    assert layers[0].quant.excluded_by == "model.layers.0.mlp.experts" and layers[1].quant.label == "w4a8_fp8"


def test_w4afp8_checkpoint_is_refused_by_0_33():
    with pytest.raises(ConfigError) as err:
        read_checkpoint({**BASE, "quantization_config": {"quant_method": "w4afp8"}}, release="0.33.0")
    assert err.value.issues[0].value == "w4afp8" and "vLLM 0.33.0" in err.value.issues[0].message
