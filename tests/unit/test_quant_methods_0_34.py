"""vLLM 0.34.0's quantization-method changes on the serve line: ``mxfp4_hadamard32`` is an online
shorthand that quantizes only the linear layers (MoE unquantized, vllm/config/quantization.py
``_ONLINE_SHORTHANDS``); ``fp_quant`` is gone; ``lut_b_moe`` and ``w4afp8`` are not modelled yet
and say so."""

from __future__ import annotations

import pytest

from moe_oracle.cli import main

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


@pytest.mark.parametrize("q", ["lut_b_moe", "w4afp8"])
def test_new_moe_methods_are_refused_as_not_modelled_naming_the_release(q, capsys):
    assert main(["select", "--serve", SERVE.format(q=q), "--gpu", "B200", "--package", "vllm==0.34.0"]) == 2
    err = capsys.readouterr().err
    assert "not modelled" in err and "vLLM 0.34.0" in err
