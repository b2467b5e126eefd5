"""vLLM 0.34.0 computes the EPLB redundant-expert count when none is given
(vllm/config/parallel.py compute_eplb_num_redundant_experts); 0.29.0-0.33.0 keep 0."""

from __future__ import annotations

import pytest

from moe_oracle.cli import main
from moe_oracle.inputs.eplb_defaults import minimum_redundant

LAYER = "model: {num_experts: 60, top_k: 4, hidden_size: 2048, intermediate_size: 1408, quant: unquantized}\ndevice: {gpu: H200}\n"


@pytest.fixture()
def layer(tmp_path):
    path = tmp_path / "layer.yaml"
    path.write_text(LAYER)
    return str(path)


@pytest.mark.parametrize(("experts", "ep", "count"), [(60, 8, 4), (64, 8, 0), (256, 6, 2), (7, 1, 0)])
def test_minimum_redundant_is_the_least_even_split(experts, ep, count):
    assert minimum_redundant(experts, ep) == count
    assert (experts + count) % ep == 0 and all((experts + r) % ep for r in range(count))


def test_uneven_eplb_without_a_count_is_accepted_from_0_34_with_the_computed_count(layer, capsys):
    assert main(["explain", "--config", layer, "--dp", "8", "--ep", "--eplb", "--package", "vllm==0.34.0"]) == 0
    out = capsys.readouterr().out
    assert "vLLM 0.34.0 picks num_redundant_experts=4" in out


def test_uneven_eplb_without_a_count_is_refused_before_0_34(layer, capsys):
    assert main(["select", "--config", layer, "--dp", "8", "--ep", "--eplb", "--package", "vllm==0.33.0"]) == 2
    assert "60 + 0 redundant" in capsys.readouterr().err


@pytest.mark.parametrize("where", ["flag", "file"])
def test_an_explicit_uneven_count_is_still_refused_in_0_34(tmp_path, layer, capsys, where):
    argv = ["select", "--config", layer, "--dp", "8", "--ep", "--eplb", "--package", "vllm==0.34.0"]
    if where == "flag":
        argv += ["--redundant-experts", "0"]
    else:
        path = tmp_path / "explicit.yaml"
        path.write_text(LAYER + "parallel: {dp_size: 8, use_ep: true, enable_eplb: true, num_redundant_experts: 0}\n")
        argv = ["select", "--config", str(path), "--package", "vllm==0.34.0"]
    assert main(argv) == 2
    assert "60 + 0 redundant" in capsys.readouterr().err


def test_plan_computes_the_count_from_the_models_experts_from_0_34(capsys):
    argv = ["plan", "--model", "qwen3-30b-a3b", "--gpu", "H200", "--tp", "2", "--dp", "3", "--ep", "--eplb"]
    assert main([*argv, "--package", "vllm==0.34.0"]) == 0
    out = capsys.readouterr().out
    assert "eplb+4" in out and "vLLM 0.34.0 picks num_redundant_experts=4" in out  # 128 experts over EP 6
    assert main([*argv, "--package", "vllm==0.33.0"]) == 2
    assert "128 + 0 redundant" in capsys.readouterr().err
